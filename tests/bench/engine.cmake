# bench_engine: samples/s and step time of the reference experiment (784-256-128-10, relu, AdamW,
# batch 128) per precision on the CPU backend, interleaved timed blocks, medians, ratio to fp32;
# and oneDNN's fp32 vs bf16 matmul on the reference shapes (the bf16 path's speed decision).
add_executable(bench_engine ${CMAKE_CURRENT_LIST_DIR}/engine/bench_engine.cpp)
target_link_libraries(bench_engine PRIVATE mantissa_core mantissa_warnings)
