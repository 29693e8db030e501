# The desktop application `mantissa`: a thin main() over mantissa_ui (ui/). Included from
# app/CMakeLists.txt when MANTISSA_GUI is ON.
add_executable(mantissa ${CMAKE_CURRENT_LIST_DIR}/main.cpp)
target_link_libraries(mantissa PRIVATE mantissa_ui mantissa_warnings)
install(TARGETS mantissa RUNTIME DESTINATION bin)
