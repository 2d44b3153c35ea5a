#!/usr/bin/env python3
"""Rerun regret of two tuning runs of one device (DESIGN.md section 5): per key, run A's winner as
timed in run B (B's trial of that label: its final-pass median when it was a finalist there,
else its screening median) over B's winner time. Inputs: two `amax-tune export --format text`
dumps. Prints one line per key, then the geometric mean, the maximum and how many keys agree.
Target: <= 1.05x at every key, geometric mean <= 1.01x.

usage: rerun-regret.py A.jsonl B.jsonl
"""
import json
import math
import sys


def load(path):
    winners, trials = {}, {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if r.get("row") == "winner":
            winners[(r["dtype"], r["n"])] = (r["label"], r["median_us"])
        elif r.get("row") == "trial" and r.get("status") == "ok" and r.get("median_us"):
            trials[(r["dtype"], r["n"], r["label"])] = r["median_us"]
    return winners, trials


wa, _ = load(sys.argv[1])
wb, tb = load(sys.argv[2])
regrets, same = [], 0
print(f"{'dtype':<6}{'n':>11}  {'run A winner':<34}{'in B us':>9}  {'run B winner':<34}{'B us':>8}  regret")
for key in sorted(wa, key=lambda k: (k[0], k[1])):
    if key not in wb:
        continue
    la, _ = wa[key]
    lb, ub = wb[key]
    ta = tb.get((key[0], key[1], la))
    if ta is None:
        print(f"{key[0]:<6}{key[1]:>11}  {la:<34}{'-':>9}  {lb:<34}{ub:>8.2f}  (A's winner has no ok trial in B)")
        continue
    reg = ta / ub
    regrets.append(reg)
    same += la == lb
    print(f"{key[0]:<6}{key[1]:>11}  {la:<34}{ta:>9.2f}  {lb:<34}{ub:>8.2f}  {reg:.3f}x")
g = math.exp(sum(math.log(r) for r in regrets) / len(regrets)) if regrets else float("nan")
print(f"{len(regrets)} keys: same winner at {same}; regret geometric mean {g:.3f}x, max {max(regrets):.3f}x, "
      f"{sum(r <= 1.05 for r in regrets)} keys within 1.05x")
