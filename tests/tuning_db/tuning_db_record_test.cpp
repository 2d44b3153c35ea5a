// TuningDb: record_key / readback, validation, resume, lookup_nearest, stale detection.
#include "raw_sqlite.hpp"
#include "test_util.hpp"

#include <cmath>
#include <limits>

namespace amax::db::test {
namespace {

class RecordTest : public OpenDbTest {};

TEST_F(RecordTest, EveryFieldReadsBackExactly) {
  const TuningKey k{"gfx942:sramecc+:xnack-", DType::bf16, (std::uint64_t{1} << 40) + 3};
  Provenance p;
  p.device_name = "AMD Instinct MI300X";
  p.arch = "gfx942:sramecc+:xnack-";
  p.cu_count = 304;
  p.driver_version = "ROCm 6.4.1 (amdgpu 6.12.12)";
  p.compiler = "hipRTC 6.4.43482";
  p.template_hash = "0123456789abcdef";
  p.tool_version = "0.1.0+g1234567";
  p.timing_protocol = "warmup=10 batches=25x20 rotate=4x(L2+MALL) events=hipEvent";
  p.timestamp = "2026-11-30T02:51:07Z";
  Trial a;
  a.label = "two_stage.t256.v8.u4.b8cu";
  a.status = TrialStatus::ok;
  a.median_us = 123.456789012345;
  a.spread_us = 0.1;
  a.samples = 25;
  a.gbps = 4321.5;
  a.registers = 48;
  a.spill_bytes = 16;
  a.host_us = 2.71828;  // schema 5: the host's enqueue cost and the launches per call
  a.launches = 2;
  Trial b;
  b.label = "atomic.t1024.v4.u1";
  b.status = TrialStatus::compile_failed;
  b.reason = "error: too many resources requested for launch\n\"quoted\", with comma; ünïcode";
  Trial c;
  c.label = "one_pass.t64";
  c.status = TrialStatus::wrong_result;
  c.reason = "max at last element: got 0x3f800000, want 0x40000000";
  c.registers = 20;
  Trial d;
  d.label = "two_stage.t512";
  d.status = TrialStatus::launch_failed;
  d.reason = "hipErrorLaunchOutOfResources";
  const std::vector<Trial> trials{a, b, c, d};
  const Winner w{a.label, a.median_us, a.gbps};
  db().record<SingleFamily>(k, p, trials, w);

  const auto rows = db().trials<SingleFamily>(k);
  ASSERT_EQ(rows.size(), 4u);
  // Sorted by label.
  EXPECT_EQ(rows[0], (TrialRow{k, b, p}));
  EXPECT_EQ(rows[1], (TrialRow{k, c, p}));
  EXPECT_EQ(rows[2], (TrialRow{k, a, p}));
  EXPECT_EQ(rows[3], (TrialRow{k, d, p}));
  const auto ws = db().winners<SingleFamily>();
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0], (WinnerRow{k, w, p}));
  EXPECT_EQ(ws[0].key.n, (std::uint64_t{1} << 40) + 3);
  // Stored as text / integers as documented.
  EXPECT_EQ(raw_query(file("t.db"), "SELECT dtype, status, n FROM trials ORDER BY label LIMIT 1"),
            std::vector<std::string>{"bf16|compile_failed|1099511627779"});
  // The columns of schema 5; a failed trial keeps the defaults (0: unknown, -1: unknown).
  EXPECT_EQ(raw_query(file("t.db"), "SELECT label, host_us, launches FROM trials ORDER BY label"),
            (std::vector<std::string>{"atomic.t1024.v4.u1|0.0|-1", "one_pass.t64|0.0|-1",
                                      "two_stage.t256.v8.u4.b8cu|2.71828|2", "two_stage.t512|0.0|-1"}));
}

TEST_F(RecordTest, ReRecordingReplacesTheSameIdentityOnly) {
  const TuningKey k = key(4096);
  db().record<SingleFamily>(k, h200(), std::vector<Trial>{ok_trial("a", 5.0), ok_trial("b", 6.0)}, Winner{"a", 5.0, 1.0});
  db().record<SingleFamily>(k, h200(), std::vector<Trial>{ok_trial("c", 4.0)}, Winner{"c", 4.0, 2.0});
  ASSERT_EQ(db().trials<SingleFamily>(k).size(), 1u);
  EXPECT_EQ(db().trials<SingleFamily>(k)[0].trial.label, "c");
  ASSERT_EQ(db().winners<SingleFamily>().size(), 1u);
  EXPECT_EQ(db().winners<SingleFamily>()[0].winner.label, "c");
  // A new template hash is another identity: both kept.
  db().record<SingleFamily>(k, h200("beef"), std::vector<Trial>{ok_trial("d", 3.0)}, Winner{"d", 3.0, 2.0});
  EXPECT_EQ(db().trials<SingleFamily>(k).size(), 2u);
  EXPECT_EQ(db().winners<SingleFamily>().size(), 2u);
  // A later timestamp or driver is the same identity: replaces.
  Provenance later = h200("beef");
  later.timestamp = "2026-12-01T00:00:00Z";
  later.driver_version = "999";
  db().record<SingleFamily>(k, later, std::vector<Trial>{failed_trial("e", TrialStatus::launch_failed, "oops")}, std::nullopt);
  const auto ws = db().winners<SingleFamily>();
  ASSERT_EQ(ws.size(), 1u);  // every variant failed: no winner for that identity any more
  EXPECT_EQ(ws[0].winner.label, "c");
  EXPECT_EQ(db().trials<SingleFamily>(k).size(), 2u);
}

TEST_F(RecordTest, InvalidInputIsRefusedAndNothingIsWritten) {
  const Provenance p = h200();
  const std::vector<Trial> good{ok_trial("a", 1.0)};
  const Winner w{"a", 1.0, 1.0};
  struct Case {
    const char* name;
    TuningKey k;
    std::vector<Trial> trials;
    std::optional<Winner> winner;
    const char* needle;
  };
  Trial nan_trial = ok_trial("a", std::nan(""));
  Trial inf_gbps = ok_trial("a", 1.0, std::numeric_limits<double>::infinity());
  Trial ok_with_reason = ok_trial("a", 1.0);
  ok_with_reason.reason = "why";
  Trial zero_ok = ok_trial("a", 0.0);
  Trial bad_utf8 = failed_trial("a", TrialStatus::compile_failed, std::string("log \xff\xfe tail"));
  Trial negative_samples = ok_trial("a", 1.0);
  negative_samples.samples = -1;
  Trial negative_host = ok_trial("a", 1.0);
  negative_host.host_us = -0.5;
  Trial bad_launches = ok_trial("a", 1.0);
  bad_launches.launches = -2;
  const std::vector<Case> cases{
      {"n=0", key(0), good, w, "key.n = 0"},
      {"n too big", key(std::numeric_limits<std::uint64_t>::max()), good, w, "exceeds 2^63-1"},
      {"empty arch", key(1, DType::fp32, ""), good, w, "key.arch is empty"},
      {"nan", key(1), {nan_trial}, std::nullopt, "median_us = nan"},
      {"inf", key(1), {inf_gbps}, std::nullopt, "gbps = inf"},
      {"ok with reason", key(1), {ok_with_reason}, std::nullopt, "reason must be empty"},
      {"failed without reason", key(1), {failed_trial("a", TrialStatus::wrong_result, "")}, std::nullopt,
       "empty reason"},
      {"ok with zero time", key(1), {zero_ok}, std::nullopt, "median_us = 0"},
      {"bad utf-8", key(1), {bad_utf8}, std::nullopt, "not valid UTF-8 (bad byte at offset 4)"},
      {"negative samples", key(1), {negative_samples}, std::nullopt, "samples = -1"},
      {"negative host cost", key(1), {negative_host}, std::nullopt, "host_us = -0.5"},
      {"launches below -1", key(1), {bad_launches}, std::nullopt, "launches = -2"},
      {"duplicate label", key(1), {ok_trial("a", 1.0), ok_trial("a", 2.0)}, std::nullopt, "appears twice"},
      {"empty label", key(1), {ok_trial("", 1.0)}, std::nullopt, "empty label"},
      {"winner not a trial", key(1), good, Winner{"zzz", 1.0, 1.0}, "'zzz' is not among the trials"},
      {"winner of a failed trial", key(1), {failed_trial("a", TrialStatus::compile_failed, "x")}, w,
       "is not among the trials with status ok"},
      {"winner zero time", key(1), {}, Winner{"a", 0.0, 1.0}, "median_us = 0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string msg = expect_db_error(ErrorKind::InvalidArgument, [&] { db().record<SingleFamily>(c.k, p, c.trials, c.winner); });
    EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
    EXPECT_NE(msg.find(file("t.db").string()), std::string::npos) << msg;
  }
  Provenance bad = p;
  bad.device_name = std::string("\xc3\x28");
  expect_db_error(ErrorKind::InvalidArgument, [&] { db().record<SingleFamily>(key(1), bad, good, w); });
  EXPECT_TRUE(db().winners<SingleFamily>().empty());
  EXPECT_TRUE(db().all_trials<SingleFamily>().empty());
  // A winner without trials is allowed (e.g. re-recorded from elsewhere).
  db().record<SingleFamily>(key(1), p, {}, w);
  EXPECT_EQ(db().winners<SingleFamily>().size(), 1u);
}

TEST_F(RecordTest, ResumeFinishedKeysMatchIdentity) {
  const Provenance p = h200();
  for (std::uint64_t n : {4096u, 1024u, 65536u}) record_simple(db(), key(n), p, "a", 1.0);
  record_simple(db(), key(2048, DType::fp16), p, "a", 1.0);
  record_simple(db(), key(512, DType::fp32, "sm_80"), p, "a", 1.0);
  record_simple(db(), key(8192), h200("oldhash"), "a", 1.0);
  db().record<SingleFamily>(key(16384), p, std::vector<Trial>{failed_trial("a", TrialStatus::compile_failed, "x")},
                  std::nullopt);

  const auto fin = db().finished_keys<SingleFamily>("sm_90", DType::fp32, p);
  EXPECT_EQ(fin, (std::vector<TuningKey>{key(1024), key(4096), key(65536)}));
  // Timestamp, driver and timing protocol do not matter for resume.
  Provenance later = p;
  later.timestamp = "2030-01-01T00:00:00Z";
  later.driver_version = "new driver";
  EXPECT_EQ(db().finished_keys<SingleFamily>("sm_90", DType::fp32, later).size(), 3u);
  // Another device, compiler or tool version: nothing is finished.
  for (auto change : {+[](Provenance& q) { q.device_name = "NVIDIA H100"; }, +[](Provenance& q) { q.cu_count = 114; },
                      +[](Provenance& q) { q.compiler = "nvrtc 13.1"; }, +[](Provenance& q) { q.tool_version = "0.2"; },
                      +[](Provenance& q) { q.arch = "sm_90a"; }}) {
    Provenance q = p;
    change(q);
    EXPECT_TRUE(db().finished_keys<SingleFamily>("sm_90", DType::fp32, q).empty());
    EXPECT_FALSE(db().has_winner<SingleFamily>(key(1024), q));
  }
  EXPECT_EQ(db().finished_keys<SingleFamily>("sm_90", DType::fp32, h200("oldhash")), std::vector<TuningKey>{key(8192)});
  EXPECT_EQ(db().finished_keys<SingleFamily>("sm_90", DType::fp16, p), std::vector<TuningKey>{key(2048, DType::fp16)});
  EXPECT_TRUE(db().finished_keys<SingleFamily>("sm_90", DType::bf16, p).empty());
  EXPECT_TRUE(db().has_winner<SingleFamily>(key(1024), p));
  EXPECT_FALSE(db().has_winner<SingleFamily>(key(16384), p));  // all variants failed: not finished
  EXPECT_FALSE(db().has_winner<SingleFamily>(key(std::numeric_limits<std::uint64_t>::max()), p));
}

class LookupTest : public RecordTest {
 protected:
  void SetUp() override {
    RecordTest::SetUp();
    for (std::uint64_t n : {1024u, 4096u, 65536u}) record_simple(db(), key(n), h200(), "fp32_" + std::to_string(n), 1.0);
    record_simple(db(), key(2048, DType::fp16), h200(), "fp16_2048", 1.0);
    record_simple(db(), key(2048, DType::fp32, "sm_80"), h200(), "sm80_2048", 1.0);
  }
  std::string nearest(std::uint64_t n, DType d = DType::fp32, const std::string& arch = "sm_90") {
    const auto w = db().lookup_nearest<SingleFamily>(arch, d, n);
    return w ? w->winner.label : "none";
  }
};

TEST_F(LookupTest, NearestInLog2WithTiesToTheLargerN) {
  EXPECT_EQ(nearest(1024), "fp32_1024");
  EXPECT_EQ(nearest(2048), "fp32_4096");   // log2 distance 1 either way: tie -> larger
  EXPECT_EQ(nearest(2047), "fp32_1024");   // 2047^2 < 1024*4096
  EXPECT_EQ(nearest(2049), "fp32_4096");
  EXPECT_EQ(nearest(2000), "fp32_1024");
  EXPECT_EQ(nearest(16384), "fp32_65536");  // 2^14: tie between 2^12 and 2^16 -> larger
  EXPECT_EQ(nearest(16383), "fp32_4096");
  EXPECT_EQ(nearest(60000), "fp32_65536");
  EXPECT_EQ(nearest(1), "fp32_1024");
  EXPECT_EQ(nearest(0), "fp32_1024");
  EXPECT_EQ(nearest(std::uint64_t{1} << 40), "fp32_65536");
  EXPECT_EQ(nearest(std::numeric_limits<std::uint64_t>::max()), "fp32_65536");
  const auto w = db().lookup_nearest<SingleFamily>("sm_90", DType::fp32, 3000);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->key, key(4096));  // the matched key is returned, not the query
}

TEST_F(LookupTest, OtherArchAndDtypeNeverMatch) {
  EXPECT_EQ(nearest(1024, DType::fp16), "fp16_2048");
  EXPECT_EQ(nearest(1 << 20, DType::fp16), "fp16_2048");
  EXPECT_EQ(nearest(1024, DType::bf16), "none");
  EXPECT_EQ(nearest(65536, DType::fp32, "sm_80"), "sm80_2048");
  EXPECT_EQ(nearest(1024, DType::fp32, "sm_90a"), "none");
  EXPECT_EQ(nearest(1024, DType::fp32, "sm_9"), "none");
}

TEST_F(LookupTest, SeveralWinnersAtOneNPreferNewestThenCurrentDeviceAndFreshBuild) {
  const TuningKey k = key(1 << 20);
  Provenance older = h200();
  older.timestamp = "2026-01-01T00:00:00Z";
  record_simple(db(), k, older, "h200_old_build", 2.0);
  Provenance h100p = h100();
  h100p.timestamp = "2026-12-31T00:00:00Z";
  record_simple(db(), k, h100p, "h100", 1.5);
  Provenance stale = h200("oldhash");
  stale.timestamp = "2027-01-01T00:00:00Z";
  record_simple(db(), k, stale, "h200_stale", 1.0);
  // Without a current provenance: the newest row at that n.
  EXPECT_EQ(nearest(1 << 20), "h200_stale");
  // With the running H200 build: the stale row is skipped, the same device preferred.
  const auto w = db().lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1 << 20, h200());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->winner.label, "h200_old_build");
  // On an H100 with the current build: its own row.
  Provenance cur_h100 = h100();
  EXPECT_EQ(db().lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1 << 20, cur_h100)->winner.label, "h100");
  // A device without rows of its own gets the nearest fresh row of any device.
  Provenance other = h200();
  other.device_name = "NVIDIA GH200";
  const auto o = db().lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1 << 20, other);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->winner.label, "h100");  // newest fresh row at n = 2^20 (h200_old_build is older)
  // A build whose compiler changed: every row is stale -> none.
  Provenance newer = h200();
  newer.compiler = "nvrtc 14.0";
  EXPECT_FALSE(db().lookup_nearest<SingleFamily>("sm_90", DType::fp32, 1 << 20, newer));
}

TEST_F(RecordTest, StaleKeysAreExactlyTheOnesToReTune) {
  const Provenance cur = h200("new");
  record_simple(db(), key(1), h200("old"), "a", 1.0);  // stale: template hash
  record_simple(db(), key(2), cur, "a", 1.0);          // fresh
  record_simple(db(), key(3), h200("old"), "a", 1.0);  // stale row, but re-tuned already:
  record_simple(db(), key(3), cur, "a", 1.0);          //   not listed
  Provenance p4 = cur;
  p4.compiler = "nvrtc 12.8";
  p4.tool_version = "0.0.1";
  record_simple(db(), key(4), p4, "a", 1.0);  // stale: compiler and tool version
  Provenance other = h100();
  other.template_hash = "old";
  record_simple(db(), key(5), other, "a", 1.0);  // another device's business
  Provenance p6 = cur;
  p6.driver_version = "1.0";
  p6.timestamp = "2020-01-01T00:00:00Z";
  record_simple(db(), key(6), p6, "a", 1.0);  // driver / time do not make rows stale
  record_simple(db(), key(7, DType::bf16, "sm_90"), h200("older"), "a", 1.0);

  const auto stale = db().stale_keys<SingleFamily>(cur);
  EXPECT_EQ(stale, (std::vector<StaleKey<TuningKey>>{{key(7, DType::bf16), {"template_hash"}},
                                          {key(1), {"template_hash"}},
                                          {key(4), {"compiler", "tool_version"}}}));
  // From the point of view of the "old" build, the new rows are the stale ones.
  EXPECT_EQ(db().stale_keys<SingleFamily>(h200("old")),
            (std::vector<StaleKey<TuningKey>>{{key(7, DType::bf16), {"template_hash"}},
                                   {key(2), {"template_hash"}},
                                   {key(4), {"compiler", "template_hash", "tool_version"}},
                                   {key(6), {"template_hash"}}}));
}

TEST_F(RecordTest, WinnersFilterAndOrder) {
  record_simple(db(), key(64, DType::fp32, "sm_90"), h200(), "a", 1.0);
  record_simple(db(), key(32, DType::fp32, "sm_90"), h200(), "b", 1.0);
  record_simple(db(), key(16, DType::bf16, "sm_90"), h200(), "c", 1.0);
  record_simple(db(), key(8, DType::fp32, "gfx942"), h200(), "d", 1.0);
  auto labels = [](const std::vector<WinnerRow>& rows) {
    std::string out;
    for (const auto& r : rows) out += r.winner.label;
    return out;
  };
  EXPECT_EQ(labels(db().winners<SingleFamily>()), "dcba");  // gfx942 < sm_90; bf16 < fp32; n ascending
  EXPECT_EQ(labels(db().winners<SingleFamily>({"sm_90", std::nullopt})), "cba");
  EXPECT_EQ(labels(db().winners<SingleFamily>({std::nullopt, DType::fp32})), "dba");
  EXPECT_EQ(labels(db().winners<SingleFamily>({"sm_90", DType::bf16})), "c");
  EXPECT_EQ(labels(db().winners<SingleFamily>({"sm_80", std::nullopt})), "");
  EXPECT_TRUE(db().trials<SingleFamily>(key(12345)).empty());
}

TEST_F(RecordTest, ImportRowsValidatesAndReplaces) {
  WinnerRow w{key(10), Winner{"x", 2.0, 3.0}, h200()};
  TrialRow t{key(10), ok_trial("x", 2.0), h200()};
  db().import_rows(std::vector<WinnerRow>{w}, std::vector<TrialRow>{t});
  w.winner.median_us = 1.0;
  db().import_rows(std::vector<WinnerRow>{w}, {});
  ASSERT_EQ(db().winners<SingleFamily>().size(), 1u);
  EXPECT_EQ(db().winners<SingleFamily>()[0], w);
  WinnerRow bad = w;
  bad.key.n = 0;
  const std::string msg =
      expect_db_error(ErrorKind::InvalidArgument, [&] { db().import_rows(std::vector<WinnerRow>{bad}, {}); });
  EXPECT_NE(msg.find("winner row 0"), std::string::npos) << msg;
}

TEST_F(RecordTest, CorruptStoredValueIsReportedNotCrashed) {
  record_simple(db(), key(10), h200(), "x", 2.0);
  raw_exec(file("t.db"), "UPDATE winners SET dtype = 'fp64'");
  const std::string msg = expect_db_error(ErrorKind::Corrupt, [&] { (void)db().winners<SingleFamily>(); });
  EXPECT_NE(msg.find("column dtype"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'fp64'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace amax::db::test
