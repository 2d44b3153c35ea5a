// Test-only: the synchronisation pattern of ROCm TransformerEngine's two-stage amax on AMD
// (transformer_engine/common/recipe/current_scaling.cu at ROCm/TransformerEngine commit
// 01b61b5afd6307df0ac985a066b6ab8076a5b12e: amax_kernel with a block_amax workspace, then
// amax_final_reduce in a second launch on the same stream), written here from its description, not
// copied: stage one's thread 0 stores its block's maximum with a plain store into the workspace;
// the finish kernel, one block, reads the workspace with plain loads and writes the amax. Nothing in
// either kernel orders the two: the kernel boundary does. Compiled with hipRTC for gfx942 by
// MemoryModelAudit.TransformerEngineTwoStagePattern, which reads back what it compiles to.
#define TE_THREADS 512
#define TE_FINAL_THREADS 256

__device__ float te_block_max(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] = __builtin_fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  return shared[0];
}

extern "C" __global__ void __launch_bounds__(TE_THREADS)
te_amax_stage_one(const float* __restrict__ in, unsigned long long n, float* __restrict__ block_amax) {
  __shared__ float shared[TE_THREADS];
  float m = 0.f;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    m = __builtin_fmaxf(m, __builtin_fabsf(in[i]));
  m = te_block_max(m, shared);
  if (threadIdx.x == 0) block_amax[blockIdx.x] = m;
}

extern "C" __global__ void __launch_bounds__(TE_FINAL_THREADS)
te_amax_final_reduce(const float* __restrict__ block_amax, float* __restrict__ amax, int num_blocks) {
  __shared__ float shared[TE_FINAL_THREADS];
  float m = 0.f;
  for (int i = threadIdx.x; i < num_blocks; i += TE_FINAL_THREADS) m = __builtin_fmaxf(m, block_amax[i]);
  m = te_block_max(m, shared);
  if (threadIdx.x == 0) *amax = m;
}
