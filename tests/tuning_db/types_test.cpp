// Tests of the value types: DType, TrialStatus, the field lists, Provenance rules, DbError.
#include "test_util.hpp"

#include <cmath>
#include <string_view>

namespace amax::db::test {
namespace {

TEST(DType, NamesRoundTrip) {
  EXPECT_EQ(to_string(DType::fp32), "fp32");
  EXPECT_EQ(to_string(DType::fp16), "fp16");
  EXPECT_EQ(to_string(DType::bf16), "bf16");
  for (DType d : {DType::fp32, DType::fp16, DType::bf16}) EXPECT_EQ(dtype_from_name(to_string(d)), d);
  EXPECT_EQ(dtype_from_name("FP32"), std::nullopt);
  EXPECT_EQ(dtype_from_name(""), std::nullopt);
  EXPECT_EQ(dtype_from_name("float32"), std::nullopt);  // the database stores canonical names only
  EXPECT_EQ(info(DType::fp32).bytes, 4u);
  EXPECT_EQ(info(DType::bf16).bytes, 2u);
  const std::string msg = expect_db_error(ErrorKind::InvalidArgument, [] { (void)dtype_from_string("fp64"); });
  EXPECT_NE(msg.find("'fp64'"), std::string::npos) << msg;
}

TEST(TrialStatus, NamesRoundTrip) {
  EXPECT_EQ(to_string(TrialStatus::ok), "ok");
  EXPECT_EQ(to_string(TrialStatus::compile_failed), "compile_failed");
  EXPECT_EQ(to_string(TrialStatus::wrong_result), "wrong_result");
  EXPECT_EQ(to_string(TrialStatus::launch_failed), "launch_failed");
  for (auto s : {TrialStatus::ok, TrialStatus::compile_failed, TrialStatus::wrong_result, TrialStatus::launch_failed}) {
    EXPECT_EQ(parse_trial_status(to_string(s)), s);
  }
  EXPECT_EQ(parse_trial_status("OK"), std::nullopt);
  const std::string msg = expect_db_error(ErrorKind::InvalidArgument, [] { (void)trial_status_from_string("timeout"); });
  EXPECT_NE(msg.find("'timeout'"), std::string::npos) << msg;
}

template <class Tuple>
std::vector<std::string> names(const Tuple& fields) {
  std::vector<std::string> out;
  for_each_field(fields, [&](const auto& f) { out.emplace_back(f.name); });
  return out;
}

TEST(FieldLists, ListEveryMemberInOrder) {
  EXPECT_EQ(names(key_fields), (std::vector<std::string>{"arch", "dtype", "n"}));
  EXPECT_EQ(names(provenance_fields),
            (std::vector<std::string>{"device_name", "arch", "cu_count", "driver_version", "compiler",
                                      "template_hash", "tool_version", "timing_protocol", "timestamp"}));
  EXPECT_EQ(names(trial_fields), (std::vector<std::string>{"label", "status", "reason", "median_us", "spread_us",
                                                           "samples", "gbps", "registers", "spill_bytes",
                                                           "tie_rank", "confirm_median_us", "host_us", "launches"}));
  EXPECT_EQ(names(winner_fields), (std::vector<std::string>{"label", "median_us", "gbps"}));
  EXPECT_EQ(aggregate_arity<Provenance>(), 9u);
  EXPECT_EQ(aggregate_arity<Trial>(), 13u);
}

TEST(FieldLists, Roles) {
  std::vector<std::string> identity, stale, device;
  for_each_field(provenance_fields, [&](const auto& f) {
    if (f.has(kIdentity)) identity.emplace_back(f.name);
    if (f.has(kStale)) stale.emplace_back(f.name);
    if (f.has(kDevice)) device.emplace_back(f.name);
  });
  EXPECT_EQ(identity, (std::vector<std::string>{"device_name", "arch", "cu_count", "compiler", "template_hash",
                                                "tool_version"}));
  EXPECT_EQ(stale, (std::vector<std::string>{"compiler", "template_hash", "tool_version"}));
  EXPECT_EQ(device, (std::vector<std::string>{"device_name", "arch", "cu_count"}));
}

TEST(Provenance, EqualityCoversEveryField) {
  const Provenance base = h200();
  EXPECT_EQ(base, h200());
  int differing = 0;
  for_each_field(provenance_fields, [&](const auto& f) {
    Provenance p = base;
    using T = typename std::decay_t<decltype(f)>::value_type;
    if constexpr (std::is_same_v<T, std::string>) {
      f.get(p) += "x";
    } else {
      f.get(p) += 1;
    }
    EXPECT_NE(p, base) << f.name;
    ++differing;
  });
  EXPECT_EQ(differing, 9);
}

TEST(Provenance, StaleFieldsNameExactlyTheChangedBuildFields) {
  const Provenance row = h200("aaaa");
  Provenance cur = row;
  EXPECT_TRUE(stale_fields(row, cur).empty());
  cur.timestamp = "2027-01-01T00:00:00Z";  // time, driver and timing protocol never make a row stale
  cur.driver_version = "590.1";
  cur.timing_protocol = "other";
  EXPECT_TRUE(stale_fields(row, cur).empty());
  cur.template_hash = "bbbb";
  EXPECT_EQ(stale_fields(row, cur), (std::vector<std::string_view>{"template_hash"}));
  cur.compiler = "nvrtc 13.1";
  cur.tool_version = "0.2.0";
  EXPECT_EQ(stale_fields(row, cur), (std::vector<std::string_view>{"compiler", "template_hash", "tool_version"}));
  EXPECT_EQ(differing_fields(row, cur),
            (std::vector<std::string_view>{"driver_version", "compiler", "template_hash", "tool_version",
                                           "timing_protocol", "timestamp"}));
}

TEST(Provenance, IdentityAndDevice) {
  const Provenance a = h200();
  Provenance b = a;
  b.timestamp = "other";
  b.driver_version = "other";
  EXPECT_TRUE(same_identity(a, b));
  EXPECT_TRUE(same_device(a, b));
  b.cu_count = 38;  // a partition of the same GPU
  EXPECT_FALSE(same_identity(a, b));
  EXPECT_FALSE(same_device(a, b));
  Provenance c = a;
  c.template_hash = "new";
  EXPECT_FALSE(same_identity(a, c));
  EXPECT_TRUE(same_device(a, c));
  EXPECT_EQ(describe_device(a), "'NVIDIA H200' (sm_90, 132 CUs)");
}

TEST(Provenance, TimestampFormat) {
  const std::string t = utc_timestamp_now();
  ASSERT_EQ(t.size(), 20u) << t;
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t[19], 'Z');
}

TEST(TuningKey, OrderAndText) {
  EXPECT_EQ(to_string(key(1024)), "sm_90/fp32/n=1024");
  EXPECT_LT(key(2), key(10));
  EXPECT_LT(key(10, DType::fp32, "gfx942"), key(2));
  EXPECT_LT(key(10, DType::bf16), key(2, DType::fp16));  // dtype by name, like SQL ORDER BY
}

TEST(DbError, CarriesKindPathAndCode) {
  const DbError e(ErrorKind::Corrupt, "msg", "/x/y.db", 26);
  EXPECT_EQ(e.kind(), ErrorKind::Corrupt);
  EXPECT_EQ(e.path(), fs::path("/x/y.db"));
  EXPECT_EQ(e.sqlite_code(), 26);
  EXPECT_STREQ(e.what(), "msg");
  EXPECT_EQ(to_string(ErrorKind::FutureSchema), "future_schema");
  EXPECT_EQ(to_string(ErrorKind::Locked), "locked");
}

}  // namespace
}  // namespace amax::db::test
