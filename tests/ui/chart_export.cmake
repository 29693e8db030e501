# Chart export (ui/export): PNG, SVG and PDF files at the asked size, stacked charts, the dialog and
# the error sentences.
mantissa_add_test(test_chart_export SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_chart_export.cpp LIBS mantissa_ui LABELS ui TIMEOUT 60)
