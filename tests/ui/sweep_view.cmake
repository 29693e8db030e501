# Sweeps (docs/gui.md, "Sweeps: the recipe table"): the recipe table and its scatter over a store in
# a temp dir holding a sweep of the six standard recipes over a grid, its runs fed to Recorders with
# chosen figures (one failed, one not run, one index run twice). With MANTISSA_SCREENSHOT_DIR set it
# also trains a real sweep of the six recipes on spirals and writes docs/screenshots/sweep.png.
mantissa_add_test(test_sweep_view SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sweep_view.cpp LIBS mantissa_ui LABELS ui TIMEOUT 300)
