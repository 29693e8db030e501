# The desktop application `mantissa`: a thin main() over mantissa_ui (ui/), plus the GUI benchmark
# suite it runs with --bench-gui (gui_bench.*, reported through mantissa_bench's report shape).
# Included from app/CMakeLists.txt when MANTISSA_GUI is ON.
add_executable(mantissa ${CMAKE_CURRENT_LIST_DIR}/main.cpp ${CMAKE_CURRENT_LIST_DIR}/gui_bench.cpp)
target_include_directories(mantissa PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(mantissa PRIVATE mantissa_ui mantissa_bench mantissa_warnings)
install(TARGETS mantissa RUNTIME DESTINATION bin)
