// Host-side cost of a dispatch decision (Google Benchmark, CPU): the plan-cache hit that every
// amax_compute call after the first pays, and the table decision a miss pays (no SQL: the tables
// are loaded at context creation). Tables: the shipped sm_90 database when given as argv[1]
// (--benchmark flags may follow), else 26 sizes per dtype made here.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/launch.hpp"
#include "amax/plan_cache.hpp"
#include "amax/render.hpp"

namespace {

using namespace amax;

std::string g_db;

const DispatchTables& tables() {
  static const DispatchTables t = [] {
    const db::Provenance p{.device_name = "NVIDIA H200", .arch = "sm_90", .cu_count = 132,
                           .driver_version = "cuda driver 13.0", .compiler = "nvrtc 13.0",
                           .template_hash = template_hash(), .tool_version = std::string(generator_version()),
                           .timing_protocol = "bench", .timestamp = "2026-11-30T00:00:00Z"};
    DispatchTables t(ArchInfo::parse("sm_90"), p);
    if (g_db.empty()) {
      g_db = (std::filesystem::temp_directory_path() / "amax-bench-dispatch.db").string();
      std::filesystem::remove(g_db);
      auto d = db::TuningDb::open(g_db);
      for (const DTypeInfo& dt : all_dtypes())
        for (int e = 10; e <= 35; ++e) {
          const std::string label = std::string(e < 22 ? "one_pass.t512" : "atomic.t512") +
                                    ".v" + std::to_string(16 / dt.bytes) + ".u2.b4cu";
          const db::Trial tr{label, db::TrialStatus::ok, "", 3.0, 0.1, 15, 1.0, 32, 0};
          d.record<SingleFamily>(db::TuningKey{"sm_90", dt.dtype, 1ull << e}, p, std::span(&tr, 1),
                       db::Winner{label, 3.0, 1.0});
        }
    }
    t.load(Source::system_db, g_db);
    return t;
  }();
  return t;
}

struct Plan {
  KernelConfig config;
  LaunchShape shape;
};

// A decision on a cache miss: nearest tuned size in log2 plus the launch shape.
void BM_TableDecision(benchmark::State& state) {
  const auto& t = tables();
  std::mt19937_64 rng(1);
  std::vector<std::uint64_t> ns(1024);
  for (auto& n : ns) n = 1 + rng() % (1ull << 32);
  std::size_t i = 0;
  for (auto _ : state) {
    const std::uint64_t n = ns[i++ & 1023];
    const Choice c = t.choose(DType::bf16, n);
    benchmark::DoNotOptimize(launch_shape(c.config, n, 132));
  }
}
BENCHMARK(BM_TableDecision);

// What amax_compute pays per call once a (dtype, n) has been seen: the plan-cache hit.
void BM_PlanCacheHit(benchmark::State& state) {
  const auto& t = tables();
  PlanCache<Plan> cache;
  const std::uint64_t sizes[] = {1000, 4096, 1 << 20, 3000000, 50000000, 1ull << 30, 12345, 777};
  auto make = [&](std::uint64_t n) {
    return [&, n] { return std::make_unique<Plan>(Plan{t.choose(DType::fp16, n).config, {}}); };
  };
  for (auto n : sizes) cache.get(DType::fp16, n, make(n));
  std::size_t i = 0;
  for (auto _ : state) {
    const std::uint64_t n = sizes[i++ & 7];
    benchmark::DoNotOptimize(&cache.get(DType::fp16, n, make(n)));
  }
}
BENCHMARK(BM_PlanCacheHit)->Threads(1)->Threads(2);

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && argv[1][0] != '-') {
    g_db = argv[1];
    --argc, ++argv;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
