#!/bin/sh
# Runs one fuzz target for a bounded time, as ctest does (tests/fuzz/CMakeLists.txt) and as a person
# does to fuzz longer (docs/fuzzing.md):
#   run_fuzz_target.sh FUZZER SECONDS SEED_CORPUS WORK_FOLDER [more libFuzzer options...]
# The work folder is emptied first and receives what the run finds new, so the repository's seed
# corpus is only read and every run starts from the same place. A crash, leak, timeout, out-of-memory
# or sanitizer report is exit 1, with the input saved in the folder beside WORK_FOLDER,
# artifacts/<target>-crash-<sha1> (or -leak-, -timeout-, -oom-).
set -eu
fuzzer=$1 seconds=$2 seeds=$3 work=$4
shift 4
name=$(basename "$fuzzer")
artifacts=$(dirname "$work")/artifacts
rm -rf "$work"
mkdir -p "$work" "$artifacts"
exec "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -error_exitcode=1 -timeout_exitcode=1 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "$@" "$work" "$seeds"
