// TuningDb's multi-tensor group keys (schema 4): GroupKey rules, record / replace within a bucket,
// resume, stale buckets, the nearest-group lookup, export, text dump and load, import_rows; and
// the provenance stored once for every kind of row.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace amax::db::test {
namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;

class GroupTest : public OpenDbTest {
 protected:
  std::vector<std::string> raw(const std::string& sql) { return raw_query(file("t.db"), sql); }
};

// Two shapes of one bucket {24, 54, 30}, and shapes of other buckets.
const GroupKey kA = gkey(4096, 128 * MiB, 32 * KiB);
const GroupKey kA2 = gkey(4000, 125 * MiB, 33 * KiB);
const GroupKey kB = gkey(64, 128 * MiB, 2 * MiB);
const GroupKey kC = gkey(500, 8'192'000, 16 * KiB);

TEST(GroupKeyTest, TextOrderAndBuckets) {
  EXPECT_EQ(to_string(kA), "sm_90/bf16/4096 tensors, 128 MiB, largest 32 KiB");
  EXPECT_EQ(to_string(gkey(1, 1536, 1536, DType::fp32, "gfx942")), "gfx942/fp32/1 tensor, 1536 B, largest 1536 B");
  EXPECT_EQ(to_string(gkey(3, std::uint64_t{3} << 40, std::uint64_t{1} << 40)), "sm_90/bf16/3 tensors, 3 TiB, largest 1 TiB");
  EXPECT_EQ(to_string(kC), "sm_90/bf16/500 tensors, 8000 KiB, largest 16 KiB");
  EXPECT_EQ(group_bucket(kA), (GroupBucket{24, 54, 30}));
  EXPECT_EQ(group_bucket(kA2), group_bucket(kA));
  EXPECT_EQ(group_bucket(kB), (GroupBucket{12, 54, 42}));
  EXPECT_EQ(group_bucket(kC), (GroupBucket{18, 46, 28}));
  // arch, then dtype name, then tensors, total, largest.
  EXPECT_LT(gkey(9, 9, 1, DType::fp32, "gfx942"), gkey(1, 1, 1, DType::bf16, "sm_90"));
  EXPECT_LT(gkey(9, 9, 1, DType::bf16), gkey(1, 1, 1, DType::fp16));
  EXPECT_LT(kB, kC);
  EXPECT_LT(kA2, kA);
  EXPECT_LT(gkey(4, 8, 2), gkey(4, 8, 3));
  std::vector<std::string> names;
  for_each_field(group_key_fields, [&](const auto& f) { names.emplace_back(f.name); });
  EXPECT_EQ(names, (std::vector<std::string>{"arch", "dtype", "tensors", "total_bytes", "largest_bytes"}));
}

TEST_F(GroupTest, KeyRulesAreCheckedNamingTheValue) {
  const Provenance p = h200();
  const std::vector<Trial> good{ok_trial("multi.t512.v8.u4.c32k.warp", 10.0)};
  const Winner w{"multi.t512.v8.u4.c32k.warp", 10.0, 1.0};
  const std::uint64_t big = std::uint64_t{1} << 63;
  struct Case {
    GroupKey k;
    const char* needle;
  };
  for (const Case& c : std::vector<Case>{
           {gkey(0, 0, 1), "key.tensors = 0"},
           {gkey(1, 0, 0), "key.largest_bytes = 0"},
           {gkey(2, 10, 11), "key.largest_bytes = 11 exceeds key.total_bytes = 10"},
           {gkey(2, 23, 11), "key.total_bytes = 23 exceeds key.tensors * key.largest_bytes = 2 * 11"},
           {gkey(big, 4, 1), "key.tensors = 9223372036854775808 exceeds 2^63-1"},
           {gkey(2, big, big), "key.total_bytes = 9223372036854775808 exceeds 2^63-1"},
           {gkey(1, 1, 1, DType::fp32, ""), "key.arch is empty"},
       }) {
    SCOPED_TRACE(c.needle);
    const std::string msg =
        expect_db_error(ErrorKind::InvalidArgument, [&] { db().record<MultiFamily>(c.k, p, good, w); });
    EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(file("t.db").string()), std::string::npos) << msg;
  }
  // The edges are allowed: one tensor holding everything; all tensors the largest size.
  db().record<MultiFamily>(gkey(1, 5, 5), p, good, w);
  db().record<MultiFamily>(gkey(7, 77, 11), p, good, w);
  // Trial and winner rules as for single keys.
  const std::string msg = expect_db_error(ErrorKind::InvalidArgument, [&] {
    db().record<MultiFamily>(kA, p, good, Winner{"multi.other", 1.0, 1.0});
  });
  EXPECT_NE(msg.find("cannot record sm_90/bf16/4096 tensors, 128 MiB, largest 32 KiB: the winner 'multi.other' is "
                     "not among the trials with status ok"),
            std::string::npos)
      << msg;
  EXPECT_EQ(db().winners<MultiFamily>().size(), 2u);
}

TEST_F(GroupTest, EveryFieldReadsBackExactlyAndSingleTablesStayEmpty) {
  Trial a = ok_trial("multi.t512.v8.u4.c32k.warp", 41.25, 3254.5);
  a.tie_rank = 0;
  a.confirm_median_us = 41.5;
  Trial b = ok_trial("multi.t256.v8.u2.c64k.block", 43.0, 3100.0);
  b.tie_rank = 1;
  b.confirm_median_us = 42.75;
  b.spill_bytes = 8;
  Trial c = failed_trial("multi.t1024.v8.u8.c512k.warp", TrialStatus::compile_failed, "too many resources, \"x\"\n");
  const Winner w{a.label, a.median_us, a.gbps};
  db().record<MultiFamily>(kA, h200(), std::vector<Trial>{a, b, c}, w);
  EXPECT_EQ(db().winners<MultiFamily>(), (std::vector<GroupWinnerRow>{{kA, w, h200()}}));
  const std::vector<GroupTrialRow> expected{{kA, c, h200()}, {kA, b, h200()}, {kA, a, h200()}};  // by label
  EXPECT_EQ(db().trials<MultiFamily>(kA), expected);
  EXPECT_EQ(db().all_trials<MultiFamily>(), expected);
  EXPECT_TRUE(db().trials<MultiFamily>(kA2).empty());  // exact key only
  EXPECT_TRUE(db().trials<MultiFamily>(gkey(std::numeric_limits<std::uint64_t>::max(), 1, 1)).empty());
  EXPECT_TRUE(db().winners<SingleFamily>().empty());
  EXPECT_TRUE(db().all_trials<SingleFamily>().empty());
  EXPECT_EQ(raw("SELECT arch, dtype, tensors, total_bytes, largest_bytes, label, provenance_id FROM group_winners"),
            std::vector<std::string>{"sm_90|bf16|4096|134217728|32768|multi.t512.v8.u4.c32k.warp|1"});
  EXPECT_EQ(raw("SELECT count(*) FROM provenance"), std::vector<std::string>{"1"});
  // Filters of winners apply.
  EXPECT_EQ(db().winners<MultiFamily>({"sm_90", DType::bf16}).size(), 1u);
  EXPECT_TRUE(db().winners<MultiFamily>({"sm_80", std::nullopt}).empty());
  EXPECT_TRUE(db().winners<MultiFamily>({std::nullopt, DType::fp32}).empty());
}

TEST_F(GroupTest, RecordReplacesEveryShapeOfTheBucketWithTheSameIdentityOnly) {
  db().record<MultiFamily>(kA, h200(), std::vector<Trial>{ok_trial("x", 5.0), ok_trial("y", 6.0)}, Winner{"x", 5.0, 1.0});
  record_group_simple(db(), kB, h200(), "b", 7.0);
  // Another shape of kA's bucket, same identity: kA's winner and trials go.
  db().record<MultiFamily>(kA2, h200(), std::vector<Trial>{ok_trial("z", 4.0)}, Winner{"z", 4.0, 2.0});
  EXPECT_EQ(db().winners<MultiFamily>(), (std::vector<GroupWinnerRow>{{kB, Winner{"b", 7.0, 100.0}, h200()},
                                                               {kA2, Winner{"z", 4.0, 2.0}, h200()}}));
  EXPECT_TRUE(db().trials<MultiFamily>(kA).empty());
  EXPECT_EQ(db().trials<MultiFamily>(kA2).size(), 1u);
  // Another identity (template hash) of the bucket is kept beside it.
  record_group_simple(db(), kA, h200("beef"), "h", 3.0);
  EXPECT_EQ(db().winners<MultiFamily>().size(), 3u);
  // A later timestamp and driver: the same identity, replaces (and may have no winner).
  Provenance later = h200();
  later.timestamp = "2026-12-05T00:00:00Z";
  later.driver_version = "999";
  db().record<MultiFamily>(kA, later, std::vector<Trial>{failed_trial("f", TrialStatus::launch_failed, "oops")},
                        std::nullopt);
  const auto ws = db().winners<MultiFamily>();
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].key, kB);
  EXPECT_EQ(ws[1].provenance, h200("beef"));
  EXPECT_EQ(db().trials<MultiFamily>(kA), (std::vector<GroupTrialRow>{  // by identity: hash a1b2c3d4 < beef
                                       {kA, failed_trial("f", TrialStatus::launch_failed, "oops"), later},
                                       {kA, ok_trial("h", 3.0), h200("beef")}}));
  EXPECT_TRUE(db().trials<MultiFamily>(kA2).empty());
  // The provenance rows in use: h200() (kB), h200("beef"), later.
  EXPECT_EQ(raw("SELECT count(*) FROM provenance"), std::vector<std::string>{"3"});
}

TEST_F(GroupTest, ResumeByBucketAndIdentity) {
  const Provenance p = h200();
  record_group_simple(db(), kA, p, "a", 1.0);
  record_group_simple(db(), kC, p, "c", 1.0);
  record_group_simple(db(), kB, p, "b", 1.0);
  record_group_simple(db(), gkey(8, 8 * KiB, KiB, DType::fp32), p, "f", 1.0);
  record_group_simple(db(), gkey(8, 8 * KiB, KiB), h200("oldhash"), "o", 1.0);
  db().record<MultiFamily>(gkey(2, 2, 1), p, std::vector<Trial>{failed_trial("a", TrialStatus::compile_failed, "x")},
                        std::nullopt);
  EXPECT_EQ(db().finished_keys<MultiFamily>("sm_90", DType::bf16, p), (std::vector<GroupKey>{kB, kC, kA}));
  Provenance later = p;
  later.timestamp = "2030-01-01T00:00:00Z";
  later.timing_protocol = "other";
  EXPECT_EQ(db().finished_keys<MultiFamily>("sm_90", DType::bf16, later).size(), 3u);
  EXPECT_EQ(db().finished_keys<MultiFamily>("sm_90", DType::bf16, h200("oldhash")),
            std::vector<GroupKey>{gkey(8, 8 * KiB, KiB)});
  EXPECT_EQ(db().finished_keys<MultiFamily>("sm_90", DType::fp32, p), std::vector<GroupKey>{gkey(8, 8 * KiB, KiB, DType::fp32)});
  EXPECT_TRUE(db().finished_keys<MultiFamily>("sm_80", DType::bf16, p).empty());
  EXPECT_TRUE(db().finished_keys<MultiFamily>("sm_90", DType::bf16, h100()).empty());
  EXPECT_TRUE(db().has_winner<MultiFamily>(kA, p));
  EXPECT_TRUE(db().has_winner<MultiFamily>(kA2, p));  // kA is in its bucket: recording kA2 would replace it
  EXPECT_FALSE(db().has_winner<MultiFamily>(kA, h200("oldhash")));
  EXPECT_FALSE(db().has_winner<MultiFamily>(gkey(4096, 128 * MiB, 64 * KiB), p));  // largest bucket 32
  EXPECT_FALSE(db().has_winner<MultiFamily>(gkey(2, 2, 1), p));  // every variant failed: not finished
  EXPECT_FALSE(db().has_winner<MultiFamily>(gkey(std::numeric_limits<std::uint64_t>::max(), 1, 1), p));
}

TEST_F(GroupTest, StaleBucketsAreExactlyTheOnesToReTune) {
  const Provenance cur = h200("new");
  record_group_simple(db(), kA, h200("old"), "a", 1.0);   // stale
  record_group_simple(db(), kA2, cur, "a", 1.0);          // ... but its bucket has a fresh winner
  record_group_simple(db(), kB, h200("old"), "b", 1.0);   // stale
  Provenance p4 = cur;
  p4.compiler = "nvrtc 12.8";
  record_group_simple(db(), kC, p4, "c", 1.0);            // stale: compiler
  Provenance other = h100();
  other.template_hash = "old";
  record_group_simple(db(), gkey(8, 8 * KiB, KiB), other, "o", 1.0);  // another device's business
  Provenance p6 = cur;
  p6.driver_version = "1.0";
  record_group_simple(db(), gkey(16, 16 * KiB, KiB), p6, "d", 1.0);   // the driver does not make it stale
  Provenance p7 = h200("older");
  p7.tool_version = "0.0.9";
  record_group_simple(db(), gkey(4000, 125 * MiB, 33 * KiB, DType::fp16), p7, "e", 1.0);
  record_group_simple(db(), gkey(4096, 128 * MiB, 32 * KiB, DType::fp16), h200("old"), "e", 1.0);  // same bucket
  EXPECT_EQ(db().stale_keys<MultiFamily>(cur),
            (std::vector<StaleKey<GroupKey>>{{kB, {"template_hash"}},
                                        {kC, {"compiler"}},
                                        {gkey(4000, 125 * MiB, 33 * KiB, DType::fp16), {"template_hash", "tool_version"}}}));
  EXPECT_EQ(db().stale_keys<MultiFamily>(h100()), (std::vector<StaleKey<GroupKey>>{{gkey(8, 8 * KiB, KiB), {"template_hash"}}}));
  // The single-tensor list knows nothing of group rows.
  EXPECT_TRUE(db().stale_keys<SingleFamily>(cur).empty());
}

class GroupLookupTest : public GroupTest {
 protected:
  void SetUp() override {
    GroupTest::SetUp();
    // fp32: buckets {18,40,30}, {22,40,30}, {20,42,30}, {20,36,26}.
    record_group_simple(db(), gkey(1 << 9, 1 << 20, 1 << 15, DType::fp32), h200(), "w1", 1.0);
    record_group_simple(db(), gkey(1 << 11, 1 << 20, 1 << 15, DType::fp32), h200(), "w2", 1.0);
    record_group_simple(db(), gkey(1 << 10, 1 << 21, 1 << 15, DType::fp32), h200(), "w3", 1.0);
    record_group_simple(db(), gkey(1 << 10, 1 << 18, 1 << 13, DType::fp32), h200(), "w4", 1.0);
    // fp16: only {18,40,30} and {22,40,30}.
    record_group_simple(db(), gkey(1 << 9, 1 << 20, 1 << 15, DType::fp16), h200(), "u1", 1.0);
    record_group_simple(db(), gkey(1 << 11, 1 << 20, 1 << 15, DType::fp16), h200(), "u2", 1.0);
  }
  std::string nearest(std::uint64_t tensors, std::uint64_t total, std::uint64_t largest, DType d = DType::fp32,
                      const std::string& arch = "sm_90") {
    const auto w = db().lookup_nearest<MultiFamily>(arch, d, group_bucket(gkey(tensors, total, largest)));
    return w ? w->winner.label : "none";
  }
};

TEST_F(GroupLookupTest, SmallestDistanceThenLargerTotalThenMoreTensors) {
  EXPECT_EQ(nearest(1 << 10, 1 << 21, 1 << 15), "w3");  // exact bucket
  EXPECT_EQ(nearest(1 << 9, 1 << 20, 1 << 15), "w1");   // exact bucket
  EXPECT_EQ(nearest(1 << 10, 1 << 20, 1 << 15), "w3");  // w1, w2, w3 at distance 2: total 42 > 40
  EXPECT_EQ(nearest(1 << 10, 1 << 19, 1 << 15), "w3");  // w1, w2, w3 at distance 4: total again
  EXPECT_EQ(nearest(1 << 10, 1 << 18, 1 << 14), "w4");  // {20,36,28}: w4 at 2
  EXPECT_EQ(nearest(1 << 10, 1 << 20, 1 << 15, DType::fp16), "u2");  // u1, u2 at 2, same total: more tensors
  EXPECT_EQ(nearest(1, 1, 1, DType::fp16), "u1");       // {0,0,0}: u1 at 18+40+30, u2 at 22+40+30
  EXPECT_EQ(nearest(1 << 10, 1 << 20, 1 << 15, DType::bf16), "none");
  EXPECT_EQ(nearest(1 << 10, 1 << 20, 1 << 15, DType::fp32, "sm_80"), "none");
  const auto w = db().lookup_nearest<MultiFamily>("sm_90", DType::fp32, group_bucket(gkey(1 << 10, 1 << 20, 1 << 15)), h200());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->key, gkey(1 << 10, 1 << 21, 1 << 15, DType::fp32));  // the stored key, not the query
}

TEST_F(GroupLookupTest, AtEqualBucketsTheDeviceThenTheNewerAndStaleRowsSkipped) {
  const GroupKey k = gkey(1 << 10, 1 << 20, 1 << 15);  // bf16, bucket {20,40,30}
  Provenance h100p = h100();
  h100p.timestamp = "2026-12-31T00:00:00Z";
  record_group_simple(db(), gkey(1 << 10, 1 << 20, 1 << 15), h100p, "h100", 1.0);
  Provenance h200p = h200();
  h200p.timestamp = "2026-06-01T00:00:00Z";
  record_group_simple(db(), gkey(1000, 1000 * KiB, 32 * KiB), h200p, "h200", 1.0);  // the same bucket
  Provenance stale = h200("oldhash");
  stale.timestamp = "2027-01-01T00:00:00Z";
  record_group_simple(db(), k, stale, "h200_stale", 1.0);
  ASSERT_EQ(group_bucket(gkey(1000, 1000 * KiB, 32 * KiB)), group_bucket(k));
  // Without the current build: the newest.
  EXPECT_EQ(db().lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k))->winner.label, "h200_stale");
  // The running H200 build: stale skipped, its own device first although older.
  EXPECT_EQ(db().lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k), h200())->winner.label, "h200");
  EXPECT_EQ(db().lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k), h100())->winner.label, "h100");
  Provenance other = h200();
  other.device_name = "NVIDIA GH200";
  EXPECT_EQ(db().lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k), other)->winner.label, "h100");  // newer fresh row
  Provenance newer = h200();
  newer.compiler = "nvrtc 14.0";
  EXPECT_FALSE(db().lookup_nearest<MultiFamily>("sm_90", DType::bf16, group_bucket(k), newer));  // every row stale
}

TEST_F(GroupTest, ProvenanceIsStoredOnceAndUnusedRowsAreDeleted) {
  for (std::uint64_t n : {1u, 2u, 3u}) {
    db().record<SingleFamily>(key(n), h200(), std::vector<Trial>{ok_trial("a", 1.0), ok_trial("b", 2.0)}, Winner{"a", 1.0, 1.0});
  }
  record_group_simple(db(), kA, h200(), "m", 1.0);
  EXPECT_EQ(raw("SELECT count(*) FROM provenance"), std::vector<std::string>{"1"});
  EXPECT_EQ(raw("SELECT count(DISTINCT provenance_id) FROM trials"), std::vector<std::string>{"1"});
  // A re-tune of key 1 with a new timestamp: a second provenance row; the first stays (keys 2, 3 use it).
  Provenance later = h200();
  later.timestamp = "2026-12-05T00:00:00Z";
  record_simple(db(), key(1), later, "c", 0.5);
  EXPECT_EQ(raw("SELECT count(*) FROM provenance"), std::vector<std::string>{"2"});
  // Re-tunes of every row of the first provenance: it is deleted.
  record_simple(db(), key(2), later, "c", 0.5);
  record_simple(db(), key(3), later, "c", 0.5);
  EXPECT_EQ(raw("SELECT count(*) FROM provenance"), std::vector<std::string>{"2"});  // kA still uses it
  record_group_simple(db(), kA2, later, "m", 1.0);
  EXPECT_EQ(raw("SELECT timestamp FROM provenance"), std::vector<std::string>{"2026-12-05T00:00:00Z"});
  // Every row reads back with its full provenance.
  for (const auto& w : db().winners<SingleFamily>()) EXPECT_EQ(w.provenance, later);
  EXPECT_EQ(db().winners<MultiFamily>().at(0).provenance, later);
  // Rows of other identities keep their own provenance row.
  record_simple(db(), key(1), h100(), "h", 2.0);
  EXPECT_EQ(raw("SELECT count(*) FROM provenance"), std::vector<std::string>{"2"});
  EXPECT_EQ(db().winners<SingleFamily>().size(), 4u);
}

TEST_F(GroupTest, ARowWhoseProvenanceIsMissingIsReportedAsCorrupt) {
  record_simple(db(), key(10), h200(), "x", 2.0);
  record_group_simple(db(), kA, h200(), "m", 2.0);
  raw_exec(file("t.db"), "UPDATE winners SET provenance_id = 99; UPDATE group_trials SET provenance_id = 99");
  std::string msg = expect_db_error(ErrorKind::Corrupt, [&] { (void)db().winners<SingleFamily>(); });
  EXPECT_NE(msg.find("table winners, column prov_device_name: stored value 'NULL'"), std::string::npos) << msg;
  msg = expect_db_error(ErrorKind::Corrupt, [&] { (void)db().all_trials<MultiFamily>(); });
  EXPECT_NE(msg.find("table group_trials, column prov_device_name: stored value 'NULL'"), std::string::npos) << msg;
  EXPECT_EQ(db().all_trials<SingleFamily>().size(), 1u);  // the other rows read as before
  EXPECT_EQ(db().winners<MultiFamily>().size(), 1u);
}

TEST_F(GroupTest, ImportRowsReplacesOtherShapesOfTheBucketAndRefusesTwoInOneCall) {
  const GroupWinnerRow w{kA, Winner{"x", 2.0, 3.0}, h200()};
  const GroupTrialRow t{kA, ok_trial("x", 2.0), h200()};
  db().import_rows({}, {}, std::vector<GroupWinnerRow>{w}, std::vector<GroupTrialRow>{t});
  EXPECT_EQ(db().winners<MultiFamily>(), std::vector<GroupWinnerRow>{w});
  // The same shape again: replaced row for row (a trial of another label stays).
  GroupWinnerRow w1 = w;
  w1.winner.median_us = 1.5;
  const GroupTrialRow t2{kA, ok_trial("y", 2.5), h200()};
  db().import_rows({}, {}, std::vector<GroupWinnerRow>{w1}, std::vector<GroupTrialRow>{t2});
  EXPECT_EQ(db().winners<MultiFamily>(), std::vector<GroupWinnerRow>{w1});
  EXPECT_EQ(db().trials<MultiFamily>(kA), (std::vector<GroupTrialRow>{t, t2}));
  // Another shape of the bucket: kA's rows go.
  const GroupWinnerRow w2{kA2, Winner{"z", 1.0, 3.0}, h200()};
  db().import_rows({}, {}, std::vector<GroupWinnerRow>{w2}, {});
  EXPECT_EQ(db().winners<MultiFamily>(), std::vector<GroupWinnerRow>{w2});
  EXPECT_TRUE(db().all_trials<MultiFamily>().empty());
  // Two shapes of one bucket and identity in one call: refused, nothing written.
  const std::string msg = expect_db_error(ErrorKind::InvalidArgument, [&] {
    db().import_rows({}, {}, std::vector<GroupWinnerRow>{w}, std::vector<GroupTrialRow>{{kA2, ok_trial("q", 1.0), h200()}});
  });
  EXPECT_NE(msg.find("cannot import group trial row 0: its key sm_90/bf16/4000 tensors, 125 MiB, largest 33 KiB lies in "
                     "the bucket of sm_90/bf16/4096 tensors, 128 MiB, largest 32 KiB (group winner row 0)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(db().winners<MultiFamily>(), std::vector<GroupWinnerRow>{w2});
  GroupWinnerRow bad = w;
  bad.key.largest_bytes = 0;
  const std::string msg2 = expect_db_error(ErrorKind::InvalidArgument, [&] {
    db().import_rows({}, {}, std::vector<GroupWinnerRow>{bad}, {});
  });
  EXPECT_NE(msg2.find("group winner row 0: key.largest_bytes = 0"), std::string::npos) << msg2;
}

// ---------------------------------------------------------------------------------------------
// Export and text

class GroupExportTest : public TempDirTest {
 protected:
  /// One single key and one group key, each with a winner and a failed trial.
  TuningDb both(const fs::path& p) {
    TuningDb db = TuningDb::open(p);
    db.record<SingleFamily>(key(1024), h200(),
                  std::vector<Trial>{ok_trial("two_stage.t256", 3.5, 1.25),
                                     failed_trial("atomic.t64", TrialStatus::compile_failed, "no")},
                  Winner{"two_stage.t256", 3.5, 1.25});
    db.record<MultiFamily>(gkey(4, 4 * KiB, KiB, DType::fp16), h200(),
                        std::vector<Trial>{ok_trial("multi.t512.v8.u4.c32k.warp", 5.5, 0.75),
                                           failed_trial("multi.t1024.v8.u8.c4k.block", TrialStatus::wrong_result, "bad")},
                        Winner{"multi.t512.v8.u4.c32k.warp", 5.5, 0.75});
    return db;
  }
};

const std::string kProvLine =
    R"("prov_device_name":"NVIDIA H200","prov_arch":"sm_90","prov_cu_count":132,"prov_driver_version":"580.65.06",)"
    R"("prov_compiler":"nvrtc 13.0","prov_template_hash":"a1b2c3d4","prov_tool_version":"0.1.0",)"
    R"("prov_timing_protocol":"warmup=10 batches=25 rotate=4xL2","prov_timestamp":"2026-11-30T02:51:00Z"})";

TEST_F(GroupExportTest, DumpTextPutsGroupLinesAfterTheSingleOnesAndLoadsBack) {
  const TuningDb db = both(file("src.db"));
  std::ostringstream out;
  db.dump_text(out);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], R"({"format":"amax-tune-db","format_version":2,"schema_version":5})");
  EXPECT_EQ(lines[7], R"({"end":"amax-tune-db","rows":{"winner":1,"trial":2,"group_winner":1,"group_trial":2}})");
  EXPECT_EQ(lines[1].rfind(R"({"row":"winner","arch":"sm_90","dtype":"fp32","n":1024,)", 0), 0u) << lines[1];
  EXPECT_EQ(lines[3].rfind(R"({"row":"trial","arch":"sm_90","dtype":"fp32","n":1024,"label":"two_stage.t256",)", 0), 0u);
  EXPECT_EQ(lines[4], R"({"row":"group_winner","arch":"sm_90","dtype":"fp16","tensors":4,"total_bytes":4096,)"
                      R"("largest_bytes":1024,"label":"multi.t512.v8.u4.c32k.warp","median_us":5.5,"gbps":0.75,)" +
                          kProvLine);
  EXPECT_EQ(lines[5], R"({"row":"group_trial","arch":"sm_90","dtype":"fp16","tensors":4,"total_bytes":4096,)"
                      R"("largest_bytes":1024,"label":"multi.t1024.v8.u8.c4k.block","status":"wrong_result",)"
                      R"("reason":"bad","median_us":0.0,"spread_us":0.0,"samples":0,"gbps":0.0,"registers":-1,)"
                      R"("spill_bytes":-1,"tie_rank":-1,"confirm_median_us":0.0,"host_us":0.0,"launches":-1,)" +
                          kProvLine);
  EXPECT_EQ(lines[6].rfind(R"({"row":"group_trial","arch":"sm_90","dtype":"fp16","tensors":4,"total_bytes":4096,)"
                           R"("largest_bytes":1024,"label":"multi.t512.v8.u4.c32k.warp","status":"ok",)",
                           0),
            0u);
  std::istringstream again(out.str());
  TuningDb::load_text(again, file("loaded.db"));
  const TuningDb loaded = TuningDb::open(file("loaded.db"), OpenMode::ReadOnly);
  EXPECT_EQ(loaded.winners<MultiFamily>(), db.winners<MultiFamily>());
  EXPECT_EQ(loaded.all_trials<MultiFamily>(), db.all_trials<MultiFamily>());
  EXPECT_EQ(loaded.winners<SingleFamily>(), db.winners<SingleFamily>());
  EXPECT_EQ(loaded.all_trials<SingleFamily>(), db.all_trials<SingleFamily>());
  std::ostringstream out2;
  loaded.dump_text(out2);
  EXPECT_EQ(out2.str(), out.str());
}

TEST_F(GroupExportTest, LoadTextChecksGroupLines) {
  const std::string header3 = "{\"format\":\"amax-tune-db\",\"schema_version\":3}\n";
  const std::string header4 = "{\"format\":\"amax-tune-db\",\"schema_version\":4}\n";
  const std::string line =
      R"({"row":"group_winner","arch":"sm_90","dtype":"fp16","tensors":4,"total_bytes":4096,"largest_bytes":1024,)"
      R"("label":"m","median_us":5.5,"gbps":0.75,)" + kProvLine + "\n";
  auto load = [&](const std::string& text) {
    std::istringstream in(text);
    TuningDb::load_text(in, file("x.db"));
  };
  std::string msg = expect_db_error(ErrorKind::InvalidArgument, [&] { load(header3 + line); });
  EXPECT_NE(msg.find("line 2: a group_winner row needs a dump of schema version 4 or later (the header says 3)"),
            std::string::npos)
      << msg;
  std::string other_shape = line;
  other_shape.replace(other_shape.find("\"tensors\":4,\"total_bytes\":4096"), 30, "\"tensors\":4,\"total_bytes\":4000");
  msg = expect_db_error(ErrorKind::InvalidArgument, [&] { load(header4 + line + other_shape); });
  EXPECT_NE(msg.find("line 3: the group key sm_90/fp16/4 tensors, 4000 B, largest 1 KiB lies in the bucket of "
                     "sm_90/fp16/4 tensors, 4 KiB, largest 1 KiB (line 2)"),
            std::string::npos)
      << msg;
  msg = expect_db_error(ErrorKind::InvalidArgument, [&] { load(header4 + line + line); });
  EXPECT_NE(msg.find("line 3: duplicates line 2"), std::string::npos) << msg;
  std::string bad = line;
  bad.replace(bad.find("\"tensors\":4"), 11, "\"tensors\":3");  // 3 * 1024 < 4096
  msg = expect_db_error(ErrorKind::InvalidArgument, [&] { load(header4 + bad); });
  EXPECT_NE(msg.find("line 2: key.total_bytes = 4096 exceeds key.tensors * key.largest_bytes = 3 * 1024"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(file("x.db")));
  load(header4 + line);
  EXPECT_EQ(TuningDb::open(file("x.db"), OpenMode::ReadOnly).winners<MultiFamily>().size(), 1u);
}

TEST_F(GroupExportTest, JsonHasGroupArraysOnlyWithGroupRowsAndCsvPerTable) {
  const TuningDb db = both(file("src.db"));
  std::ostringstream all;
  db.export_json(all, ExportTable::All);
  const auto j = nlohmann::ordered_json::parse(all.str());
  EXPECT_EQ(j["schema_version"], 5);
  EXPECT_EQ(j["winners"].size(), 1u);
  EXPECT_EQ(j["trials"].size(), 2u);
  ASSERT_EQ(j["group_winners"].size(), 1u);
  EXPECT_EQ(j["group_trials"].size(), 2u);
  EXPECT_EQ(j["group_winners"][0].dump(),
            R"({"arch":"sm_90","dtype":"fp16","tensors":4,"total_bytes":4096,"largest_bytes":1024,)"
            R"("label":"multi.t512.v8.u4.c32k.warp","median_us":5.5,"gbps":0.75,"provenance":{"device_name":)"
            R"("NVIDIA H200","arch":"sm_90","cu_count":132,"driver_version":"580.65.06","compiler":"nvrtc 13.0",)"
            R"("template_hash":"a1b2c3d4","tool_version":"0.1.0","timing_protocol":"warmup=10 batches=25 )"
            R"(rotate=4xL2","timestamp":"2026-11-30T02:51:00Z"}})");
  std::ostringstream winners;
  db.export_json(winners, ExportTable::Winners);
  const auto jw = nlohmann::json::parse(winners.str());
  EXPECT_TRUE(jw.contains("group_winners"));
  EXPECT_FALSE(jw.contains("group_trials"));
  EXPECT_FALSE(jw.contains("trials"));
  std::ostringstream group_trials;
  db.export_json(group_trials, ExportTable::GroupTrials);
  const auto jg = nlohmann::json::parse(group_trials.str());
  EXPECT_EQ(jg.size(), 2u);  // schema_version, group_trials
  EXPECT_EQ(jg["group_trials"].size(), 2u);
  // No group rows: the arrays are absent (a schema-3 export), unless asked for alone.
  TuningDb single = TuningDb::open(file("single.db"));
  record_simple(single, key(1), h200(), "x", 1.0);
  std::ostringstream plain;
  single.export_json(plain, ExportTable::All);
  const auto jp = nlohmann::json::parse(plain.str());
  EXPECT_FALSE(jp.contains("group_winners"));
  EXPECT_FALSE(jp.contains("group_trials"));
  std::ostringstream empty_group;
  single.export_json(empty_group, ExportTable::GroupWinners);
  EXPECT_EQ(empty_group.str(), "{\n  \"schema_version\": 5,\n  \"group_winners\": []\n}\n");

  std::ostringstream csv;
  db.export_csv(csv, ExportTable::GroupWinners);
  EXPECT_EQ(csv.str(),
            "arch,dtype,tensors,total_bytes,largest_bytes,label,median_us,gbps,prov_device_name,prov_arch,"
            "prov_cu_count,prov_driver_version,prov_compiler,prov_template_hash,prov_tool_version,"
            "prov_timing_protocol,prov_timestamp\n"
            "sm_90,fp16,4,4096,1024,multi.t512.v8.u4.c32k.warp,5.5,0.75,NVIDIA H200,sm_90,132,580.65.06,nvrtc 13.0,"
            "a1b2c3d4,0.1.0,warmup=10 batches=25 rotate=4xL2,2026-11-30T02:51:00Z\n");
  std::ostringstream csv_trials;
  db.export_csv(csv_trials, ExportTable::GroupTrials);
  EXPECT_EQ(csv_trials.str().substr(0, csv_trials.str().find('\n')),
            "arch,dtype,tensors,total_bytes,largest_bytes,label,status,reason,median_us,spread_us,samples,gbps,"
            "registers,spill_bytes,tie_rank,confirm_median_us,host_us,launches,prov_device_name,prov_arch,prov_cu_count,"
            "prov_driver_version,prov_compiler,prov_template_hash,prov_tool_version,prov_timing_protocol,"
            "prov_timestamp");
  const std::string trials_text = csv_trials.str();
  EXPECT_EQ(std::count(trials_text.begin(), trials_text.end(), '\n'), 3);
}

}  // namespace
}  // namespace amax::db::test
