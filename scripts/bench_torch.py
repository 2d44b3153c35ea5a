#!/usr/bin/env python3
"""amax-tune against torch, in one process with one timing protocol (the bench's: device events
around batches of back-to-back calls lasting >= 200 us, median of 15 interleaved rounds, inputs
rotated through a region larger than 5x the L2). amax-tune is called through its C API
(libamax_tune.so via ctypes) on torch's current stream; torch is torch.linalg.vector_norm(x, inf),
as in DESIGN.md's anchors. Results are checked for equality before timing.

usage: bench_torch.py LIBAMAX_TUNE.so SYSTEM.db [OUT.csv]
"""
import ctypes as C
import math
import statistics
import sys

import torch

lib = C.CDLL(sys.argv[1])


class Options(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("device", C.c_int), ("nan_mode", C.c_int),
                ("user_db_path", C.c_char_p), ("system_db_path", C.c_char_p), ("kernel_cache_dir", C.c_char_p)]


lib.amax_last_error.restype = C.c_char_p
opt = Options()
lib.amax_context_options_init(C.byref(opt))
opt.user_db_path = b""
opt.system_db_path = sys.argv[2].encode()
ctx = C.c_void_p()
if lib.amax_context_create(C.byref(opt), C.byref(ctx)) != 0:
    sys.exit("amax_context_create: " + lib.amax_last_error().decode())
DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
stream = torch.cuda.current_stream()
l2 = torch.cuda.get_device_properties(0).L2_cache_size
out = torch.empty(1, dtype=torch.float32, device="cuda")
ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")


def amax_tune(x):
    st = lib.amax_compute(ctx, C.c_void_p(x.data_ptr()), DT[x.dtype], C.c_uint64(x.numel()),
                          C.c_void_p(out.data_ptr()), C.c_void_p(ws.data_ptr()), C.c_size_t(ws.numel()),
                          C.c_void_p(stream.cuda_stream))
    if st != 0:
        raise RuntimeError(lib.amax_last_error().decode())


def torch_norm(x):
    torch.linalg.vector_norm(x, float("inf"))


def measure(fn, slices, batch, batches):
    times, k = [], 0
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(batch):
            fn(slices[k % len(slices)])
            k += 1
        b.record()
        b.synchronize()
        times.append(1000 * a.elapsed_time(b) / batch)
    return times


rows = []
print(f"{'dtype':<9} {'n':>10} {'bytes':>10} {'amax-tune us':>13} {'torch us':>9} {'torch/amax-tune':>16}")
for dtype in (torch.float32, torch.bfloat16):
    for e in range(10, 27, 2):
        n = 1 << e
        esize = torch.tensor([], dtype=dtype).element_size()
        stride = (n + 255) // 256 * 256
        count = max(2, (5 * l2) // (stride * esize) + 1)
        region = torch.randn(stride * count, device="cuda").to(dtype)
        slices = [region[i * stride:i * stride + n] for i in range(count)]
        amax_tune(slices[0])
        torch.cuda.synchronize()
        ref = torch.linalg.vector_norm(slices[0].float(), float("inf"))
        assert out.item() == ref.item(), (dtype, n, out.item(), ref.item())
        res = {}
        fns = {"amax-tune": amax_tune, "torch": torch_norm}
        batch = {}
        for name, fn in fns.items():
            one = measure(fn, slices, 1, 3)[-1]
            batch[name] = max(1, min(200, math.ceil(200 / one)))
            measure(fn, slices, batch[name], 1)
        samples = {name: [] for name in fns}
        for _ in range(15):
            for name, fn in fns.items():
                samples[name] += measure(fn, slices, batch[name], 1)
        for name in fns:
            res[name] = statistics.median(samples[name])
        print(f"{str(dtype)[6:]:<9} {n:>10} {n * esize:>10} {res['amax-tune']:>13.2f} {res['torch']:>9.2f} "
              f"{res['torch'] / res['amax-tune']:>15.2f}x")
        rows.append((str(dtype)[6:], n, n * esize, res["amax-tune"], res["torch"]))
        del region, slices
if len(sys.argv) > 3:
    with open(sys.argv[3], "w") as f:
        f.write("device,dtype,n,bytes,amax_tune_us,torch_vector_norm_inf_us\n")
        for r in rows:
            f.write(f"\"{torch.cuda.get_device_name(0)}\",{r[0]},{r[1]},{r[2]},{r[3]:.3f},{r[4]:.3f}\n")
print("torch", torch.__version__)
