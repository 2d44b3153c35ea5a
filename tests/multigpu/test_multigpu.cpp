// Several GPUs in one process (label `multigpu`; issue 16): a context per device used from several
// threads at once, each bit-exact on its own device's buffers with its own kernels and stream
// slots; a stream or a pointer of device 1 given to a context of device 0 is refused with
// AMAX_STATUS_WRONG_DEVICE naming both devices, and nothing is written. Skips with a message where
// fewer than two GPUs of one vendor are visible.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "amax/amax_tune.hpp"
#include "amax/backend.hpp"
#include "amax/device_buffer.hpp"
#include "amax/dtype_c.hpp"
#include "amax/reference.hpp"

using namespace amax;

namespace {

/// The vendor with at least two devices, or nothing.
bool two_gpus(Vendor& v, std::string& why) {
  for (Vendor c : {Vendor::nvidia, Vendor::amd})
    if (device_count(c) >= 2) {
      v = c;
      return true;
    }
  why = "needs two GPUs of one vendor: NVIDIA " + std::to_string(device_count(Vendor::nvidia)) + ", AMD " +
        std::to_string(device_count(Vendor::amd));
  return false;
}

#define AMAX_REQUIRE_TWO_GPUS()            \
  Vendor vendor{};                         \
  std::string why;                         \
  if (!two_gpus(vendor, why)) GTEST_SKIP() << why

amax_tune::Options options(int device, amax_nan_mode_t mode = AMAX_NAN_PROPAGATE) {
  amax_tune::Options o;
  o.device = device;
  o.nan_mode = mode;
  o.user_db_path = "";
  o.system_db_path = "";
  return o;
}

using Buffer = DeviceBuffer;

std::uint32_t bits(Backend& b, const void* p) {
  std::uint32_t v = 0;
  b.copy_to_host(&v, p, 4);
  return v;
}

}  // namespace

TEST(MultiGpu, OneContextPerDeviceFromFourThreadsEachBitExactOnItsOwnBuffers) {
  AMAX_REQUIRE_TWO_GPUS();
  const int devices = std::min(device_count(vendor), 8);
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<amax_tune::Context>> contexts;
  for (int d = 0; d < devices; ++d) {
    backends.push_back(make_backend(vendor, d));
    contexts.push_back(std::make_unique<amax_tune::Context>(options(d)));
  }
  std::atomic<int> failures{0}, calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4 * devices; ++t)
    threads.emplace_back([&, t] {
      const int d = t % devices;
      Backend& b = *backends[d];
      amax_tune::Context& ctx = *contexts[d];
      std::mt19937_64 rng(std::random_device{}() + t);
      StreamHandle s = b.create_stream();
      for (int i = 0; i < 30; ++i) {
        const auto& dt = all_dtypes()[rng() % 3];
        const std::uint64_t n = 1 + rng() % (1u << 22);
        const auto host = make_input(InputKind::random, dt.dtype, n, rng());
        Buffer in(b, n * dt.bytes), out(b, 4), ws(b, ctx.workspace_size(to_c(dt.dtype), n));
        b.copy_to_device(in.get(), host.data(), host.size());
        ctx.compute(in.get(), to_c(dt.dtype), n, out.get<float>(), ws.get(), ctx.workspace_size(to_c(dt.dtype), n), s);
        b.synchronize(s);
        if (bits(b, out.get()) != reference_amax_bits(host.data(), dt.dtype, n, NanMode::propagate)) ++failures;
        ++calls;
      }
      b.destroy_stream(s);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::printf("%d devices, %d threads: %d calls bit-exact\n", devices, 4 * devices, calls.load());
}

TEST(MultiGpu, AStreamOrAPointerOfDevice1GivenToAContextOfDevice0IsRefusedNamingBoth) {
  AMAX_REQUIRE_TWO_GPUS();
  auto b0 = make_backend(vendor, 0), b1 = make_backend(vendor, 1);
  amax_tune::Context ctx0(options(0));
  const std::uint64_t n = 1u << 16;
  const std::size_t ws_bytes = ctx0.workspace_size(AMAX_DTYPE_FP32, n);
  Buffer in0(*b0, n * 4), out0(*b0, 4), ws0(*b0, ws_bytes), in1(*b1, n * 4), out1(*b1, 4), ws1(*b1, ws_bytes);
  StreamHandle s0 = b0->create_stream(), s1 = b1->create_stream();
  b0->memset32_async(out0.get(), 0x12345678u, 1, nullptr);
  b1->memset32_async(out1.get(), 0x12345678u, 1, nullptr);
  b0->synchronize(nullptr);
  b1->synchronize(nullptr);
  struct Case {
    const char* what;
    void* in;
    void* out;
    void* ws;
    StreamHandle s;
    const char* expect;
  } cases[] = {
      {"stream", in0.get(), out0.get(), ws0.get(), s1, "belongs to device 1"},
      {"input", in1.get(), out0.get(), ws0.get(), s0, "input"},
      {"output", in0.get(), out1.get(), ws0.get(), s0, "output"},
      {"workspace", in0.get(), out0.get(), ws1.get(), s0, "workspace"},
  };
  for (const Case& c : cases) {
    const amax_status_t st = amax_compute(ctx0.get(), c.in, AMAX_DTYPE_FP32, n, static_cast<float*>(c.out), c.ws,
                                          ws_bytes, c.s);
    const std::string msg = amax_last_error();
    EXPECT_EQ(st, AMAX_STATUS_WRONG_DEVICE) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    EXPECT_NE(msg.find("device 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("device 0 ("), std::string::npos) << msg;
  }
  b0->synchronize(nullptr);
  b1->synchronize(nullptr);
  EXPECT_EQ(bits(*b0, out0.get()), 0x12345678u);
  EXPECT_EQ(bits(*b1, out1.get()), 0x12345678u);
  b0->destroy_stream(s0);
  b1->destroy_stream(s1);
}

// `amax-tune --device all` on this node: one worker per GPU, the agreement report naming every
// GPU's winner per key, the per-GPU databases merged (GPUs of one SKU). Agreement itself is
// printed, not asserted: it is what the node run measures.
TEST(MultiGpu, NodeTuneOfEveryGpuReportsEachGpusWinnerAndMerges) {
  AMAX_REQUIRE_TWO_GPUS();
  const auto dir = std::filesystem::temp_directory_path() / ("amax-node-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const auto db = dir / "tuning.db";
  const std::string cmd = std::string(AMAX_TUNE_EXE) + " --device all --dtypes bf16 --sizes 2^16,2^24 --db " +
                          db.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = pclose(p);
  std::printf("%s\n", out.c_str());
  const int devices = device_count(vendor);
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0) << out;
  EXPECT_NE(out.find("node tune of " + std::to_string(devices) + " GPUs"), std::string::npos) << out;
  EXPECT_NE(out.find("merged into " + db.string()), std::string::npos) << out;
  std::ifstream f(dir / "tuning.db.node" / "report.json");
  const auto report = nlohmann::json::parse(f);
  ASSERT_EQ(report["keys"].size(), 2u);
  for (const auto& k : report["keys"]) EXPECT_EQ(k["winners"].size(), static_cast<std::size_t>(devices));
  std::filesystem::remove_all(dir);
}
