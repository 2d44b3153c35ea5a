"""GPU time from Python for the benches of python/bench: batches of calls enqueued behind the C++
bench's timing gate (nvbench's blocking kernel: measure/include/amax/measure.hpp Gate, the kernel amax_gate
of templates/bench_kernels.h, built into BUILD/python/bench/_amax_gate by the CMake target
amax_tune_bench_gate), device events around each batch. The protocol is DESIGN.md section 5's: a batch
held until the host has enqueued all of it runs back to back on the GPU, so the events measure GPU time,
not the host's launch rate; a batch whose gate timed out is never used."""
import importlib
import os
import sys
import time

import torch

import amax_tune

#: calls in a gated batch at most: the launch queue (about 1000 entries on NVIDIA) must hold a whole
#: batch while the gate holds the stream, or the host blocks on it and the gate times out
GATED_MAX_CALLS = 200
#: the gate's timeout (ms): far above the host time of enqueuing a gated batch
GATE_TIMEOUT_MS = 1000.0


def load_gate(gate_dir, who):
    """The build tree's _amax_gate.Gate on torch's current device: from gate_dir, else from the bench
    directory beside the imported amax_tune package (BUILD/python/bench); exits naming the target to
    build when neither has it. `who` names the bench in the message."""
    dirs = [gate_dir] if gate_dir else [os.path.join(os.path.dirname(os.path.dirname(amax_tune.__file__)), "bench")]
    for d in dirs:
        if os.path.isdir(d) and d not in sys.path:
            sys.path.insert(0, d)
    try:
        mod = importlib.import_module("_amax_gate")
    except ImportError as e:
        sys.exit("%s: the timing gate module _amax_gate is not in %s (%s): build it with `cmake --build BUILD "
                 "--target amax_tune_bench_gate` and name BUILD/python/bench with --gate-dir, or run with "
                 "--no-gpu-time (host-inclusive times only)" % (who, " or ".join(dirs), e))
    return mod.Gate(torch.cuda.current_device(), GATE_TIMEOUT_MS)


def one_batch(fn, inputs, start, k, gate=None):
    """(device us per call, host us per call) of k back-to-back calls fn(inputs[(start + i) % len]) on
    torch's current stream: events around the batch, perf_counter around its launches. With a gate the
    batch is enqueued behind it and released once enqueued (the device time is then GPU time); None
    when the gate timed out before the release (the time would be the host's, not the GPU's)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    m = len(inputs)
    if gate is not None:
        gate.close(torch.cuda.current_stream().cuda_stream)
    t0 = time.perf_counter()
    a.record()
    for i in range(k):
        fn(inputs[(start + i) % m])
    b.record()
    t1 = time.perf_counter()
    if gate is not None:
        gate.release()
    b.synchronize()
    if gate is not None and gate.timed_out():
        return None
    return 1000.0 * a.elapsed_time(b) / k, 1e6 * (t1 - t0) / k


def gated_calls(fn, inputs, k, gate):
    """Calls per gated batch for fn: k, at most GATED_MAX_CALLS, halved until a batch's gate does not
    time out; 0 when a single call still times out (fn then has no GPU time: for example a call of
    more launches than the queue holds)."""
    kg = min(k, GATED_MAX_CALLS)
    while kg >= 1:
        if one_batch(fn, inputs, 0, kg, gate) is not None:
            return kg
        kg //= 2
    return 0
