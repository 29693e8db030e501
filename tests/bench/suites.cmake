# bench_engine, bench_numeric, bench_store: the old benchmark names, kept as thin wrappers over
# the suites in app/bench (mantissa_bench), which `mantissa-cli bench --suite NAME` runs too. The
# GUI suite runs in the GUI executable: `mantissa --bench-gui`. The PyTorch peer is torch_peer.py.
foreach(_suite engine numeric store)
  add_executable(bench_${_suite} ${CMAKE_CURRENT_LIST_DIR}/suite_wrapper.cpp)
  target_compile_definitions(bench_${_suite} PRIVATE MANTISSA_BENCH_SUITE="${_suite}")
  target_link_libraries(bench_${_suite} PRIVATE mantissa_bench mantissa_warnings)
endforeach()
