#include "cooperative_cases.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace amax::test {
namespace {

constexpr std::uint32_t kBlock = 256;

// Thread 0 of each block: publish, arrive, wait for every block, read the neighbour's word. Without
// co-residence the blocks that arrived first would wait forever for blocks never scheduled.
constexpr const char* kSource = R"(
extern "C" __global__ void grid_barrier(unsigned* arrived, unsigned* published, unsigned* seen) {
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x, grid = gridDim.x;
  published[b] = b * 2654435761u + 1u;
  __threadfence();
  atomicAdd(arrived, 1u);
  while (*(volatile unsigned*)arrived < grid) {
  }
  __threadfence();
  seen[b] = ((volatile unsigned*)published)[(b + 1) % grid];
}
)";

struct BarrierKernel {
  std::unique_ptr<Module> module;
  FunctionHandle f = nullptr;
  std::uint32_t per_cu = 0;
  std::uint32_t resident = 0;
};

BarrierKernel load(GpuEnv& env) {
  const CompiledProgram p = env.compiler->compile(kSource, "grid_barrier", env.arch);
  BarrierKernel k;
  k.module = env.backend->load_module(p.binary);
  k.f = k.module->function("grid_barrier");
  k.per_cu = env.backend->max_active_blocks_per_cu(k.f, kBlock);
  k.resident = k.per_cu * static_cast<std::uint32_t>(env.backend->device().cu_count);
  return k;
}

}  // namespace

void grid_barrier_at_the_resident_limit(GpuEnv* env) {
  Backend& b = *env->backend;
  const BarrierKernel k = load(*env);
  ASSERT_GT(k.per_cu, 0u);
  const std::uint32_t grid = k.resident;
  DeviceBuffer arrived(b, 4), published(b, grid * 4ull), seen(b, grid * 4ull);
  StreamHandle s = b.create_stream();
  for (int round = 0; round < 3; ++round) {
    b.memset32_async(arrived.get(), 0u, 1, s);
    b.memset32_async(seen.get(), 0xffffffffu, grid, s);
    void* a = arrived.get();
    void* p = published.get();
    void* o = seen.get();
    void* args[] = {&a, &p, &o};
    b.launch_cooperative(k.f, grid, kBlock, s, args);
    b.synchronize(s);
    EXPECT_EQ(read_bits(b, arrived.get()), grid) << "round " << round;
    std::vector<std::uint32_t> got(grid);
    b.copy_to_host(got.data(), seen.get(), grid * 4ull);
    std::uint32_t wrong = 0;
    for (std::uint32_t i = 0; i < grid; ++i) {
      const std::uint32_t want = ((i + 1) % grid) * 2654435761u + 1u;
      if (got[i] != want && wrong++ < 5)
        ADD_FAILURE() << "round " << round << ": block " << i << " read " << got[i] << ", its neighbour wrote " << want;
    }
    EXPECT_EQ(wrong, 0u) << "round " << round << ": blocks that read their neighbour's word before it was written";
  }
  b.destroy_stream(s);
  constexpr int kQueries = 1000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kQueries; ++i) (void)b.max_active_blocks_per_cu(k.f, kBlock);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kQueries;
  std::printf("%s backend: cooperative grid barrier, %u blocks of %u threads (%u per CU x %d CUs); occupancy "
              "query %.3f us per launch_cooperative\n",
              b.vendor() == Vendor::amd ? "HIP" : "CUDA", grid, kBlock, k.per_cu, b.device().cu_count, us);
}

void grid_one_block_past_the_resident_limit_refused(GpuEnv* env) {
  Backend& b = *env->backend;
  const BarrierKernel k = load(*env);
  const std::uint32_t grid = k.resident + 1;
  DeviceBuffer arrived(b, 4), published(b, grid * 4ull), seen(b, grid * 4ull);
  b.memset32_async(arrived.get(), 0u, 1, nullptr);
  b.synchronize(nullptr);
  void* a = arrived.get();
  void* p = published.get();
  void* o = seen.get();
  void* args[] = {&a, &p, &o};
  try {
    b.launch_cooperative(k.f, grid, kBlock, nullptr, args);
    b.synchronize(nullptr);
    FAIL() << "a cooperative grid of " << grid << " blocks was launched; the device holds " << k.resident;
  } catch (const BackendError& e) {
    EXPECT_EQ(e.call(), "launch_cooperative");
    EXPECT_EQ(std::string(e.what()), "launch_cooperative: a grid of " + std::to_string(grid) + " blocks of " +
                                         std::to_string(kBlock) + " threads exceeds the " +
                                         std::to_string(k.resident) + " blocks the device holds at once (" +
                                         std::to_string(k.per_cu) + " per CU x " +
                                         std::to_string(b.device().cu_count) + " CUs)");
    std::printf("%s\n", e.what());
  }
  b.synchronize(nullptr);
  EXPECT_EQ(read_bits(b, arrived.get()), 0u) << "the refused kernel ran";
}

}  // namespace amax::test
