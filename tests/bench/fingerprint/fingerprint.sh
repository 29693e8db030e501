#!/usr/bin/env bash
# fingerprint.sh: a bit-exact fingerprint of what training records, for checking that a speed
# change to the CPU backend changes no result. Trains every configuration of configs.txt for a few
# dozen steps with `mantissa-cli train` (CPU backend, one matmul thread: results depend on the
# thread count; bf16 and fp8 operands on oneDNN's bf16 matmul, pinned with
# MANTISSA_CPU_BF16_MATMUL=1 rather than left to the backend's measurement, which may choose
# either path on a busy machine, and the two paths sum in different orders; where oneDNN has no
# bf16 matmul, as on AVX2, the FP32 path is taken and the run's device says so: compare totals
# from one machine, docs/numerics.md, "The bf16 matmul path, chosen by measurement"), exports
# every recorded table as JSON (17 significant digits: doubles round-trip), drops the columns
# that measure time (time_s, samples_per_s, step_time_ms, elapsed_s), and prints one SHA-256 per
# configuration and a total.
#
#   tests/bench/fingerprint/fingerprint.sh BUILD_DIR > before.txt      (record)
#   tests/bench/fingerprint/fingerprint.sh BUILD_DIR | diff before.txt -   (verify)
#
# Steps and layer rows cover losses, gradient norms, loss scales, overflows/skips, memory, and
# every per-layer statistic (amax, frac_zero/subnormal/nonfinite/underflow/lost updates, the
# exponent histogram); evaluations every 10 steps cover the weights.
set -euo pipefail
set -f  # values such as model.hidden=[1024] are not globs
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: fingerprint.sh BUILD_DIR}
cli=$build/app/mantissa-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MANTISSA_CPU_THREADS=1 OMP_NUM_THREADS=1 MANTISSA_CPU_BF16_MATMUL=1

base=(--config "$here/../../../resources/experiments/default.json"
      --set 'train.steps=36' --set 'train.eval_every=10' --set 'train.batch_size=64'
      --set 'backend="cpu"' --set 'precision.layers={}')

total=$(mktemp -p "$work")
while read -r name rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    db=$work/$name.sqlite
    args=()
    for kv in $rest; do args+=(--set "$kv"); done
    "$cli" train "${base[@]}" "${args[@]}" --name "$name" --db "$db" --json > "$work/$name.json"
    {
        for table in steps layer_steps evals events; do
            echo "== $table"
            "$cli" export 1 --db "$db" --format json --table "$table"
        done
    } | python3 "$here/strip_timing.py" > "$work/$name.tables"
    sum=$(sha256sum < "$work/$name.tables" | cut -c1-16)
    rows=$(grep -c '^{' "$work/$name.tables" || true)
    printf '%-24s %s  %6d rows\n' "$name" "$sum" "$rows" | tee -a "$total"
done < "$here/configs.txt"
printf '%-24s %s\n' total "$(sha256sum < "$total" | cut -c1-16)"
