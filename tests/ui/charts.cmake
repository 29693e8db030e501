# The charts over recorded and overlaid runs, their markers, ticks, read-outs and exports, and the
# history's live changes and window keys. test_recorded_charts trains two spirals runs into a temp
# store and holds the points the viewer's and the comparison's charts draw against its rows.
mantissa_add_test(test_recorded_charts SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_recorded_charts.cpp LIBS mantissa_ui LABELS ui TIMEOUT 180)
mantissa_add_test(test_chart_overlays SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chart_overlays.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
mantissa_add_test(test_chart_details SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chart_details.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
mantissa_add_test(test_history_changes SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_history_changes.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
