// amax of a bf16 tensor through the installed amax-tune package: direct call, then inside a CUDA
// graph replayed with new data; prints which table entry served it.
// Exit status: 0 = right answers (or no GPU here: reported, nothing to check), 1 = wrong answer or error.
#include <amax/amax_tune.hpp>
#include <optional>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
std::uint16_t bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);  // exact for the values used here
}
#define CUDA_OK(x)                                                              \
  do {                                                                          \
    if (cudaError_t e = (x); e != cudaSuccess) {                                \
      std::fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e));       \
      return 1;                                                                 \
    }                                                                           \
  } while (0)
}  // namespace

int main() {
  std::optional<amax_tune::Context> ctx;
  try {
    ctx.emplace();
  } catch (const amax_tune::Error& e) {
    if (e.status() == AMAX_STATUS_NO_DEVICE) {
      std::printf("amax-tune %s installed and linked; no GPU here: %s\n", amax_version(), e.what());
      return 0;
    }
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  const std::uint64_t n = 50'000'000;
  std::vector<std::uint16_t> host(n);
  for (std::uint64_t i = 0; i < n; ++i) host[i] = bf16(std::ldexp(static_cast<float>(i % 1000), -10) - 0.5f);
  host[n - 7] = bf16(-1216.0f);  // the amax is 1216 (exact in bf16)
  void *x = nullptr, *ws = nullptr;
  float* out = nullptr;
  const std::size_t ws_bytes = ctx->workspace_size(AMAX_DTYPE_BF16, n);
  CUDA_OK(cudaMalloc(&x, n * 2));
  CUDA_OK(cudaMalloc(&out, 4));
  CUDA_OK(cudaMalloc(&ws, ws_bytes));
  CUDA_OK(cudaMemcpy(x, host.data(), n * 2, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  int failures = 0;
  try {
    ctx->compute(x, AMAX_DTYPE_BF16, n, out, ws, ws_bytes, s);
    float r = 0;
    CUDA_OK(cudaMemcpyAsync(&r, out, 4, cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaStreamSynchronize(s));
    std::printf("direct call: amax = %g (expected 1216)\n", r);
    failures += r != 1216.0f;

    // Inside a graph, captured once and replayed with new values.
    const amax_dtype_t dt = AMAX_DTYPE_BF16;
    ctx->preload(&dt, 1, &n, 1);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    ctx->compute(x, AMAX_DTYPE_BF16, n, out, ws, ws_bytes, s);
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    for (float big : {7.0f, 65536.0f, 3.5f}) {
      const std::uint16_t v = bf16(big);
      CUDA_OK(cudaMemcpy(static_cast<std::uint16_t*>(x) + n - 7, &v, 2, cudaMemcpyHostToDevice));
      CUDA_OK(cudaGraphLaunch(ge, s));
      CUDA_OK(cudaMemcpyAsync(&r, out, 4, cudaMemcpyDeviceToHost, s));
      CUDA_OK(cudaStreamSynchronize(s));
      const float expect = big > 0.9990234375f ? big : 0.9990234375f;  // the fill's own maximum
      std::printf("graph replay: amax = %g (expected %g)\n", r, expect);
      failures += r != expect;
    }
    const amax_explanation_t e = ctx->explain(AMAX_DTYPE_BF16, n);
    std::printf("explain: %s (source %d): %s\n", e.label, e.source, e.detail);
  } catch (const amax_tune::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::printf("%s\n", failures ? "WRONG" : "all amax values right");
  return failures ? 1 : 0;
}
