// The one compile-fallback rule of both kernel families (amax/compile_fallback.hpp) on the CPU,
// with a stand-in kernel cache: a failed variant is replaced by the fallback once, with one
// recorded failure, and never compiled again; a failing fallback is the compiler's error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "amax/compile_fallback.hpp"

using namespace amax;

namespace {

struct Variant {
  int id = 0;
  std::string label() const { return "v" + std::to_string(id); }
  bool operator==(const Variant&) const = default;
};

// "Compiles" a variant: the ids in `broken` throw CompileError; every call is recorded.
struct FakeCache {
  std::vector<int> broken;
  std::vector<int> calls;
  std::vector<Variant> loaded{Variant{0}, Variant{1}, Variant{2}, Variant{3}};
  Variant& get(const Variant& v) {
    calls.push_back(v.id);
    for (int b : broken)
      if (b == v.id) throw CompileError("v" + std::to_string(v.id) + ": error: bad", "log");
    return loaded[v.id];
  }
};

}  // namespace

TEST(CompileFallback, ChosenVariantThatCompilesIsUsed) {
  CompileFailures failures;
  FakeCache cache;
  const auto got = load_or_fall_back(failures, "k1", Variant{1}, Variant{0}, [&](const Variant& v) -> Variant& {
    return cache.get(v);
  });
  EXPECT_EQ(got.kernel, &cache.loaded[1]);
  EXPECT_FALSE(got.fell_back);
  EXPECT_EQ(cache.calls, std::vector<int>{1});
  EXPECT_FALSE(failures.failed("k1"));
}

TEST(CompileFallback, FailedVariantFallsBackOnceAndIsNotCompiledAgain) {
  CompileFailures failures;
  FakeCache cache{{2}, {}};
  auto get = [&](const Variant& v) -> Variant& { return cache.get(v); };
  auto got = load_or_fall_back(failures, "k2", Variant{2}, Variant{0}, get);
  EXPECT_EQ(got.kernel, &cache.loaded[0]);
  EXPECT_TRUE(got.fell_back);
  EXPECT_EQ(cache.calls, (std::vector<int>{2, 0}));
  EXPECT_TRUE(failures.failed("k2"));
  EXPECT_FALSE(failures.failed("k3"));
  // The same kernel again (another plan, another list of the same group): the fallback directly.
  got = load_or_fall_back(failures, "k2", Variant{2}, Variant{0}, get);
  EXPECT_EQ(got.kernel, &cache.loaded[0]);
  EXPECT_TRUE(got.fell_back);
  EXPECT_EQ(cache.calls, (std::vector<int>{2, 0, 0}));
  // add() tells the first record (the one that warns) from a repeat.
  EXPECT_FALSE(failures.add("k2"));
  EXPECT_TRUE(failures.add("k3"));
}

TEST(CompileFallback, FailingFallbackIsTheCompilersError) {
  CompileFailures failures;
  FakeCache cache{{0}, {}};
  auto get = [&](const Variant& v) -> Variant& { return cache.get(v); };
  // The message of the CompileError load_or_fall_back throws for `chosen` ("" when none).
  auto error_of = [&](const std::string& kernel, Variant chosen) -> std::string {
    try {
      (void)load_or_fall_back(failures, kernel, chosen, Variant{0}, get);
    } catch (const CompileError& e) {
      return e.what();
    }
    return "";
  };
  // The chosen variant is the fallback: its error, nothing recorded.
  EXPECT_EQ(error_of("k0", Variant{0}), "v0: error: bad");
  EXPECT_FALSE(failures.failed("k0"));
  // Another variant failing, then its fallback failing too: the fallback's error.
  cache.broken = {0, 1};
  EXPECT_EQ(error_of("k1", Variant{1}), "v0: error: bad");
  EXPECT_TRUE(failures.failed("k1"));
  EXPECT_EQ(cache.calls, (std::vector<int>{0, 1, 0}));
}
