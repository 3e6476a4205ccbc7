"""Every boot's will-it-scale ops/s of a `patchperf-runner job -o DIR`
output, per side, with the side's boot-to-boot spread (population standard
deviation over the mean, in percent): what an A/A of these boots would call
noise. Shared by bench/turnaround.sh and bench/run-length.sh.

    python3 bench/job_boots.py DIR
"""

import json
import pathlib
import statistics
import sys


def ops_of(root: pathlib.Path, side: str) -> list[float]:
    ops = []
    for f in sorted((root / side).glob("*.json")):
        r = json.loads(f.read_text())
        for run in r if isinstance(r, list) else [r]:
            for m in run["metrics"]:
                if m["name"] == "will-it-scale.per_process_ops":
                    ops.append(m["value"])
    return ops


def main() -> None:
    root = pathlib.Path(sys.argv[1])
    for side in ("base", "patched"):
        ops = ops_of(root, side)
        spread = statistics.pstdev(ops) / statistics.mean(ops) * 100 if ops else float("nan")
        print(f"  {side:8} ops/s {' '.join(f'{o:.1f}' for o in ops)}  (±{spread:.3f}%)")


if __name__ == "__main__":
    main()
