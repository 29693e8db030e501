# Pace, single step and "pause at step" on real runs (spirals on the CPU backend), and the views
# brought up to the step a run paused at.
mantissa_add_test(test_run_pace SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_run_pace.cpp LIBS mantissa_ui LABELS ui TIMEOUT 240)
