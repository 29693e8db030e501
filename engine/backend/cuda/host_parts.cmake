# The parts of engine/backend/cuda that every build has, with or without CUDA:
#   - cuda_loader.cpp and format_support.cpp go into mantissa_core (the dlopen side of the
#     module, which needs no CUDA headers: the application says why the GPU is missing);
#   - mantissa_cuda_host: the module's host-only logic (the allocator's bookkeeping, the CUDA
#     graph policy, the step pipeline's result block, which ops and formats it runs and the
#     convolution's chunks), a library the CPU-run tests in
#     tests/engine/cuda_host link.
# Included by engine/backend/cuda/CMakeLists.txt (which engine/backend adds in every build).
include_guard(GLOBAL)

target_sources(mantissa_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/cuda_loader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/format_support.cpp)
# Where `install` puts the module (the loader looks there; cmake --install keeps this layout).
set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/cuda_loader.cpp TARGET_DIRECTORY mantissa_core APPEND PROPERTY
  COMPILE_DEFINITIONS MANTISSA_CUDA_MODULE_INSTALL_DIR="${CMAKE_INSTALL_PREFIX}/lib/mantissa")

add_library(mantissa_cuda_host STATIC
  ${CMAKE_CURRENT_LIST_DIR}/block_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/graph_policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/op_support.cpp
  ${CMAKE_CURRENT_LIST_DIR}/step_block_layout.cpp)
target_link_libraries(mantissa_cuda_host PUBLIC mantissa_engine_headers PRIVATE mantissa_warnings)
set_target_properties(mantissa_cuda_host PROPERTIES POSITION_INDEPENDENT_CODE ON)
