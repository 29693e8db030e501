# The main window's help for a person finding their way: wrapped tooltips, the keyboard shortcuts
# dialog (checked against the actions and docs/gui.md) and Help ▸ Documentation. No training.
mantissa_add_test(test_window_help SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_window_help.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
