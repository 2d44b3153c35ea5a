#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "amax/backend.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "unused_backend.hpp"

using namespace amax;

TEST(LaunchShape, GridWorkspaceAndLaunchCounts) {
  const KernelConfig one{Strategy::one_pass, 256, 4, 2, BlockCap::per_cu(4)};
  // vectors = ceil(n/4); per block 512 vectors; cap 4 x 132 = 528.
  auto s = launch_shape(one, 1000, 132);
  EXPECT_EQ(s.grid, 1u);  // 250 vectors
  EXPECT_EQ(s.workspace_bytes, 0u);
  EXPECT_FALSE(s.uses_slot);
  EXPECT_EQ(s.launches(), 1);
  s = launch_shape(one, 1u << 20, 132);  // 262144 vectors -> 512 blocks
  EXPECT_EQ(s.grid, 512u);
  EXPECT_EQ(s.workspace_bytes, 512u * 4);
  EXPECT_TRUE(s.uses_slot);
  EXPECT_EQ(s.launches(), 1);
  s = launch_shape(one, 1ull << 33, 132);
  EXPECT_EQ(s.grid, 528u);

  const KernelConfig two{Strategy::two_stage, 512, 8, 2, BlockCap::absolute(65535)};
  s = launch_shape(two, 1ull << 31, 132);
  EXPECT_EQ(s.grid, 65535u);
  EXPECT_TRUE(s.finish_kernel);
  EXPECT_TRUE(s.dependent_finish);  // programmatic dependent launch of the finish kernel
  EXPECT_EQ(s.launches(), 2);
  s = launch_shape(two, 100, 132);
  EXPECT_EQ(s.grid, 1u);
  EXPECT_FALSE(s.finish_kernel);
  EXPECT_FALSE(s.dependent_finish);
  EXPECT_EQ(s.launches(), 1);

  // self_reset: one launch, the stream slot with more than one block, never a workspace.
  const KernelConfig self{Strategy::self_reset, 512, 8, 2, BlockCap::per_cu(4)};
  s = launch_shape(self, 1000, 132);  // 125 vectors: one block writes the result itself
  EXPECT_EQ(s.grid, 1u);
  EXPECT_FALSE(s.uses_slot);
  EXPECT_EQ(s.workspace_bytes, 0u);
  EXPECT_EQ(s.launches(), 1);
  s = launch_shape(self, 1u << 20, 132);  // 131072 vectors / 1024 per block -> 128 blocks
  EXPECT_EQ(s.grid, 128u);
  EXPECT_TRUE(s.uses_slot);
  EXPECT_EQ(s.workspace_bytes, 0u);
  EXPECT_FALSE(s.memset_output);
  EXPECT_FALSE(s.finish_kernel);
  EXPECT_FALSE(s.dependent_finish);
  EXPECT_EQ(s.launches(), 1);
  s = launch_shape(self, 1ull << 33, 132);
  EXPECT_EQ(s.grid, 528u);
  EXPECT_EQ(s.workspace_bytes, 0u);
  EXPECT_EQ(s.launches(), 1);
  s = launch_shape(self, 0, 132);
  EXPECT_EQ(s.grid, 0u);
  EXPECT_EQ(s.launches(), 0);

  const KernelConfig atomic{Strategy::atomic, 512, 4, 2, BlockCap::uncapped()};
  s = launch_shape(atomic, 100, 132);
  EXPECT_TRUE(s.memset_output);
  EXPECT_EQ(s.launches(), 2);
  EXPECT_EQ(s.workspace_bytes, 0u);
  EXPECT_FALSE(s.uses_slot);
  s = launch_shape(atomic, 0, 132);
  EXPECT_EQ(s.grid, 0u);
  EXPECT_EQ(s.launches(), 0);  // n == 0: launch_amax only memsets the output
}

// A size that is a whole number of tiles (threads x unroll x nvec elements) takes exactly that many
// blocks: the unaligned head and the tail are folded besides the vectors, so none needs a block of
// its own. fp32 n = 4096 with 512 threads x 2 x 4 is one block (no cross-block step), and every size
// one element past a whole number of tiles takes one block more.
TEST(LaunchShape, WholeTilesTakeExactlyThatManyBlocks) {
  for (Strategy st : all_strategies())
    for (std::uint32_t threads : {256u, 512u})
      for (std::uint32_t unroll : {1u, 2u, 4u})
        for (std::uint64_t tiles : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{64}}) {
          const KernelConfig c{st, threads, 4, unroll, BlockCap::uncapped()};
          const std::uint64_t n = tiles * threads * unroll * 4;
          EXPECT_EQ(launch_shape(c, n, 132, 8).grid, tiles) << c.label() << " n=" << n;
          EXPECT_EQ(launch_shape(c, n + 1, 132, 8).grid, tiles + 1) << c.label() << " n=" << n + 1;
          EXPECT_EQ(launch_shape(c, n - 1, 132, 8).grid, tiles) << c.label() << " n=" << n - 1;
        }
  const LaunchShape s = launch_shape(KernelConfig{Strategy::one_pass, 512, 4, 2, BlockCap::per_cu(2)}, 4096, 132);
  EXPECT_EQ(s.grid, 1u);
  EXPECT_FALSE(s.uses_slot);
  EXPECT_EQ(s.workspace_bytes, 0u);
}

// The scale epilogue changes no grid or workspace; atomic with it counts its blocks in the slot.
TEST(LaunchShape, ScaleEpilogueKeepsTheShapeAndGivesAtomicTheSlot) {
  for (Strategy st : all_strategies())
    for (std::uint64_t n : {std::uint64_t{100}, std::uint64_t{1} << 20, std::uint64_t{1} << 33}) {
      KernelConfig c{st, 512, 4, 2, BlockCap::per_cu(4)};
      const LaunchShape a = launch_shape(c, n, 132);
      c.epilogue = Epilogue::scale;
      const LaunchShape f = launch_shape(c, n, 132);
      EXPECT_EQ(f.grid, a.grid);
      EXPECT_EQ(f.workspace_bytes, a.workspace_bytes);
      EXPECT_EQ(f.launches(), a.launches()) << c.label() << " n=" << n;
      EXPECT_EQ(f.uses_slot, a.uses_slot || (st == Strategy::atomic && f.grid > 1)) << c.label() << " n=" << n;
    }
  KernelConfig atomic{Strategy::atomic, 512, 4, 2, BlockCap::uncapped(), Epilogue::scale};
  EXPECT_FALSE(launch_shape(atomic, 100, 132).uses_slot);  // one block: no count needed
  EXPECT_TRUE(launch_shape(atomic, 1u << 20, 132).uses_slot);
}

TEST(Backend, NoDeviceIsReportedNotThrown) {
  for (Vendor v : {Vendor::nvidia, Vendor::amd}) {
    const int n = device_count(v);
    if (n == 0) {
      EXPECT_FALSE(no_device_reason(v).empty());
      try {
        make_backend(v, 0);
        ADD_FAILURE() << "make_backend succeeded with no " << to_string(v) << " device";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), no_device_reason(v));
      }
    } else {
      auto b = make_backend(v, 0);
      EXPECT_GT(b->device().cu_count, 0);
      EXPECT_THROW(make_backend(v, n), std::runtime_error);  // one past the last device
    }
  }
}

TEST(LaunchShape, PerCuCapsFollowTheDevicesCuCount) {
  // MI300X reports 304 CUs (hipDeviceProp_t::multiProcessorCount): b8cu caps a large grid at 2432
  // blocks there and at 1056 on the H200's 132 SMs; the same label carries across SKUs.
  const KernelConfig c{Strategy::two_stage, 512, 8, 2, BlockCap::per_cu(8)};
  EXPECT_EQ(launch_shape(c, 1ull << 30, 304).grid, 8u * 304);
  EXPECT_EQ(launch_shape(c, 1ull << 30, 304).workspace_bytes, 8u * 304 * 4);
  EXPECT_EQ(launch_shape(c, 1ull << 30, 132).grid, 8u * 132);
  // The built-in AMD default (ROCm TE's config) is capped absolutely, whatever the CU count.
  const KernelConfig te{Strategy::two_stage, 512, 8, 2, BlockCap::absolute(65535)};
  EXPECT_EQ(launch_shape(te, 1ull << 30, 304).grid, 65535u);
}

namespace {
// Records the launches launch_amax makes and answers the occupancy query with per_cu (the block size
// each query asked about in queried_blocks); every other call is unexpected.
class LaunchRecordingBackend final : public test::UnusedBackend {
 public:
  struct Launch {
    bool cooperative;
    std::uint32_t grid, block;
  };
  std::vector<Launch> launches;
  std::uint32_t per_cu = 4;
  std::vector<std::uint32_t> queried_blocks;
  LaunchRecordingBackend() : UnusedBackend("LaunchRecordingBackend") {
    info_.arch = "sm_90";
    info_.name = "NVIDIA H200 (no device: test backend)";
    info_.cu_count = 132;
    info_.wave_size = 32;
  }
  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  void launch(FunctionHandle, std::uint32_t grid, std::uint32_t block, StreamHandle, void**) override {
    launches.push_back({false, grid, block});
  }
  void launch_cooperative_unchecked(FunctionHandle, std::uint32_t grid, std::uint32_t block, StreamHandle,
                                    void**) override {
    launches.push_back({true, grid, block});
  }
  std::uint32_t max_active_blocks_per_cu(FunctionHandle, std::uint32_t block) override {
    queried_blocks.push_back(block);
    return per_cu;
  }
  void set_cu_count(int cus) { info_.cu_count = cus; }
  bool is_capturing(StreamHandle) override { return false; }
};
}  // namespace

// Backend::launch_cooperative's refusal, the one check both vendors' cooperative launches go through:
// the grid against the occupancy query (asked for the launch's block size) x the CU count, exactly
// at the limit and one past it, with no occupancy, and with a product past 2^32.
TEST(BackendLaunchCooperative, LaunchesUpToTheResidentBlocksAndRefusesOneMoreNamingBothNumbers) {
  LaunchRecordingBackend b;
  b.launch_cooperative(nullptr, 528, 512, nullptr, nullptr);  // 4 per CU x 132 CUs
  b.launch_cooperative(nullptr, 1, 512, nullptr, nullptr);
  ASSERT_EQ(b.launches.size(), 2u);
  EXPECT_TRUE(b.launches[0].cooperative);
  EXPECT_EQ(b.launches[0].grid, 528u);
  EXPECT_EQ(b.launches[0].block, 512u);
  EXPECT_EQ(b.launches[1].grid, 1u);
  EXPECT_EQ(b.queried_blocks, (std::vector<std::uint32_t>{512, 512}));
  auto refusal = [&b](std::uint32_t grid, std::uint32_t block) -> std::string {
    try {
      b.launch_cooperative(nullptr, grid, block, nullptr, nullptr);
    } catch (const BackendError& e) {
      EXPECT_EQ(e.call(), "launch_cooperative");
      EXPECT_EQ(e.code(), 0);
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(refusal(529, 512),
            "launch_cooperative: a grid of 529 blocks of 512 threads exceeds the 528 blocks the device holds at once "
            "(4 per CU x 132 CUs)");
  b.per_cu = 0;  // a block of this size does not fit on a CU at all
  EXPECT_EQ(refusal(1, 1024),
            "launch_cooperative: a grid of 1 blocks of 1024 threads exceeds the 0 blocks the device holds at once "
            "(0 per CU x 132 CUs)");
  b.set_cu_count(0);
  b.per_cu = 8;
  EXPECT_EQ(refusal(1, 64),
            "launch_cooperative: a grid of 1 blocks of 64 threads exceeds the 0 blocks the device holds at once "
            "(8 per CU x 0 CUs)");
  EXPECT_EQ(b.launches.size(), 2u);  // nothing launched by a refusal
  b.set_cu_count(304);
  b.per_cu = 0xffffffffu;  // resident blocks past 2^32: every grid fits
  b.launch_cooperative(nullptr, 0xffffffffu, 64, nullptr, nullptr);
  ASSERT_EQ(b.launches.size(), 3u);
  EXPECT_EQ(b.launches[2].grid, 0xffffffffu);
}

// A backend without a cooperative launch of its own refuses after the check passes.
TEST(BackendLaunchCooperative, BackendWithoutOneSaysSo) {
  class OccupancyOnly final : public test::UnusedBackend {
   public:
    OccupancyOnly() : UnusedBackend("OccupancyOnly") { info_.cu_count = 2; }
    Vendor vendor() const noexcept override { return Vendor::amd; }
    std::uint32_t max_active_blocks_per_cu(FunctionHandle, std::uint32_t) override { return 1; }
  } b;
  try {
    b.launch_cooperative(nullptr, 2, 256, nullptr, nullptr);
    FAIL() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.call(), "launch_cooperative");
    EXPECT_EQ(std::string(e.what()), "this backend has no cooperative launch");
  }
}

namespace {
// Records every operation launch_amax and the multi-tensor launch enqueue, with the argument
// pointers of each launch; every other call is unexpected.
class OpRecordingBackend final : public test::UnusedBackend {
 public:
  struct Op {
    std::string what;  // "memset", "launch", "cooperative", "dependent"
    FunctionHandle fn;
    std::uint32_t grid, block;
    std::vector<void*> args;  // the values the argument pointers point at, for pointer arguments
    auto operator<=>(const Op&) const = default;
  };
  std::vector<Op> ops;
  bool capturing = false;
  OpRecordingBackend() : UnusedBackend("OpRecordingBackend") { info_.cu_count = 132, info_.wave_size = 32; }
  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  void memset32_async(void* p, std::uint32_t v, std::size_t n, StreamHandle) override {
    ops.push_back({"memset", nullptr, v, static_cast<std::uint32_t>(n), {p}});
  }
  void launch(FunctionHandle f, std::uint32_t g, std::uint32_t b, StreamHandle, void** a) override {
    add("launch", f, g, b, a);
  }
  void launch_cooperative_unchecked(FunctionHandle f, std::uint32_t g, std::uint32_t b, StreamHandle,
                                    void** a) override {
    add("cooperative", f, g, b, a);
  }
  std::uint32_t max_active_blocks_per_cu(FunctionHandle, std::uint32_t) override { return 4; }
  void launch_dependent(FunctionHandle f, std::uint32_t g, std::uint32_t b, StreamHandle, void** a) override {
    add("dependent", f, g, b, a);
  }
  bool is_capturing(StreamHandle) override { return capturing; }

 private:
  // The first argument is a pointer-valued parameter in every kernel: its value is recorded, and
  // the first four pointers of the single-tensor stage one (in, n, out, workspace) likewise.
  void add(const char* what, FunctionHandle f, std::uint32_t g, std::uint32_t b, void** a) {
    ops.push_back({what, f, g, b, {*static_cast<void**>(a[0])}});
  }
};
}  // namespace

// Every strategy's plan, executed: the ordered operations launch_amax enqueues for a many-block and
// a one-block grid, with their launch kind, grid, block and kernel (main or finish), exactly as
// each strategy's launch sequence has been (a memset then the kernel for atomic; stage one then a
// dependent one-block finish for two_stage, a plain one during capture; one wave more per block for
// first_reset_warp; one launch for the others).
TEST(LaunchAmax, EveryStrategysOperationsInOrder) {
  auto* const main_fn = reinterpret_cast<FunctionHandle>(0x10);
  auto* const finish_fn = reinterpret_cast<FunctionHandle>(0x20);
  const void* in = reinterpret_cast<const void*>(0x1000);
  void* ws = reinterpret_cast<void*>(0x2000);
  float out = 0;
  std::uint32_t slot[kSlotWords] = {};
  using Op = OpRecordingBackend::Op;
  struct Case {
    Strategy s;
    std::vector<Op> many;  // n = 2^24 (uncapped grid 2048)
    std::vector<Op> one;   // n = 1000: one block
  };
  const std::vector<Case> cases = {
      {Strategy::atomic,
       {{"memset", nullptr, 0, 1, {&out}}, {"launch", main_fn, 2048, 512, {const_cast<void*>(in)}}},
       {{"memset", nullptr, 0, 1, {&out}}, {"launch", main_fn, 1, 512, {const_cast<void*>(in)}}}},
      {Strategy::two_stage,
       {{"launch", main_fn, 2048, 512, {const_cast<void*>(in)}}, {"dependent", finish_fn, 1, 512, {ws}}},
       {{"launch", main_fn, 1, 512, {const_cast<void*>(in)}}}},
      {Strategy::one_pass, {{"launch", main_fn, 2048, 512, {const_cast<void*>(in)}}},
       {{"launch", main_fn, 1, 512, {const_cast<void*>(in)}}}},
      {Strategy::self_reset, {{"launch", main_fn, 2048, 512, {const_cast<void*>(in)}}},
       {{"launch", main_fn, 1, 512, {const_cast<void*>(in)}}}},
      {Strategy::first_reset, {{"launch", main_fn, 2048, 512, {const_cast<void*>(in)}}},
       {{"launch", main_fn, 1, 512, {const_cast<void*>(in)}}}},
      {Strategy::first_reset_warp, {{"launch", main_fn, 2048, 544, {const_cast<void*>(in)}}},
       {{"launch", main_fn, 1, 544, {const_cast<void*>(in)}}}},
  };
  ASSERT_EQ(cases.size(), std::size(kStrategies));  // a new strategy adds its case here
  for (const Case& c : cases) {
    LoadedKernel k;
    k.config = KernelConfig{c.s, 512, 8, 2, BlockCap::uncapped()};
    k.dtype = DType::bf16;
    k.main = main_fn;
    k.finish = info(c.s).finish_kernel ? finish_fn : nullptr;
    k.resident_per_cu = info(c.s).resident_grid ? 4 : 0;
    for (const std::uint64_t n : {std::uint64_t{1} << 24, std::uint64_t{1000}}) {
      OpRecordingBackend b;
      const LaunchShape shape = launch_shape(k.config, n, 132, k.resident_per_cu);
      launch_amax(b, k, shape, in, n, &out, ws, slot, NanMode::propagate, nullptr);
      EXPECT_EQ(b.ops, n == 1000 ? c.one : c.many) << to_string(c.s) << " n=" << n;
      EXPECT_EQ(shape.launches(), static_cast<int>((n == 1000 ? c.one : c.many).size())) << to_string(c.s);
    }
  }
  // During capture the finish kernel is an ordinary launch.
  LoadedKernel k;
  k.config = KernelConfig{Strategy::two_stage, 512, 8, 2, BlockCap::uncapped()};
  k.main = main_fn;
  k.finish = finish_fn;
  OpRecordingBackend b;
  b.capturing = true;
  launch_amax(b, k, launch_shape(k.config, 1u << 24, 132), in, 1u << 24, &out, ws, slot, NanMode::ignore, nullptr);
  ASSERT_EQ(b.ops.size(), 2u);
  EXPECT_EQ(b.ops[1].what, "launch");
  EXPECT_EQ(b.ops[1].fn, finish_fn);
}

// The arguments of stage one and of the finish kernel, in the templates' parameter order
// (kMainArgs, kFinishArgs): every value launch_amax passes, read back through the pointers.
TEST(LaunchAmax, KernelArgumentsInParameterOrder) {
  struct ArgsBackend final : test::UnusedBackend {
    std::vector<std::vector<std::uint64_t>> seen;
    ArgsBackend() : UnusedBackend("ArgsBackend") { info_.cu_count = 132; info_.wave_size = 32; }
    Vendor vendor() const noexcept override { return Vendor::nvidia; }
    bool is_capturing(StreamHandle) override { return false; }
    void launch_dependent(FunctionHandle f, std::uint32_t g, std::uint32_t b, StreamHandle s, void** a) override {
      launch(f, g, b, s, a);
    }
    void launch(FunctionHandle f, std::uint32_t, std::uint32_t, StreamHandle, void** a) override {
      std::vector<std::uint64_t> v;
      const bool finish = f == reinterpret_cast<FunctionHandle>(0x20);
      const int pointers = finish ? 1 : 5;  // then flags / parts (32 bits), then ScaleArgs
      for (int i = 0; i < pointers; ++i)
        v.push_back(i == 1 && !finish ? *static_cast<unsigned long long*>(a[i])
                                      : reinterpret_cast<std::uint64_t>(*static_cast<void**>(a[i])));
      if (finish) {
        v.push_back(*static_cast<unsigned*>(a[1]));
        v.push_back(reinterpret_cast<std::uint64_t>(*static_cast<void**>(a[2])));
      } else {
        v.push_back(*static_cast<unsigned*>(a[5]));
      }
      const ScaleArgs& sa = *static_cast<const ScaleArgs*>(a[finish ? 3 : 6]);
      v.push_back(reinterpret_cast<std::uint64_t>(sa.scale));
      v.push_back(sa.rule_flags);
      seen.push_back(v);
    }
  } b;
  LoadedKernel k;
  k.config = KernelConfig{Strategy::two_stage, 256, 8, 1, BlockCap::uncapped()};
  k.config.epilogue = Epilogue::scale;
  k.main = reinterpret_cast<FunctionHandle>(0x10);
  k.finish = reinterpret_cast<FunctionHandle>(0x20);
  const void* in = reinterpret_cast<const void*>(0x1000);
  void* ws = reinterpret_cast<void*>(0x2000);
  auto* out = reinterpret_cast<float*>(0x3000);
  auto* slot = reinterpret_cast<std::uint32_t*>(0x4000);
  const ScaleArgs sa{reinterpret_cast<float*>(0x5000), reinterpret_cast<float*>(0x6000), 448.0f, 0.0f,
                     kRuleNanPropagates};
  launch_amax(b, k, launch_shape(k.config, 1u << 20, 132), in, 1u << 20, out, ws, slot, NanMode::ignore, nullptr, &sa);
  ASSERT_EQ(b.seen.size(), 2u);
  EXPECT_EQ(b.seen[0], (std::vector<std::uint64_t>{0x1000, 1u << 20, 0x3000, 0x2000, 0x4000, kFlagIgnoreNan, 0x5000,
                                                   kRuleNanPropagates}));
  EXPECT_EQ(b.seen[1], (std::vector<std::uint64_t>{0x2000, 512, 0x3000, 0x5000, kRuleNanPropagates}));
}

// The quantize family's launch plan: one main operation of quantize_grid's grid (vectors = n / nvec
// + 1, the head and tail's elements counted); cast a plain launch of any grid (grid-stride); keep
// sized so that the kept vectors cover the input, reread as cast, both capped at the resident
// blocks, cooperative and with the stream slot only with more than one block; no workspace.
TEST(LaunchShape, QuantizeKindsGridSlotAndCooperativeLaunch) {
  const QuantizeConfig cast{QuantizeKind::cast, 512, 8, 4, 0, BlockCap::uncapped()};
  const QuantizeConfig keep{QuantizeKind::keep, 512, 8, 4, 2, BlockCap::uncapped()};
  const QuantizeConfig reread{QuantizeKind::reread, 256, 8, 4, 0, BlockCap::uncapped()};
  const DType bf16 = DType::bf16;
  // 2^24 bf16: 2^21 + 1 vectors of 8
  LaunchShape s = launch_shape(cast, bf16, 1u << 24, 132);
  EXPECT_EQ(s.grid, (1u << 21) / (512 * 4) + 1);
  EXPECT_FALSE(s.cooperative);
  EXPECT_FALSE(s.uses_slot);
  EXPECT_FALSE(s.resident_grid);
  EXPECT_EQ(s.workspace_bytes, 0u);
  ASSERT_EQ(s.launches(), 1);
  EXPECT_EQ(*s.begin(), (LaunchOp{LaunchOp::Kind::main, 1025, 512, false, false, false}));
  s = launch_shape(keep, bf16, (1u << 20) - 8, 132, 2);  // 2^17 vectors / (512 x 2): 128 blocks <= 264 resident
  EXPECT_EQ(s.grid, 128u);
  EXPECT_TRUE(s.cooperative);
  EXPECT_TRUE(s.uses_slot);
  EXPECT_TRUE(s.resident_grid);
  EXPECT_EQ(*s.begin(), (LaunchOp{LaunchOp::Kind::main, 128, 512, false, true, false}));
  EXPECT_EQ(launch_shape(keep, bf16, 1u << 24, 132, 2).grid, 264u) << "capped at the resident blocks";
  EXPECT_EQ(launch_shape(keep, bf16, 1u << 24, 132).grid, 2049u) << "resident blocks unknown: a shape for sizing only";
  EXPECT_EQ(launch_shape(reread, bf16, 1u << 24, 132, 3).grid, 396u);
  EXPECT_EQ(launch_shape(reread, bf16, (1u << 20) - 8, 132, 3).grid, 128u);
  s = launch_shape(keep, bf16, 1000, 132, 2);  // one block: no barrier partner, no slot, a plain launch
  EXPECT_EQ(s.grid, 1u);
  EXPECT_FALSE(s.cooperative);
  EXPECT_FALSE(s.uses_slot);
  EXPECT_EQ(launch_shape(keep, bf16, 0, 132, 2).launches(), 0);
  const QuantizeConfig capped{QuantizeKind::cast, 512, 8, 4, 0, BlockCap::per_cu(2)};
  EXPECT_EQ(launch_shape(capped, bf16, 1u << 24, 132).grid, 264u);
}

// The one-launch quantize words of the stream slot: the zero-between-launches words are shared
// with non-persistent strategy words, the published word with none; inside every arch's slot.
TEST(StreamSlotLayout, QuantizeWordsFitBesideTheStrategiesWords) {
  for (const StrategyInfo& r : kStrategies) {
    auto in = [&](std::uint32_t w) { return r.slot_count && w >= r.slot_first && w < r.slot_first + r.slot_count; };
    EXPECT_FALSE(in(kQuantizePublishedWord)) << r.name;
    if (r.persistent_slot) {
      EXPECT_FALSE(in(kQuantizeArrivalWord)) << r.name;
      EXPECT_FALSE(in(kQuantizeAccumulatorWord)) << r.name;
    }
  }
  for (const char* a : {"sm_90", "sm_80", "gfx942", "gfx950", "gfx1100"})
    EXPECT_GT(slot_words(ArchInfo::parse(a)), std::size_t{kQuantizePublishedWord}) << a;
  const std::string defines = host_device_defines();
  for (const auto& [name, word] : {std::pair{"AMAX_QUANT_SYNC_ARRIVALS", kQuantizeArrivalWord},
                                   {"AMAX_QUANT_SYNC_ACCUMULATOR", kQuantizeAccumulatorWord},
                                   {"AMAX_QUANT_SYNC_PUBLISHED", kQuantizePublishedWord}})
    EXPECT_NE(defines.find("#define " + std::string(name) + " " + std::to_string(word) + "u\n"), std::string::npos)
        << name;
}

// launch_quantize: a keep grid of many blocks launches cooperatively, one block and a cast plainly;
// a keep shape larger than the kernel's resident blocks is refused before anything is launched.
TEST(LaunchQuantize, OneLaunchKindsLaunchCooperativelyAndRefuseAGridOverTheResidentBlocks) {
  LaunchRecordingBackend b;
  LoadedQuantizeKernel keep;
  keep.config = QuantizeConfig{QuantizeKind::keep, 512, 8, 4, 2, BlockCap::uncapped()};
  keep.dtype = DType::bf16;
  keep.resident_per_cu = 2;
  LoadedQuantizeKernel cast;
  cast.config = QuantizeConfig{QuantizeKind::cast, 256, 8, 4, 0, BlockCap::uncapped()};
  cast.dtype = DType::bf16;
  std::uint32_t slot[kSlotWords] = {};
  float words[3] = {};
  std::uint8_t out[1] = {};
  const ScaleArgs sa{&words[1], &words[2], 448.0f, 0.0f, 0u};
  const void* in = reinterpret_cast<const void*>(0x1000);
  launch_quantize(b, keep, launch_shape(keep.config, DType::bf16, 1u << 24, 132, 2), in, 1u << 24, out, words, slot,
                  NanMode::propagate, CastRule::transformer_engine, sa, nullptr);
  launch_quantize(b, keep, launch_shape(keep.config, DType::bf16, 1000, 132, 2), in, 1000, out, words, nullptr,
                  NanMode::ignore, CastRule::torchao, sa, nullptr);
  launch_quantize(b, cast, launch_shape(cast.config, DType::bf16, 1u << 24, 132), in, 1u << 24, out, words, nullptr,
                  NanMode::propagate, CastRule::transformer_engine, sa, nullptr);
  ASSERT_EQ(b.launches.size(), 3u);
  EXPECT_TRUE(b.launches[0].cooperative);
  EXPECT_EQ(b.launches[0].grid, 264u);
  EXPECT_FALSE(b.launches[1].cooperative);
  EXPECT_EQ(b.launches[1].grid, 1u);
  EXPECT_FALSE(b.launches[2].cooperative);
  EXPECT_EQ(b.launches[2].grid, 2049u);
  EXPECT_EQ(b.launches[2].block, 256u);
  try {
    launch_quantize(b, keep, launch_shape(keep.config, DType::bf16, 1u << 24, 132), in, 1u << 24, out, words, slot,
                    NanMode::propagate, CastRule::transformer_engine, sa, nullptr);
    FAIL() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "launch_quantize: keep grid of 2049 blocks exceeds the 264 blocks of quant.keep.t512.v8.u4.k2.buncapped "
              "the device holds at once (pass its resident_per_cu to launch_shape)");
  }
  EXPECT_EQ(b.launches.size(), 3u);
}
