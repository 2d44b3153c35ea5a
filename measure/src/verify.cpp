#include "amax/verify.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "amax/reference.hpp"

namespace amax::tune {

namespace {

// Values for the verification, in the dtype's own format and derived from its table entry: the
// largest finite power of two (well above every region value, which are all < 2) and a negative
// quiet NaN with payload 1.
std::uint32_t big_bits(DType d) { return info(d).max_pow2_bits(); }
std::uint32_t nan_bits(DType d) { return info(d).sign_bit() | info(d).quiet_nan_bits() | 1u; }
const char* nan_name(NanMode m) { return m == NanMode::ignore ? "ignore" : "propagate"; }

}  // namespace

Verifier::Verifier(Backend& b, StreamHandle stream) : b_(b), stream_(stream), counter_(b, 4 * kSlotWords) {
  b.memset32_async(counter_.get(), 0, kSlotWords, stream);
  b.synchronize(stream);
}

void Verifier::reserve(std::uint64_t out_words, std::uint64_t workspace_bytes) {
  if (out_words > out_words_) {
    out_.reset();  // before the larger one is allocated
    out_ = DeviceBuffer(b_, 4 * out_words);
    out_words_ = out_words;
  }
  if (workspace_bytes > workspace_bytes_) {
    workspace_.reset();
    workspace_ = DeviceBuffer(b_, workspace_bytes);
    workspace_bytes_ = workspace_bytes;
    b_.memset32_async(workspace_.get(), 0xabababab, workspace_bytes / 4, stream_);  // arbitrary bytes
  }
}

template <class Config>
std::vector<std::vector<std::uint32_t>> Verifier::run(const std::vector<Config>& cs,
                                                      const std::vector<const Loaded<Config>*>& ks,
                                                      std::span<const MultiTensor> tensors, DType d, NanMode mode,
                                                      std::uint32_t cu) {
  if (cs.size() != ks.size()) throw std::invalid_argument("Verifier::run: mismatched lists");
  static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu, 0x00000001u};
  constexpr bool single = std::is_same_v<Config, KernelConfig>;
  std::vector<std::vector<MultiLaunch>> plans(single ? 0 : cs.size());
  std::uint64_t ws = 4;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (!ks[i]) continue;
    if constexpr (single) {
      for (const MultiTensor& t : tensors)
        ws = std::max(ws, launch_shape(cs[i], t.n, cu, ks[i]->resident_per_cu).workspace_bytes);
    } else {
      plans[i] = split_multi_launches(tensors, cs[i], d, cu, ks[i]->capacity);
      ws = std::max(ws, multi_workspace_bytes(plans[i]));
    }
  }
  const std::size_t words = std::max<std::size_t>(1, tensors.size() * cs.size());
  reserve(words, ws);
  b_.memset32_async(out_.get(), kGarbage[calls_++ % 5], words, stream_);
  std::uint32_t* slot = counter_.get<std::uint32_t>();
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (!ks[i]) continue;
    float* out = out_.get<float>() + i * tensors.size();
    if constexpr (single) {
      for (const MultiTensor& t : tensors)
        launch_amax(b_, *ks[i], launch_shape(cs[i], t.n, cu, ks[i]->resident_per_cu), t.data, t.n, out + t.index,
                    workspace_.get(), slot, mode, stream_);
    } else {
      launch_multi_group(b_, ks[i]->main, cs[i], d, ks[i]->capacity, tensors, plans[i], out, workspace_.get(), slot,
                         mode, nullptr, stream_, args_);
    }
  }
  b_.synchronize(stream_);
  std::vector<std::uint32_t> all(tensors.size() * cs.size());
  b_.copy_to_host(all.data(), out_.get(), 4 * all.size());
  std::uint32_t w[kSlotWords] = {};
  b_.copy_to_host(w, slot, sizeof w);
  if (w[0] != 0) throw std::runtime_error("a variant left the stream slot's arrival count at " + std::to_string(w[0]));
  if (w[1] != 0) throw std::runtime_error(fmt::format("a self_reset variant left its accumulator at 0x{:08x}", w[1]));
  for (std::size_t k = kSpinFirstWord; k < kSlotWords; ++k)
    if (w[k] != 0)
      throw std::runtime_error(
          fmt::format("a spin variant left slot word {} (block {}) at 0x{:08x}", k, k - kSpinFirstWord, w[k]));
  std::vector<std::vector<std::uint32_t>> out(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i)
    out[i].assign(all.begin() + static_cast<std::ptrdiff_t>(i * tensors.size()),
                  all.begin() + static_cast<std::ptrdiff_t>((i + 1) * tensors.size()));
  return out;
}

template <class Config>
std::map<std::string, std::string> Verifier::verify_small(DType d, const std::vector<Config>& cs,
                                                          const std::vector<const Loaded<Config>*>& ks) {
  std::map<std::string, std::string> failed;
  const std::uint32_t eb = info(d).bytes;
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 0;
  for (std::uint64_t n : kSmallVerifySizes) {
    at.push_back(bytes);
    bytes += (n + 16) * eb + 256 - (n + 16) * eb % 256;
  }
  const DeviceBuffer buf(b_, bytes);
  const auto cu = static_cast<std::uint32_t>(b_.device().cu_count);
  std::uint64_t seed = 1;
  const auto kinds = all_input_kinds();
  for (std::size_t round = 0; round < kinds.size(); ++round)
    for (NanMode mode : {NanMode::propagate, NanMode::ignore}) {
      b_.memset32_async(buf.get(), 0xffffffffu, bytes / 4, stream_);  // around the tensors: NaN
      b_.synchronize(stream_);
      std::vector<MultiTensor> list;
      std::vector<std::uint32_t> expect;
      std::vector<std::string> what;
      for (std::size_t i = 0; i < std::size(kSmallVerifySizes); ++i) {
        const std::uint64_t n = kSmallVerifySizes[i], off = (round + i) % 3;
        const InputKind kind = kinds[(round + i) % kinds.size()];
        const auto host = make_input(kind, d, n, seed++);
        char* p = buf.get<char>(at[i] + off * eb);
        if (n) b_.copy_to_device(p, host.data(), host.size());
        list.push_back({n ? p : nullptr, n, static_cast<std::uint32_t>(i)});
        expect.push_back(reference_amax_bits(host.data(), d, n, mode));
        what.push_back(fmt::format("{} n={} offset={}", to_string(kind), n, off));
      }
      for (std::uint32_t cus : {cu, 1u}) {
        const auto got = run(cs, ks, list, d, mode, cus);
        for (std::size_t v = 0; v < cs.size(); ++v)
          for (std::size_t i = 0; ks[v] && i < list.size(); ++i)
            if (got[v][i] != expect[i] && !failed.count(cs[v].label()))
              failed[cs[v].label()] =
                  fmt::format("tensor {} of {} ({}), nan={}, grid for {} CUs: got 0x{:08x}, expected 0x{:08x}", i,
                              list.size(), what[i], nan_name(mode), cus, got[v][i], expect[i]);
      }
    }
  return failed;
}

template <class Config>
std::vector<std::string> Verifier::verify_at(InputRegion& inputs, const GroupSpec& g, const std::vector<Config>& cs,
                                             const std::vector<const Loaded<Config>*>& ks) {
  std::vector<std::string> reasons(cs.size());
  const std::uint32_t eb = info(g.dtype).bytes;
  char* in = static_cast<char*>(inputs.base()) + eb;  // every tensor offset by one element
  std::vector<MultiTensor> list;
  std::vector<std::uint64_t> pos;  // the planted element's byte offset from `in`
  for (std::uint64_t i = 0; i < g.tensors; ++i) {
    list.push_back({in + i * g.n * eb, g.n, static_cast<std::uint32_t>(i)});
    const std::uint64_t at = i % 3 == 0 ? g.n - 1 : i % 3 == 1 ? 0 : g.n / 2;
    pos.push_back((i * g.n + at) * eb);
  }
  const std::uint64_t nan_tensor = g.tensors / 2, nan_at = (nan_tensor * g.n + g.n / 2 + (g.n > 2 ? 1 : 0)) * eb;
  std::vector<std::uint32_t> orig(pos.size() + 1);
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_host(&orig[i], in + pos[i], eb);
  b_.copy_to_host(&orig.back(), in + nan_at, eb);
  const std::uint32_t big = big_bits(g.dtype), nan = nan_bits(g.dtype);
  const std::uint32_t expect_big = reference_amax_bits(&big, g.dtype, 1, NanMode::propagate);
  auto check = [&](const char* what, NanMode mode, bool nan_planted) {
    const auto got = run(cs, ks, list, g.dtype, mode, static_cast<std::uint32_t>(b_.device().cu_count));
    for (std::size_t v = 0; v < cs.size(); ++v)
      for (std::size_t i = 0; ks[v] && reasons[v].empty() && i < list.size(); ++i) {
        const std::uint32_t want = nan_planted && i == nan_tensor && mode == NanMode::propagate ? 0x7fc00000u : expect_big;
        if (got[v][i] != want)
          reasons[v] = fmt::format("{} ({}, offset 1, nan={}): tensor {} got 0x{:08x}, expected 0x{:08x}", what,
                                   g.name(), nan_name(mode), i, got[v][i], want);
      }
  };
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_device(in + pos[i], &big, eb);
  check("maximum at the last, first or middle element of each tensor", NanMode::propagate, false);
  if (g.n >= 3) {
    b_.copy_to_device(in + nan_at, &nan, eb);
    check("NaN in the middle of one tensor", NanMode::propagate, true);
    check("NaN in the middle of one tensor, NaN ignored", NanMode::ignore, true);
  }
  for (std::size_t i = 0; i < pos.size(); ++i) b_.copy_to_device(in + pos[i], &orig[i], eb);
  b_.copy_to_device(in + nan_at, &orig.back(), eb);
  return reasons;
}

#define AMAX_VERIFIER_FAMILY(Config)                                                                               \
  template std::vector<std::vector<std::uint32_t>> Verifier::run(                                                 \
      const std::vector<Config>&, const std::vector<const Loaded<Config>*>&, std::span<const MultiTensor>, DType, \
      NanMode, std::uint32_t);                                                                                    \
  template std::map<std::string, std::string> Verifier::verify_small(DType, const std::vector<Config>&,           \
                                                                     const std::vector<const Loaded<Config>*>&);  \
  template std::vector<std::string> Verifier::verify_at(InputRegion&, const GroupSpec&, const std::vector<Config>&, \
                                                        const std::vector<const Loaded<Config>*>&);
AMAX_VERIFIER_FAMILY(KernelConfig)
AMAX_VERIFIER_FAMILY(MultiConfig)
#undef AMAX_VERIFIER_FAMILY

}  // namespace amax::tune
