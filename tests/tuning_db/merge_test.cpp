// merge(): faster winner wins with its provenance and trials; devices are never mixed silently.
#include "test_util.hpp"

namespace amax::db::test {
namespace {

class MergeTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    TuningDb a = TuningDb::open(file("a.db"));
    a.record<SingleFamily>(key(1024), h200(), std::vector<Trial>{ok_trial("a_k1", 10.0), ok_trial("a_k1b", 12.0)},
                 Winner{"a_k1", 10.0, 1.0});
    record_simple(a, key(2048), h200(), "a_k2", 5.0);
    a.record<SingleFamily>(key(8192), h200(), std::vector<Trial>{failed_trial("f1", TrialStatus::launch_failed, "from a")},
                 std::nullopt);
    TuningDb b = TuningDb::open(file("b.db"));
    b.record<SingleFamily>(key(1024), prov_b(), std::vector<Trial>{ok_trial("b_k1", 8.0)}, Winner{"b_k1", 8.0, 2.0});
    record_simple(b, key(4096), prov_b(), "b_k3", 3.0);
    b.record<SingleFamily>(key(8192), h200(),
                 std::vector<Trial>{failed_trial("f1", TrialStatus::launch_failed, "from b"),
                                    failed_trial("f2", TrialStatus::wrong_result, "from b")},
                 std::nullopt);
  }
  static Provenance prov_b() {
    Provenance p = h200();
    p.driver_version = "590.10";
    p.timestamp = "2026-12-01T00:00:00Z";
    return p;
  }
  /// Files that merge's temporary output left behind (none expected). The inputs, opened
  /// ReadOnly in WAL mode, may get SQLite's -wal/-shm companions: see README.
  int temp_files() const {
    int n = 0;
    for (const auto& name : listing(dir())) n += name.find(".tmp-") != std::string::npos;
    return n;
  }
  void make_h100_db(const fs::path& p, double us) {
    TuningDb c = TuningDb::open(p);
    c.record<SingleFamily>(key(1024), h100(), std::vector<Trial>{ok_trial("c_k1", us)}, Winner{"c_k1", us, 3.0});
  }
};

TEST_F(MergeTest, FasterWinnerWinsAndKeepsItsProvenanceAndTrials) {
  const std::string a_before = read_bytes(file("a.db"));
  const std::string b_before = read_bytes(file("b.db"));
  const MergeReport r = merge(file("a.db"), file("b.db"), file("out.db"));
  EXPECT_EQ(read_bytes(file("a.db")), a_before);
  EXPECT_EQ(read_bytes(file("b.db")), b_before);
  EXPECT_TRUE(fs::exists(file("out.db")));
  EXPECT_EQ(temp_files(), 0);

  const TuningDb out = TuningDb::open(file("out.db"), OpenMode::ReadOnly);
  EXPECT_EQ(out.journal_mode(), "delete");
  EXPECT_EQ(out.winners<SingleFamily>(),
            (std::vector<WinnerRow>{{key(1024), Winner{"b_k1", 8.0, 2.0}, prov_b()},
                                    {key(2048), Winner{"a_k2", 5.0, 100.0}, h200()},
                                    {key(4096), Winner{"b_k3", 3.0, 100.0}, prov_b()}}));
  EXPECT_EQ(out.trials<SingleFamily>(key(1024)), (std::vector<TrialRow>{{key(1024), ok_trial("b_k1", 8.0), prov_b()}}));
  EXPECT_EQ(out.trials<SingleFamily>(key(2048)), (std::vector<TrialRow>{{key(2048), ok_trial("a_k2", 5.0), h200()}}));
  EXPECT_EQ(out.trials<SingleFamily>(key(4096)), (std::vector<TrialRow>{{key(4096), ok_trial("b_k3", 3.0), prov_b()}}));
  // A key without a winner keeps the trials of both inputs; a's copy of a shared trial.
  EXPECT_EQ(out.trials<SingleFamily>(key(8192)),
            (std::vector<TrialRow>{{key(8192), failed_trial("f1", TrialStatus::launch_failed, "from a"), h200()},
                                   {key(8192), failed_trial("f2", TrialStatus::wrong_result, "from b"), h200()}}));
  EXPECT_EQ(r.single.winners_written, 3u);
  EXPECT_EQ(r.single.winners_from_a, 1u);  // key 2048 (key 1024 went to b, key 4096 is b's alone)
  EXPECT_EQ(r.single.winners_from_b, 2u);
  EXPECT_EQ(r.single.trials_written, 5u);
  ASSERT_EQ(r.single.contested.size(), 1u);
  const MergeDecision<SingleFamily>& d = r.single.contested[0];
  EXPECT_EQ(d.key, key(1024));
  EXPECT_EQ(d.kept_from, 'b');
  EXPECT_EQ(d.kept.winner.label, "b_k1");
  EXPECT_EQ(d.dropped.winner.label, "a_k1");
  EXPECT_EQ(d.dropped.winner.median_us, 10.0);
  EXPECT_FALSE(d.different_devices);
  EXPECT_EQ(d.differing_fields, (std::vector<std::string>{"driver_version", "timestamp"}));
}

TEST_F(MergeTest, TieKeepsA) {
  TuningDb c = TuningDb::open(file("c.db"));
  record_simple(c, key(2048), prov_b(), "c_k2", 5.0);
  c = TuningDb::open(file("d.db"));
  (void)merge(file("a.db"), file("c.db"), file("out.db"));
  EXPECT_EQ(TuningDb::open(file("out.db")).winners<SingleFamily>().at(1).winner.label, "a_k2");
  (void)merge(file("c.db"), file("a.db"), file("out2.db"));
  EXPECT_EQ(TuningDb::open(file("out2.db")).winners<SingleFamily>().at(1).winner.label, "c_k2");
}

TEST_F(MergeTest, DifferentDevicesAreRefusedNamingBoth) {
  make_h100_db(file("h100.db"), 9.0);
  const std::string msg =
      expect_db_error(ErrorKind::InvalidArgument, [&] { (void)merge(file("a.db"), file("h100.db"), file("out.db")); });
  EXPECT_NE(msg.find("'NVIDIA H200'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'NVIDIA H100 80GB HBM3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sm_90/fp32/n=1024"), std::string::npos) << msg;
  EXPECT_NE(msg.find("give --allow-different-devices to keep the faster winner anyway"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(file("out.db")));
  EXPECT_EQ(temp_files(), 0);
}

TEST_F(MergeTest, DifferentDevicesAllowedKeepTheFasterAndReportIt) {
  make_h100_db(file("h100.db"), 9.0);
  LogCapture log;
  MergePolicy policy;
  policy.allow_different_devices = true;
  const MergeReport r = merge(file("a.db"), file("h100.db"), file("out.db"), policy);
  ASSERT_EQ(r.single.contested.size(), 1u);
  EXPECT_TRUE(r.single.contested[0].different_devices);
  EXPECT_EQ(r.single.contested[0].kept_from, 'b');
  EXPECT_EQ(r.single.contested[0].kept.provenance, h100());
  EXPECT_EQ(r.single.contested[0].dropped.provenance, h200());
  EXPECT_EQ(log.count("different device"), 0) << "merge() reports it in MergeReport; the caller warns: " << log.text();
  EXPECT_EQ(r.single.winners_from_a + r.single.winners_from_b, r.single.winners_written);
  EXPECT_EQ(r.single.winners_from_b, 1u);
  const TuningDb out = TuningDb::open(file("out.db"));
  EXPECT_EQ(out.winners<SingleFamily>().at(0).provenance.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(out.trials<SingleFamily>(key(1024)).size(), 1u);
}

TEST_F(MergeTest, OutputRules) {
  write_bytes(file("out.db"), "existing");
  std::string msg =
      expect_db_error(ErrorKind::InvalidArgument, [&] { (void)merge(file("a.db"), file("b.db"), file("out.db")); });
  EXPECT_NE(msg.find("the output exists (give --overwrite to replace it)"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(file("out.db")), "existing");
  MergePolicy overwrite;
  overwrite.overwrite_output = true;
  (void)merge(file("a.db"), file("b.db"), file("out.db"), overwrite);
  EXPECT_EQ(TuningDb::open(file("out.db")).winners<SingleFamily>().size(), 3u);
  msg = expect_db_error(ErrorKind::InvalidArgument,
                        [&] { (void)merge(file("a.db"), file("b.db"), file("a.db"), overwrite); });
  EXPECT_NE(msg.find("one of the inputs"), std::string::npos) << msg;
  write_bytes(file("bad.db"), "garbage garbage garbage");
  expect_db_error(ErrorKind::Corrupt, [&] { (void)merge(file("a.db"), file("bad.db"), file("x.db")); });
  expect_db_error(ErrorKind::Io, [&] { (void)merge(file("a.db"), file("missing.db"), file("x.db")); });
  EXPECT_FALSE(fs::exists(file("x.db")));
}

// Group keys merge by bucket: per arch, dtype and bucket the faster winner with its trials.
class GroupMergeTest : public TempDirTest {
 protected:
  static constexpr std::uint64_t MiB = 1 << 20;
  // One bucket {24, 54, 30}, two shapes; another bucket with failed trials only.
  const GroupKey kA = gkey(4096, 128 * MiB, 32 << 10);
  const GroupKey kA2 = gkey(4000, 125 * MiB, 33 << 10);
  const GroupKey kF = gkey(64, 64 * MiB, MiB);
  const GroupKey kF2 = gkey(60, 60 * MiB, MiB);
  void SetUp() override {
    TempDirTest::SetUp();
    TuningDb a = TuningDb::open(file("a.db"));
    a.record<MultiFamily>(kA, h200(), std::vector<Trial>{ok_trial("m1", 10.0), ok_trial("m2", 11.0)}, Winner{"m1", 10.0, 1.0});
    a.record<MultiFamily>(kF, h200(), std::vector<Trial>{failed_trial("f1", TrialStatus::launch_failed, "from a")},
                       std::nullopt);
    record_simple(a, key(1024), h200(), "s", 2.0);
    TuningDb b = TuningDb::open(file("b.db"));
    b.record<MultiFamily>(kA2, prov_b(), std::vector<Trial>{ok_trial("m3", 8.0)}, Winner{"m3", 8.0, 2.0});
    b.record<MultiFamily>(kF2, h200(),
                       std::vector<Trial>{failed_trial("f1", TrialStatus::launch_failed, "from b"),
                                          failed_trial("f2", TrialStatus::wrong_result, "from b")},
                       std::nullopt);
    b.record<MultiFamily>(kF, prov_b(), std::vector<Trial>{failed_trial("f3", TrialStatus::wrong_result, "b, other build")},
                       std::nullopt);
  }
  static Provenance prov_b() {
    Provenance p = h200("b-build");
    p.timestamp = "2026-12-01T00:00:00Z";
    return p;
  }
};

TEST_F(GroupMergeTest, FasterWinnerOfTheBucketWinsWithItsTrials) {
  const MergeReport r = merge(file("a.db"), file("b.db"), file("out.db"));
  const TuningDb out = TuningDb::open(file("out.db"), OpenMode::ReadOnly);
  EXPECT_EQ(out.winners<MultiFamily>(), (std::vector<GroupWinnerRow>{{kA2, Winner{"m3", 8.0, 2.0}, prov_b()}}));
  EXPECT_EQ(out.trials<MultiFamily>(kA2), (std::vector<GroupTrialRow>{{kA2, ok_trial("m3", 8.0), prov_b()}}));
  EXPECT_TRUE(out.trials<MultiFamily>(kA).empty());
  // The bucket without a winner: a's shape for h200(), b's rows of another shape for the same
  // identity left out, b's rows of another identity kept.
  EXPECT_EQ(out.all_trials<MultiFamily>(),
            (std::vector<GroupTrialRow>{
                {kF, failed_trial("f1", TrialStatus::launch_failed, "from a"), h200()},
                {kF, failed_trial("f3", TrialStatus::wrong_result, "b, other build"), prov_b()},
                {kA2, ok_trial("m3", 8.0), prov_b()}}));
  EXPECT_EQ(out.winners<SingleFamily>().size(), 1u);  // single keys as before
  EXPECT_EQ(r.single.winners_written, 1u);
  EXPECT_EQ(r.single.trials_written, 1u);
  EXPECT_EQ(r.group.winners_written, 1u);
  EXPECT_EQ(r.group.trials_written, 3u);
  EXPECT_TRUE(r.single.contested.empty());
  ASSERT_EQ(r.group.contested.size(), 1u);
  const MergeDecision<MultiFamily>& d = r.group.contested[0];
  EXPECT_EQ(d.key, kA2);
  EXPECT_EQ(d.kept_from, 'b');
  EXPECT_EQ(d.dropped, (GroupWinnerRow{kA, Winner{"m1", 10.0, 1.0}, h200()}));
  EXPECT_FALSE(d.different_devices);
  EXPECT_EQ(d.differing_fields, (std::vector<std::string>{"template_hash", "timestamp"}));
}

TEST_F(GroupMergeTest, DifferentDevicesAreRefusedUnlessAllowed) {
  {
    TuningDb c = TuningDb::open(file("c.db"));
    record_group_simple(c, kA, h100(), "h100", 9.0);
  }
  const std::string msg =
      expect_db_error(ErrorKind::InvalidArgument, [&] { (void)merge(file("a.db"), file("c.db"), file("out.db")); });
  EXPECT_NE(msg.find("key sm_90/bf16/4096 tensors, 128 MiB, largest 32 KiB has winners measured on different devices: "
                     "'NVIDIA H100 80GB HBM3'"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(file("out.db")));
  MergePolicy allow;
  allow.allow_different_devices = true;
  const MergeReport r = merge(file("a.db"), file("c.db"), file("out.db"), allow);
  ASSERT_EQ(r.group.contested.size(), 1u);
  EXPECT_TRUE(r.group.contested[0].different_devices);
  EXPECT_EQ(TuningDb::open(file("out.db")).winners<MultiFamily>().at(0).winner.label, "h100");
}

}  // namespace
}  // namespace amax::db::test
