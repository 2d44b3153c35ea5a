// The cold walk over the input region (measure.hpp next_input_offset, InputRegion::next) without a
// GPU: the exact offsets and addresses of consecutive calls over small regions, its wrap, the warm
// regime, restart() and slices().
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "amax/measure.hpp"
#include "unused_backend.hpp"

using namespace amax;

namespace {

std::vector<std::uint64_t> walk(std::uint64_t bytes, std::uint64_t region, int calls, std::uint64_t cursor = 0) {
  std::vector<std::uint64_t> at;
  for (int i = 0; i < calls; ++i) at.push_back(tune::next_input_offset(cursor, bytes, region));
  return at;
}

// Device memory that is never touched: allocate() hands out a fixed address, copies go nowhere.
class AddressOnlyBackend : public test::UnusedBackend {
 public:
  static constexpr std::uintptr_t kBase = 0x7f0000000000;
  AddressOnlyBackend() : UnusedBackend("AddressOnlyBackend") {
    info_.arch = "sm_90";
    info_.l2_bytes = 0;  // the region is then the largest input rounded up to 1 MiB, plus 1 MiB
  }
  void* allocate(std::size_t bytes) override {
    allocated = bytes;
    return reinterpret_cast<void*>(kBase);
  }
  void copy_to_device(void*, const void*, std::size_t bytes) override { copied += bytes; }
  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  std::size_t allocated = 0, copied = 0;
};

}  // namespace

TEST(InputWalk, EveryCallReadsTheNextAlignedAddressAfterThePreviousInputUntilItWraps) {
  // 1000-byte inputs in 4096 bytes: starts 512-aligned right after the previous input's end.
  EXPECT_EQ(walk(1000, 4096, 7), (std::vector<std::uint64_t>{0, 1024, 2048, 3072, 0, 1024, 2048}));
  // Inputs of a multiple of the alignment lie back to back; the last one ends at the region's end.
  EXPECT_EQ(walk(512, 4096, 10), (std::vector<std::uint64_t>{0, 512, 1024, 1536, 2048, 2560, 3072, 3584, 0, 512}));
  EXPECT_EQ(walk(1536, 4096, 4), (std::vector<std::uint64_t>{0, 1536, 0, 1536}));
  // One byte: still one alignment step apart, a new address every call.
  EXPECT_EQ(walk(1, 2048, 6), (std::vector<std::uint64_t>{0, 512, 1024, 1536, 0, 512}));
  // An input as large as the region is always at its start.
  EXPECT_EQ(walk(4096, 4096, 3), (std::vector<std::uint64_t>{0, 0, 0}));
  // A walk goes on from where the previous size left it: after a 700-byte input at 0, the next
  // input of another size starts at 1024.
  EXPECT_EQ(walk(3000, 8192, 4, 700), (std::vector<std::uint64_t>{1024, 4096, 0, 3072}));
}

TEST(InputWalk, TheRegionHandsOutItsAddressesInWalkOrderAndTheStartWhenWarm) {
  AddressOnlyBackend b;
  tune::InputRegion r(b, 1000);
  const std::uint64_t mib = 1 << 20;
  ASSERT_EQ(r.bytes(), 2 * mib);  // 1000 bytes rounded up to 1 MiB, plus 1 MiB
  EXPECT_EQ(b.allocated, 2 * mib);
  EXPECT_EQ(b.copied, 2 * mib);  // filled once
  auto at = [&](const void* p) { return reinterpret_cast<std::uintptr_t>(p) - AddressOnlyBackend::kBase; };
  // 300 KiB + 1 byte: 6 inputs 300 KiB + 512 bytes apart fit in 2 MiB (a 7th would end at
  // 6 x 307712 + 307201 = 2153473 bytes), then the walk is back at the start.
  const std::uint64_t bytes = 300 * 1024 + 1, stride = 300 * 1024 + 512;
  EXPECT_EQ(r.slices(bytes), 6u);
  std::vector<std::uint64_t> got, want;
  for (int i = 0; i < 8; ++i) got.push_back(at(r.next(bytes, false)));
  for (int i = 0; i < 8; ++i) want.push_back(i % 6 * stride);
  EXPECT_EQ(got, want);
  // Warm: the start, and the cold walk goes on where it was.
  EXPECT_EQ(at(r.next(bytes, true)), 0u);
  EXPECT_EQ(at(r.next(bytes, false)), 2 * stride);
  // restart(): from the start again; another size continues after the previous input.
  r.restart();
  EXPECT_EQ(at(r.next(4096, false)), 0u);
  EXPECT_EQ(at(r.next(4096, false)), 4096u);
  EXPECT_EQ(at(r.next(100, false)), 8192u);
  EXPECT_EQ(at(r.next(4096, false)), 8704u);
  // As large as the region (or larger): its start, always.
  EXPECT_EQ(at(r.next(2 * mib, false)), 0u);
  EXPECT_EQ(r.slices(2 * mib), 1u);
  EXPECT_EQ(r.slices(0), 1u);
  // slices() counts exactly the distinct addresses of a walk from the start.
  for (const std::uint64_t n : std::vector<std::uint64_t>{1, 511, 512, 513, 4096, 1000000, 2 * mib - 1}) {
    r.restart();
    std::set<const void*> seen;
    for (;;)
      if (!seen.insert(r.next(n, false)).second) break;
    EXPECT_EQ(seen.size(), r.slices(n)) << n;
  }
}
