# test_bench_limits: the peak-rate loops give a positive rate on this CPU, the limit's arithmetic,
# and `mantissa-cli bench --quick --suite engine --json` carrying the limits table, the steps
# table's FLOP columns and the threads table. Nothing about speed is asserted.
mantissa_add_test(test_bench_limits SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_bench_limits.cpp
                  LIBS mantissa_bench Qt6::Core LABELS bench TIMEOUT 180)
target_compile_definitions(test_bench_limits PRIVATE MANTISSA_CLI_PATH="$<TARGET_FILE:mantissa-cli>")
target_include_directories(test_bench_limits PRIVATE ${PROJECT_SOURCE_DIR}/tests/app)
add_dependencies(test_bench_limits mantissa-cli)
