#pragma once
// Shared by test_gpu_multi.cpp and test_gpu_multi_calls.cpp: contexts, lists of tensors in one
// device buffer with their host copies, and the checks of every tensor against the CPU reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "amax/amax_tune.hpp"
#include "amax/dtype_c.hpp"
#include "amax/multi_config.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "gpu_env.hpp"

using namespace amax;
using amax::test::DeviceBuffer;
using amax::test::read_bits;

namespace {

inline amax_tune::Options options(amax_nan_mode_t mode) {
  amax_tune::Options o;
  o.nan_mode = mode;
  o.user_db_path = "";
  o.system_db_path = "";
  return o;
}

// A C API context without databases (null where creation failed; amax_last_error says why).
inline amax_context_t bare_context() {
  amax_context_options_t o;
  amax_context_options_init(&o);
  o.user_db_path = "";
  o.system_db_path = "";
  amax_context_t c = nullptr;
  return amax_context_create(&o, &c) == AMAX_STATUS_SUCCESS ? c : nullptr;
}

// AMAX_TUNE_FORCE_MULTI_LABEL for the contexts created while it lives (read at creation).
struct ForceMulti {
  explicit ForceMulti(const std::string& l) { setenv("AMAX_TUNE_FORCE_MULTI_LABEL", l.c_str(), 1); }
  ~ForceMulti() { unsetenv("AMAX_TUNE_FORCE_MULTI_LABEL"); }
};

struct Spec {
  DType dtype;
  std::uint64_t n;
  std::uint32_t offset;  // elements past a 256-byte boundary
  InputKind kind;
};

inline std::string fmt_ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// The list's inputs in one device buffer, with their host copies and expected bits.
struct Group {
  std::vector<Spec> specs;
  std::vector<std::vector<std::uint8_t>> host;
  std::vector<amax_tensor_t> tensors;
  std::unique_ptr<DeviceBuffer> in, out;
};

inline std::unique_ptr<Group> make_group(Backend& b, std::vector<Spec> specs, std::uint64_t seed) {
  auto g = std::make_unique<Group>();
  g->specs = std::move(specs);
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 256;
  for (const Spec& s : g->specs) {
    at.push_back(bytes + s.offset * info(s.dtype).bytes);
    bytes += (s.offset + s.n) * info(s.dtype).bytes + 256 - ((s.offset + s.n) * info(s.dtype).bytes) % 256 + 256;
  }
  g->in = std::make_unique<DeviceBuffer>(b, bytes);
  g->out = std::make_unique<DeviceBuffer>(b, 4 * std::max<std::size_t>(1, g->specs.size()));
  for (std::size_t i = 0; i < g->specs.size(); ++i) {
    const Spec& s = g->specs[i];
    g->host.push_back(make_input(s.kind, s.dtype, s.n, seed + i));
    if (s.n) b.copy_to_device(g->in->get(at[i]), g->host.back().data(), g->host.back().size());
    g->tensors.push_back({s.n ? g->in->get(at[i]) : nullptr, s.n, to_c(s.dtype)});
  }
  return g;
}

// Runs the call (output filled with garbage first) and checks every tensor; returns the mismatches.
inline int run_and_check(Backend& b, amax_tune::Context& ctx, Group& g, NanMode mode, const std::string& what) {
  const std::size_t ws_bytes = ctx.multi_workspace_size(g.tensors);
  DeviceBuffer ws(b, ws_bytes);
  b.memset32_async(ws.get(), 0xdeadbeefu, ws_bytes / 4, nullptr);
  b.memset32_async(g.out->get(), 0x7f800001u, g.specs.size(), nullptr);  // garbage: a NaN
  ctx.multi_compute(g.tensors, g.out->get<float>(), ws.get(), ws_bytes, nullptr);
  b.synchronize(nullptr);
  std::vector<std::uint32_t> got(g.specs.size());
  b.copy_to_host(got.data(), g.out->get(), 4 * got.size());
  int bad = 0;
  for (std::size_t i = 0; i < g.specs.size(); ++i) {
    const Spec& s = g.specs[i];
    const std::uint32_t want = reference_amax_bits(g.host[i].data(), s.dtype, s.n, mode);
    if (got[i] != want && bad++ < 10)
      ADD_FAILURE() << what << ": tensor " << i << " of " << g.specs.size() << " (" << to_string(s.dtype) << " n=" << s.n
                    << " offset " << s.offset << " " << to_string(s.kind) << "): got 0x" << std::hex << got[i]
                    << ", want 0x" << want;
  }
  return bad;
}

inline std::vector<Spec> random_specs(std::mt19937_64& rng, std::size_t count, double max_log2, bool mixed_dtypes) {
  std::vector<Spec> out;
  for (std::size_t i = 0; i < count; ++i) {
    const DType d = mixed_dtypes ? all_dtypes()[rng() % 3].dtype : DType::bf16;
    std::uint64_t n = static_cast<std::uint64_t>(std::exp2(std::uniform_real_distribution<double>(0, max_log2)(rng)));
    if (rng() % 10 == 0) n = 0;
    const auto kinds = all_input_kinds();
    out.push_back({d, n, static_cast<std::uint32_t>(rng() % (16 / info(d).bytes)), kinds[rng() % kinds.size()]});
  }
  return out;
}

// amax_multi_and_scale on `g` with `o`: checks every tensor's amax, scale and scale_inv bits.
inline int run_and_check_scale(Backend& b, amax_tune::Context& ctx, Group& g, NanMode mode,
                               const amax_tune::ScaleOptions& o, const std::string& what) {
  const std::size_t count = g.specs.size(), ws_bytes = ctx.multi_workspace_size(g.tensors);
  DeviceBuffer ws(b, ws_bytes), outs(b, 12 * count);
  b.memset32_async(ws.get(), 0xdeadbeefu, ws_bytes / 4, nullptr);
  b.memset32_async(outs.get(), 0x7f800001u, 3 * count, nullptr);
  float* amax = outs.get<float>(0);
  ctx.multi_and_scale(g.tensors, o, amax, amax + count, amax + 2 * count, ws.get(), ws_bytes, nullptr);
  b.synchronize(nullptr);
  std::vector<std::uint32_t> got(3 * count);
  b.copy_to_host(got.data(), outs.get(), 12 * count);
  ScaleRule r;
  r.max = o.format == AMAX_FP8_EXPLICIT_MAX ? o.max : info(*fp8_format_from_int(o.format)).max_finite;
  r.epsilon = o.epsilon;
  r.force_pow2 = o.force_pow2;
  r.nan_propagates = o.nan_propagates;
  int bad = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const Spec& s = g.specs[i];
    const std::uint32_t a = reference_amax_bits(g.host[i].data(), s.dtype, s.n, mode);
    const ScaleBits want = reference_scale_bits(a, r);
    if ((got[i] != a || got[count + i] != want.scale || got[2 * count + i] != want.scale_inv) && bad++ < 10)
      ADD_FAILURE() << what << ": tensor " << i << " (" << to_string(s.dtype) << " n=" << s.n << " "
                    << to_string(s.kind) << "): got amax/scale/scale_inv 0x" << std::hex << got[i] << "/0x"
                    << got[count + i] << "/0x" << got[2 * count + i] << ", want 0x" << a << "/0x" << want.scale
                    << "/0x" << want.scale_inv;
  }
  return bad;
}
}  // namespace
