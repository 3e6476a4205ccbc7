"""Prints a comparison's JSON (GET /api/v1/comparisons/{id}, on stdin) as
one Markdown table row per report: workload, the headline metric's means,
%change, 95% interval, δ with its source, runs a side and verdict."""

import json
import sys



def number(x):
    return "" if x is None else f"{x:,.0f}"


view = json.load(sys.stdin)
verdict = view.get("verdict") or {}
print(f"comparison {view['id']} ({view['kind']}): {verdict.get('overall', 'no verdict')}")
print("| workload | nr_task | base | patched | %change | 95% interval | δ | runs | verdict |")
print("|---|---|---|---|---|---|---|---|---|")
sources = []
for report in verdict.get("reports", []):
    header = report["header"]
    policy = report["policy"]
    delta = policy.get("calibrated_percent") or policy["min_change_percent"]
    metric = next(
        (m for m in report["metrics"] if m["name"] == "will-it-scale.per_process_ops"),
        None,
    )
    if metric is None:
        continue
    interval = metric.get("interval") or {}
    if "low" in interval:
        shown = f"{interval['low']:+.3f}% … {interval['high']:+.3f}%"
    else:
        shown = "unbounded"
    change = metric.get("change")
    print(
        f"| {header['workload']} | {header['nr_task']} "
        f"| {number(metric['base']['mean'])} | {number(metric['patched']['mean'])} "
        f"| {'' if change is None else f'{change:+.3f}%'} | {shown} | {delta:.2f}% "
        f"| {report['base_runs']}+{report['patched_runs']} | {metric['verdict']} |"
    )
    if header.get("delta_source"):
        sources.append(f"{header['workload']}: {header['delta_source']}")
for s in sources:
    print(f"  {s}")
