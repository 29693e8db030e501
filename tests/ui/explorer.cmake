# The format explorer (ui/explorer): every figure it shows is describe_stored()'s.
mantissa_add_test(test_format_explorer SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_format_explorer.cpp LIBS mantissa_ui LABELS ui TIMEOUT 60)
