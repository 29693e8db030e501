# bench_data: dataset loading and batching costs (Fashion-MNIST load stages, CSV parse, synthetic
# generation, epoch order, batch gathering), printed as a table.
add_executable(bench_data ${CMAKE_CURRENT_LIST_DIR}/data/bench_data.cpp)
target_link_libraries(bench_data PRIVATE mantissa_data mantissa_warnings)
