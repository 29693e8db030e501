#!/usr/bin/env bash
# tests/gpu/check.sh: the CUDA backend's check on a machine with a GPU, in under 8 minutes:
#   1. configure (CUDA ON, no GUI, Release; GPU code for this machine's GPU only, unless
#      ALL_ARCHS=1 builds every shipped target) and build the module and the GPU targets;
#      PREBUILT=1 skips this and runs what tests/gpu/pack.sh built elsewhere (its lib/ first on
#      the library path): for a GPU machine without Debian's Qt, oneDNN and SQLite packages;
#   2. `mantissa-cli devices`;
#   3. the GPU suites and the CPU-run suites of the module's host logic; a suite that dies
#      (a crash, a hang) is run again one test function at a time, to name the one that did;
#   4. the GPU benchmark (bench_cuda) and, when PyTorch is installed, the same MLP in PyTorch;
#   5. a short table: every suite's result, then throughput per precision against PyTorch.
# Environment: BUILD_DIR (default build-gpu-check, or build-gpu with PREBUILT=1), JOBS (default:
# all cores), SECONDS_PER (the benchmark's seconds per measurement, default 0.3), ALL_ARCHS=1,
# SANITIZE=1 (the equivalence suite under compute-sanitizer memcheck too), BENCH=0 (no benchmark).
# Exit status: 0 when every suite passed; the skipped GPU test functions are counted in the last line
# (on a GPU the only expected skips are formats the GPU refuses).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PREBUILT=${PREBUILT:-0}
if [[ "$PREBUILT" == 1 ]]; then BUILD=${BUILD_DIR:-build-gpu}; else BUILD=${BUILD_DIR:-build-gpu-check}; fi
JOBS=${JOBS:-$(nproc)}
SECONDS_PER=${SECONDS_PER:-0.3}
START=$(date +%s)
LOG="$BUILD/gpu-check"
mkdir -p "$LOG"
step() { printf '\n== %s (%ds)\n' "$1" $(( $(date +%s) - START )); }
# shellcheck source=tests/gpu/targets.sh
source "$ROOT/tests/gpu/targets.sh"

if [[ "$PREBUILT" == 1 ]]; then
  [[ -x "$BUILD/app/mantissa-cli" ]] || { echo "PREBUILT=1 but $BUILD/app/mantissa-cli is missing: unpack tests/gpu/pack.sh's archive first"; exit 1; }
  [[ -d "$BUILD/lib" ]] && export LD_LIBRARY_PATH="$(cd "$BUILD/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
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
  cmake --build "$BUILD" -j "$JOBS" --target "${GPU_CHECK_TARGETS[@]}" >"$LOG/build.txt" 2>&1 \
    || { grep -E "error|FAILED" "$LOG/build.txt" | head -n 40; exit 1; }
  grep -c "warning" "$LOG/build.txt" | xargs -I{} echo "compiler warnings: {}"
fi

# cuBLASLt: the module's run path names the build machine's toolkit; elsewhere look where CUDA
# toolkits and PyTorch's wheels keep it.
if ! ldd "$BUILD/app/libmantissa_cuda.so" | grep -q "libcublasLt.so.* => /"; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
           $(python3 -c "import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], 'lib'))" 2>/dev/null); do
    if ls "$d"/libcublasLt.so.* >/dev/null 2>&1; then export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break; fi
  done
fi

step "devices"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
"$BUILD/app/mantissa-cli" devices

# run_suite NAME PATH: the whole suite; if it dies without Qt Test's totals, each function alone.
run_suite() {
  local name=$1 exe=$2 out="$LOG/$1.txt"
  timeout "${SUITE_TIMEOUT:-240}" "$exe" >"$out" 2>&1
  local rc=$?
  if ! grep -q "^Totals" "$out"; then
    echo "$name died (exit $rc) without its totals; its last lines:"
    tail -n 8 "$out"
    echo "-- $name, one function at a time:"
    local passed=0 failed=0 skipped=0 f frc
    for f in $("$exe" -functions 2>/dev/null | sed 's/()$//'); do
      timeout 90 "$exe" "$f" >"$LOG/$name.$f.txt" 2>&1
      frc=$?
      if grep -q "^Totals: [0-9]* passed, 0 failed" "$LOG/$name.$f.txt"; then
        grep -q "^SKIP" "$LOG/$name.$f.txt" && skipped=$((skipped + 1)) || passed=$((passed + 1))
      else
        failed=$((failed + 1))
        echo "   $f: exit $frc"; grep -E "^(FAIL|QFATAL|QWARN)|Loc:" "$LOG/$name.$f.txt" | head -n 6 | sed 's/^/      /'
        grep -q "^Totals" "$LOG/$name.$f.txt" || tail -n 4 "$LOG/$name.$f.txt" | sed 's/^/      /'
      fi
    done
    echo "Totals: $passed passed, $failed failed, $skipped skipped (functions run one at a time)" >>"$out"
    rc=1
  fi
  grep -E "^(FAIL|QINFO)" "$out" | head -n 20
  grep -E "^SKIP" "$out" | head -n 3
  grep -E "^Totals" "$out" | tail -n 1 | sed "s/^/$name: /"
  return $rc
}

step "suites"
export MANTISSA_CUDA_MODULE="$(cd "$BUILD" && pwd)/app/libmantissa_cuda.so"
GPU_RC=0
for t in "${GPU_SUITES[@]}"; do run_suite "$t" "$BUILD/tests/gpu/$t" || GPU_RC=1; done
HOST_RC=0
for t in "${HOST_SUITES[@]}"; do run_suite "$t" "$BUILD/tests/engine/cuda_host/$t" >/dev/null || { HOST_RC=1; echo "$t FAILED"; tail -n 20 "$LOG/$t.txt"; }; done
echo "host-logic suites: $([[ $HOST_RC == 0 ]] && echo "all ${#HOST_SUITES[@]} passed" || echo FAILED)"
if [[ "${SANITIZE:-0}" == 1 ]] && command -v compute-sanitizer >/dev/null 2>&1; then
  step "compute-sanitizer memcheck"
  timeout 300 compute-sanitizer --tool memcheck --print-limit 20 "$BUILD/tests/gpu/test_gpu_equivalence" \
    >"$LOG/memcheck.txt" 2>&1
  grep -E "ERROR SUMMARY|^Totals|Invalid|out of bounds" "$LOG/memcheck.txt" | head -n 12
fi

if [[ "${BENCH:-1}" == 0 ]]; then
  printf '\nGPU suites: %s; host-logic suites: %s; %ds in all (no benchmark)\n' \
    "$([[ $GPU_RC == 0 ]] && echo passed || echo FAILED)" "$([[ $HOST_RC == 0 ]] && echo passed || echo FAILED)" \
    $(( $(date +%s) - START ))
  [[ $GPU_RC == 0 && $HOST_RC == 0 ]]; exit
fi

step "benchmark"
timeout "${BENCH_TIMEOUT:-300}" "$BUILD/tests/bench/bench_cuda" --seconds "$SECONDS_PER" ${BENCH_ARGS:-} --csv "$LOG/bench.csv" 2>&1 | tee "$LOG/bench.txt"
if python3 -c "import torch" >/dev/null 2>&1; then
  timeout "${BENCH_TIMEOUT:-300}" python3 "$ROOT/tests/bench/cuda/torch_mlp.py" --seconds "$SECONDS_PER" ${BENCH_ARGS:-} >"$LOG/torch.csv" 2>"$LOG/torch.err" || true
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
for t in ("test_gpu_equivalence", "test_gpu_conv", "test_gpu_transformer_ops", "test_gpu_training", "test_gpu_device_step"):  # GPU_SUITES
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
    print(f"\n{'precision':<9} {'width':>5} {'batch':>6} {'engine':>10} {'graph':>10} {'trainer':>10} {'torch':>10} {'graph/torch':>11} {'trainer/torch':>13} {'checks':>7} {'telem.':>7}")
    for (p, w, b), v in rows.items():
        g, e = v.get("graph:checks", 0), v.get("engine:checks+telemetry", 0)
        full, bare = v.get("graph:checks+telemetry", 0), v.get("graph:bare", 0)
        t = torch.get((p, w, b))
        tr = v.get("trainer-pipelined:checks+telemetry", 0)
        ratio = f"{g / t:.2f}x" if t else "-"
        tratio = f"{tr / t:.2f}x" if t and tr else "-"
        checks = f"{100 * (bare / g - 1):.1f}%" if g else "-"
        telem = f"{100 * (g / full - 1):.1f}%" if full else "-"
        print(f"{p:<9} {w:>5} {b:>6} {e:>10.0f} {g:>10.0f} {tr:>10.0f} {t if t else 0:>10.0f} {ratio:>11} {tratio:>13} {checks:>7} {telem:>7}")
    print("samples/s; graph = the asynchronous step with loss-scaling checks as a CUDA graph; trainer = the Trainer's\n"
          "pipelined step (checks and telemetry on); torch = eager with autocast + GradScaler; aims: graph/torch >= 3x\n"
          "at widths 256/1024, >= 1.05x at 8192; checks, telem. <= 2%")
PY

SKIPS=$(for t in "${GPU_SUITES[@]}"; do cat "$LOG/$t.txt"; done | grep -c "^SKIP")
printf '\nGPU suites: %s; host-logic suites: %s; skipped GPU test functions: %s; %ds in all\n' \
  "$([[ $GPU_RC == 0 ]] && echo passed || echo FAILED)" "$([[ $HOST_RC == 0 ]] && echo passed || echo FAILED)" \
  "$SKIPS" $(( $(date +%s) - START ))
[[ $GPU_RC == 0 && $HOST_RC == 0 ]]
