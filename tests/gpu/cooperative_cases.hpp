#pragma once
// Backend::launch_cooperative on the GPU, shared by test_gpu_cooperative (the CUDA backend) and
// tests/hipshim's test_hipshim (the HIP backend through the shim): a kernel whose blocks all wait at
// a grid-wide barrier, launched with the most blocks the device holds at once, and the refusal of
// one block more. Not thread-safe (one env per thread).
#include "gpu_env.hpp"

namespace amax::test {

/// Every block publishes a word, arrives at a grid-wide barrier (one counter, polled) and then reads
/// its neighbour's word; the grid is max_active_blocks_per_cu x the CU count. Asserts every block
/// read its neighbour's word and the counter reached the grid; prints the grid and the host cost of
/// the occupancy query that each cooperative launch makes.
void grid_barrier_at_the_resident_limit(GpuEnv* env);
/// One block more than the device holds at once: BackendError naming both numbers, nothing launched
/// (the counter stays 0).
void grid_one_block_past_the_resident_limit_refused(GpuEnv* env);

}  // namespace amax::test
