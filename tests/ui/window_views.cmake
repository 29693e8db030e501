# The main window's ways into the history and teaching views: the run browser over the store the
# window records in, the gradient histogram following the live run, the format explorer, and the
# chart export behind the charts' context menu.
mantissa_add_test(test_window_views SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_window_views.cpp LIBS mantissa_ui LABELS ui TIMEOUT 180)
