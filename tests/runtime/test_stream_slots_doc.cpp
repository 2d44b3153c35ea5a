// docs/api.md states the stream slots' device memory in one place; its numbers must be what the
// constants give (launch_plan.hpp's kSlotWords and kQuantize*Word, context.hpp's
// kSlots), so that a change of either shows here instead of in a stale sentence.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "amax/launch.hpp"
#include "context.hpp"

TEST(StreamSlots, ApiDocStatesTheirMemoryFromTheConstants) {
  std::ifstream f(AMAX_SOURCE_DIR "/docs/api.md");
  ASSERT_TRUE(f) << "cannot read " AMAX_SOURCE_DIR "/docs/api.md";
  std::stringstream text;
  text << f.rdbuf();
  const std::string doc = std::regex_replace(text.str(), std::regex(R"(\s+)"), " ");  // wrapped lines joined
  constexpr std::size_t slots = amax::capi::ContextState::kSlots;
  constexpr std::size_t slot_bytes = 4 * amax::kSlotWords;
  for (const std::string& want :
       {fmt::format("one per stream for up to {} streams", slots),
        fmt::format("{} bytes per slot, {:g} KiB in all", slot_bytes, static_cast<double>(slot_bytes * slots) / 1024),
        fmt::format("one-launch kernels (`keep`, `reread`) use words {} and {}", amax::kQuantizeArrivalWord,
                    amax::kQuantizeAccumulatorWord),
        fmt::format("and word {} (their publication)", amax::kQuantizePublishedWord)})
    EXPECT_NE(doc.find(want), std::string::npos) << "docs/api.md does not say \"" << want << "\"";
}
