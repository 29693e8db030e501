#!/usr/bin/env bash
# tests/gpu/profile.sh: where a training step's GPU time goes, kernel by kernel, for one
# bench_cuda configuration: Nsight Compute (ncu) times the first LAUNCHES kernels of the run (the
# engine path's warm-up and timed steps, which launch the same kernels as the graph), and the
# totals are printed per kernel name, largest first, as a share of all the time measured.
#   tests/gpu/profile.sh PRECISION WIDTH BATCH [LAUNCHES]      e.g. tests/gpu/profile.sh bf16 8192 16384
# Environment: BUILD_DIR (default build-gpu), as check.sh; NCU (default: ncu on the PATH, else
# the newest under /opt/nvidia/nsight-compute or /usr/local/cuda/bin).
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 3 ]] || { echo "usage: tests/gpu/profile.sh PRECISION WIDTH BATCH [LAUNCHES]" >&2; exit 2; }
BUILD=${BUILD_DIR:-build-gpu}
[[ -d "$BUILD/lib" ]] && export LD_LIBRARY_PATH="$(cd "$BUILD/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NCU=${NCU:-$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | tail -n 1)}
[[ -x "$NCU" ]] || { echo "profile.sh: ncu (Nsight Compute) was not found" >&2; exit 1; }
CSV=$(mktemp)
trap 'rm -f "$CSV"' EXIT
"$NCU" --clock-control none --metrics gpu__time_duration.sum --csv --launch-count "${4:-400}" \
  "$BUILD/tests/bench/bench_cuda" --precisions "$1" --widths "$2" --batches "$3" --seconds 0.01 >"$CSV" 2>/dev/null
python3 - "$CSV" "$1 width $2 batch $3" <<'PY'
import csv, sys
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith('"')]
totals, counts, unknown = {}, {}, set()
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = r["Kernel Name"].split("(")[0].split("<")[0]
    unit = r["Metric Unit"].strip()
    if unit not in scale and unit not in unknown:
        unknown.add(unit)
        print(f"profile.sh: ncu's time unit {unit!r} is not known here; read as nanoseconds")
    us = float(r["Metric Value"].replace(",", "")) * scale.get(unit, 1e-3)
    totals[name] = totals.get(name, 0.0) + us
    counts[name] = counts.get(name, 0) + 1
all_us = sum(totals.values()) or 1.0
print(f"kernel time by name, {sys.argv[2]} ({sum(counts.values())} launches, {all_us / 1e3:.2f} ms in all)")
print(f"{'kernel':<58} {'launches':>8} {'total ms':>9} {'share':>6} {'mean us':>8}")
for name, us in sorted(totals.items(), key=lambda kv: -kv[1])[:25]:
    print(f"{name[:58]:<58} {counts[name]:>8} {us / 1e3:>9.2f} {100 * us / all_us:>5.1f}% {us / counts[name]:>8.1f}")
PY
