#!/usr/bin/env bash
# tests/gpu/pack.sh: build the GPU check's programs on this (Debian) machine and pack them for a
# GPU machine that has the NVIDIA driver and the CUDA toolkit but none of Debian's Qt, oneDNN or
# SQLite packages (a rented or lent GPU box). The pack holds the build tree's paths unchanged
# (the loader test has its modules' paths compiled in) plus lib/, the shared libraries the
# programs need beyond glibc, libstdc++ and CUDA's own.
#
#   tests/gpu/pack.sh [DEST]          DEST defaults to .gpu/payload.tar.gz
#   there: tar xzf DEST at the same project path, then PREBUILT=1 tests/gpu/check.sh
#
# Environment: BUILD_DIR (default build-gpu), ARCHS (default 90-real: the GPU it is meant for;
# "75-real;80-real;86-real;89-real;90-real;90-virtual" for every shipped target), JOBS.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD_DIR:-build-gpu}
ARCHS=${ARCHS:-90-real}
DEST=${1:-.gpu/payload.tar.gz}
JOBS=${JOBS:-$(nproc)}

GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
cmake -S . -B "$BUILD" "${GEN[@]}" -DMANTISSA_CUDA=ON -DMANTISSA_GUI=OFF -DCMAKE_BUILD_TYPE=Release \
  "-DMANTISSA_CUDA_ARCHITECTURES=$ARCHS" >/dev/null
# shellcheck source=tests/gpu/targets.sh
source tests/gpu/targets.sh
cmake --build "$BUILD" -j "$JOBS" --target "${GPU_CHECK_TARGETS[@]}"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
FILES=()
for f in "${GPU_CHECK_PROGRAMS[@]}"; do
  [[ -e "$BUILD/$f" ]] || { echo "pack: $BUILD/$f was not built" >&2; exit 1; }
  FILES+=("$BUILD/$f")
done
mkdir -p "$STAGE/$BUILD/lib"
# Every library the programs load, except the C library's family, the compiler's runtime (the GPU
# machine's own is newer) and CUDA's, which must be the driver's match there.
for f in "${FILES[@]}"; do ldd "$f"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcu[A-Za-z]*)\.so' |
  while read -r lib; do cp -L "$lib" "$STAGE/$BUILD/lib/"; done
tar cf - "${FILES[@]}" | tar xf - -C "$STAGE"
mkdir -p "$(dirname "$DEST")"
tar czf "$DEST" -C "$STAGE" "$BUILD"
echo "pack: $DEST, $(du -h "$DEST" | cut -f1) ($(ls "$STAGE/$BUILD/lib" | wc -l) libraries)"
