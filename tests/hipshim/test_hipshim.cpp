// The HIP backend (runtime/src/hip_backend.cpp, compiled as for AMD against ROCm's headers) run on
// an NVIDIA GPU through the test-only libamax_hipshim (HIP calls translated onto the CUDA driver
// API). Code objects come from NVRTC for the device's sm_XY (hipRTC cannot produce NVIDIA code) and
// are loaded through the HIP backend's load_module. The bit-exact cases are those of
// test_gpu_correctness (correctness_cases.cpp). What this proves and what it cannot: docs/amd.md,
// "The HIP backend on an NVIDIA GPU". Label `gpu`; skips without an NVIDIA GPU.
#include <gtest/gtest.h>
#include <hip/hip_runtime_api.h>  // the error codes the backend reports

#include <cstring>
#include <random>

#include "amax/reference.hpp"
#include "amax/search_space.hpp"
#include "cooperative_cases.hpp"
#include "correctness_cases.hpp"

namespace amax::detail {  // defined in hip_backend.cpp (declared in backends.hpp only where AMAX_HAVE_HIP)
int hip_device_count() noexcept;
std::string hip_no_device_reason();
std::unique_ptr<Backend> make_hip_backend(int ordinal);
}  // namespace amax::detail

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;
using amax::test::GpuEnv;

namespace {

GpuEnv* shim_env() {
  static std::unique_ptr<GpuEnv> env = []() -> std::unique_ptr<GpuEnv> {
    if (detail::hip_device_count() == 0) return nullptr;
    return test::make_gpu_env(detail::make_hip_backend(0), make_compiler(Vendor::nvidia));
  }();
  return env.get();
}

#define REQUIRE_SHIM()                                                                          \
  GpuEnv* env = shim_env();                                                                     \
  if (!env) GTEST_SKIP() << "no GPU through the HIP shim, GPU test skipped (" << detail::hip_no_device_reason() << ")"

}  // namespace

TEST(HipShim, DeviceInfoAsTheCudaBackendReportsIt) {
  REQUIRE_SHIM();
  const DeviceInfo& h = env->backend->device();
  const auto cuda = make_backend(Vendor::nvidia, 0);
  const DeviceInfo& c = cuda->device();
  EXPECT_EQ(env->backend->vendor(), Vendor::amd);  // the HIP backend always says AMD
  EXPECT_EQ(h.ordinal, 0);
  EXPECT_EQ(h.name, c.name);
  EXPECT_EQ(h.arch, c.arch);  // the shim's gcnArchName: sm_XY (on AMD the target ID)
  EXPECT_EQ(h.cu_count, c.cu_count);
  EXPECT_EQ(h.wave_size, c.wave_size);
  EXPECT_EQ(h.max_threads_per_block, c.max_threads_per_block);
  EXPECT_EQ(h.l2_bytes, c.l2_bytes);
  EXPECT_EQ(h.memory_bytes, c.memory_bytes);
  // Documented difference: "hip driver <hipDriverGetVersion>" against "cuda driver X.Y".
  EXPECT_EQ(h.driver_version.rfind("hip driver ", 0), 0u) << h.driver_version;
  std::printf("HIP backend: %s | CUDA backend: %s\n", h.driver_version.c_str(), c.driver_version.c_str());
}

TEST(HipShim, EveryVariantEverySizeBothNanModes) {
  REQUIRE_SHIM();
  test::every_variant_every_size_both_nan_modes(env);
}

TEST(HipShim, PointersOffsetByEveryElementOfAVector) {
  REQUIRE_SHIM();
  test::pointers_offset_by_every_element_of_a_vector(env);
}

TEST(HipShim, SpecialValuesBothNanModes) {
  REQUIRE_SHIM();
  test::special_values_both_nan_modes(env);
}

TEST(HipShim, Bf16AboveTwoToThe31Elements) {
  REQUIRE_SHIM();
  test::bf16_above_two_to_the_31_elements(env);
}

// hipModuleLaunchCooperativeKernel and hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, through
// Backend::launch_cooperative's residency check.
TEST(HipShim, CooperativeGridBarrierAtTheResidentLimit) {
  REQUIRE_SHIM();
  test::grid_barrier_at_the_resident_limit(env);
}

TEST(HipShim, CooperativeGridOneBlockPastTheResidentLimitRefused) {
  REQUIRE_SHIM();
  test::grid_one_block_past_the_resident_limit_refused(env);
}

// begin_capture / end_capture / launch_graph: one capture (atomic: memset + kernel; two_stage:
// stage one + finish) replayed on new data each time; is_capturing true only during the capture.
TEST(HipShim, GraphCapturedOnceReplayedOnNewData) {
  REQUIRE_SHIM();
  Backend& b = *env->backend;
  StreamHandle s = b.create_stream();
  std::mt19937_64 rng(std::random_device{}());
  const std::uint64_t n = (1u << 20) + 3;
  for (Strategy st : {Strategy::atomic, Strategy::two_stage}) {
    const KernelConfig cfg = transformer_engine_config(DType::fp32, st);
    const LoadedKernel& k = env->kernels->get(cfg, DType::fp32);
    const auto shape = launch_shape(cfg, n, static_cast<std::uint32_t>(b.device().cu_count));
    DeviceBuffer in(b, n * 4), out(b, 4), ws(b, shape.workspace_bytes + 4), counter(b, 4);
    b.memset32_async(counter.get(), 0u, 1, s);
    b.memset32_async(out.get(), 0xffffffffu, 1, s);
    b.synchronize(s);
    EXPECT_FALSE(b.is_capturing(s));
    b.begin_capture(s);
    EXPECT_TRUE(b.is_capturing(s));
    launch_amax(b, k, shape, in.get(), n, out.get<float>(), ws.get(), counter.get<std::uint32_t>(), NanMode::propagate, s);
    GraphExecHandle g = b.end_capture(s);
    EXPECT_FALSE(b.is_capturing(s));
    for (int replay = 0; replay < 3; ++replay) {
      const InputKind kind = replay == 1 ? InputKind::nan_middle : replay == 2 ? InputKind::max_last : InputKind::random;
      const auto host = make_input(kind, DType::fp32, n, rng());
      b.copy_to_device(in.get(), host.data(), host.size());
      b.launch_graph(g, s);
      b.synchronize(s);
      EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), DType::fp32, n, NanMode::propagate))
          << cfg.label() << " replay " << replay;
    }
    b.destroy_graph(g);
  }
  b.destroy_stream(s);
}

TEST(HipShim, Memset32AsyncWritesExactlyCountWords) {
  REQUIRE_SHIM();
  Backend& b = *env->backend;
  StreamHandle s = b.create_stream();
  DeviceBuffer buf(b, 64 * 4);
  b.memset32_async(buf.get(), 0u, 64, s);
  b.memset32_async(buf.get(4 * 3), 0xdeadbeefu, 17, s);
  b.synchronize(s);
  std::uint32_t got[64];
  b.copy_to_host(got, buf.get(), sizeof got);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(got[i], (i >= 3 && i < 20) ? 0xdeadbeefu : 0u) << "word " << i;
  b.destroy_stream(s);
}

TEST(HipShim, EventsTimeAKernel) {
  REQUIRE_SHIM();
  Backend& b = *env->backend;
  const KernelConfig cfg = transformer_engine_config(DType::fp32, Strategy::two_stage);
  const LoadedKernel& k = env->kernels->get(cfg, DType::fp32);
  const std::uint64_t n = 64ull << 20;
  const auto shape = launch_shape(cfg, n, static_cast<std::uint32_t>(b.device().cu_count));
  DeviceBuffer in(b, n * 4), out(b, 4), ws(b, shape.workspace_bytes + 4), counter(b, 4);
  StreamHandle s = b.create_stream();
  b.memset32_async(in.get(), 0x3f800000u, n, s);  // 1.0f
  b.memset32_async(counter.get(), 0u, 1, s);
  EventHandle e0 = b.create_event(), e1 = b.create_event();
  b.record(e0, s);
  for (int i = 0; i < 10; ++i)
    launch_amax(b, k, shape, in.get(), n, out.get<float>(), ws.get(), counter.get<std::uint32_t>(), NanMode::propagate, s);
  b.record(e1, s);
  const float ms = b.elapsed_ms(e0, e1);
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 10000.0f);
  EXPECT_EQ(read_bits(b, out.get()), 0x3f800000u);
  std::printf("10 launches over 256 MiB: %.3f ms by HIP events\n", ms);
  b.destroy_event(e0);
  b.destroy_event(e1);
  b.destroy_stream(s);
}

TEST(HipShim, GarbageCodeObjectNamesHipModuleLoadData) {
  REQUIRE_SHIM();
  const char garbage[] = "\x01\x02\x03 this is not a code object \xff\xfe";
  try {
    env->backend->load_module(std::span<const char>(garbage, sizeof garbage));
    FAIL() << "a code object of garbage bytes was loaded";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.call(), "hipModuleLoadData");
    // The driver reads bytes that are neither ELF nor fatbin as PTX text.
    EXPECT_TRUE(e.code() == hipErrorInvalidImage || e.code() == hipErrorInvalidKernelFile) << e.what();
    const std::string w = e.what();
    EXPECT_EQ(w.rfind("hipModuleLoadData failed: hipErrorInvalid", 0), 0u) << w;
    EXPECT_NE(w.find("(" + std::to_string(e.code()) + ")"), std::string::npos) << w;
    std::printf("%s\n", w.c_str());
  }
}

TEST(HipShim, MissingFunctionNameIsHipErrorNotFound) {
  REQUIRE_SHIM();
  const KernelConfig cfg = transformer_engine_config(DType::fp32, Strategy::atomic);
  const KernelBinary kb = build_kernel(env->kernels->compiler(), env->kernels->binaries(), env->arch, cfg, DType::fp32);
  const auto m = env->backend->load_module(kb.binary);
  try {
    m->function("no_such_kernel");
    FAIL() << "hipModuleGetFunction found a function that does not exist";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.call(), "hipModuleGetFunction");
    EXPECT_EQ(e.code(), hipErrorNotFound);
    EXPECT_EQ(std::string(e.what()).rfind("hipModuleGetFunction failed: hipErrorNotFound (500): ", 0), 0u) << e.what();
  }
}

// Issue 16 through the HIP backend: pointers of this device are its own, host memory is no device's,
// and each call restores the thread's current HIP device (ROCm 5.x headers: no hipStreamGetDevice,
// so a stream's device is unknown, -1, and only pointers are checked).
TEST(HipShim, MemoryDeviceAndStreamOwnerAsRocm5Reports) {
  REQUIRE_SHIM();
  Backend& b = *env->backend;
  DeviceBuffer dev(b, 4096);
  EXPECT_EQ(b.memory_device(dev.get()), 0);
  EXPECT_EQ(b.memory_device(dev.get(100)), 0);
  int on_stack = 0;
  EXPECT_EQ(b.memory_device(&on_stack), -1);
  StreamHandle s = b.create_stream();
  const StreamOwner o = b.stream_owner(s);
#if HIP_VERSION_MAJOR >= 6
  EXPECT_EQ(o.device, 0);
#else
  EXPECT_EQ(o.device, -1);
#endif
  EXPECT_TRUE(o.same_context);
  EXPECT_EQ(b.stream_owner(nullptr).device, 0);
  b.destroy_stream(s);
}
