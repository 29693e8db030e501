# Gradient histograms (ui/histogram): HistogramSeries alone, then the feed and the heat map over a
# run store made in the test.
mantissa_add_test(test_histogram_series SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_histogram_series.cpp LIBS mantissa_ui LABELS ui TIMEOUT 60)
mantissa_add_test(test_gradient_histogram_view SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gradient_histogram_view.cpp LIBS mantissa_ui LABELS ui TIMEOUT 120)
