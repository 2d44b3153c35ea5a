// The GPU half of issue 7, items 3 and 6 (label gpu; skipped without a GPU): with a damaged user
// or system database the runtime library still computes a bit-exact amax (from the built-in
// default), and with damaged entries in its kernel cache it recompiles them and still computes a
// bit-exact amax, rewriting the damaged entries.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <random>

#include "amax/amax_tune.hpp"
#include "amax/dtype_c.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/reference.hpp"
#include "gpu_env.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

using amax::test::DeviceBuffer;


/// Checks amax of random inputs of every dtype at several sizes against the CPU reference;
/// returns the number of cases.
int check_bit_exact(amax_tune::Context& ctx, Backend& b, std::mt19937_64& rng, amax_source_t expect_source) {
  DeviceBuffer in(b, (1u << 24) * 4 + 64), out(b, 4), ws(b, 16u << 20);
  int cases = 0;
  for (const auto& d : all_dtypes()) {
    for (std::uint64_t n : {1ull, 1000ull, 65537ull, 1ull << 21, (1ull << 24) - 3}) {
      const InputKind kind = all_input_kinds()[rng() % all_input_kinds().size()];
      const auto host = make_input(kind, d.dtype, n, rng());
      b.copy_to_device(in.get(), host.data(), host.size());
      b.memset32_async(out.get(), 0x7f800000u, 1, nullptr);
      const std::size_t need = ctx.workspace_size(to_c(d.dtype), n);
      EXPECT_LE(need, ws.bytes());
      ctx.compute(in.get(), to_c(d.dtype), n, out.get<float>(), ws.get(), need, nullptr);
      b.synchronize(nullptr);
      std::uint32_t bits = 0;
      b.copy_to_host(&bits, out.get(), 4);
      EXPECT_EQ(bits, reference_amax_bits(host.data(), d.dtype, n, NanMode::propagate))
          << d.name << " n=" << n << " " << to_string(kind) << " via " << ctx.explain(to_c(d.dtype), n).label;
      EXPECT_EQ(ctx.explain(to_c(d.dtype), n).source, expect_source);
      ++cases;
    }
  }
  return cases;
}

class GpuReliabilityTest : public TempDirTest {};

TEST_F(GpuReliabilityTest, DamagedDatabasesStillGiveBitExactAmax) {
  AMAX_REQUIRE_GPU();
  std::mt19937_64 rng(scenario_seed());
  const fs::path good = file("good.db");
  {
    db::TuningDb t = db::TuningDb::open(good);
    (void)t;
  }
  const std::string good_bytes = read_bytes(good);
  int cases = 0, files = 0;
  for (int kind = 0; kind < 4; ++kind) {
    const fs::path p = file("damaged" + std::to_string(kind) + ".db");
    std::string bytes;
    if (kind == 0) {  // a real database with entries, truncated mid-page
      {
        db::TuningDb t = db::TuningDb::open(p);
        for (int i = 0; i < 6; ++i) {
          const db::Trial tr{"atomic.t512.v4.u4.buncapped", db::TrialStatus::ok, "", 2.0, 0.1, 25, 100.0, 32, 0};
          t.record<SingleFamily>(db::TuningKey{env->arch.name, DType::fp32, 1ull << (10 + 3 * i)},
                       db::Provenance{.device_name = "x", .arch = env->arch.name, .cu_count = 1, .compiler = "c",
                                      .template_hash = "h", .tool_version = "t"}, std::span(&tr, 1),
                       db::Winner{tr.label, 2.0, 100.0});
        }
        t.use_rollback_journal();
      }
      bytes = read_bytes(p);
      bytes.resize(bytes.size() / 2 + 123);
    } else if (kind == 1) {
      bytes.assign(good_bytes.size() * 4, '\0');
    } else if (kind == 2) {
      bytes.resize(64 * 1024);
      for (char& c : bytes) c = static_cast<char>(rng());
    }
    if (kind == 3) {  // future schema
      write_bytes(p, good_bytes);
      sqlite3* raw = nullptr;
      ASSERT_EQ(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(raw, "UPDATE meta SET value = 99 WHERE key = 'schema_version'", nullptr, nullptr, nullptr),
                SQLITE_OK);
      sqlite3_close(raw);
    } else {
      write_bytes(p, bytes);
    }
    const std::string before = read_bytes(p);
    for (const bool as_user : {true, false}) {
      amax_tune::Options o;
      o.user_db_path = as_user ? p.string() : "";
      o.system_db_path = as_user ? "" : p.string();
      o.kernel_cache_dir = file("kc").string();
      amax_tune::Context ctx(o);  // a damaged database is not an error
      cases += check_bit_exact(ctx, *env->backend, rng, AMAX_SOURCE_DEFAULT);
      ++files;
    }
    EXPECT_EQ(read_bytes(p), before);
  }
  summary("GPU: a damaged user or system database (truncated, zero-filled, random bytes, future schema; %d "
          "contexts): every context was created, %d amax computations (3 dtypes x 5 sizes each, adversarial "
          "inputs) were bit-exact with the built-in defaults, and the files were left unchanged",
          files, cases);
}

TEST_F(GpuReliabilityTest, DamagedKernelCacheEntriesAreRebuilt) {
  AMAX_REQUIRE_GPU();
  std::mt19937_64 rng(scenario_seed());
  const fs::path kc = file("kc");
  amax_tune::Options o;
  o.user_db_path = "";
  o.system_db_path = "";
  o.kernel_cache_dir = kc.string();
  int cases = 0, damaged = 0, rounds = 0;
  {
    amax_tune::Context ctx(o);
    cases += check_bit_exact(ctx, *env->backend, rng, AMAX_SOURCE_DEFAULT);  // fills the cache
  }
  for (int round = 0; round < 3; ++round, ++rounds) {
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(kc))
      if (e.path().extension() == ".bin") entries.push_back(e.path());
    ASSERT_FALSE(entries.empty());
    for (const auto& p : entries) {  // damage every entry: truncate, flip a byte, or empty it
      std::string bytes = read_bytes(p);
      switch (rng() % 3) {
        case 0: bytes.resize(bytes.size() / 2); break;
        case 1: bytes[rng() % bytes.size()] ^= 0x40; break;
        default: bytes.clear();
      }
      write_bytes(p, bytes);
      ++damaged;
    }
    LogCapture log;
    amax_tune::Context ctx(o);
    cases += check_bit_exact(ctx, *env->backend, rng, AMAX_SOURCE_DEFAULT);
    // The entries were rewritten whole: a fresh context loads them without a warning.
    LogCapture log2;
    amax_tune::Context again(o);
    cases += check_bit_exact(again, *env->backend, rng, AMAX_SOURCE_DEFAULT);
    EXPECT_EQ(log2.count("damaged kernel cache entry"), 0) << log2.text();
  }
  summary("GPU: kernel cache with every entry damaged (truncated, a flipped byte, emptied), %d rounds, %d entries "
          "damaged: %d amax computations bit-exact, the damaged entries were rebuilt (the next context loaded them "
          "without a warning)",
          rounds, damaged, cases);
}

}  // namespace
}  // namespace amax::reliability::test
