#include "amax/verify.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "amax/reference.hpp"

namespace amax::tune {

Verifier::Verifier(Backend& b, StreamHandle stream, std::size_t max_variants, std::uint64_t max_workspace)
    : b_(b),
      stream_(stream),
      max_variants_(max_variants),
      max_workspace_(std::max<std::uint64_t>(max_workspace, 4)),
      outputs_(b, 4 * max_variants),
      workspace_(b, max_workspace_),
      counter_(b, 4 * kSlotWords) {
  b.memset32_async(workspace_.get(), 0xabababab, max_workspace_ / 4, stream);  // arbitrary bytes
  b.memset32_async(counter_.get(), 0, kSlotWords, stream);
  b.synchronize(stream);
}

std::vector<std::uint32_t> Verifier::run(const std::vector<const LoadedKernel*>& kernels,
                                         const std::vector<KernelConfig>& configs, const void* in, std::uint64_t n,
                                         NanMode mode) {
  if (kernels.size() > max_variants_ || kernels.size() != configs.size())
    throw std::invalid_argument("Verifier::run: too many variants or mismatched lists");
  static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu, 0x00000001u};
  b_.memset32_async(outputs_.get(), kGarbage[calls_++ % 5], kernels.size(), stream_);
  const auto cu = static_cast<std::uint32_t>(b_.device().cu_count);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels[i]) continue;
    const LaunchShape shape = launch_shape(configs[i], n, cu, kernels[i]->resident_per_cu);
    if (shape.workspace_bytes > max_workspace_)
      throw std::logic_error("Verifier workspace too small for " + configs[i].label());
    launch_amax(b_, *kernels[i], shape, in, n, outputs_.get<float>() + i, workspace_.get(), counter(), mode, stream_);
  }
  b_.synchronize(stream_);
  std::vector<std::uint32_t> got(kernels.size());
  b_.copy_to_host(got.data(), outputs_.get(), 4 * kernels.size());
  std::uint32_t slot[kSlotWords] = {};
  b_.copy_to_host(slot, counter_.get(), sizeof slot);
  if (slot[0] != 0)
    throw std::runtime_error("a one_pass or self_reset variant left its arrival count at " + std::to_string(slot[0]));
  if (slot[1] != 0)
    throw std::runtime_error(fmt::format("a self_reset variant left its accumulator at 0x{:08x}", slot[1]));
  for (std::size_t w = kSpinFirstWord; w < kSlotWords; ++w)
    if (slot[w] != 0)
      throw std::runtime_error(fmt::format("a spin variant left slot word {} (block {}) at 0x{:08x}", w,
                                           w - kSpinFirstWord, slot[w]));
  return got;
}

namespace {

// Values for the verification, in the dtype's own format and derived from its table entry: the
// largest finite power of two (well above every region value, which are all < 2) and a negative
// quiet NaN with payload 1.
std::uint32_t big_bits(DType d) { return info(d).max_pow2_bits(); }
std::uint32_t nan_bits(DType d) { return info(d).sign_bit() | info(d).quiet_nan_bits() | 1u; }

const char* nan_name(NanMode m) { return m == NanMode::ignore ? "ignore" : "propagate"; }

}  // namespace

std::map<std::string, std::string> verify_small(Backend& b, Verifier& v, DType d, const std::vector<KernelConfig>& cs,
                                                const std::vector<const LoadedKernel*>& ks) {
  std::map<std::string, std::string> failed;
  const std::uint32_t eb = info(d).bytes;
  const DeviceBuffer buf(b, 8192 * 4 + 64);
  std::uint64_t seed = 1;
  for (std::uint64_t n : kSmallVerifySizes)
    for (InputKind kind : all_input_kinds())
      for (NanMode mode : {NanMode::propagate, NanMode::ignore}) {
        const auto host = make_input(kind, d, n, seed++);
        const std::uint64_t off = (seed % 3) * eb;
        b.memset32_async(buf.get(), 0xffffffffu, 8192 + 16, nullptr);
        b.synchronize(nullptr);
        b.copy_to_device(buf.get(off), host.data(), host.size());
        const std::uint32_t expect = reference_amax_bits(host.data(), d, n, mode);
        const auto got = v.run(ks, cs, buf.get(off), n, mode);
        for (std::size_t i = 0; i < cs.size(); ++i)
          if (ks[i] && got[i] != expect && !failed.count(cs[i].label()))
            failed[cs[i].label()] = fmt::format("{} n={} offset={} nan={}: got 0x{:08x}, expected 0x{:08x}",
                                                to_string(kind), n, off / eb, nan_name(mode), got[i], expect);
      }
  return failed;
}

std::vector<std::string> verify_at_size(Backend& b, Verifier& v, InputRegion& inputs, DType d, std::uint64_t n,
                                        const std::vector<KernelConfig>& cs,
                                        const std::vector<const LoadedKernel*>& ks) {
  std::vector<std::string> reasons(cs.size());
  const std::uint32_t eb = info(d).bytes;
  char* in = static_cast<char*>(inputs.base()) + eb;
  const std::uint64_t last = n - 1, mid = n / 2;
  std::uint32_t orig_last = 0, orig_mid = 0, big = big_bits(d), nan = nan_bits(d);
  b.copy_to_host(&orig_last, in + last * eb, eb);
  b.copy_to_host(&orig_mid, in + mid * eb, eb);
  const std::uint32_t expect_big = reference_amax_bits(&big, d, 1, NanMode::propagate);
  auto check = [&](const char* what, NanMode mode, std::uint32_t expect) {
    const auto got = v.run(ks, cs, in, n, mode);
    for (std::size_t j = 0; j < cs.size(); ++j)
      if (ks[j] && got[j] != expect)
        reasons[j] = fmt::format("{} (n={}, offset 1, nan={}): got 0x{:08x}, expected 0x{:08x}", what, n,
                                 nan_name(mode), got[j], expect);
  };
  b.copy_to_device(in + last * eb, &big, eb);
  check("maximum at the last element", NanMode::propagate, expect_big);
  if (n >= 3) {
    b.copy_to_device(in + mid * eb, &nan, eb);
    check("NaN in the middle", NanMode::propagate, 0x7fc00000u);
    check("NaN in the middle, NaN ignored", NanMode::ignore, expect_big);
    b.copy_to_device(in + mid * eb, &orig_mid, eb);
  }
  b.copy_to_device(in + last * eb, &orig_last, eb);
  return reasons;
}

}  // namespace amax::tune
