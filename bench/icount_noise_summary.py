"""Tables of bench/icount-noise.sh. `--table FILE`: one comparison's JSON
(GET /api/v1/comparisons/{id}) as a Markdown table, one row per workload:
means, %change, 95% interval, each side's boot-to-boot spread ((max − min)
÷ mean over its boots), runs a side, δ and verdict. With files named
KIND-Ns[-k].json (aa-2s-1, seed003-5s, layout-2s): per run length and
workload, the largest A/A bound and spread, and every unrelated A/B's
change, interval and verdict."""

import json
import os
import sys
from collections import defaultdict

OPS = "will-it-scale.per_process_ops"


def rows(view):
    """(workload, metric, report) of each report's headline metric."""
    for report in (view.get("verdict") or {}).get("reports", []):
        metric = next((m for m in report["metrics"] if m["name"] == OPS), None)
        if metric is not None:
            yield report["header"]["workload"], metric, report


def spread(values):
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    return 100.0 * (max(values) - min(values)) / mean


def pct(x, digits=3):
    return "" if x is None else f"{x:+.{digits}f}%"


def interval(metric):
    i = metric.get("interval") or {}
    return (i["low"], i["high"]) if "low" in i else None


def verdict(metric):
    if metric.get("real_below_delta"):
        return "real, below δ"
    return metric["verdict"]


def table(path):
    view = json.load(open(path))
    overall = (view.get("verdict") or {}).get("overall", "no verdict")
    print(f"comparison {view['id']} ({view['kind']}): {overall}")
    print("| workload | base | patched | %change | 95% interval | spread base / patched | runs | δ | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for workload, m, report in rows(view):
        policy = report["policy"]
        delta = policy.get("calibrated_percent") or policy["min_change_percent"]
        i = interval(m)
        shown = f"{i[0]:+.3f} … {i[1]:+.3f}%" if i else "unbounded"
        sb, sp = spread(m["base"]["values"]), spread(m["patched"]["values"])
        print(
            f"| {workload} | {m['base']['mean'] or 0:,.0f} | {m['patched']['mean'] or 0:,.0f} "
            f"| {pct(m.get('change'))} | {shown} "
            f"| {'' if sb is None else f'{sb:.3f}'}% / {'' if sp is None else f'{sp:.3f}'}% "
            f"| {report['base_runs']}+{report['patched_runs']} | {delta:.2f}% | {verdict(m)} |"
        )


def summary(paths):
    # (seconds, workload) -> lists
    aa_bound = defaultdict(list)
    aa_spread = defaultdict(list)
    ab = defaultdict(list)
    kinds = set()
    for path in paths:
        name = os.path.basename(path)[: -len(".json")]
        parts = name.split("-")
        kind, seconds = parts[0], parts[1]
        view = json.load(open(path))
        for workload, m, report in rows(view):
            i = interval(m)
            spreads = [s for s in (spread(m["base"]["values"]), spread(m["patched"]["values"])) if s is not None]
            if kind == "aa":
                if i:
                    aa_bound[(seconds, workload)].append(max(abs(i[0]), abs(i[1])))
                aa_spread[(seconds, workload)].extend(spreads)
            else:
                kinds.add(kind)
                runs = f"{report['base_runs']}+{report['patched_runs']}"
                shown = f"{pct(m.get('change'))} [{i[0]:+.3f}, {i[1]:+.3f}] {verdict(m)} ({runs})" if i else f"{pct(m.get('change'))} unbounded {verdict(m)}"
                ab[(seconds, workload)].append((kind, shown, max(spreads) if spreads else None))
    keys = sorted(set(aa_bound) | set(ab), key=lambda k: (int(k[0].rstrip("s")), k[1]))
    print("| run | workload | A/A bound (largest) | A/A spread (largest) | unrelated A/B: change [95% interval] verdict (runs), largest spread |")
    print("|---|---|---|---|---|")
    for key in keys:
        bound = max(aa_bound[key]) if aa_bound[key] else None
        s = max(aa_spread[key]) if aa_spread[key] else None
        others = "; ".join(
            f"{kind}: {shown}, spread {'' if sp is None else f'{sp:.3f}'}%" for kind, shown, sp in ab[key]
        )
        print(
            f"| {key[0]} | {key[1]} | {'' if bound is None else f'±{bound:.3f}%'} "
            f"| {'' if s is None else f'{s:.3f}%'} | {others} |"
        )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        summary(sys.argv[1:])
