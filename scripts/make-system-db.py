#!/usr/bin/env python3
"""Turns a full tuning dump (`amax-tune export --format text`) into the shipped system database text:
the header, every winner row and, per key, the trial row of its winner (its resource usage and
spread); the same for multi-tensor group keys (group_winner / group_trial rows); last the end line
with the row counts (text format 2, as `export` writes it: `import` refuses a dump without it).
The other trials stay in the tuner's own database; the shipped file stays reviewable.

A full dump of text format 2 must end with its end line and match its counts (a cut dump is
refused); one of format 1 (no end line) is read with a warning.

usage: make-system-db.py FULL.jsonl > data/system-db.jsonl
"""
import json
import sys

TAGS = ("winner", "trial", "group_winner", "group_trial")  # the end line's order, as `export` writes it

path = sys.argv[1]
rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
if not rows or rows[0].get("format") != "amax-tune-db":
    sys.exit(f"{path}: not an amax-tune text dump (first line {rows[0] if rows else 'missing'})")
header, body = rows[0], rows[1:]
end = body.pop() if body and "end" in body[-1] else None
if end is None:
    if header.get("format_version", 1) >= 2:
        sys.exit(f"{path}: the end line is missing after {len(body)} rows: the dump is cut short")
    print(f"{path}: text format version 1 (no end line): whether rows were lost cannot be checked", file=sys.stderr)
else:
    for tag in TAGS:
        held = sum(r.get("row") == tag for r in body)
        if end["rows"].get(tag, 0) != held:
            sys.exit(f"{path}: the end line states {end['rows'].get(tag, 0)} {tag} rows, but the dump holds {held}")
PROV = ("prov_device_name", "prov_cu_count", "prov_compiler", "prov_template_hash", "prov_tool_version")
KEY = {"winner": ("arch", "dtype", "n"), "trial": ("arch", "dtype", "n"),
       "group_winner": ("arch", "dtype", "tensors", "total_bytes", "largest_bytes"),
       "group_trial": ("arch", "dtype", "tensors", "total_bytes", "largest_bytes")}
ident = lambda r: (r["row"].startswith("group"),) + tuple(r[k] for k in KEY[r["row"]] + PROV)
winners = {ident(r): r["label"] for r in body if r["row"] in ("winner", "group_winner")}
kept = [r for r in body if r["row"] in ("winner", "group_winner") or winners.get(ident(r)) == r.get("label")]
out_header = {"format": "amax-tune-db", "format_version": 2, "schema_version": header["schema_version"]}
out_end = {"end": "amax-tune-db", "rows": {tag: sum(r["row"] == tag for r in kept) for tag in TAGS}}
for r in [out_header] + kept + [out_end]:
    print(json.dumps(r, separators=(",", ":"), ensure_ascii=False))
print(f"{len(winners)} winners kept of {len(body)} rows", file=sys.stderr)
