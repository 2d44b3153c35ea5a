// ---- amax-tune reference kernels: the bandwidth ceiling and the latency floor ----
// amax_stream_read: reads n16 16-byte vectors once (grid-stride, 4 loads in flight per thread)
// and does the least work that keeps the loads alive: the fastest a pure streaming read of the
// same bytes can go, measured with the same protocol as the variants.
// amax_empty: does nothing; its launch time is the floor of any one-launch kernel.
struct alignas(16) amax_u4 { unsigned w[4]; };

AMAX_GLOBAL void AMAX_LAUNCH_BOUNDS(512, 1)
amax_stream_read(const amax_u4* AMAX_RESTRICT in, unsigned long long n16, unsigned* sink) {
  const unsigned long long stride = (unsigned long long)gridDim.x * 512;
  unsigned long long i = (unsigned long long)blockIdx.x * 512 + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    amax_u4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = in[i + u * stride];
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].w[0] ^ v[u].w[1] ^ v[u].w[2] ^ v[u].w[3];
  }
  for (; i < n16; i += stride) acc ^= in[i].w[0] ^ in[i].w[1] ^ in[i].w[2] ^ in[i].w[3];
  if (acc == 0x9e3779b9u) sink[0] = acc;  // practically never taken; keeps the loads
}

AMAX_GLOBAL void amax_empty() {}
