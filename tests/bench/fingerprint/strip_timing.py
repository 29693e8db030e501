"""Reads the '== table' headers and JSON arrays that fingerprint.sh exports, drops the keys that
measure time (recursively) and the checkpoint events (they name a file in a temporary folder, and
say nothing about the results), and writes one canonical JSON object per line (sorted keys; floats
as Python's repr, which round-trips a double), so equal results hash equal."""
import json
import sys

TIMING = {"time_s", "samples_per_s", "step_time_ms", "elapsed_s"}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in TIMING}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


text = sys.stdin.read()
for chunk in text.split("== ")[1:]:
    name, _, body = chunk.partition("\n")
    print("== " + name)
    for row in json.loads(body or "[]"):
        if name == "events" and row.get("kind") == "checkpoint":
            continue
        print(json.dumps(strip(row), sort_keys=True))
