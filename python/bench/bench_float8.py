#!/usr/bin/env python3
"""amax_tune.float8's drop-ins against the torch code they replace, on the weight lists of real
models (the linear layers of Llama 3: q, k, v, o, gate, up, down per layer), bit-exact first.

Lists: Llama 3 8B whole (224 weights, one GPU), Llama 3 70B sharded 8 ways on dim 0 (FSDP2's local
shards, 560 weights), Llama 3 405B sharded 64 ways (882 weights), in bfloat16 (fp32 master weights
with --dtype float32, which needs twice the memory).

Contenders, per list:
  torchao  torchao's precompute_float8_dynamic_scale_for_fsdp formula in torch: _foreach_norm(ws, inf),
           stack, clamp(1e-12), float8 max / amax in float64, float32
  fsdp     amax_tune.float8.fsdp_float8_scales(ws): amax_multi, then the same tail
  te_torch TransformerEngine current scaling's amax + scale + scale_inv in torch, per weight
           (amax of |w|, max(amax, eps), m / amax with TE's cases, 1 / scale), over the list
  te_multi amax_tune.float8.te_current_scaling_multi(ws): one fused call
Time (python/bench/gpu_time.py): per round and contender, a batch of 3 back-to-back calls (host-inclusive:
device events around calls enqueued while the GPU runs them) and one call held behind the C++ bench's timing
gate (GPU time); weights >> L2, so every call reads cold memory; medians of --rounds interleaved rounds;
host = perf_counter around the batch's launches. A contender of more launches per call than the launch
queue holds behind a closed gate (te_torch: several per weight) has no GPU time ("-"): its gate times out
and the sample is dropped.

usage: PYTHONPATH=BUILD/python python3 python/bench/bench_float8.py [--rounds 7] [--dtype bfloat16]
       [--models 8b,70b,405b] [--quick] [--gate-dir DIR | --no-gpu-time]
"""
import argparse
import math
import statistics
import sys

import torch

import amax_tune
from amax_tune import float8
from gpu_time import gated_calls, load_gate, one_batch

#: (name, layers, hidden, kv dim, ffn dim, FSDP shards)
MODELS = {"8b": ("llama3-8b", 32, 4096, 1024, 14336, 1), "70b": ("llama3-70b/8", 80, 8192, 1024, 28672, 8),
          "405b": ("llama3-405b/64", 126, 16384, 1024, 53248, 64)}


def weight_shapes(layers, hidden, kv, ffn, shards):
    """The local shards (dim 0 split as FSDP2 does, rounded up) of every linear weight."""
    per_layer = [(hidden, hidden), (kv, hidden), (kv, hidden), (hidden, hidden), (ffn, hidden), (ffn, hidden),
                 (hidden, ffn)]
    return [(-(-rows // shards), cols) for _ in range(layers) for rows, cols in per_layer]


def torchao_scales(ws):
    amax = torch.clamp(torch.stack(torch._foreach_norm(ws, ord=math.inf)), 1e-12)
    origin = amax.dtype
    scale = torch.finfo(torch.float8_e4m3fn).max / amax.to(torch.float64)
    if origin is torch.float16:
        scale = torch.clamp(scale, max=torch.finfo(torch.float16).max)
    return scale.to(torch.float32)


def te_torch(ws, m=448.0, eps=0.0):
    """TE current scaling in torch, one weight at a time (what a recipe written in torch runs)."""
    res = []
    for w in ws:
        a = w.abs().amax().float()
        e = torch.clamp(a, min=eps)
        s = torch.where((e == 0) | torch.isinf(e), torch.ones_like(e), torch.full_like(e, m) / e)  # fp32 division
        s = torch.where(torch.isinf(s), torch.full_like(s, torch.finfo(torch.float32).max), s)
        res.append((a, s, torch.reciprocal(s)))
    return res


def bits(t):
    return [v & 0xFFFFFFFF for v in t.reshape(-1).view(torch.int32).tolist()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16"])
    ap.add_argument("--models", default="8b,70b,405b")
    ap.add_argument("--gate-dir", help="directory of the _amax_gate module (default: BUILD/python/bench beside the "
                    "imported amax_tune package)")
    ap.add_argument("--no-gpu-time", action="store_true", help="no gated calls: host-inclusive times only")
    ap.add_argument("--quick", action="store_true", help="2 rounds, Llama 3 8B only (a smoke test)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.models = 2, "8b"
    if not torch.cuda.is_available():
        sys.exit("bench_float8: torch sees no CUDA device")
    gate = None if args.no_gpu_time else load_gate(args.gate_dir, "bench_float8")
    dtype = getattr(torch, args.dtype)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    print("bench_float8: %s, torch %s, amax_tune %s, %s weights, %d rounds"
          % (props.name, torch.__version__, amax_tune.__version__, args.dtype, args.rounds))
    fns = {"torchao": torchao_scales, "fsdp": float8.fsdp_float8_scales, "te_torch": te_torch,
           "te_multi": float8.te_current_scaling_multi}
    table = []
    for key in args.models.split(","):
        name, *shape = MODELS[key]
        shapes = weight_shapes(*shape)
        g = torch.Generator(device="cuda").manual_seed(1)
        ws = [torch.randn(s, device="cuda", dtype=dtype, generator=g) * 0.02 for s in shapes]
        nbytes = sum(w.numel() * w.element_size() for w in ws)
        # bit-exact first
        if bits(float8.fsdp_float8_scales(ws)) != bits(torchao_scales(ws)):
            sys.exit("bench_float8: fsdp_float8_scales differs from torchao's formula on %s" % name)
        ref = te_torch(ws)
        got = float8.te_current_scaling_multi(ws)
        for i, part in enumerate(("amax", "scale", "scale_inv")):
            if bits(got[i]) != bits(torch.stack([r[i] for r in ref])):
                sys.exit("bench_float8: te_current_scaling_multi's %s differs from TE's formula on %s" % (part, name))
        samples = {f: ([], [], []) for f in fns}
        gated = {}
        for f in fns:  # warm-up; whether one call fits behind the gate
            one_batch(fns[f], [ws], 0, 1)
            gated[f] = gate is not None and gated_calls(fns[f], [ws], 1, gate) == 1
        for r in range(args.rounds):
            order = list(fns)[r % len(fns):] + list(fns)[:r % len(fns)]
            for f in order:
                d, h = one_batch(fns[f], [ws], 0, 3)
                samples[f][0].append(d)
                samples[f][1].append(h)
                g = one_batch(fns[f], [ws], 0, 1, gate) if gated[f] else None
                if g is not None:
                    samples[f][2].append(g[0])
        med = {f: statistics.median(d) for f, (d, h, g) in samples.items()}
        host = {f: statistics.median(h) for f, (d, h, g) in samples.items()}
        gpu = {f: statistics.median(g) if g else float("nan") for f, (d, h, g) in samples.items()}
        table.append((name, len(ws), nbytes, med, host, gpu))
        del ws, ref, got
        torch.cuda.empty_cache()
    print("\nus per call, host-inclusive (device events around back-to-back calls; host: us of host time per call); "
          "speedup = torch / amax_tune; GPU: GPU time of one call behind the gate (- where it has none)")
    print("%-16s %7s %12s %11s %11s %8s %11s %11s %8s %10s %10s %11s %11s %11s %11s" % (
        "weights", "count", "bytes", "torchao", "fsdp", "speedup", "te_torch", "te_multi", "speedup", "host fsdp",
        "host te", "GPU torchao", "GPU fsdp", "GPU te_torch", "GPU te_multi"))

    def us(v):
        return "-" if math.isnan(v) else "%.1f" % v

    for name, count, nbytes, med, host, gpu in table:
        print("%-16s %7d %12d %11.1f %11.1f %7.2fx %11.1f %11.1f %7.2fx %10.1f %10.1f %11s %11s %11s %11s" % (
            name, count, nbytes, med["torchao"], med["fsdp"], med["torchao"] / med["fsdp"], med["te_torch"],
            med["te_multi"], med["te_torch"] / med["te_multi"], host["fsdp"], host["te_multi"], us(gpu["torchao"]),
            us(gpu["fsdp"]), us(gpu["te_torch"]), us(gpu["te_multi"])))


if __name__ == "__main__":
    main()
