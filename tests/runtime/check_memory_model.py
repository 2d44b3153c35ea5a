#!/usr/bin/env python3
"""Audits the cross-block synchronisation of AMD code objects against LLVM's memory model: disassembles
each kernel with LLVM's AMDGPU disassembler (llvm-objdump) and checks, on every path of the kernel's
control-flow graph, the instruction sequences that LLVM's AMDGPUUsage prescribes at agent scope
(section "Memory Model GFX942", table "AMDHSA Memory Model Code Sequences GFX940, GFX941, GFX942",
later "... GFX942"; gfx950 follows the same model):

  release (atomicrmw acq_rel / store atomic release, agent, global):
      buffer_wbl2 sc1            the L2 write-back (each XCD of an MI300X has its own L2)
      s_waitcnt vmcnt(0) & lgkmcnt(0)
      the releasing atomic / store (a store carries sc1)
  acquire (atomicrmw acq_rel / load atomic acquire, agent, global):
      the acquiring atomic / load (a load carries sc1)
      s_waitcnt vmcnt(0)
      buffer_inv sc1             before any later global load or atomic

The kernels' roles (templates/amax_kernels.h, amax_multi_kernels.h, prelude_hip.h), by strategy:
  one_pass, multi   publish: plain stores of the block maximum / heads and records; release and
                    acquire: amax_arrive, the returning global_atomic_add (sc0); read: the last block's
                    volatile loads (sc0 sc1) of the other blocks' words, after a barrier
  self_reset        publish: global_atomic_umax of the block maximum; release and acquire: amax_arrive;
                    read: global_atomic_swap (sc0) of the accumulator
  atomic + scale    publish: global_atomic_umax into the output; release and acquire: amax_arrive;
                    read: the returning global_atomic_umax (sc0) of the final amax
  first_reset(_warp) publish: the first block's zeroing store of the output; release:
                    amax_store_release, a global_store_dword with sc1; acquire: amax_load_acquire, the
                    polled global_load_dword with sc1; ordered after it: global_atomic_umax into the
                    output
  two_stage, atomic the kernel boundary publishes (no cross-block step inside a launch): the audit
                    checks that no kernel of theirs counts arrivals (no returning global_atomic_add)
A "read" must come after a completed acquire on every path: directly, or (one_pass, multi) after an
s_barrier that a wave may reach with the acquire completed. The analysis is per wave, over the
kernel's branches (s_cbranch_execz skips included), so a sequence the compiler moved into another
basic block is still found, and one missing on any path is reported. Each kernel's descriptor must
have .amdhsa_tg_split 0: the barrier-then-read of one_pass and multi relies on the block's waves
sharing one CU (in tgsplit mode a workgroup acquire would need buffer_inv sc0 at the barrier).

usage: check_memory_model.py BUNDLE_DIR [--report REPORT] [--show]
       check_memory_model.py --object FILE --arch ARCH --label LABEL [--show]
  BUNDLE_DIR: every AMD entry of index.json (strategy and epilogue from its label);
  --report:   kernels.bundle.txt of the build: every AMD arch it lists as built or copied must have
              entries (as check_bundle_notes.py);
  --object:   one code object (the control test's), with its arch and label ("one_pass.t512.v4.u2");
  --show:     print each release and acquire sequence found, with the lines around it.
Disassemblers: the first that knows the processor (gfx942: LLVM 17+, gfx950: LLVM 20+) of
AMAX_LLVM_OBJDUMP (a command), the ROCm 5.7 prefix's LLVM 17 (AMAX_ROCM57, default .rocm/trixie of
this clone, run through its loader), the ROCm 6.4 sid root's LLVM 21 (AMAX_ROCM_SID, default
.rocm/sid; or /usr/lib/llvm-21 when running inside it), ROCm's own ($ROCM_PATH, default /opt/rocm:
llvm/bin/llvm-objdump), llvm-objdump-NN on PATH.
Exit 0 when every check holds, 1 naming each failure with the disassembly lines, 2 for bad
arguments, 77 (CTest's skip) when no disassembler knows an arch present.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The oldest LLVM whose AMDGPU disassembler knows each processor.
MIN_LLVM = {"gfx90a": 13, "gfx942": 17, "gfx950": 20}
AUDITED = ("gfx942", "gfx950")  # the targets whose L2 is per XCD: the model of this audit


# ---------------------------------------------------------------- disassemblers
def objdump_candidates():
    """[(command prefix, LLVM major, description)] in order of preference."""
    out = []
    env = os.environ.get("AMAX_LLVM_OBJDUMP")
    if env:
        out.append((env.split(), None, env))
    t = os.path.realpath(os.environ.get("AMAX_ROCM57", os.path.join(REPO, ".rocm", "trixie")))
    tool, loader = f"{t}/usr/lib/llvm-17/bin/llvm-objdump", f"{t}/usr/lib64/ld-linux-x86-64.so.2"
    if os.path.exists(tool) and os.path.exists(loader):
        out.append(([loader, "--library-path", f"{t}/usr/lib/x86_64-linux-gnu", tool], 17, f"{tool} (ROCm 5.7 prefix)"))
    s = os.path.realpath(os.environ.get("AMAX_ROCM_SID", os.path.join(REPO, ".rocm", "sid")))
    for root, how in ((s, "ROCm 6.4 sid root"), ("/", "this system")):
        for v in range(30, 19, -1):
            tool = f"{root.rstrip('/')}/usr/lib/llvm-{v}/bin/llvm-objdump"
            loader = f"{root.rstrip('/')}/usr/lib64/ld-linux-x86-64.so.2"
            if not os.path.exists(tool):
                continue
            if root == "/":
                out.append(([tool], v, f"{tool} ({how})"))
            elif os.path.exists(loader):
                libs = f"{root}/usr/lib/x86_64-linux-gnu:{root}/usr/lib/llvm-{v}/lib"
                out.append(([loader, "--library-path", libs, tool], v, f"{tool} ({how})"))
            break
    rocm = os.path.join(os.environ.get("ROCM_PATH", "/opt/rocm"), "llvm", "bin", "llvm-objdump")
    if os.path.exists(rocm):
        out.append(([rocm], None, f"{rocm} (ROCm)"))
    for v in range(30, 16, -1):
        p = shutil.which(f"llvm-objdump-{v}")
        if p:
            out.append(([p], v, p))
    return out


def llvm_major(cmd):
    r = subprocess.run(cmd + ["--version"], capture_output=True, text=True)
    m = re.search(r"LLVM version (\d+)", r.stdout)
    return int(m.group(1)) if m else None


_chosen = {}


def objdump_for(processor):
    """(command prefix, description) of the preferred disassembler that knows `processor`, or None."""
    if processor not in _chosen:
        _chosen[processor] = None
        for cmd, major, desc in objdump_candidates():
            major = major or llvm_major(cmd)
            if major and major >= MIN_LLVM.get(processor, 99):
                _chosen[processor] = (cmd, f"{desc}, LLVM {major}")
                break
    return _chosen[processor]


# ---------------------------------------------------------------- parsing
class Insn:
    __slots__ = ("addr", "op", "args", "text", "flags", "target")

    def __init__(self, addr, op, args, text):
        self.addr, self.op, self.args, self.text = addr, op, args, text
        self.flags = set(re.findall(r"\b(sc0|sc1|nt|glc|slc|dlc)\b", args))
        self.target = None


def parse_disassembly(text):
    """{kernel: [Insn]}, {kernel: {descriptor field: value}} from llvm-objdump -D of .text and .rodata."""
    kernels, descr, cur, kd = {}, {}, None, None
    for line in text.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if m:
            name = m.group(1)
            cur = kernels.setdefault(name, []) if not name.endswith(".kd") else None
            continue
        m = re.match(r"^\s*\.amdhsa_kernel (\S+)", line)
        if m:
            kd = descr.setdefault(m.group(1), {})
            continue
        m = re.match(r"^\s*\.(amdhsa_\w+) (\S+)", line)
        if m and kd is not None:
            kd[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^\s+([a-z_][a-z0-9_.]*)\s*(.*?)\s*//\s*([0-9A-Fa-f]+):", line)
        if m and cur is not None:
            op, args = m.group(1), m.group(2)
            insn = Insn(int(m.group(3), 16), op, args, f"{op} {args}".strip())
            if op == "s_branch" or op.startswith("s_cbranch_"):
                imm = int(args.split()[0], 0) & 0xFFFF
                insn.target = insn.addr + 4 + 4 * (imm - 0x10000 if imm & 0x8000 else imm)
            cur.append(insn)
    return kernels, descr


def first_lane_region(insns, i):
    """True when the s_cbranch_execz at i skips a region of the first active lane only, the AMDGPU
    atomic optimizer's idiom: v_mbcnt_lo/hi of a copy of exec, v_cmp_eq_u32 C, 0, vN, s_and_saveexec_b64
    _, C. A wave with any lane active enters it, so its skip edge is not a path of a working wave."""
    if i < 4 or insns[i - 1].op != "s_and_saveexec_b64":
        return False
    cond = insns[i - 1].args.split(",")[1].strip()
    window = insns[max(0, i - 12):i - 1]
    cmp = [x for x in window if x.op.startswith("v_cmp_eq_u32") and x.args.split(",")[0].strip() == cond]
    if not cmp:
        return False
    ops = [a.strip() for a in cmp[-1].args.split(",")]
    lane = ops[2] if ops[1] == "0" else ops[1] if ops[2] == "0" else None
    hi = [x for x in window if x.op == "v_mbcnt_hi_u32_b32" and x.args.split(",")[0].strip() == lane]
    lo = [x for x in window if x.op == "v_mbcnt_lo_u32_b32"]
    if not hi or not lo:
        return False
    mask = lo[-1].args.split(",")[1].strip()  # exec_lo, or the low half of a copy of exec
    if mask == "exec_lo":
        return True
    m = re.fullmatch(r"s(\d+)", mask)
    copy = f"s[{m.group(1)}:{int(m.group(1)) + 1}],exec" if m else None
    return any(x.op == "s_mov_b64" and x.args.replace(" ", "") == copy for x in insns[max(0, i - 24):i])


def successors(insns):
    at = {x.addr: i for i, x in enumerate(insns)}
    succ = []
    for i, x in enumerate(insns):
        nxt = [i + 1] if i + 1 < len(insns) else []
        if x.op == "s_branch":
            succ.append([at[x.target]])
        elif x.op == "s_cbranch_execz" and first_lane_region(insns, i):
            succ.append(nxt)
        elif x.op.startswith("s_cbranch_"):
            succ.append(([at[x.target]] if x.target in at else []) + nxt)
        elif x.op in ("s_endpgm", "s_trap", "s_setpc_b64"):
            succ.append([])
        else:
            succ.append(nxt)
    return succ


def is_vmem(x):
    return x.op.startswith(("global_", "flat_", "buffer_load", "buffer_store", "buffer_atomic", "scratch_"))


def is_vmem_write(x):  # stores and atomics to global memory (scratch is private)
    return x.op.startswith(("global_store", "flat_store", "buffer_store", "global_atomic", "flat_atomic",
                            "buffer_atomic"))


def is_vmem_read(x):  # loads and atomics from global memory
    return x.op.startswith(("global_load", "flat_load", "buffer_load", "global_atomic", "flat_atomic",
                            "buffer_atomic"))


def waitcnt(x):
    """(vmcnt, lgkmcnt) waited for by an s_waitcnt (None: that counter is not waited for)."""
    a = x.args
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", a.strip()):
        v = int(a.strip(), 0) & 0xFFFF
        return (v & 0xF) | ((v >> 14) & 0x3) << 4, (v >> 8) & 0xF
    vm = re.search(r"vmcnt\((\d+)\)", a)
    lg = re.search(r"lgkmcnt\((\d+)\)", a)
    return (int(vm.group(1)) if vm else None), (int(lg.group(1)) if lg else None)


# ---------------------------------------------------------------- roles per strategy
def returning(x):
    return "sc0" in x.flags or "glc" in x.flags


def roles(strategy, scale):
    """(release ops, acquire ops, reads) as predicates on instructions, and a description of each."""
    arrive = lambda x: x.op in ("global_atomic_add", "flat_atomic_add") and returning(x)
    if strategy in ("one_pass", "multi"):
        return (arrive, arrive, lambda x: is_vmem_read(x) and x.op.startswith(("global_load", "flat_load"))
                and {"sc0", "sc1"} <= x.flags,
                "amax_arrive (global_atomic_add sc0)", "volatile loads (sc0 sc1) of the other blocks' words")
    if strategy == "self_reset":
        return (arrive, arrive, lambda x: x.op in ("global_atomic_swap", "flat_atomic_swap"),
                "amax_arrive (global_atomic_add sc0)", "global_atomic_swap of the accumulator")
    if strategy == "atomic" and scale:  # LLVM makes the read-back atomicMax(out, 0) an atomic load
        return (arrive, arrive, lambda x: (x.op in ("global_atomic_umax", "flat_atomic_umax") and returning(x))
                or (x.op in ("global_load_dword", "flat_load_dword") and "sc1" in x.flags),
                "amax_arrive (global_atomic_add sc0)",
                "the read of the final amax (a returning global_atomic_umax, or the atomic load sc1 it becomes)")
    if strategy in ("first_reset", "first_reset_warp"):
        return (lambda x: x.op in ("global_store_dword", "flat_store_dword") and "sc1" in x.flags,
                lambda x: x.op in ("global_load_dword", "flat_load_dword") and x.flags & {"sc0", "sc1"} == {"sc1"},
                lambda x: x.op in ("global_atomic_umax", "flat_atomic_umax"),
                "amax_store_release (global_store_dword sc1) / amax_load_acquire (global_load_dword sc1)",
                "global_atomic_umax into the output")
    return None


# ---------------------------------------------------------------- the dataflow
# May-facts (some path): DIRTY a global store/atomic not yet written back by buffer_wbl2 sc1;
# VM, LGKM vector-memory / LDS-or-flat operations not yet waited for (vmcnt(0), lgkmcnt(0));
# OPEN an acquire not yet completed by s_waitcnt vmcnt(0) + buffer_inv sc1; WROTE a global store or
# atomic happened; ACQ an acquire completed. Must-fact (every path): DONE an acquire completed before
# this point (or, past an s_barrier, in some wave of the block).
DIRTY, VM, LGKM, OPEN, WROTE, ACQ = 1, 2, 4, 8, 16, 32


def may_transfer(s, x, rel, acq):
    if is_vmem(x) or x.op == "buffer_wbl2":
        s |= VM
    if x.op.startswith(("ds_", "flat_")):
        s |= LGKM
    if x.op == "s_waitcnt":
        vm, lg = waitcnt(x)
        if vm == 0:
            s &= ~VM
        if lg == 0:
            s &= ~LGKM
    if x.op == "buffer_wbl2" and "sc1" in x.flags:
        s &= ~DIRTY
    if x.op == "buffer_inv" and "sc1" in x.flags and not s & VM and s & OPEN:
        s = (s & ~OPEN) | ACQ
    if is_vmem_write(x) and not (rel and rel(x)):
        s |= DIRTY | WROTE
    if acq and acq(x):
        s |= OPEN
    return s


def analyse(insns, strategy, scale):
    """[(failure, Insn)], [(kind, index)] of one kernel: kind 'release' or 'acquire' per op found."""
    r = roles(strategy, scale)
    fails, found = [], []
    arrive_any = [i for i, x in enumerate(insns) if x.op in ("global_atomic_add", "flat_atomic_add") and returning(x)]
    if r is None:  # two_stage, atomic: the kernel boundary publishes
        for i in arrive_any:
            fails.append((f"{strategy} counts arrivals ({insns[i].text}): a cross-block step this audit does not "
                          "model for the strategy", insns[i]))
        return fails, found
    rel, acq, read, ops_desc, read_desc = r
    succ = successors(insns)
    preds = [[] for _ in insns]
    for i, ss in enumerate(succ):
        for j in ss:
            preds[j].append(i)
    # May-facts to a fixpoint (OR over predecessors).
    before = [None] * len(insns)
    before[0] = 0
    work = [0]
    while work:
        i = work.pop()
        after = may_transfer(before[i], insns[i], rel, acq)
        for j in succ[i]:
            new = after if before[j] is None else before[j] | after
            if new != before[j]:
                before[j] = new
                work.append(j)
    # Must-fact DONE (AND over predecessors); an s_barrier passes an acquire of any wave of the block.
    done = [None] * len(insns)
    done[0] = False
    work = [0]
    while work:
        i = work.pop()
        x, s = insns[i], before[i]
        d = done[i] or (x.op == "buffer_inv" and "sc1" in x.flags and not s & VM and bool(s & OPEN)) \
            or (x.op == "s_barrier" and bool(s & ACQ))
        for j in succ[i]:
            new = d if done[j] is None else done[j] and d
            if new != done[j]:
                done[j] = new
                work.append(j)
    n_rel = n_acq = n_read = 0
    for i, x in enumerate(insns):
        s = before[i]
        if s is None:
            continue
        if rel(x):
            n_rel += 1
            found.append(("release", i))
            if not s & WROTE:
                fails.append(("no global store or atomic before the release: nothing it publishes", x))
            if s & DIRTY:
                fails.append(("a global store or atomic reaches the release without buffer_wbl2 sc1 after it", x))
            if s & VM:
                fails.append(("the release is not preceded by s_waitcnt vmcnt(0) after the buffer_wbl2 sc1", x))
            if s & LGKM:
                fails.append(("the release is not preceded by s_waitcnt lgkmcnt(0) (an LDS or flat operation "
                              "is outstanding)", x))
            if "nt" in x.flags:
                fails.append(("the releasing operation is non-temporal (nt)", x))
        if acq(x):
            n_acq += 1
            found.append(("acquire", i))
        if is_vmem_read(x) and s & OPEN and not acq(x):
            fails.append(("a global load or atomic follows an acquire before s_waitcnt vmcnt(0) + buffer_inv sc1", x))
        if acq(x) and s & OPEN:
            fails.append(("the acquire is repeated before the previous one completed (no buffer_inv sc1 between)", x))
        if read(x) and not (rel(x) or acq(x)):
            n_read += 1
            if not done[i]:
                fails.append((f"{read_desc}: not after a completed acquire on every path", x))
    # An acquire whose completion is missing on a path to the end of the kernel.
    for i, x in enumerate(insns):
        if x.op == "s_endpgm" and before[i] is not None and before[i] & OPEN:
            fails.append(("an acquire reaches the end of the kernel without s_waitcnt vmcnt(0) + buffer_inv sc1", x))
    for what, n in (("release", n_rel), ("acquire", n_acq), ("read", n_read)):
        if n == 0:
            fails.append((f"no {what} found ({ops_desc}; reads: {read_desc}): the audit cannot map this kernel", None))
    return fails, found


def excerpt(insns, i, kind):
    """The lines of a release (from the buffer_wbl2 before it) or an acquire (to the buffer_inv after it)."""
    if kind == "release":
        lo = i
        while lo > 0 and i - lo < 12 and insns[lo].op != "buffer_wbl2":
            lo -= 1
        rng = range(lo, i + 1)
    else:
        hi = i
        while hi + 1 < len(insns) and hi - i < 12 and insns[hi].op != "buffer_inv":
            hi += 1
        rng = range(i, hi + 1)
    return [f"{insns[k].addr:#x}: {insns[k].text}" for k in rng]


# ---------------------------------------------------------------- driver
def strategy_of(label):
    head = label.split(".")[0]
    return head, ".scale" in label


def disassemble(paths, arch):
    """{path: llvm-objdump's text of its .text and kernel descriptors, or an error string starting with
    "FAILED"}, or None without a disassembler for the arch. One llvm-objdump for all the paths."""
    processor = arch.split(":")[0]
    tool = objdump_for(processor)
    if tool is None:
        return None
    cmd, _ = tool
    r = subprocess.run(cmd + ["-D", "-j", ".text", "-j", ".rodata", f"--mcpu={processor}"] + paths,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {p: f"FAILED {p}: llvm-objdump failed: {r.stderr.strip()}" for p in paths}
    out, cur = {}, None
    for line in r.stdout.splitlines(keepends=True):
        m = re.match(r"^(.*):\s+file format ", line)
        if m and m.group(1) in paths:
            cur = m.group(1)
            out[cur] = ""
        elif cur is not None:
            out[cur] += line
    for p in paths:
        if p not in out:
            out[p] = f"FAILED {p}: not in llvm-objdump's output"
        elif "<unknown>" in out[p]:
            out[p] = f"FAILED {p}: the disassembler does not know some instruction (<unknown>): {cmd[-1]}"
    return out


def audit_object(path, arch, label, kernels_expected, text, show, out):
    """Failures (strings) of one code object from its disassembly; appends a summary per kernel to out."""
    if text is None:
        return None
    if text.startswith("FAILED "):
        return [text[len("FAILED "):]]
    processor = arch.split(":")[0]
    kernels, descr = parse_disassembly(text)
    fails = []
    strategy, scale = strategy_of(label)
    names = kernels_expected or sorted(kernels)
    for name in names:
        if name not in kernels:
            fails.append(f"{path}: kernel {name} not in the disassembly")
            continue
        tg = descr.get(name, {}).get("amdhsa_tg_split")
        if processor in AUDITED and tg != "0":
            fails.append(f"{name} ({arch}): .amdhsa_tg_split {tg}, expected 0")
        kf, found = analyse(kernels[name], strategy, scale)
        for why, x in kf:
            where = f"\n      {x.addr:#x}: {x.text}" if x is not None else ""
            fails.append(f"{name} ({arch}, {os.path.basename(path)}): {why}{where}")
        out.append((arch, label, name, found, kernels[name]))
        if show and roles(strategy, scale) is None:
            ks = kernels[name]
            kinds = {}
            for x in ks:
                if is_vmem(x) or x.op in ("buffer_wbl2", "buffer_inv"):
                    key = x.op + "".join(" " + f for f in sorted(x.flags))
                    kinds[key] = kinds.get(key, 0) + 1
            print(f"[ sequence ] {arch} {label} {name}: no cross-block step in the kernel; its memory operations: "
                  + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())))
        if show:
            for kind, i in found:
                print(f"[ sequence ] {arch} {label} {name} {kind}:")
                for line in excerpt(kernels[name], i, kind):
                    print("      " + line)
    return fails


def main(argv):
    args = argv[1:]
    bundle = report = obj = arch = label = None
    show = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--report", "--object", "--arch", "--label") and i + 1 < len(args):
            v = args[i + 1]
            report, obj, arch, label = (v if a == "--report" else report, v if a == "--object" else obj,
                                        v if a == "--arch" else arch, v if a == "--label" else label)
            i += 2
        elif a == "--show":
            show, i = True, i + 1
        elif not a.startswith("--") and bundle is None:
            bundle, i = a, i + 1
        else:
            print(f"check_memory_model: unknown argument '{a}'\n{__doc__.split('usage:')[1]}", file=sys.stderr)
            return 2
    if (bundle is None) == (obj is None) or (obj and not (arch and label)):
        print("usage: check_memory_model.py BUNDLE_DIR [--report R] [--show] | --object F --arch A --label L [--show]",
              file=sys.stderr)
        return 2
    if obj:
        jobs = [(obj, arch, label, None)]
        require = []
    else:
        with open(os.path.join(bundle, "index.json")) as f:
            index = json.load(f)
        jobs = [(os.path.join(bundle, e["file"]), e["arch"], e["label"],
                 [e["kernel"]] + ([e["kernel"] + "_finish"] if e["label"].startswith("two_stage.") else []))
                        for e in index["entries"] if e["arch"].split(":")[0] in AUDITED]
        require = []
        if report:
            with open(report) as f:
                require = [m.group(1) for m in (re.match(r"^(gfx\S+): \d+ (multi-tensor )?kernels", l) for l in f)
                           if m and m.group(1).split(":")[0] in AUDITED]
    failures, summary, missing = [], [], set()
    for a in {j[1].split(":")[0] for j in jobs}:
        objdump_for(a)  # chosen once, before the threads
    # A few llvm-objdump processes per arch, each with a share of its code objects, side by side.
    n = os.cpu_count() or 2
    arches = dict.fromkeys(j[1] for j in jobs)
    batches = [(a, [j[0] for j in jobs if j[1] == a][k::n]) for a in arches for k in range(n)]
    text = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
        for (a, paths), res in zip(batches, pool.map(lambda b: disassemble(b[1], b[0]) if b[1] else {}, batches)):
            for p in paths:
                text[(a, p)] = None if res is None else res[p]
    for path, a, lab, names in jobs:
        f = audit_object(path, a, lab, names, text[(a, path)], show, summary)
        if f is None:
            missing.add(a.split(":")[0])
            continue
        failures += f
    for a in sorted(set(require) - {j[1] for j in jobs}):
        failures.append(f"{a}: listed as built in {report} but no entries in the bundle")
    per = {}
    for a, lab, name, found, _ in summary:
        st = per.setdefault(a, {"objects": set(), "rel": 0, "acq": 0, "strategies": set()})
        st["objects"].add(lab + name)
        st["rel"] += sum(1 for k, _ in found if k == "release")
        st["acq"] += sum(1 for k, _ in found if k == "acquire")
        st["strategies"].add(strategy_of(lab)[0] + (".scale" if strategy_of(lab)[1] else ""))
    for a, st in sorted(per.items()):
        tool = objdump_for(a.split(":")[0])[1]
        print(f"[ memory model ] {a}: {len(st['objects'])} kernels disassembled with {tool}: "
              f"{st['rel']} releases, {st['acq']} acquires checked ({', '.join(sorted(st['strategies']))})")
    if not jobs:
        print(f"[ memory model ] {bundle}: no {' or '.join(AUDITED)} entries")
    for f in failures:
        print("FAILED: " + f)
    if missing:
        why = (f"no llvm-objdump that knows {', '.join(sorted(missing))} "
               "(bash scripts/fetch-rocm.sh, and --sid for gfx950; or AMAX_LLVM_OBJDUMP)")
        if not per and not failures:
            print(f"check_memory_model: skipped: {why}")
            return 77
        print(f"FAILED: {why}: those code objects are not audited")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
