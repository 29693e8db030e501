#!/usr/bin/env bash
# check.sh: fingerprint.sh's total against the one expected.txt records for this CPU (ctest's
# fingerprint test). Exit 0 when they agree, 1 when they differ (the per-configuration hashes
# are printed, to compare with a run of fingerprint.sh at the commit before), 77 (skipped) when
# this CPU has no recorded total.
#
#   tests/bench/fingerprint/check.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: check.sh BUILD_DIR}
device=$(MANTISSA_CPU_THREADS=1 OMP_NUM_THREADS=1 MANTISSA_CPU_BF16_MATMUL=1 "$build/app/mantissa-cli" devices --json |
         python3 -c 'import json,sys; print(next(b["device"] for b in json.load(sys.stdin)["backends"] if b["name"] == "cpu"))')
expected=$(awk -v d="$device" '!/^#/ && NF { total = $1; $1 = ""; sub(/^ +/, ""); if ($0 == d) print total }' \
           "$here/expected.txt")
if [[ -z "$expected" ]]; then
    echo "Fingerprint skipped: no total recorded for '$device' in tests/bench/fingerprint/expected.txt."
    exit 77
fi
out=$("$here/fingerprint.sh" "$build")
total=$(awk '$1 == "total" { print $2 }' <<< "$out")
if [[ "$total" != "$expected" ]]; then
    echo "$out"
    echo "The fingerprint total is $total; expected.txt records $expected for '$device': a result changed."
    exit 1
fi
echo "Fingerprint $total, as recorded for '$device'."
