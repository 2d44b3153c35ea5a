// Issue 7, item 5: a row made by another template hash, compiler version or tool version is not
// launched blindly: DispatchTables skips it (one warning naming what changed), and
// TuningDb::stale_keys lists exactly the keys to re-tune (those whose rows for this device are
// all stale). Checked against a reference model on random databases, then on an upgrade: every
// key stale, re-tuned with the stale keys' list, fresh again.
//
// `amax-tune --stale-only` itself needs a GPU (Session::plan_keys takes stale_keys() and tunes
// them); here the re-tune is the same TuningDb calls without the measurements.
#include <map>
#include <set>

#include "amax/dispatch.hpp"
#include "reliability_common.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

const ArchInfo kSm90 = ArchInfo::parse(kArch);
const db::Provenance kIdentity = provenance("NVIDIA H200");

struct Variant {
  const char* name;
  std::string device;
  std::string hash, compiler, tool;
  std::set<std::string> stale;  // expected stale_fields against the current build
};

std::vector<Variant> variants() {
  const std::string h = template_hash(), t(generator_version());
  return {
      {"fresh", "NVIDIA H200", h, kCompiler, t, {}},
      {"other hash", "NVIDIA H200", "0123456789abcdef", kCompiler, t, {"template_hash"}},
      {"other compiler", "NVIDIA H200", h, "nvrtc 12.4", t, {"compiler"}},
      {"other tool", "NVIDIA H200", h, kCompiler, "0.0.9", {"tool_version"}},
      {"all three", "NVIDIA H200", "fedcba9876543210", "nvrtc 12.4", "0.0.9",
       {"template_hash", "compiler", "tool_version"}},
      {"other device, fresh", "NVIDIA H100 80GB HBM3", h, kCompiler, t, {}},
      {"other device, other hash", "NVIDIA H100 80GB HBM3", "0123456789abcdef", kCompiler, t, {"template_hash"}},
  };
}

db::Provenance prov_of(const Variant& v) { return provenance(v.device, v.hash, v.compiler, v.tool); }

class StaleTest : public TempDirTest {};

TEST_F(StaleTest, StaleRowsAreNeverChosenAndStaleKeysAreExactlyTheOnesToRetune) {
  const std::uint64_t seed = scenario_seed();
  std::mt19937_64 rng(seed);
  const auto t0 = Clock::now();
  const auto vs = variants();
  const auto& labels = space_labels();  // 240 fp32 labels; they are valid for bf16 too (8-byte vectors)
  const std::size_t half = labels.size() / 2;
  constexpr int kDatabases = 20, kKeys = 30;
  int rows_total = 0, stale_rows_total = 0, stale_keys_total = 0, choices = 0;
  LogCapture quiet;
  for (int dbi = 0; dbi < kDatabases; ++dbi) {
    SCOPED_TRACE("database " + std::to_string(dbi));
    const fs::path p = file("db" + std::to_string(dbi) + ".db");
    db::TuningDb t = db::TuningDb::open(p);
    std::map<db::TuningKey, std::vector<std::size_t>> rows;  // key -> variants stored
    std::set<std::string> fresh_labels, stale_labels;
    std::size_t expect_kept = 0, expect_stale = 0;
    std::set<std::string> expect_fields;
    for (int k = 0; k < kKeys; ++k) {
      const DType dt = rng() % 2 ? DType::fp32 : DType::bf16;
      const db::TuningKey key{kArch, dt, 1ull << (6 + rng() % 28)};
      if (rows.count(key)) continue;
      for (std::size_t v = 0; v < vs.size(); ++v) {
        if (rng() % 3) continue;  // each variant with probability 1/3
        const bool stale = !vs[v].stale.empty();
        // Fresh rows use labels from the first half of the space, stale ones from the second.
        const std::string& label = labels[(stale ? half : 0) + rng() % half];
        const db::Trial tr{label, db::TrialStatus::ok, "", 2.0 + static_cast<double>(v), 0.1, 25, 100.0, 32, 0};
        t.record<SingleFamily>(key, prov_of(vs[v]), std::span(&tr, 1), db::Winner{label, tr.median_us, tr.gbps});
        rows[key].push_back(v);
        (stale ? stale_labels : fresh_labels).insert(label);
        (stale ? expect_stale : expect_kept) += 1;
        if (stale) expect_fields.insert(vs[v].stale.begin(), vs[v].stale.end());
        ++rows_total;
        stale_rows_total += stale;
      }
    }
    // stale_keys: keys with a row for this device, all of them stale; changed = union of fields.
    std::vector<db::StaleKey<db::TuningKey>> expect_keys;
    for (const auto& [key, vlist] : rows) {
      bool any = false, fresh = false;
      std::set<std::string> changed;
      for (std::size_t v : vlist) {
        if (vs[v].device != "NVIDIA H200") continue;
        any = true;
        fresh |= vs[v].stale.empty();
        changed.insert(vs[v].stale.begin(), vs[v].stale.end());
      }
      if (any && !fresh) {
        db::StaleKey<db::TuningKey> sk{key, {}};
        for (const char* f : {"compiler", "template_hash", "tool_version"})  // field list order
          if (changed.count(f)) sk.changed.emplace_back(f);
        expect_keys.push_back(sk);
      }
    }
    const db::Provenance current = prov_of(vs[0]);
    EXPECT_EQ(t.stale_keys<SingleFamily>(current), expect_keys);
    stale_keys_total += static_cast<int>(expect_keys.size());

    DispatchTables d(kSm90, kIdentity);
    EXPECT_EQ(d.load(Source::user_db, p.string()), expect_kept);
    ASSERT_EQ(d.warnings().size(), expect_stale ? 1u : 0u);
    if (expect_stale) {
      const std::string& w = d.warnings()[0];
      EXPECT_NE(w.find(std::to_string(expect_stale) + " entries were made with another"), std::string::npos) << w;
      for (const auto& f : expect_fields) EXPECT_NE(w.find(f), std::string::npos) << f << " in " << w;
      EXPECT_NE(w.find("--stale-only"), std::string::npos) << w;
    }
    for (DType dt : {DType::fp32, DType::bf16}) {
      for (int i = 0; i < 40; ++i) {
        const std::uint64_t n = i < 34 ? (1ull << i) : rng() % (1ull << 36);
        const Choice c = d.choose(dt, n);
        EXPECT_EQ(stale_labels.count(c.config.label()), 0u)  // the two label pools are disjoint
            << "a stale row's variant was chosen: " << c.config.label();
        EXPECT_FALSE(c.config.validate(kSm90, dt).has_value());
        ++choices;
      }
    }
  }
  summary("stale rows: %d random databases, %d winner rows (%d stale: other template hash, compiler, tool version "
          "or all three, on this and another device): DispatchTables kept exactly the fresh rows with 1 warning "
          "per database naming the changed fields, none of %d choices used a stale row, and stale_keys() matched "
          "the reference model exactly (%d keys to re-tune); %.1f s, seed %llu",
          kDatabases, rows_total, stale_rows_total, choices, stale_keys_total, seconds_since(t0),
          static_cast<unsigned long long>(seed));
}

// An upgrade: a database tuned by the previous release (another template hash and tool version),
// read by this one. Nothing of it is launched; stale_keys() lists every key; re-tuning exactly those
// keys (what `amax-tune --stale-only` does) makes the database fresh again, and the rows of the
// previous release stay for it.
TEST_F(StaleTest, UpgradeRetunesExactlyTheStaleKeys) {
  const fs::path p = file("user.db");
  const db::Provenance old = provenance("NVIDIA H200", "00000000deadbeef", kCompiler, "0.0.9");
  const db::Provenance now = provenance("NVIDIA H200");
  constexpr int kKeys = 12;
  {
    db::TuningDb t = db::TuningDb::open(p);
    for (int i = 0; i < kKeys; ++i) {
      const KeyRecord r = make_key_record("old", 1ull << (10 + i), 240);
      t.record<SingleFamily>(key_at(1ull << (10 + i)), old, r.trials, r.winner);
    }
  }
  LogCapture quiet;
  DispatchTables before(kSm90, kIdentity);
  EXPECT_EQ(before.load(Source::user_db, p.string()), 0u);
  ASSERT_EQ(before.warnings().size(), 1u);
  EXPECT_EQ(before.choose(DType::fp32, 1 << 20).source, Source::builtin_default);

  db::TuningDb t = db::TuningDb::open(p);
  const auto stale = t.stale_keys<SingleFamily>(now);
  ASSERT_EQ(stale.size(), static_cast<std::size_t>(kKeys));
  EXPECT_EQ(stale[0].changed, (std::vector<std::string>{"template_hash", "tool_version"}));
  EXPECT_TRUE(t.finished_keys<SingleFamily>(kArch, DType::fp32, now).empty()) << "a normal resume re-tunes them too";
  for (const auto& s : stale) {
    const KeyRecord r = make_key_record("NVIDIA H200", s.key.n, 240);
    t.record<SingleFamily>(s.key, now, r.trials, r.winner);
  }
  EXPECT_TRUE(t.stale_keys<SingleFamily>(now).empty());
  EXPECT_EQ(t.winners<SingleFamily>().size(), 2u * kKeys) << "the previous release's rows stay";
  DispatchTables after(kSm90, kIdentity);
  EXPECT_EQ(after.load(Source::user_db, p.string()), static_cast<std::size_t>(kKeys));
  ASSERT_EQ(after.warnings().size(), 1u) << "the old rows are still reported, once";
  EXPECT_EQ(after.choose(DType::fp32, 1 << 20).source, Source::user_db);
  summary("upgrade: %d keys tuned by the previous release were all skipped by the runtime (1 warning, built-in "
          "default) and listed by stale_keys(); re-tuning exactly those made the runtime use all %d again",
          kKeys, kKeys);
}

}  // namespace
}  // namespace amax::reliability::test
