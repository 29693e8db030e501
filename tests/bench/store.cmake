# bench_store: what the run store ingests (steps rows/s; steps/s with three layer rows each) next
# to raw SQLite inserting a table of the same width in 10k-row transactions, and what recording
# costs a training loop: a synthetic one and real training (the reference experiment on the CPU).
add_executable(bench_store ${CMAKE_CURRENT_LIST_DIR}/store/bench_store.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/store/recording_cost.cpp)
target_include_directories(bench_store PRIVATE ${CMAKE_CURRENT_LIST_DIR}/store)
target_link_libraries(bench_store PRIVATE mantissa_store mantissa_core SQLite::SQLite3 mantissa_warnings)
