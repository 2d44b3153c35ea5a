#!/usr/bin/env python3
"""Turns a full tuning dump (`amax-tune export --format text`) into the shipped system database text:
the header, every winner row and, per key, the trial row of its winner (its resource usage and
spread); the same for multi-tensor group keys (group_winner / group_trial rows). The other trials
stay in the tuner's own database; the shipped file stays reviewable.

usage: make-system-db.py FULL.jsonl > data/system-db.jsonl
"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
header, body = rows[0], rows[1:]
if header.get("format") != "amax-tune-db":
    sys.exit(f"{sys.argv[1]}: not an amax-tune text dump (first line {header})")
PROV = ("prov_device_name", "prov_cu_count", "prov_compiler", "prov_template_hash", "prov_tool_version")
KEY = {"winner": ("arch", "dtype", "n"), "trial": ("arch", "dtype", "n"),
       "group_winner": ("arch", "dtype", "tensors", "total_bytes", "largest_bytes"),
       "group_trial": ("arch", "dtype", "tensors", "total_bytes", "largest_bytes")}
ident = lambda r: (r["row"].startswith("group"),) + tuple(r[k] for k in KEY[r["row"]] + PROV)
winners = {ident(r): r["label"] for r in body if r["row"] in ("winner", "group_winner")}
out = [header] + [r for r in body if r["row"] in ("winner", "group_winner") or winners.get(ident(r)) == r.get("label")]
for r in out:
    print(json.dumps(r, separators=(",", ":"), ensure_ascii=False))
print(f"{len(winners)} winners kept of {len(body)} rows", file=sys.stderr)
