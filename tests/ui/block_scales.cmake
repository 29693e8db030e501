# The Block scales panel (ui/block_scales/block_scale_panel.h) and the path its data take: the
# telemetry ring's two block-scale rings (maps, or distributions when those are full), RunSeries's
# BlockScaleSeries with its map budget, the distribution and map plots, their words and colours, on
# records made in the test; then one real run (spirals, CPU, fc1 in mxfp4) in the window and
# reopened from its store, and, for docs/screenshots/block-scales.png, a Fashion-MNIST run.
mantissa_add_test(test_block_scale_panel SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_block_scale_panel.cpp
                  LIBS mantissa_ui LABELS ui TIMEOUT 240)
