// Devices, contexts and the caller's current-context state through the public API on ONE GPU
// (label `gpu`; issue 16): a stream of another CUDA context on the same device is refused with
// AMAX_STATUS_WRONG_DEVICE and nothing is written; every call leaves the calling thread's current
// context as it found it (another context, or none); managed and host memory are not mistaken for
// another device's; two contexts on one device used from several threads at once stay bit-exact;
// an ordinal past the last device is refused naming it. What needs two GPUs (a stream or pointer
// of device 1 given to a context of device 0) is in tests/multigpu (label `multigpu`).
//
// The CUDA driver calls the tests make themselves (another context, managed memory) go through
// dlopen("libcuda.so.1"), as the library does, so that the binary starts and skips without a driver.
#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "amax/amax_tune.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {

// The few driver entry points these tests call directly (names as exported by libcuda.so.1).
struct Cu {
  CUresult (*ctx_create)(CUcontext*, unsigned, CUdevice) = nullptr;       // cuCtxCreate_v2
  CUresult (*ctx_destroy)(CUcontext) = nullptr;                           // cuCtxDestroy_v2
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;                      // cuCtxGetCurrent
  CUresult (*ctx_set_current)(CUcontext) = nullptr;                       // cuCtxSetCurrent
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;               // cuStreamCreate
  CUresult (*stream_destroy)(CUstream) = nullptr;                         // cuStreamDestroy_v2
  CUresult (*mem_alloc_managed)(CUdeviceptr*, size_t, unsigned) = nullptr;  // cuMemAllocManaged
  CUresult (*mem_free)(CUdeviceptr) = nullptr;                            // cuMemFree_v2
  CUresult (*primary_retain)(CUcontext*, CUdevice) = nullptr;             // cuDevicePrimaryCtxRetain
  CUresult (*primary_release)(CUdevice) = nullptr;                        // cuDevicePrimaryCtxRelease_v2
  bool ok = false;
};

const Cu& cu() {
  static const Cu c = [] {
    Cu c;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return c;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    c.ok = load(c.ctx_create, "cuCtxCreate_v2") && load(c.ctx_destroy, "cuCtxDestroy_v2") &&
           load(c.ctx_get_current, "cuCtxGetCurrent") && load(c.ctx_set_current, "cuCtxSetCurrent") &&
           load(c.stream_create, "cuStreamCreate") && load(c.stream_destroy, "cuStreamDestroy_v2") &&
           load(c.mem_alloc_managed, "cuMemAllocManaged") && load(c.mem_free, "cuMemFree_v2") &&
           load(c.primary_retain, "cuDevicePrimaryCtxRetain") &&
           load(c.primary_release, "cuDevicePrimaryCtxRelease_v2");
    return c;
  }();
  return c;
}

#define AMAX_REQUIRE_CUDA_GPU()                                                              \
  AMAX_REQUIRE_GPU();                                                                        \
  if (env->backend->vendor() != Vendor::nvidia) GTEST_SKIP() << "needs the CUDA driver API"; \
  if (!cu().ok) GTEST_SKIP() << "libcuda.so.1 lacks an entry point these tests call"

amax_tune::Options options(amax_nan_mode_t mode = AMAX_NAN_PROPAGATE) {
  amax_tune::Options o;
  o.nan_mode = mode;
  o.user_db_path = "";
  o.system_db_path = "";  // built-in defaults: these tests are about devices, not tables
  return o;
}

CUcontext current() {
  CUcontext c = nullptr;
  EXPECT_EQ(cu().ctx_get_current(&c), CUDA_SUCCESS);
  return c;
}

/// A non-primary context on device 0 with a stream in it; the thread's current context is
/// restored after creation.
struct OtherContext {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  OtherContext() {
    CUcontext before = current();
    EXPECT_EQ(cu().ctx_create(&ctx, 0, 0), CUDA_SUCCESS);  // makes ctx current
    EXPECT_EQ(cu().stream_create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT_EQ(cu().ctx_set_current(before), CUDA_SUCCESS);
  }
  ~OtherContext() {
    CUcontext before = current();
    cu().ctx_set_current(ctx);
    cu().stream_destroy(stream);
    cu().ctx_set_current(before == ctx ? nullptr : before);
    cu().ctx_destroy(ctx);
  }
};

}  // namespace

TEST(GpuDevices, StreamOfAnotherContextOnTheSameDeviceIsRefusedAndNothingIsWritten) {
  AMAX_REQUIRE_CUDA_GPU();
  Backend& b = *env->backend;
  OtherContext other;
  amax_tune::Context ctx(options());
  const std::uint64_t n = 4096;
  DeviceBuffer in(b, n * 4), out(b, 4), ws(b, ctx.workspace_size(AMAX_DTYPE_FP32, n));
  const auto host = make_input(InputKind::random, DType::fp32, n, 7);
  b.copy_to_device(in.get(), host.data(), host.size());
  b.memset32_async(out.get(), 0x12345678u, 1, nullptr);
  b.synchronize(nullptr);
  for (std::uint64_t count : {n, std::uint64_t{0}}) {  // n = 0 would write +0.0 with a memset
    const amax_status_t s = amax_compute(ctx.get(), in.get(), AMAX_DTYPE_FP32, count, out.get<float>(), ws.get(),
                                         ws.bytes(), other.stream);
    const std::string msg = amax_last_error();
    EXPECT_EQ(s, AMAX_STATUS_WRONG_DEVICE) << msg;
    EXPECT_NE(msg.find("another CUDA context on device 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("device 0 (" + b.device().name), std::string::npos) << msg;
  }
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, out.get()), 0x12345678u) << "a refused call wrote its output";
  // The library's own stream of the same device is accepted, and the answer is exact.
  StreamHandle mine = b.create_stream();
  ctx.compute(in.get(), AMAX_DTYPE_FP32, n, out.get<float>(), ws.get(), ws.bytes(), mine);
  b.synchronize(mine);
  EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), DType::fp32, n, NanMode::propagate));
  b.destroy_stream(mine);
}

TEST(GpuDevices, EveryCallLeavesTheCallersCurrentContextAsItWas) {
  AMAX_REQUIRE_CUDA_GPU();
  Backend& b = *env->backend;
  OtherContext other;
  const std::uint64_t n = 1u << 20;
  DeviceBuffer in(b, n * 2), out(b, 4), ws(b, 1u << 20);
  const auto host = make_input(InputKind::random, DType::bf16, n, 11);
  b.copy_to_device(in.get(), host.data(), host.size());
  const std::uint32_t want = reference_amax_bits(host.data(), DType::bf16, n, NanMode::propagate);
  for (CUcontext callers : {other.ctx, CUcontext{nullptr}}) {
    const char* what = callers ? "another context" : "no context";
    ASSERT_EQ(cu().ctx_set_current(callers), CUDA_SUCCESS);
    amax_tune::Context ctx(options());
    EXPECT_EQ(current(), callers) << "amax_context_create changed the current context (" << what << ")";
    const std::size_t need = ctx.workspace_size(AMAX_DTYPE_BF16, n);
    ASSERT_LE(need, ws.bytes());
    const amax_dtype_t dt = AMAX_DTYPE_BF16;
    ctx.preload(&dt, 1, &n, 1);
    EXPECT_EQ(current(), callers) << "amax_preload changed the current context (" << what << ")";
    (void)ctx.explain(dt, n);
    ctx.compute(in.get(), dt, n, out.get<float>(), ws.get(), need, nullptr);  // legacy stream of OUR device
    EXPECT_EQ(current(), callers) << "amax_compute changed the current context (" << what << ")";
    b.synchronize(nullptr);
    EXPECT_EQ(current(), callers) << "the backend changed the current context (" << what << ")";
    EXPECT_EQ(read_bits(b, out.get()), want) << what;
    ASSERT_EQ(cu().ctx_set_current(nullptr), CUDA_SUCCESS);
  }
}

TEST(GpuDevices, ManagedAndHostMemoryAreNotTakenForAnotherDevicesAndManagedInputIsExact) {
  AMAX_REQUIRE_CUDA_GPU();
  Backend& b = *env->backend;
  const int own = b.device().ordinal;
  DeviceBuffer dev(b, 1024);
  EXPECT_EQ(b.memory_device(dev.get()), own);
  EXPECT_EQ(b.memory_device(dev.get(512)), own) << "an interior pointer of an allocation";
  int on_stack = 0;
  EXPECT_EQ(b.memory_device(&on_stack), -1);
  EXPECT_EQ(b.memory_device(nullptr), -1);
  std::vector<float> heap(16);
  EXPECT_EQ(b.memory_device(heap.data()), -1);
  const std::uint64_t n = 100000;
  // The library leaves no context current on this thread (it restores the caller's: none), so
  // the test makes the primary context current for its own driver calls.
  CUcontext primary = nullptr;
  ASSERT_EQ(cu().primary_retain(&primary, 0), CUDA_SUCCESS);
  ASSERT_EQ(cu().ctx_set_current(primary), CUDA_SUCCESS);
  CUdeviceptr managed = 0;
  ASSERT_EQ(cu().mem_alloc_managed(&managed, n * 4, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(b.memory_device(reinterpret_cast<void*>(managed)), -1);
  const auto host = make_input(InputKind::random, DType::fp32, n, 5);
  b.copy_to_device(reinterpret_cast<void*>(managed), host.data(), host.size());
  amax_tune::Context ctx(options());
  DeviceBuffer out(b, 4), ws(b, ctx.workspace_size(AMAX_DTYPE_FP32, n));
  ctx.compute(reinterpret_cast<void*>(managed), AMAX_DTYPE_FP32, n, out.get<float>(), ws.get(), ws.bytes(), nullptr);
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, out.get()), reference_amax_bits(host.data(), DType::fp32, n, NanMode::propagate));
  EXPECT_EQ(current(), primary) << "amax_compute changed the current context";
  cu().mem_free(managed);
  cu().ctx_set_current(nullptr);
  cu().primary_release(0);
}

TEST(GpuDevices, TwoContextsOnOneDeviceFromEightThreadsAtOnceStayBitExact) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  amax_tune::Context a(options(AMAX_NAN_PROPAGATE)), c(options(AMAX_NAN_IGNORE));
  constexpr int kThreads = 8, kIters = 40;
  std::atomic<int> failures{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      amax_tune::Context& ctx = t % 2 ? c : a;
      const NanMode mode = t % 2 ? NanMode::ignore : NanMode::propagate;
      std::mt19937_64 rng(std::random_device{}() + t);
      StreamHandle s = b.create_stream();
      for (int i = 0; i < kIters; ++i) {
        const auto& d = all_dtypes()[rng() % 3];
        const std::uint64_t n = 1 + rng() % (1u << 21);
        const InputKind kind = all_input_kinds()[rng() % all_input_kinds().size()];
        const auto host = make_input(kind, d.dtype, n, rng());
        DeviceBuffer in(b, n * d.bytes), out(b, 4), ws(b, ctx.workspace_size(to_c(d.dtype), n));
        b.copy_to_device(in.get(), host.data(), host.size());
        ctx.compute(in.get(), to_c(d.dtype), n, out.get<float>(), ws.get(), ws.bytes(), s);
        b.synchronize(s);
        if (read_bits(b, out.get()) != reference_amax_bits(host.data(), d.dtype, n, mode)) {
          ++failures;
          std::fprintf(stderr, "thread %d: %s n=%llu %s wrong\n", t, std::string(d.name).c_str(), static_cast<unsigned long long>(n),
                       std::string(to_string(kind)).c_str());
        }
        ++done;
      }
      b.destroy_stream(s);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(done.load(), kThreads * kIters);
  std::printf("two contexts, %d threads: %d calls bit-exact\n", kThreads, done.load());
}

TEST(GpuDevices, AnOrdinalPastTheLastDeviceIsRefusedNamingIt) {
  AMAX_REQUIRE_GPU();
  const int count = device_count(env->backend->vendor());
  amax_context_options_t o;
  amax_context_options_init(&o);
  o.device = count;
  o.user_db_path = "";
  o.system_db_path = "";
  amax_context_t c = nullptr;
  EXPECT_EQ(amax_context_create(&o, &c), AMAX_STATUS_NO_DEVICE);
  EXPECT_EQ(c, nullptr);
  const std::string msg = amax_last_error();
  EXPECT_NE(msg.find("no GPU device " + std::to_string(count)), std::string::npos) << msg;
}

// Not an assertion on time: what the wrong-device checks cost per amax_compute, printed for
// docs/api.md: the stream query (every call) and the three pointer queries (only where the process
// sees more than one GPU: with one, no memory of another device exists).
TEST(GpuDevices, WhatTheWrongDeviceChecksCostPerCall) {
  AMAX_REQUIRE_GPU();
  Backend& b = *env->backend;
  DeviceBuffer buf(b, 3 * 4096);
  StreamHandle s = b.create_stream();
  constexpr int kCalls = 100000;
  int sink = 0;
  auto per_call_ns = [&](auto&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) fn();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls;
  };
  const double stream_ns = per_call_ns([&] { sink += b.stream_owner(s).device; });
  const double pointers_ns = per_call_ns(
      [&] { sink += b.memory_device(buf.get()) + b.memory_device(buf.get(4096)) + b.memory_device(buf.get(8192)); });
  amax_tune::Context ctx(options());
  DeviceBuffer in(b, 4096 * 4), out(b, 4), ws(b, ctx.workspace_size(AMAX_DTYPE_FP32, 4096));
  const double explain_ns = per_call_ns([&] { (void)ctx.workspace_size(AMAX_DTYPE_FP32, 4096); });
  std::printf("wrong-device checks: stream query %.0f ns, three pointer queries %.0f ns per amax_compute "
              "(amax_workspace_size for comparison: %.0f ns)\n", stream_ns, pointers_ns, explain_ns);
  b.destroy_stream(s);
  EXPECT_EQ(sink, 4 * b.device().ordinal * kCalls);
}
