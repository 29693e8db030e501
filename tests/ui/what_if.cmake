# The What-if panel (ui/panels/what_if_panel.h) and the path its numbers take: the telemetry ring's
# what-if ring, RunSeries's WhatIfSeries, the heat map's model, colours and delegate, on records
# made in the test; then one real run (spirals, CPU) in the window and reopened from its store.
mantissa_add_test(test_what_if_panel SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_what_if_panel.cpp
                  LIBS mantissa_ui LABELS ui TIMEOUT 180)
