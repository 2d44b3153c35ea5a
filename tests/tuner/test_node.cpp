// The node-tune agreement rule (tuner/include/amax/node.hpp): exact decisions on made-up timings.
#include <gtest/gtest.h>

#include "amax/node.hpp"

using namespace amax;
using namespace amax::tune;

namespace {

NodeWinner w(int device, const char* label, double median, double iqr = 0.0, int samples = 0) {
  return NodeWinner{device, label, Stats{median, iqr, samples}};
}

NodeKey key(std::vector<NodeWinner> ws) { return NodeKey{DType::bf16, 1u << 20, std::move(ws)}; }

}  // namespace

TEST(NodeAgreement, SameWinnerWithinOnePercentAgrees) {
  auto r = node_agreement({key({w(0, "self_reset.t512.v8.u2.b4cu", 4.00), w(1, "self_reset.t512.v8.u2.b4cu", 4.03)})});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].agree);
  EXPECT_TRUE(r[0].same_label);
  EXPECT_EQ(r[0].fastest, 0);
  EXPECT_DOUBLE_EQ(r[0].spread, 4.03 / 4.00);
  EXPECT_EQ(r[0].note, "same winner");
}

TEST(NodeAgreement, DifferentLabelsWithTiedTimesAgreeAndSaySo) {
  // 5% apart, but noisy: se = 0.93 * 1.0 / sqrt(4) = 0.465 each, 2 x sqrt(2) x 0.465 = 1.315 us > 0.2 us.
  auto r = node_agreement({key({w(0, "atomic.t512.v8.u2.b8cu", 4.2, 1.0, 4), w(1, "one_pass.t256.v8.u4.b4cu", 4.0, 1.0, 4)})});
  EXPECT_TRUE(r[0].agree);
  EXPECT_FALSE(r[0].same_label);
  EXPECT_EQ(r[0].fastest, 1);
  EXPECT_EQ(r[0].note, "tied winners (labels differ)");
}

TEST(NodeAgreement, AGpuBeyondTheTieRuleDisagreesNamingItAndTheFastest) {
  auto r = node_agreement({key({w(0, "a.t512.v8.u2.b4cu", 10.0, 0.01, 100), w(3, "a.t512.v8.u2.b4cu", 11.2, 0.01, 100),
                                w(5, "a.t512.v8.u2.b4cu", 10.05, 0.01, 100)})});
  EXPECT_FALSE(r[0].agree);
  EXPECT_TRUE(r[0].same_label);
  EXPECT_DOUBLE_EQ(r[0].spread, 1.12);
  EXPECT_EQ(r[0].note, "gpu 3: 1.12x the fastest (gpu 0), not tied");
}

TEST(NodeAgreement, AMissingResultDisagreesNamingTheGpu) {
  auto r = node_agreement({key({w(0, "x.t512.v8.u2.b4cu", 3.0), w(1, "", 0.0), w(2, "x.t512.v8.u2.b4cu", 3.0)})});
  EXPECT_FALSE(r[0].agree);
  EXPECT_FALSE(r[0].same_label);
  EXPECT_EQ(r[0].fastest, 0);
  EXPECT_DOUBLE_EQ(r[0].spread, 1.0);
  EXPECT_EQ(r[0].note, "no result from gpu 1");
  auto none = node_agreement({key({w(0, "", 0.0)})});
  EXPECT_FALSE(none[0].agree);
  EXPECT_EQ(none[0].fastest, -1);
  EXPECT_EQ(none[0].note, "no result from any GPU");
}
