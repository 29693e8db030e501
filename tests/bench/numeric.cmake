# bench_numeric: rounding throughput per format (elements/s), vector kernels vs the scalar definition.
add_executable(bench_numeric ${CMAKE_CURRENT_LIST_DIR}/numeric/bench_rounding.cpp)
target_link_libraries(bench_numeric PRIVATE mantissa_numeric mantissa_warnings)
