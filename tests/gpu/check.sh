#!/usr/bin/env bash
# tests/gpu/check.sh: the CUDA backend's check on a machine with a GPU, in under 8 minutes:
#   1. configure (CUDA ON, no GUI, Release; GPU code for this machine's GPU only, unless
#      ALL_ARCHS=1 builds every shipped target) and build the module and the GPU targets;
#   2. `mantissa-cli devices`;
#   3. the GPU suites (ctest label gpu) and the CPU-run suites of the module's host logic;
#   4. the GPU benchmark (bench_cuda) and, when PyTorch is installed, the same MLP in PyTorch;
#   5. a short table: every suite's result, then throughput per precision against PyTorch.
# Environment: BUILD_DIR (default build-gpu-check), JOBS (default: all cores), SECONDS_PER (the
# benchmark's seconds per measurement, default 0.3), ALL_ARCHS=1.
# Exit status: 0 when every suite passed; the skipped GPU test functions are counted in the last line
# (on a GPU the only expected skips are formats the GPU refuses).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
BUILD=${BUILD_DIR:-build-gpu-check}
JOBS=${JOBS:-$(nproc)}
SECONDS_PER=${SECONDS_PER:-0.3}
START=$(date +%s)
LOG="$BUILD/gpu-check"
mkdir -p "$LOG"
step() { printf '\n== %s (%ds)\n' "$1" $(( $(date +%s) - START )); }

ARCH_ARGS=()
if [[ "${ALL_ARCHS:-0}" != 1 ]] && command -v nvidia-smi >/dev/null 2>&1; then
  CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
  [[ -n "$CC" ]] && ARCH_ARGS=("-DMANTISSA_CUDA_ARCHITECTURES=${CC}-real")
fi
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)

step "configure"
cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DMANTISSA_CUDA=ON -DMANTISSA_GUI=OFF -DCMAKE_BUILD_TYPE=Release \
  "${ARCH_ARGS[@]}" >"$LOG/configure.txt" 2>&1 || { tail -n 30 "$LOG/configure.txt"; exit 1; }

step "build"
TARGETS=(mantissa_cuda mantissa-cli test_gpu_equivalence test_gpu_training test_gpu_device_step bench_cuda
         test_cuda_format_support test_cuda_block_cache test_cuda_graph_policy test_cuda_loader test_cuda_convert)
cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" >"$LOG/build.txt" 2>&1 \
  || { grep -E "error|FAILED" "$LOG/build.txt" | head -n 40; exit 1; }
grep -c "warning" "$LOG/build.txt" | xargs -I{} echo "compiler warnings: {}"

step "devices"
"$BUILD/app/mantissa-cli" devices

step "suites"
export MANTISSA_CUDA_MODULE="$(cd "$BUILD" && pwd)/app/libmantissa_cuda.so"
GPU_RC=0
for t in test_gpu_equivalence test_gpu_training test_gpu_device_step; do
  timeout 300 "$BUILD/tests/gpu/$t" >"$LOG/$t.txt" 2>&1 || GPU_RC=1
  grep -E "^(FAIL|QINFO)" "$LOG/$t.txt" | head -n 20; grep -E "^SKIP" "$LOG/$t.txt" | head -n 3
  grep -E "^Totals" "$LOG/$t.txt" | sed "s/^/$t: /"
done
(cd "$BUILD" && ctest -R "test_cuda_" --output-on-failure --timeout 300) >"$LOG/ctest-host.txt" 2>&1
HOST_RC=$?
tail -n 4 "$LOG/ctest-host.txt"

step "benchmark"
"$BUILD/tests/bench/bench_cuda" --seconds "$SECONDS_PER" --csv "$LOG/bench.csv" | tee "$LOG/bench.txt"
if python3 -c "import torch" >/dev/null 2>&1; then
  python3 "$ROOT/tests/bench/cuda/torch_mlp.py" --seconds "$SECONDS_PER" >"$LOG/torch.csv" 2>"$LOG/torch.err" || true
  cat "$LOG/torch.err"
else
  echo "PyTorch is not installed here: no comparison"
  : >"$LOG/torch.csv"
fi

step "summary"
python3 - "$LOG" <<'PY'
import csv, os, re, sys
log = sys.argv[1]
print(f"{'suite':<24} {'passed':>6} {'failed':>6} {'skipped':>7}")
for t in ("test_gpu_equivalence", "test_gpu_training", "test_gpu_device_step"):
    text = open(os.path.join(log, t + ".txt"), errors="replace").read()
    m = re.search(r"Totals: (\d+) passed, (\d+) failed, (\d+) skipped", text)
    print(f"{t:<24} {m.group(1) if m else '?':>6} {m.group(2) if m else '?':>6} {m.group(3) if m else '?':>7}")
rows = {}
try:
    for r in csv.DictReader(open(os.path.join(log, "bench.csv"))):
        rows.setdefault((r["precision"], r["width"], r["batch"]), {})[r["path"] + ":" + r["variant"]] = float(r["samples_per_s"])
except (OSError, KeyError, ValueError):
    pass
torch = {}
try:
    for r in csv.DictReader(l for l in open(os.path.join(log, "torch.csv")) if not l.startswith("#")):
        torch[(r["precision"], r["width"], r["batch"])] = float(r["samples_per_s"])
except (OSError, KeyError, ValueError):
    pass
if rows:
    print(f"\n{'precision':<9} {'width':>5} {'batch':>6} {'engine':>10} {'graph':>10} {'torch':>10} {'graph/torch':>11} {'checks':>7} {'telem.':>7}")
    for (p, w, b), v in rows.items():
        g, e = v.get("graph:checks", 0), v.get("engine:checks+telemetry", 0)
        full, bare = v.get("graph:checks+telemetry", 0), v.get("graph:bare", 0)
        t = torch.get((p, w, b))
        ratio = f"{g / t:.2f}x" if t else "-"
        checks = f"{100 * (bare / g - 1):.1f}%" if g else "-"
        telem = f"{100 * (g / full - 1):.1f}%" if full else "-"
        print(f"{p:<9} {w:>5} {b:>6} {e:>10.0f} {g:>10.0f} {t if t else 0:>10.0f} {ratio:>11} {checks:>7} {telem:>7}")
    print("samples/s; graph = the asynchronous step with loss-scaling checks as a CUDA graph; torch = eager with "
          "autocast + GradScaler; aims: graph/torch >= 3x at widths 256/1024, >= 1.05x at 8192; checks, telem. <= 2%")
PY

SKIPS=$(cat "$LOG"/test_gpu_*.txt | grep -c "^SKIP")
printf '\nGPU suites: %s; host-logic suites: %s; skipped GPU test functions: %s; %ds in all\n' \
  "$([[ $GPU_RC == 0 ]] && echo passed || echo FAILED)" "$([[ $HOST_RC == 0 ]] && echo passed || echo FAILED)" \
  "$SKIPS" $(( $(date +%s) - START ))
[[ $GPU_RC == 0 && $HOST_RC == 0 ]]
