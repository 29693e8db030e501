# Run at build time (not configure time) by the mantissa_git_describe target: writes the source's
# `git describe --always --dirty` into OUTPUT, so a bench report names the commit it was built from
# even when the build folder was configured commits ago. file(CONFIGURE) rewrites OUTPUT only when
# the text changes, so an unchanged tree recompiles nothing.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty
                OUTPUT_VARIABLE git_describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT git_describe)
  set(git_describe "unknown")
endif()
file(CONFIGURE OUTPUT "${OUTPUT}" CONTENT [[
// Generated at build time by app/bench/git_describe.cmake; do not edit.
#include "bench/git_describe.h"

const char* mantissa::bench::git_describe() { return "@git_describe@"; }
]] @ONLY)
