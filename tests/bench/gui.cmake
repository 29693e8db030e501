# bench_gui: replot time of the charts at 10^4..10^6 points, training throughput with the GUI open
# vs headless (interleaved), and the GUI thread's longest stall. Runs offscreen. Only with the GUI.
if(TARGET mantissa_ui)
  add_executable(bench_gui ${CMAKE_CURRENT_LIST_DIR}/gui/bench_gui.cpp)
  target_link_libraries(bench_gui PRIVATE mantissa_ui mantissa_warnings)
endif()
