#!/usr/bin/env python3
"""Reads every AMD code object of a kernel bundle back with llvm-readelf --notes (LLVM's own
reader, independent of the tuner's) and checks what the runtime relies on, per entry of index.json:

- amdhsa.target is exactly "amdgcn-amd-amdhsa--" + the entry's arch (the full target ID);
- the entry's kernel is in it (and its "_finish" kernel for a two_stage label), nothing else;
- every kernel: .wavefront_size 64, .max_flat_workgroup_size = the label's threads (the launch
  bound), no spills (.vgpr_spill_count, .sgpr_spill_count 0), no scratch
  (.private_segment_fixed_size 0, .uses_dynamic_stack false), registers reported (.vgpr_count,
  .sgpr_count > 0) and within what one block per CU needs (VGPRs + AGPRs rounded up to 8, times the
  waves per SIMD, within the 512-entry file; SGPRs within the 102 of gfx9).

usage: check_bundle_notes.py BUNDLE_DIR [--require ARCH,...] [--report REPORT]
  --require: these arches (target IDs) must have entries;
  --report: kernels.bundle.txt of the build; every arch it lists as built ("ARCH: N kernels ...")
            or copied must have entries.
Prints one line per arch (entries, VGPR and SGPR ranges, bytes, compiler). Exit 0 when every check
holds, 1 naming each failure, 2 for bad arguments, 77 (CTest's skip) without llvm-readelf.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys


def readelf():
    """The newest llvm-readelf on PATH (Debian installs llvm-readelf-NN)."""
    names = ["llvm-readelf"] + [f"llvm-readelf-{v}" for v in range(30, 13, -1)]
    found = [n for n in names if shutil.which(n)]
    versioned = [n for n in found if n != "llvm-readelf"]
    return versioned[0] if versioned else (found[0] if found else None)


def parse_notes(text):
    """(target, {kernel name: {field: value}}) from llvm-readelf --notes' YAML of the metadata."""
    target = None
    kernels, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^amdhsa\.target:\s+(\S+)", line)
        if m:
            target = m.group(1).strip("'\"")
            continue
        m = re.match(r"^  - \.(\w+):\s*(.*)$", line)  # first field of a kernel
        if m:
            cur = {m.group(1): m.group(2).strip()}
            kernels[id(cur)] = cur
            continue
        m = re.match(r"^    \.(\w+):\s*(.*)$", line)  # a field of the current kernel
        if m and cur is not None:
            cur[m.group(1)] = m.group(2).strip()
    return target, {k.get("name", "?"): k for k in kernels.values()}


def main(argv):
    args = argv[1:]
    if not args:
        print("usage: check_bundle_notes.py BUNDLE_DIR [--require ARCH,...] [--report REPORT]", file=sys.stderr)
        return 2
    bundle, require, report = args[0], [], None
    i = 1
    while i < len(args):
        if args[i] == "--require" and i + 1 < len(args):
            require += [a for a in args[i + 1].split(",") if a]
            i += 2
        elif args[i] == "--report" and i + 1 < len(args):
            report = args[i + 1]
            i += 2
        else:
            print(f"check_bundle_notes: unknown argument '{args[i]}'", file=sys.stderr)
            return 2
    tool = readelf()
    if not tool:
        print("check_bundle_notes: skipped: no llvm-readelf on PATH (Debian: apt-get install llvm)")
        return 77
    index_path = os.path.join(bundle, "index.json")
    with open(index_path) as f:
        index = json.load(f)
    if report:
        with open(report) as f:
            for line in f:
                m = re.match(r"^(gfx\S+): \d+ kernels", line)
                if m:
                    require.append(m.group(1))
    failures = []
    per_arch = {}
    amd = [e for e in index["entries"] if e["arch"].startswith("gfx")]
    for e in amd:
        what = f"{e['kernel']} ({e['arch']}, {e['file']})"
        path = os.path.join(bundle, e["file"])
        out = subprocess.run([tool, "--notes", path], capture_output=True, text=True)
        if out.returncode != 0:
            failures.append(f"{what}: {tool} --notes failed: {out.stderr.strip()}")
            continue
        target, kernels = parse_notes(out.stdout)
        want_target = "amdgcn-amd-amdhsa--" + e["arch"]
        if target != want_target:
            failures.append(f"{what}: amdhsa.target is {target}, expected {want_target}")
        m = re.search(r"\.t(\d+)\.", e["label"] + ".")
        threads = int(m.group(1)) if m else None
        if threads is not None and e["label"].startswith("first_reset_warp."):
            threads += 64  # its block holds one more wave (the ticket wave) than its loading threads
        want = {e["kernel"]} | ({e["kernel"] + "_finish"} if e["label"].startswith("two_stage.") else set())
        if set(kernels) != want:
            failures.append(f"{what}: kernels {sorted(kernels)}, expected {sorted(want)}")
        st = per_arch.setdefault(e["arch"], {"n": 0, "bytes": 0, "vgpr": [], "sgpr": [], "compiler": set()})
        st["n"] += 1
        st["bytes"] += e["size"]
        st["compiler"].add(e["compiler"])
        for name, k in kernels.items():
            def num(field):
                try:
                    return int(k.get(field, ""))
                except ValueError:
                    failures.append(f"{what}: {name}: .{field} missing or not a number ({k.get(field)!r})")
                    return -1
            if num("wavefront_size") != 64:
                failures.append(f"{what}: {name}: .wavefront_size {k.get('wavefront_size')}, expected 64")
            if threads is not None and num("max_flat_workgroup_size") != threads:
                failures.append(f"{what}: {name}: launch bound .max_flat_workgroup_size "
                                f"{k.get('max_flat_workgroup_size')}, expected the label's block of {threads}")
            for field in ("vgpr_spill_count", "sgpr_spill_count", "private_segment_fixed_size"):
                if num(field) != 0:
                    failures.append(f"{what}: {name}: .{field} {k.get(field)}, expected 0 (no spills, no scratch)")
            if k.get("uses_dynamic_stack", "false") != "false":
                failures.append(f"{what}: {name}: .uses_dynamic_stack {k['uses_dynamic_stack']}")
            vgpr, sgpr, agpr = num("vgpr_count"), num("sgpr_count"), int(k.get("agpr_count", "0") or 0)
            if vgpr <= 0 or sgpr <= 0:
                failures.append(f"{what}: {name}: registers not reported (.vgpr_count {vgpr}, .sgpr_count {sgpr})")
            block = threads or 1024
            waves_per_simd = math.ceil(block / 64 / 4)
            if math.ceil((vgpr + agpr) / 8) * 8 * waves_per_simd > 512:
                failures.append(f"{what}: {name}: {vgpr} VGPRs + {agpr} AGPRs x {waves_per_simd} waves per SIMD "
                                f"exceed the 512-entry register file (one {block}-thread block per CU)")
            if sgpr > 102:
                failures.append(f"{what}: {name}: {sgpr} SGPRs exceed gfx9's 102")
            st["vgpr"].append(vgpr)
            st["sgpr"].append(sgpr)
    for a in sorted(set(require)):
        if a not in per_arch:
            failures.append(f"{a}: no entries in {index_path}")
    for a, st in sorted(per_arch.items()):
        print(f"[ notes ] {a}: {st['n']} code objects read back with {tool}, VGPRs {min(st['vgpr'])}-{max(st['vgpr'])}, "
              f"SGPRs {min(st['sgpr'])}-{max(st['sgpr'])}, wave 64, no spills, no scratch, {st['bytes']} bytes, "
              f"{', '.join(sorted(st['compiler']))}")
    if not amd:
        print(f"[ notes ] {index_path}: no AMD entries")
    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
