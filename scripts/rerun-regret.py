#!/usr/bin/env python3
"""Rerun regret of two tuning runs of one device (DESIGN.md section 5): per key, run A's winner as
timed in run B (B's trial of that label: its final-pass median when it was a finalist there,
else its screening median) over B's winner time; the same for the multi-tensor groups (keyed by
dtype, tensor count, total and largest bytes). Inputs: two `amax-tune export --format text`
dumps. Prints one line per key and per group, then for each the geometric mean, the maximum and
how many agree. Target: <= 1.05x at every key, geometric mean <= 1.01x.

usage: rerun-regret.py A.jsonl B.jsonl
"""
import json
import math
import sys


def load(path):
    """{kind: (winners, trials)} for kind "key" (dtype, n) and "group" (dtype, tensors, total, largest)."""
    out = {"key": ({}, {}), "group": ({}, {})}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        row = r.get("row", "")
        kind = "group" if row.startswith("group_") else "key"
        key = (r.get("dtype"), r.get("tensors"), r.get("total_bytes"), r.get("largest_bytes")) if kind == "group" \
            else (r.get("dtype"), r.get("n"))
        winners, trials = out[kind]
        if row in ("winner", "group_winner"):
            winners[key] = (r["label"], r["median_us"])
        elif row in ("trial", "group_trial") and r.get("status") == "ok" and r.get("median_us"):
            trials[key + (r["label"],)] = r["median_us"]
    return out


def name(kind, key):
    return f"{key[0]} n={key[1]}" if kind == "key" else f"{key[1]}x{key[3]}B:{key[0]}"


a, b = load(sys.argv[1]), load(sys.argv[2])
for kind in ("key", "group"):
    wa, wb, tb = a[kind][0], b[kind][0], b[kind][1]
    common = [k for k in sorted(wa, key=lambda k: tuple(str(x) for x in k)) if k in wb]
    if not common:
        continue
    regrets, same = [], 0
    print(f"{kind + 's':<26}{'run A winner':<40}{'in B us':>9}  {'run B winner':<40}{'B us':>8}  regret")
    for key in common:
        la, _ = wa[key]
        lb, ub = wb[key]
        ta = tb.get(key + (la,))
        if ta is None:
            print(f"{name(kind, key):<26}{la:<40}{'-':>9}  {lb:<40}{ub:>8.2f}  (A's winner has no ok trial in B)")
            continue
        reg = ta / ub
        regrets.append(reg)
        same += la == lb
        print(f"{name(kind, key):<26}{la:<40}{ta:>9.2f}  {lb:<40}{ub:>8.2f}  {reg:.3f}x")
    if regrets:
        g = math.exp(sum(math.log(r) for r in regrets) / len(regrets))
        print(f"{len(regrets)} {kind}s: same winner at {same}; regret geometric mean {g:.3f}x, max {max(regrets):.3f}x, "
              f"{sum(r <= 1.05 for r in regrets)} {kind}s within 1.05x")
