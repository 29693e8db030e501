# bench_cuda (CUDA builds): samples/s, achieved TFLOP/s and peak memory per precision for MLPs of
# width 256, 1024 and 8192 at batch 256 and 16384, on the CUDA backend (through the Backend
# interface, and as a captured CUDA graph), and the cost of telemetry and loss-scaling checks.
# tests/bench/cuda/torch_mlp.py is the same MLP in PyTorch for comparison (tests/gpu/check.sh).

if(MANTISSA_HAVE_CUDA AND TARGET mantissa_cuda_impl AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/cuda/bench_cuda.cpp)
  add_executable(bench_cuda ${CMAKE_CURRENT_LIST_DIR}/cuda/bench_cuda.cpp)
  target_link_libraries(bench_cuda PRIVATE mantissa_cuda_impl mantissa_engine mantissa_warnings)
endif()
