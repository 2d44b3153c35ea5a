#!/usr/bin/env python3
"""Probe (not part of the build or the tests): where the host time of amax_tune.amax_multi goes for
one list of N tensors (default 500 x 4096 fp32), on a GPU machine with torch. Times each stage of
the eager path with timeit on the same (warm) list: the package's field reads (_multi_fields), the
extension's C array build (_C._tensor_list), the C call alone (Context.multi_compute on
precomputed columns), the output allocation, the whole amax_multi; then the whole call rotated
over K copies of the list (as bench_torch does) and a cProfile of 200 calls.
usage: PYTHONPATH=<build>/python python3 scripts/probes/py_multi_host.py [N] [n] [copies]"""
import cProfile
import pstats
import sys
import timeit

import torch

import amax_tune
from amax_tune import _C, _core, _torch

N = int(sys.argv[1]) if len(sys.argv) > 1 else 500
n = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
K = int(sys.argv[3]) if len(sys.argv) > 3 else 40
copies = [[torch.randn(n, device="cuda") for _ in range(N)] for _ in range(K)]
xs = copies[0]
ctx = _core.context_of(0, 0)
xs2, dev, ptrs, counts, codes = _torch._multi_fields(xs, "probe", True)
out = torch.empty(N, device="cuda")
stream = torch.cuda.current_stream().cuda_stream
amax_tune.amax_multi(xs)
torch.cuda.synchronize()


def us(fn, sync=False):
    t = timeit.Timer(fn)
    k, _ = t.autorange()
    r = 1e6 * min(t.repeat(5, k)) / k
    if sync:
        torch.cuda.synchronize()
    return r


rot = [0]


def rotated():
    rot[0] += 1
    amax_tune.amax_multi(copies[rot[0] % K])


print("list of %d x %d fp32 tensors, host us per call (best of 5 timeit repeats)" % (N, n))
for name, fn, sync in [
        ("set(map(type)) (the plain check)", lambda: set(map(type, xs)), False),
        ("get_device pass", lambda: set(map(torch.Tensor.get_device, xs)), False),
        ("is_contiguous pass", lambda: all(map(torch.Tensor.is_contiguous, xs)), False),
        ("dtype pass", lambda: set(map(_torch._dtype_of, xs)), False),
        ("data_ptr pass", lambda: list(map(torch.Tensor.data_ptr, xs)), False),
        ("numel pass", lambda: list(map(torch.Tensor.numel, xs)), False),
        ("_multi_fields (the package's field reads)", lambda: _torch._multi_fields(xs, "probe", True), False),
        ("_C._tensor_list (the C array)", lambda: _C._tensor_list(ptrs, counts, codes), False),
        ("Context.multi_compute, precomputed columns", lambda: ctx.multi_compute(ptrs, counts, codes, out.data_ptr(), stream), True),
        ("torch.empty(N) of the result", lambda: torch.empty(N, device="cuda"), False),
        ("amax_multi(xs), the same list", lambda: amax_tune.amax_multi(xs), True),
        ("amax_multi(xs, out=o), the same list", lambda: amax_tune.amax_multi(xs, out=out), True),
        ("amax_multi over %d rotated copies" % K, rotated, True)]:
    print("  %-48s %9.2f" % (name, us(fn, sync)))
    torch.cuda.synchronize()
pr = cProfile.Profile()
pr.enable()
for _ in range(200):
    rotated()
pr.disable()
torch.cuda.synchronize()
pstats.Stats(pr).sort_stats("tottime").print_stats(14)
