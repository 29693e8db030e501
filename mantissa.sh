#!/usr/bin/env bash
# The two commands of the README. Each installs what is missing (Debian 12 packages), configures
# and builds when something changed, then:
#   ./mantissa.sh run    the main job: the GUI with the default experiment when there is a display,
#                        otherwise the same experiment headless with a progress line and a summary
#   ./mantissa.sh test   the whole test suite (ctest)
# Idempotent and quick when nothing changed. Build folder: ./build (MANTISSA_BUILD_DIR overrides).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${MANTISSA_BUILD_DIR:-$root/build}
action=${1:-}
shift || true

usage() {
    echo "usage: ./mantissa.sh run [options of mantissa, or of mantissa-cli train without a display] | ./mantissa.sh test [ctest options...]" >&2
    exit 2
}
[[ $action == run || $action == test ]] || usage

# ocl-icd-opencl-dev: oneDNN's CMake package requires OpenCL, which libdnnl-dev only recommends.
# clang, libclang-rt-14-dev: the fuzz tests (docs/fuzzing.md); libFuzzer and the sanitizer runtimes
# are in libclang-rt-14-dev, which clang only recommends.
# fortunes: the default text corpus for language models (docs/datasets.md, "Text"); it brings
# fortunes-min, whose files are part of the corpus too.
packages=(cmake ninja-build g++ pkg-config
          qt6-base-dev qt6-svg-dev libgl-dev libqcustomplot-dev
          libdnnl-dev ocl-icd-opencl-dev libsqlite3-dev zlib1g-dev nlohmann-json3-dev
          clang libclang-rt-14-dev
          dataset-fashion-mnist fortunes)
# For `test` only: slurmctld, slurmd, slurm-client and munge, the one-node Slurm cluster the sweep
# tests start and stop themselves (tests/app/slurm_cluster.h, docs/sweeps.md). Mantissa never uses
# the services the packages install; `run` does not install them. python3: the fingerprint test
# reads the exported tables with it (tests/bench/fingerprint).
test_packages=(slurmctld slurmd slurm-client munge python3)

install_missing() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    local sudo=()
    if [[ $(id -u) != 0 ]]; then
        command -v sudo >/dev/null || { echo "mantissa.sh: missing packages (${missing[*]}) and no sudo to install them; run as root." >&2; exit 1; }
        sudo=(sudo)
    fi
    echo "mantissa.sh: installing ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

configure_and_build() {
    if [[ ! -f $build/CMakeCache.txt ]]; then
        cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
    fi
    cmake --build "$build" --parallel "$(nproc)"
}

[[ $action == test ]] && packages+=("${test_packages[@]}")
install_missing
configure_and_build

experiment=$root/resources/experiments/default.json
case $action in
test)
    cd "$build"
    exec ctest --output-on-failure --parallel "$(nproc)" "$@"
    ;;
run)
    if [[ -x $build/app/mantissa && ( -n ${DISPLAY:-} || -n ${WAYLAND_DISPLAY:-} ) ]]; then
        exec "$build/app/mantissa" --config "$experiment" "$@"
    fi
    if "$build/app/mantissa-cli" train --help >/dev/null 2>&1; then
        exec "$build/app/mantissa-cli" train --config "$experiment" "$@"
    fi
    echo "Training is not built yet; this is what Mantissa can do so far: how numbers are stored in each format."
    exec "$build/app/mantissa-cli" format 0.1 65520 1e-8 "$@"
    ;;
esac
