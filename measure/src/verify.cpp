#include "amax/verify.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
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

VerifyLaunchKey verify_launch_key(const LoadedKernel& k, const KernelConfig& c, std::uint64_t n, std::uint32_t cu,
                                  std::size_t tensor) {
  const LaunchShape s = launch_shape(c, n, cu, k.resident_per_cu);
  const std::uint64_t flags = (s.uses_slot ? 1u : 0u) | (s.cooperative ? 2u : 0u) | (s.memset_output ? 4u : 0u) |
                              (s.finish_kernel ? 8u : 0u) | (s.dependent_finish ? 16u : 0u);
  return {&k, {tensor, n, s.grid, s.block, s.parts, s.workspace_bytes, flags}};
}

VerifyLaunchKey verify_launch_key(const LoadedMultiKernel& k, const MultiConfig& c, std::span<const MultiLaunch> plan) {
  MultiConfig launch = c;
  launch.max_blocks = BlockCap::uncapped();
  VerifyLaunchKey key{&k, {launch.threads, launch.nvec, launch.unroll, launch.chunk_kib,
                           static_cast<std::uint64_t>(launch.combine), static_cast<std::uint64_t>(launch.epilogue)}};
  for (const MultiLaunch& l : plan)
    key.words.insert(key.words.end(), {l.first, l.count, l.chunks, l.chunks_per_block, l.grid, l.spanning});
  return key;
}

template <class Config>
std::vector<std::vector<std::uint32_t>> Verifier::run(const std::vector<Config>& cs,
                                                      const std::vector<const Loaded<Config>*>& ks,
                                                      std::span<const MultiTensor> tensors, DType d, NanMode mode,
                                                      std::uint32_t cu, Memo* memo) {
  if (cs.size() != ks.size()) throw std::invalid_argument("Verifier::run: mismatched lists");
  static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu, 0x00000001u};
  constexpr bool single = std::is_same_v<Config, KernelConfig>;
  Memo local;
  Memo& known = memo ? *memo : local;
  // Each result's key, then one launch per key not known yet, in first-use order, with its output
  // words at `first` (single: one word per launch; multi: one per tensor).
  const std::size_t per = single ? 1 : tensors.size();  // result words per key
  const std::size_t keys_per = single ? tensors.size() : 1;
  std::vector<std::vector<MultiLaunch>> plans(single ? 0 : cs.size());
  std::vector<VerifyLaunchKey> keys(cs.size() * keys_per);
  std::map<VerifyLaunchKey, std::size_t> first;  // new keys -> their output words' offset
  std::vector<std::pair<std::size_t, std::size_t>> launches;  // (variant, tensor) of each new key
  std::uint64_t ws = 4;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (!ks[i]) continue;
    if constexpr (!single) {
      plans[i] = split_multi_launches(tensors, cs[i], d, cu, ks[i]->capacity);
    }
    for (std::size_t t = 0; t < keys_per; ++t) {
      VerifyLaunchKey& key = keys[i * keys_per + t];
      if constexpr (single)
        key = verify_launch_key(*ks[i], cs[i], tensors[t].n, cu, t);
      else
        key = verify_launch_key(*ks[i], cs[i], plans[i]);
      if (known.count(key) || !first.try_emplace(key, launches.size() * per).second) continue;
      launches.emplace_back(i, t);
      if constexpr (single)
        ws = std::max(ws, launch_shape(cs[i], tensors[t].n, cu, ks[i]->resident_per_cu).workspace_bytes);
      else
        ws = std::max(ws, multi_workspace_bytes(plans[i]));
    }
  }
  const std::size_t words = std::max<std::size_t>(1, launches.size() * per);
  reserve(words, ws);
  b_.memset32_async(out_.get(), kGarbage[calls_++ % 5], words, stream_);
  std::uint32_t* slot = counter_.get<std::uint32_t>();
  for (std::size_t j = 0; j < launches.size(); ++j) {
    const auto [i, t] = launches[j];
    float* out = out_.get<float>() + j * per;
    if constexpr (single) {
      const MultiTensor& x = tensors[t];
      launch_amax(b_, *ks[i], launch_shape(cs[i], x.n, cu, ks[i]->resident_per_cu), x.data, x.n, out,
                  workspace_.get(), slot, mode, stream_);
    } else {
      launch_multi_group(b_, ks[i]->main, cs[i], d, ks[i]->capacity, tensors, plans[i], out, workspace_.get(), slot,
                         mode, nullptr, stream_, args_);
    }
  }
  b_.synchronize(stream_);
  std::vector<std::uint32_t> all(launches.size() * per);
  if (!all.empty()) b_.copy_to_host(all.data(), out_.get(), 4 * all.size());
  std::uint32_t w[kSlotWords] = {};
  b_.copy_to_host(w, slot, sizeof w);
  if (w[0] != 0) throw std::runtime_error("a variant left the stream slot's arrival count at " + std::to_string(w[0]));
  if (w[1] != 0) throw std::runtime_error(fmt::format("a self_reset variant left its accumulator at 0x{:08x}", w[1]));
  for (const auto& [key, at] : first)
    known[key].assign(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + per));
  // Result words by MultiTensor::index, as each launch wrote them.
  std::vector<std::vector<std::uint32_t>> out(cs.size(), std::vector<std::uint32_t>(tensors.size()));
  for (std::size_t i = 0; i < cs.size(); ++i) {
    if (!ks[i]) continue;
    for (std::size_t t = 0; t < keys_per; ++t) {
      const std::vector<std::uint32_t>& r = known.at(keys[i * keys_per + t]);
      if constexpr (single)
        out[i][tensors[t].index] = r[0];
      else
        std::copy(r.begin(), r.end(), out[i].begin());
    }
  }
  return out;
}

template <class Config>
std::map<std::string, std::string> Verifier::verify_small(DType d, const std::vector<Config>& cs,
                                                          const std::vector<const Loaded<Config>*>& ks) {
  std::map<std::string, std::string> failed;
  const std::uint32_t eb = info(d).bytes;
  constexpr std::size_t kSizes = std::size(kSmallVerifySizes);
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 0;
  for (std::uint64_t n : kSmallVerifySizes) {
    at.push_back(bytes);
    bytes += (n + 16) * eb + 256 - (n + 16) * eb % 256;
  }
  const DeviceBuffer buf(b_, bytes);
  const auto cu = static_cast<std::uint32_t>(b_.device().cu_count);
  const auto kinds = all_input_kinds();
  constexpr NanMode kModes[] = {NanMode::propagate, NanMode::ignore};
  // Every list's inputs and expected results first, on the host's threads: list r * 2 + m (input
  // kind round r, NaN mode m), tensor i, from seed 1 + list * kSizes + i.
  struct Input {
    std::vector<std::uint8_t> host;
    std::uint32_t expect = 0;
  };
  const std::size_t lists = kinds.size() * std::size(kModes);
  std::vector<Input> inputs(lists * kSizes);
  {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t j; (j = next.fetch_add(1)) < inputs.size();) {
        const std::size_t list = j / kSizes, i = j % kSizes, round = list / std::size(kModes);
        const std::uint64_t n = kSmallVerifySizes[i];
        inputs[j].host = make_input(kinds[(round + i) % kinds.size()], d, n, 1 + j);
        inputs[j].expect = reference_amax_bits(inputs[j].host.data(), d, n, kModes[list % std::size(kModes)]);
      }
    };
    std::vector<std::thread> pool(std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16) - 1);
    for (auto& t : pool) t = std::thread(work);
    work();
    for (auto& t : pool) t.join();
  }
  for (std::size_t round = 0; round < kinds.size(); ++round)
    for (std::size_t m = 0; m < std::size(kModes); ++m) {
      const NanMode mode = kModes[m];
      const std::size_t list_index = round * std::size(kModes) + m;
      b_.memset32_async(buf.get(), 0xffffffffu, bytes / 4, stream_);  // around the tensors: NaN
      b_.synchronize(stream_);
      std::vector<MultiTensor> list;
      std::vector<std::uint32_t> expect;
      std::vector<std::string> what;
      for (std::size_t i = 0; i < kSizes; ++i) {
        const std::uint64_t n = kSmallVerifySizes[i], off = (round + i) % 3;
        const InputKind kind = kinds[(round + i) % kinds.size()];
        Input& in = inputs[list_index * kSizes + i];
        char* p = buf.get<char>(at[i] + off * eb);
        if (n) b_.copy_to_device(p, in.host.data(), in.host.size());
        in.host = {};
        list.push_back({n ? p : nullptr, n, static_cast<std::uint32_t>(i)});
        expect.push_back(in.expect);
        what.push_back(fmt::format("{} n={} offset={}", to_string(kind), n, off));
      }
      Memo memo;  // the launches of this list and mode, shared by both grids
      for (std::uint32_t cus : {cu, 1u}) {
        const auto got = run(cs, ks, list, d, mode, cus, &memo);
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
      NanMode, std::uint32_t, Memo*);                                                                             \
  template std::map<std::string, std::string> Verifier::verify_small(DType, const std::vector<Config>&,           \
                                                                     const std::vector<const Loaded<Config>*>&);  \
  template std::vector<std::string> Verifier::verify_at(InputRegion&, const GroupSpec&, const std::vector<Config>&, \
                                                        const std::vector<const Loaded<Config>*>&);
AMAX_VERIFIER_FAMILY(KernelConfig)
AMAX_VERIFIER_FAMILY(MultiConfig)
#undef AMAX_VERIFIER_FAMILY

}  // namespace amax::tune
