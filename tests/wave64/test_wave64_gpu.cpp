// The wave-64 model on an NVIDIA GPU (docs/amd.md, "The wave-64 model"): every kernel the AMD targets
// get (tests/wave64/wave64_model.hpp: model_set), rendered for AMD and compiled with
// templates/prelude_wave64.h, launched by the runtime's own launch code with the launch shapes of
// an MI300X (304 CUs; the grid-cap sizes once more with an MI355X's 256) and the stream slot and
// workspace as the runtime prepares them, and compared bit for bit with the CPU reference (amax,
// and scale and scale_inv by the scale rule). Inputs: large random backgrounds (normal values;
// denormals and zeros of both signs; all -0.0; all NaN) held on the host and the device, with
// adversarial elements planted per case (the maximum first, last, inside a vector or in lanes
// 32-63 of a wave; NaN first, inside, last; +-Inf; both signs of the maximum) and guard elements
// around the range that change the result of a kernel reading one element too many. Every
// handshake wait of the model is bounded: a timeout is counted in the module and reported here.
// Skips without an NVIDIA GPU. AMAX_WAVE64_ONLY=<text> runs only the kernels whose label and dtype
// ("one_pass.t256.v8.u2 bf16") contain it.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "amax/backend.hpp"
#include "amax/device_buffer.hpp"
#include "amax/kernel_cache.hpp"
#include "amax/launch.hpp"
#include "amax/multi_launch.hpp"
#include "amax/reference.hpp"
#include "amax/scale_rule.hpp"
#include "wave64_model.hpp"

using namespace amax;
using namespace amax::wave64;

namespace {

constexpr std::uint32_t kWave = 64;               // the AMD wave the kernels are compiled for
constexpr std::uint64_t kGuard = 16;              // elements before a range's offset 0 (64-byte aligned)
constexpr std::uint64_t kSpecialElems = 1ull << 25;  // the special backgrounds' length
// The grid-cap sizes of scale-epilogue variants and the beyond-cap lists run where their input is at
// most this large (the amax-only variants run theirs at every size: docs/amd.md says why).
constexpr std::uint64_t kBigBytes = 64ull << 20;
constexpr std::size_t kBatch = 1 << 15;          // results read back per synchronisation
constexpr int kPrintedPerKernel = 3;

// ---- element encodings ----
struct Format {
  unsigned eb, exp_bits, mant_bits;
  std::uint32_t sign() const { return 1u << (eb * 8 - 1); }
  std::uint32_t exp_max() const { return (1u << exp_bits) - 1; }
  std::uint32_t bias() const { return exp_max() / 2; }
  std::uint32_t make(bool s, std::uint32_t e, std::uint32_t m) const {
    return (s ? sign() : 0u) | (e << mant_bits) | (m & ((1u << mant_bits) - 1));
  }
};
Format format_of(DType d) {
  switch (d) {
    case DType::fp32: return {4, 8, 23};
    case DType::fp16: return {2, 5, 10};
    default: return {2, 8, 7};
  }
}

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
  bool coin() { return next() & 1; }
};

// |x| < 1, now and then a denormal or a zero of either sign.
std::uint32_t normal_value(const Format& f, Rng& r) {
  const std::uint64_t x = r.next();
  if ((x & 63) == 0) return f.make(x & 64, 0, static_cast<std::uint32_t>(x >> 8) | 1u);
  if ((x & 127) == 1) return f.make(x & 64, 0, 0);
  const std::uint32_t lo = f.bias() > 12 ? f.bias() - 12 : 1;
  return f.make(x & 64, lo + static_cast<std::uint32_t>((x >> 8) % (f.bias() - lo)),
                static_cast<std::uint32_t>(x >> 20));
}
std::uint32_t tiny_value(const Format& f, Rng& r) {  // a denormal or a zero, either sign
  const std::uint64_t x = r.next();
  return (x & 7) < 2 ? f.make(x & 1, 0, 0) : f.make(x & 8, 0, static_cast<std::uint32_t>(x >> 8) | 1u);
}
std::uint32_t nan_value(const Format& f, Rng& r) {
  return f.make(r.coin(), f.exp_max(), static_cast<std::uint32_t>(r.next() >> 8) | 1u);
}
// 2^k <= |x| < 2^(k+1), k in [lo, lo + 3]: above every normal_value.
std::uint32_t big_value(const Format& f, Rng& r, std::uint32_t lo = 1) {
  return f.make(r.coin(), f.bias() + lo + static_cast<std::uint32_t>(r.below(4)), static_cast<std::uint32_t>(r.next()));
}
std::uint32_t max_finite(const Format& f, bool s) { return f.make(s, f.exp_max() - 1, ~0u); }

// ---- inputs: a background on host and device, and the elements a case plants into it ----
struct Background {
  std::string name;
  std::vector<std::uint8_t> host;
  std::uint64_t n = 0;
  DeviceBuffer dev;
  std::unique_ptr<RangeReference> ref;
};

enum class Fill { normal, tiny, negative_zero, all_nan };
constexpr const char* kFillNames[] = {"normal", "denormals and zeros", "all -0.0", "all NaN"};

std::unique_ptr<Background> make_background(Backend& b, DType d, Fill fill, std::uint64_t n, std::uint64_t seed) {
  auto bg = std::make_unique<Background>();
  bg->name = kFillNames[static_cast<int>(fill)];
  bg->n = n;
  const Format f = format_of(d);
  bg->host.resize(n * f.eb);
  const unsigned threads = std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      Rng r{seed * 0x9e3779b97f4a7c15ull + t + 1};
      for (std::uint64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) {
        const std::uint32_t v = fill == Fill::normal          ? normal_value(f, r)
                                : fill == Fill::tiny          ? tiny_value(f, r)
                                : fill == Fill::negative_zero ? f.sign()
                                                              : nan_value(f, r);
        std::memcpy(&bg->host[i * f.eb], &v, f.eb);
      }
    });
  for (auto& t : pool) t.join();
  bg->dev = DeviceBuffer(b, (bg->host.size() + 3) / 4 * 4);
  b.copy_to_device(bg->dev.get(), bg->host.data(), bg->host.size());
  bg->ref = std::make_unique<RangeReference>(bg->host.data(), d, n, threads);
  return bg;
}

// Elements a case changes in a background, on the host at once and on the device in stream order
// (32-bit memsets of the words holding them), undone after the case's launches.
class Planted {
 public:
  Planted(Background& bg, unsigned eb) : bg_(bg), eb_(eb) {}
  void set(std::uint64_t at, std::uint32_t bits) {
    std::uint32_t old = 0;
    std::memcpy(&old, &bg_.host[at * eb_], eb_);
    saved_.emplace_back(at, old);
    std::memcpy(&bg_.host[at * eb_], &bits, eb_);
  }
  std::vector<std::uint64_t> indices() const {
    std::vector<std::uint64_t> out;
    for (const auto& s : saved_) out.push_back(s.first);
    return out;
  }
  void push(Backend& b, StreamHandle s) {
    std::vector<std::uint64_t> words;
    for (const auto& e : saved_) words.push_back(e.first * eb_ / 4);
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    for (std::uint64_t w : words) {
      std::uint32_t v;
      std::memcpy(&v, &bg_.host[w * 4], 4);
      b.memset32_async(bg_.dev.get(w * 4), v, 1, s);
    }
  }
  void undo(Backend& b, StreamHandle s) {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      std::memcpy(&bg_.host[it->first * eb_], &it->second, eb_);
    push(b, s);
    saved_.clear();
  }

 private:
  Background& bg_;
  unsigned eb_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> saved_;
};

enum class Pattern {
  none, max_first, max_last, max_in_vector, max_upper_lane, nan_first, nan_inside, nan_last, pos_inf, neg_inf_last,
  nan_and_neg_inf, both_signs
};
constexpr const char* kPatternNames[] = {"background only", "max first", "max last", "max inside a vector",
                                         "max in lanes 32-63", "NaN first", "NaN inside", "NaN last", "+Inf",
                                         "-Inf last", "NaN and -Inf", "max of both signs"};
constexpr int kPatterns = 12;

// Plants `pat` into the range [lo, lo + n) (n >= 1). `upper`: the offset in the range of an element
// that a lane 32-63 of a wave loads (n: none; the pattern then puts its maximum last).
void plant(Planted& p, Pattern pat, std::uint64_t lo, std::uint64_t n, std::uint64_t upper, const Format& f, Rng& r) {
  switch (pat) {
    case Pattern::none: break;
    case Pattern::max_first: p.set(lo, big_value(f, r)); break;
    case Pattern::max_last: p.set(lo + n - 1, big_value(f, r)); break;
    case Pattern::max_in_vector: p.set(lo + std::min(n - 1, n / 2 / 8 * 8 + 5), big_value(f, r)); break;
    case Pattern::max_upper_lane:
      // 1.0 in lane 0 as well (above the normal background): a reduction that drops lanes 32-63
      // gives it instead of the maximum (>= 16).
      if (upper < n && upper > 0) p.set(lo, f.make(false, f.bias(), 0));
      p.set(lo + (upper < n ? upper : n - 1), big_value(f, r, 4));
      break;
    case Pattern::nan_first: p.set(lo, nan_value(f, r)); break;
    case Pattern::nan_inside: p.set(lo + r.below(n), nan_value(f, r)); break;
    case Pattern::nan_last: p.set(lo + n - 1, nan_value(f, r)); break;
    case Pattern::pos_inf: p.set(lo + n / 3, f.make(false, f.exp_max(), 0)); break;
    case Pattern::neg_inf_last: p.set(lo + n - 1, f.make(true, f.exp_max(), 0)); break;
    case Pattern::nan_and_neg_inf:
      p.set(lo + n / 4, nan_value(f, r));
      p.set(lo + 3 * n / 4, f.make(true, f.exp_max(), 0));
      break;
    case Pattern::both_signs: {
      const std::uint32_t v = big_value(f, r) & ~f.sign();
      p.set(lo + r.below(n), v | f.sign());
      p.set(lo + r.below(n), v);
      break;
    }
  }
}

// Guards just outside the range: NaN (propagate) or the largest finite value (ignore), so that a
// kernel reading one element before or after the range returns something else.
void guard(Planted& p, std::uint64_t lo, std::uint64_t n, NanMode mode, const Format& f, Rng& r) {
  const std::uint32_t g = mode == NanMode::propagate ? nan_value(f, r) : max_finite(f, r.coin());
  p.set(lo - 1, g);
  p.set(lo + n, g);
}

// The scale rules the scale-epilogue cases rotate through: e4m3 as TE, gfx942's e4m3fnuz with a NaN
// propagating, e5m2 with a power-of-two scale and an epsilon, e5m2fnuz with both options.
const ScaleRule kRules[] = {{448.0f, 0.0f, false, false},
                            {240.0f, 0.0f, false, true},
                            {57344.0f, 1e-12f, true, false},
                            {57344.0f, 0.0f, true, true}};
ScaleArgs scale_args(const ScaleRule& rule, float* scale, float* scale_inv) {
  return {scale, scale_inv, rule.max, rule.epsilon,
          (rule.force_pow2 ? kRuleForcePow2 : 0u) | (rule.nan_propagates ? kRuleNanPropagates : 0u)};
}

// ---- the model on the device ----
struct Model {
  std::unique_ptr<Backend> backend;
  ArchInfo arch;
  ModelSet set;
  std::vector<LoadedKernel> singles;                 // set.singles' kernels (main null: not compiled)
  std::vector<std::unique_ptr<Module>> multi_modules;  // set.multis'
  std::vector<FunctionHandle> multis;
  std::vector<FunctionHandle> single_faults, multi_faults;
  std::vector<std::string> errors;  // programs that did not compile or load
};

std::string g_skip;

// Compiles (through the binary cache the CPU test fills) and loads `programs`; nullptr entries where
// one failed, with its error in `errors`.
std::vector<std::unique_ptr<Module>> build(Backend& b, const ArchInfo& arch, const std::vector<ModelProgram>& programs,
                                           std::vector<std::string>& errors) {
  const auto compiler = make_compiler(Vendor::nvidia);
  const auto t0 = std::chrono::steady_clock::now();
  const auto bins = compile_model(*compiler, BinaryCache(AMAX_WAVE64_CACHE), arch, programs,
                                  std::max(2u, std::thread::hardware_concurrency()));
  std::vector<std::unique_ptr<Module>> out(programs.size());
  std::size_t cached = 0;
  for (std::size_t i = 0; i < programs.size(); ++i) {
    cached += bins[i].from_cache;
    if (!bins[i].error.empty()) {
      errors.push_back(programs[i].name + ": " + bins[i].error.substr(0, 2000));
      continue;
    }
    try {
      out[i] = b.load_module(bins[i].code.binary);
    } catch (const std::exception& e) {
      errors.push_back(programs[i].name + ": load: " + e.what());
    }
  }
  std::printf("[ wave64 ] %zu programs for %s by %s (%zu from %s) in %.1f s\n", programs.size(), arch.name.c_str(),
              compiler->version().c_str(), cached, AMAX_WAVE64_CACHE,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

std::unique_ptr<Model> make_model() {
  if (!have_compiler(Vendor::nvidia)) {
    g_skip = "this build has no NVIDIA backend: the wave-64 model runs on an NVIDIA GPU through NVRTC";
    return nullptr;
  }
  if (device_count(Vendor::nvidia) == 0) {
    g_skip = "no NVIDIA GPU present, wave-64 model skipped (" + no_device_reason(Vendor::nvidia) + ")" +
             (device_count(Vendor::amd) ? "; on an AMD GPU the AMD kernels run natively in test_gpu_correctness" : "");
    return nullptr;
  }
  if (!make_compiler(Vendor::nvidia)->available()) {
    g_skip = "NVRTC unavailable: " + make_compiler(Vendor::nvidia)->unavailable_reason();
    return nullptr;
  }
  auto m = std::make_unique<Model>();
  m->backend = make_backend(Vendor::nvidia, 0);
  m->arch = ArchInfo::parse(m->backend->device().arch);
  m->set = model_set();
  const auto& dev = m->backend->device();
  std::printf("[ wave64 ] %s (%s, %d SMs): AMD waves of 64 lanes as two warps; launch shapes of %s (%u CUs) and "
              "%s (%u CUs)\n",
              dev.name.c_str(), dev.arch.c_str(), dev.cu_count, std::string(kModelDevices[0].product).c_str(),
              kModelDevices[0].cu_count, std::string(kModelDevices[1].product).c_str(), kModelDevices[1].cu_count);
  auto modules = build(*m->backend, m->arch, model_programs(m->set), m->errors);
  std::size_t i = 0;
  for (const SingleKernel& k : m->set.singles) {
    LoadedKernel l;
    l.config = k.kernel;
    l.dtype = k.dtype;
    FunctionHandle faults = nullptr;
    if (auto& mod = modules[i++]) try {
        l.main = mod->function(kernel_name(k.kernel, k.dtype));
        if (k.kernel.strategy == Strategy::two_stage) l.finish = mod->function(finish_kernel_name(k.kernel, k.dtype));
        faults = mod->function(std::string(kFaultKernel));
        l.module = std::move(mod);
      } catch (const std::exception& e) {
        m->errors.push_back(k.kernel.label() + ": " + e.what());
        l.main = nullptr;
      }
    m->singles.push_back(std::move(l));
    m->single_faults.push_back(faults);
  }
  for (const MultiKernel& k : m->set.multis) {
    auto& mod = modules[i++];
    FunctionHandle fn = nullptr, faults = nullptr;
    if (mod) try {
        fn = mod->function(multi_kernel_name(k.kernel, k.dtype, k.capacity));
        faults = mod->function(std::string(kFaultKernel));
      } catch (const std::exception& e) {
        m->errors.push_back(k.kernel.label() + ": " + e.what());
        fn = nullptr;
      }
    m->multis.push_back(fn);
    m->multi_faults.push_back(faults);
    m->multi_modules.push_back(std::move(mod));
  }
  return m;
}

Model* model() {
  static std::unique_ptr<Model> m = make_model();
  return m.get();
}

#define AMAX_REQUIRE_MODEL()                    \
  Model* md = model();                          \
  if (!md) GTEST_SKIP() << g_skip;              \
  for (const auto& e : md->errors) ADD_FAILURE() << "does not compile or load under the wave-64 model: " << e

// ---- running cases: launches enqueued on one stream, results read back and compared in batches ----
struct Expect {
  std::string kernel;  // the kernel's label and dtype: failures are counted per kernel
  std::string what;    // the case: variant label, size, offset, NaN mode, input
  std::size_t slot;    // in the output arrays
  std::uint32_t amax;
  bool scale;
  ScaleBits scales;
};

class Runner {
 public:
  explicit Runner(Backend& b)
      : b_(b),
        stream_(b.create_stream()),
        out_(b, 4 * kBatch),
        scale_(b, 4 * kBatch),
        scale_inv_(b, 4 * kBatch),
        faults_(b, 4 * 4096),
        workspace_(b, 16u << 20),
        slot_(b, 4 * kSlotWords) {
    b_.memset32_async(slot_.get(), 0u, kSlotWords, stream_);  // as the runtime: zeroed once
    b_.memset32_async(workspace_.get(), 0xabababab, workspace_.bytes() / 4, stream_);  // any content
    b_.synchronize(stream_);
  }
  ~Runner() { b_.destroy_stream(stream_); }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  Backend& backend() { return b_; }
  StreamHandle stream() const { return stream_; }
  void* workspace() const { return workspace_.get(); }
  std::uint64_t workspace_bytes() const { return workspace_.bytes(); }
  std::uint32_t* slot() const { return slot_.get<std::uint32_t>(); }

  /// `count` consecutive result slots for one case (flushing first when the batch is full).
  std::size_t take(std::size_t count) {
    if (used_ + count > kBatch) flush();
    if (used_ == 0) {  // garbage the kernels must overwrite
      static const std::uint32_t kGarbage[] = {0x7f800000u, 0x7fc00000u, 0x4b000000u, 0xffffffffu};
      const std::uint32_t g = kGarbage[flushes_ % 4];
      for (const DeviceBuffer* d : {&out_, &scale_, &scale_inv_}) b_.memset32_async(d->get(), g, kBatch, stream_);
    }
    const std::size_t at = used_;
    used_ += count;
    return at;
  }
  float* out(std::size_t slot) const { return out_.get<float>(4 * slot); }
  float* scale(std::size_t slot) const { return scale_.get<float>(4 * slot); }
  float* scale_inv(std::size_t slot) const { return scale_inv_.get<float>(4 * slot); }
  void expect(Expect e) { pending_.push_back(std::move(e)); }
  /// A module whose fault count is read at the next flush, under `name`.
  void uses(FunctionHandle faults, const std::string& name) {
    if (faults && std::none_of(modules_.begin(), modules_.end(), [&](const auto& m) { return m.first == faults; }))
      modules_.emplace_back(faults, name);
  }

  /// Reads back and compares everything enqueued; reports each failure (a few per kernel).
  void flush() {
    if (modules_.size() > faults_.bytes() / 4) throw std::logic_error("wave64 runner: too many modules per batch");
    for (std::size_t i = 0; i < modules_.size(); ++i) {
      void* p = faults_.get(4 * i);
      void* args[] = {&p};
      b_.launch(modules_[i].first, 1, 1, stream_, args);
    }
    b_.synchronize(stream_);  // throws BackendError when a launch failed
    std::vector<std::uint32_t> out(used_), sc(used_), inv(used_), faults(modules_.size());
    if (used_) {
      b_.copy_to_host(out.data(), out_.get(), 4 * used_);
      b_.copy_to_host(sc.data(), scale_.get(), 4 * used_);
      b_.copy_to_host(inv.data(), scale_inv_.get(), 4 * used_);
    }
    if (!faults.empty()) b_.copy_to_host(faults.data(), faults_.get(), 4 * faults.size());
    for (std::size_t i = 0; i < modules_.size(); ++i)
      if (faults[i]) {
        ++fault_kernels;
        ADD_FAILURE() << modules_[i].second << ": " << faults[i]
                      << " handshake waits of the wave-64 model timed out (a wave's two warps did not meet: a "
                         "wave-wide operation called by part of a wave, or a broken handshake)";
      }
    for (const Expect& e : pending_) {
      const std::uint32_t got = out[e.slot];
      const bool ok =
          got == e.amax && (!e.scale || (sc[e.slot] == e.scales.scale && inv[e.slot] == e.scales.scale_inv));
      ++cases;
      if (ok) continue;
      ++mismatches;
      if (++failed_[e.kernel] > kPrintedPerKernel) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, ": amax got 0x%08x expected 0x%08x", got, e.amax);
      std::string msg = e.kernel + " " + e.what + buf;
      if (e.scale) {
        std::snprintf(buf, sizeof buf, "; scale got 0x%08x expected 0x%08x, scale_inv got 0x%08x expected 0x%08x",
                      sc[e.slot], e.scales.scale, inv[e.slot], e.scales.scale_inv);
        msg += buf;
      }
      ADD_FAILURE() << msg;
    }
    std::vector<std::uint32_t> slot(kSlotWords);
    b_.copy_to_host(slot.data(), slot_.get(), 4 * kSlotWords);
    EXPECT_EQ(slot[0], 0u) << "the stream slot's arrival count is not 0 after a batch";
    EXPECT_EQ(slot[1], 0u) << "self_reset's accumulator is not 0 after a batch";
    // Keep going on a clean slot (first_reset's words carry its epoch and stay).
    if (slot[0] || slot[1]) b_.memset32_async(slot_.get(), 0u, 2, stream_);
    pending_.clear();
    modules_.clear();
    used_ = 0;
    ++flushes_;
  }

  /// The kernels with failures and how many cases each failed.
  const std::map<std::string, std::size_t>& failed() const { return failed_; }
  std::size_t cases = 0, mismatches = 0, fault_kernels = 0, launches = 0;
  std::uint64_t bytes = 0;

 private:
  Backend& b_;
  StreamHandle stream_;
  DeviceBuffer out_, scale_, scale_inv_, faults_, workspace_, slot_;
  std::vector<Expect> pending_;
  std::vector<std::pair<FunctionHandle, std::string>> modules_;
  std::map<std::string, std::size_t> failed_;
  std::size_t used_ = 0, flushes_ = 0;
};

// Whether the kernel `label` (kernel label and dtype) runs: AMAX_WAVE64_ONLY, when set, must be in it.
bool selected(const std::string& label) {
  const char* only = std::getenv("AMAX_WAVE64_ONLY");
  return !only || !*only || label.find(only) != std::string::npos;
}
bool everything() {
  const char* only = std::getenv("AMAX_WAVE64_ONLY");
  return !only || !*only;
}

std::string nan_name(NanMode m) { return m == NanMode::ignore ? "ignore" : "propagate"; }

// ---- single-tensor cases ----
struct SizeCase {
  std::uint64_t n;
  std::uint32_t cu;  // the CUs the launch shape is computed for
  int mode;          // NaN modes: 0 propagate, 1 ignore, 2 both
  bool big;          // a grid-cap size
};

// The sizes of one variant: one element; one block with a wave's upper lanes loading; a block of
// several waves; a block's tile less one element; two blocks; six; the grid cap exactly (uncapped:
// 97 blocks); beyond the cap (the first blocks loop once more; uncapped: 613 blocks); for a per-CU
// cap, beyond gfx950's cap too.
std::vector<SizeCase> size_cases(const KernelConfig& c, std::size_t vi) {
  const std::uint64_t tile = std::uint64_t{c.threads} * c.unroll * c.nvec, nv = c.nvec;
  const std::uint32_t cu = kModelDevices[0].cu_count;
  const bool capped = c.max_blocks.kind != BlockCap::Kind::uncapped;
  const std::uint64_t cap = c.max_blocks.max_blocks(cu);
  const int a = static_cast<int>(vi % 2), other = 1 - a;
  std::vector<SizeCase> out{{1, cu, 2, false},
                            {40 * nv + 3, cu, 2, false},
                            {2 * kWave * nv + kWave / 2 * nv + 7, cu, 2, false},
                            {tile - 1, cu, 2, false},
                            {tile + 1, cu, 2, false},
                            {5 * tile + tile / 3 + 11, cu, 2, false},
                            {capped ? cap * tile : 97 * tile + nv / 2, cu, a, true},
                            {capped ? cap * tile + tile + tile / 2 + 5 : 613 * tile + 1, cu, other, true}};
  if (c.max_blocks.kind == BlockCap::Kind::per_cu) {
    const std::uint32_t cu2 = kModelDevices[1].cu_count;
    out.push_back({c.max_blocks.max_blocks(cu2) * tile + tile + tile / 2 + 5, cu2, a, true});
  }
  return out;
}

// The offset in [0, n) of an element that lane 32 + j of a wave loads in its first vector, under
// `shape`, at an input whose first element is `misalign_bytes` past a vector boundary; n when none.
std::uint64_t upper_lane_element(const KernelConfig& c, std::uint32_t eb, std::uint64_t misalign_bytes, std::uint64_t n,
                                 std::uint32_t grid, std::size_t vi) {
  const std::uint64_t vb = std::uint64_t{c.nvec} * eb;
  const std::uint64_t head = std::min<std::uint64_t>(n, misalign_bytes % vb ? (vb - misalign_bytes % vb) / eb : 0);
  const std::uint64_t body = (n - head) / c.nvec;
  const std::uint64_t lane = 32 + vi % 32, waves = c.threads / kWave;
  const std::uint64_t late = std::uint64_t{grid - 1} * c.threads + (waves - 1) / 2 * kWave + lane;
  for (const std::uint64_t v : {late, lane, std::uint64_t{kWave / 2}})
    if (v < body) return head + v * c.nvec + vi % c.nvec;
  return n;
}

struct DtypeInputs {
  std::unique_ptr<Background> bg[4];  // by Fill; the special ones may be absent
};

// The normal background of `normal_elems` elements and, with `special`, the others of at most
// kSpecialElems.
DtypeInputs make_inputs(Backend& b, DType d, std::uint64_t normal_elems, std::uint64_t seed, bool special = true) {
  DtypeInputs in;
  for (int k = 0; k < (special ? 4 : 1); ++k)
    in.bg[k] = make_background(b, d, static_cast<Fill>(k),
                               k == 0 ? normal_elems : std::min(normal_elems, kSpecialElems), seed + 101 * k);
  return in;
}

// The background of rotation `rot` where it holds `need` elements, else the normal one.
Background& pick(DtypeInputs& in, std::uint64_t need, std::size_t rot) {
  const auto& b = in.bg[rot % 4];
  return b && need <= b->n ? *b : *in.bg[0];
}

// Enqueues the cases of variant `c` (the `vi`-th of the run) of kernel `k`; `force`: every case
// plants that pattern (else they rotate through all).
void run_single(Runner& r, const LoadedKernel& k, FunctionHandle faults, const KernelConfig& c, std::size_t vi,
                DtypeInputs& in, std::uint64_t seed, int force = -1) {
  const DType d = k.dtype;
  const Format f = format_of(d);
  const std::string kernel = k.config.kernel_label() + " " + std::string(to_string(d));
  Rng rng{seed ^ (vi * 0x2545f4914f6cdd1dull) ^ 0x5bd1e995ull};
  const auto sizes = size_cases(c, vi);
  for (std::size_t si = 0; si < sizes.size(); ++si) {
    const SizeCase& sz = sizes[si];
    if (sz.big && c.epilogue == Epilogue::scale && sz.n * f.eb > kBigBytes) continue;
    for (int m = 0; m < 2; ++m) {
      if (sz.mode != 2 && sz.mode != m) continue;
      const NanMode mode = m ? NanMode::ignore : NanMode::propagate;
      const std::uint64_t offset = (3 * si + vi + 4 * m) % 8, lo = kGuard + offset;
      Background& bg = pick(in, lo + sz.n + 1, vi + si + m);
      const Pattern pat = static_cast<Pattern>(force >= 0 ? static_cast<std::size_t>(force)
                                                          : (vi * 5 + si * 3 + m * 7) % kPatterns);
      LaunchShape shape = launch_shape(c, sz.n, sz.cu);
      shape.dependent_finish = false;  // AMD has no programmatic dependent launch (the HIP backend's is ordinary)
      if (shape.workspace_bytes > r.workspace_bytes()) throw std::logic_error("workspace too small for " + c.label());
      Planted p(bg, f.eb);
      guard(p, lo, sz.n, mode, f, rng);
      plant(p, pat, lo, sz.n, upper_lane_element(c, f.eb, lo * f.eb, sz.n, shape.grid, vi), f, rng);
      const auto dirty = p.indices();
      Expect e;
      e.kernel = kernel;
      e.amax = bg.ref->range(lo, lo + sz.n, mode, dirty);
      e.slot = r.take(1);
      r.uses(faults, kernel);
      e.scale = c.epilogue == Epilogue::scale;
      const ScaleRule& rule = kRules[(vi + si + static_cast<std::size_t>(m)) % 4];
      const ScaleArgs sa = scale_args(rule, r.scale(e.slot), r.scale_inv(e.slot));
      if (e.scale) e.scales = reference_scale_bits(e.amax, rule);
      char what[320];
      std::snprintf(what, sizeof what,
                    "as %s: n=%llu offset=%llu nan=%s grid=%u (%u CUs) input=%s with %s%s (max %g, epsilon %g%s%s)",
                    c.label().c_str(), static_cast<unsigned long long>(sz.n), static_cast<unsigned long long>(offset),
                    nan_name(mode).c_str(), shape.grid, sz.cu, bg.name.c_str(), kPatternNames[static_cast<int>(pat)],
                    e.scale ? "; scale rule" : "", e.scale ? rule.max : 0.0, e.scale ? rule.epsilon : 0.0,
                    e.scale && rule.force_pow2 ? ", pow2" : "",
                    e.scale && rule.nan_propagates ? ", NaN propagates" : "");
      e.what = what;
      p.push(r.backend(), r.stream());
      launch_amax(r.backend(), k, shape, bg.dev.get(lo * f.eb), sz.n, r.out(e.slot), r.workspace(), r.slot(), mode,
                  r.stream(), e.scale ? &sa : nullptr, kWave);
      p.undo(r.backend(), r.stream());
      r.expect(std::move(e));
      r.launches += shape.launches();
      r.bytes += sz.n * f.eb;
    }
  }
}

// The largest input a variant reads, elements, with the offset and the guards.
std::uint64_t elements_for(const KernelConfig& c) {
  std::uint64_t most = 0;
  for (const SizeCase& s : size_cases(c, 0)) most = std::max(most, s.n);
  return kGuard + 8 + most + 64;
}
std::uint64_t elements_needed(const ModelSet& set, DType d) {
  std::uint64_t most = 0;
  for (const SingleKernel& k : set.singles)
    if (k.dtype == d)
      for (const KernelConfig& c : k.variants) most = std::max(most, elements_for(c));
  return most;
}

// Prints a test's counts and checks them: {kernels, variants} run against the set's (all of them
// unless AMAX_WAVE64_ONLY), no mismatch, no handshake timeout.
void summary(const Runner& r, const char* what, std::pair<std::size_t, std::size_t> ran,
             std::pair<std::size_t, std::size_t> set, std::chrono::steady_clock::time_point t0) {
  std::printf("[ wave64 ] %s: %zu kernels, %zu variants, %zu cases (%zu launches, %.1f GB read) in %.1f s: %zu "
              "mismatches, %zu kernels with handshake timeouts\n",
              what, ran.first, ran.second, r.cases, r.launches, static_cast<double>(r.bytes) / 1e9,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), r.mismatches,
              r.fault_kernels);
  for (const auto& [k, n] : r.failed()) std::printf("[ wave64 ] FAILED %s: %zu cases\n", k.c_str(), n);
  if (everything()) {
    EXPECT_EQ(ran, set) << "kernels and variants run, of the set's";
  }
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.fault_kernels, 0u);
}

std::uint64_t fresh_seed() {
  const std::uint64_t s = std::random_device{}() * 0x100000001ull ^ std::random_device{}();
  std::printf("[ wave64 ] input seed %llu\n", static_cast<unsigned long long>(s));
  return s;
}

// ---- list cases ----
struct ListTensor {
  std::uint64_t lo, n;  // elements of the background
};

// One list of `variant`: the tensors' sizes (in the variant's chunks) and their placement in `bg`
// (each at offset 0-7 from a 16-byte boundary, guards between them); empty when it does not fit.
std::vector<ListTensor> place(const std::vector<std::uint64_t>& sizes, const Background& bg, Rng& rng) {
  std::vector<ListTensor> out;
  std::uint64_t at = kGuard;
  for (std::uint64_t n : sizes) {
    const std::uint64_t lo = at + rng.below(8);
    out.push_back({lo, n});
    at = (lo + n + 2 + 15) / 16 * 16;
  }
  if (at + 16 > bg.n) out.clear();
  return out;
}

void run_list(Runner& r, FunctionHandle fn, FunctionHandle faults, const MultiKernel& k, const MultiConfig& c,
              std::size_t vi, DtypeInputs& in, std::uint64_t seed, std::vector<unsigned char>& args) {
  const DType d = k.dtype;
  const Format f = format_of(d);
  const std::string kernel = k.kernel.kernel_label() + " " + std::string(to_string(d));
  Rng rng{seed ^ (vi * 0x9e3779b97f4a7c15ull) ^ 0x85ebca6bull};
  const std::uint64_t ce = c.chunk_elems(d), nv = c.nvec;
  const std::uint32_t cu = kModelDevices[0].cu_count;
  // few: odd sizes around a chunk; many: more tensors than one launch holds, mostly small; spanning:
  // each cut into 1-3 blocks' segments (warp combine: records in lanes 32-63); beyond the cap: two
  // tensors of more chunks than the grid cap has blocks.
  std::vector<std::vector<std::uint64_t>> lists(4);
  lists[0] = {1, 0, 40 * nv + 3, 3 * ce + 17, ce - 1, 2 * ce + ce / 2 + 5};
  for (int i = 0; i < 200; ++i) lists[1].push_back(i % 10 == 9 ? ce + rng.below(ce) : rng.below(ce / 4 + 1));
  for (int i = 0; i < 40; ++i) lists[2].push_back(ce / 2 + rng.below(2 * ce));
  const std::uint64_t cap = c.max_blocks.kind == BlockCap::Kind::uncapped ? 700 : c.max_blocks.max_blocks(cu);
  const std::uint64_t chunks = cap + cap / 2 + 3;
  if (chunks * ce * f.eb <= kBigBytes) lists[3] = {chunks / 3 * ce + 5, (chunks - chunks / 3 - 1) * ce + ce / 2};
  static constexpr const char* kListNames[] = {"few tensors", "200 tensors", "40 spanning tensors",
                                               "2 tensors beyond the grid cap"};
  for (std::size_t li = 0; li < lists.size(); ++li) {
    if (lists[li].empty()) continue;
    for (int m = 0; m < 2; ++m) {
      if (li == 3 && m != static_cast<int>(vi % 2)) continue;
      const NanMode mode = m ? NanMode::ignore : NanMode::propagate;
      std::uint64_t total = 0;
      for (std::uint64_t n : lists[li]) total += n + 32;
      Background& bg = pick(in, kGuard + total + 64, vi + li + static_cast<std::size_t>(m));
      const auto tensors = place(lists[li], bg, rng);
      if (tensors.empty()) throw std::logic_error("wave64: list does not fit its background");
      const std::size_t count = tensors.size(), base = r.take(count);
      r.uses(faults, kernel);
      std::vector<MultiTensor> mt;
      Planted p(bg, f.eb);
      std::vector<Pattern> pats;
      for (std::size_t t = 0; t < count; ++t) {
        const ListTensor& x = tensors[t];
        mt.push_back({bg.dev.get(x.lo * f.eb), x.n, static_cast<std::uint32_t>(count - 1 - t)});
        pats.push_back(static_cast<Pattern>((vi * 5 + li * 3 + t + static_cast<std::size_t>(m) * 7) % kPatterns));
        if (x.n == 0) continue;
        guard(p, x.lo, x.n, mode, f, rng);
        const std::uint64_t vb = nv * f.eb, mis = x.lo * f.eb % vb;
        const std::uint64_t head = std::min<std::uint64_t>(x.n, mis ? (vb - mis) / f.eb : 0);
        plant(p, pats.back(), x.lo, x.n, std::min(x.n, head + (32 + vi % 32) * nv + vi % nv), f, rng);
      }
      const auto dirty = p.indices();
      const bool scale = c.epilogue == Epilogue::scale;
      const ScaleRule& rule = kRules[(vi + li + static_cast<std::size_t>(m)) % 4];
      const ScaleArgs sa = scale_args(rule, r.scale(base), r.scale_inv(base));
      const auto launches = split_multi_launches(mt, c, d, cu, k.capacity);
      if (multi_workspace_bytes(launches) > r.workspace_bytes()) throw std::logic_error("workspace too small");
      std::uint32_t grid = 0;
      for (const MultiLaunch& l : launches) grid = std::max(grid, l.grid);
      for (std::size_t t = 0; t < count; ++t) {
        Expect e;
        e.kernel = kernel;
        e.slot = base + (count - 1 - t);
        e.amax = bg.ref->range(tensors[t].lo, tensors[t].lo + tensors[t].n, mode, dirty);
        e.scale = scale;
        if (scale) e.scales = reference_scale_bits(e.amax, rule);
        char what[320];
        std::snprintf(what, sizeof what,
                      "as %s: %s, tensor %zu of n=%llu at offset %llu, nan=%s, %zu launches of grid <= %u (%u CUs), "
                      "input=%s with %s%s",
                      c.label().c_str(), kListNames[li], t, static_cast<unsigned long long>(tensors[t].n),
                      static_cast<unsigned long long>(tensors[t].lo % 8), nan_name(mode).c_str(), launches.size(), grid,
                      cu, bg.name.c_str(), kPatternNames[static_cast<int>(pats[t])], scale ? "; scale rule" : "");
        e.what = what;
        r.expect(std::move(e));
        r.bytes += tensors[t].n * f.eb;
      }
      p.push(r.backend(), r.stream());
      launch_multi_group(r.backend(), fn, c, d, k.capacity, mt, launches, r.out(base), r.workspace(), r.slot(), mode,
                         scale ? &sa : nullptr, r.stream(), args);
      p.undo(r.backend(), r.stream());
      r.launches += launches.size();
    }
  }
}

}  // namespace

TEST(Wave64Gpu, EveryAmdSingleTensorKernelBitExact) {
  AMAX_REQUIRE_MODEL();
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t seed = fresh_seed();
  Runner r(*md->backend);
  std::size_t kernels = 0, variants = 0;
  for (const DTypeInfo& di : all_dtypes()) {
    DtypeInputs in = make_inputs(*md->backend, di.dtype, elements_needed(md->set, di.dtype), seed + index(di.dtype));
    for (std::size_t i = 0; i < md->set.singles.size(); ++i) {
      const SingleKernel& k = md->set.singles[i];
      if (k.dtype != di.dtype || !md->singles[i].main ||
          !selected(k.kernel.kernel_label() + " " + std::string(di.name)))
        continue;
      ++kernels;
      for (std::size_t v = 0; v < k.variants.size(); ++v, ++variants)
        run_single(r, md->singles[i], md->single_faults[i], k.variants[v], variants, in, seed);
    }
    r.flush();
    // The input is never written: the device copies equal the host's (every plant undone).
    for (const auto& bg : in.bg) {
      if (!bg) continue;
      std::vector<std::uint8_t> back(bg->host.size());
      md->backend->copy_to_host(back.data(), bg->dev.get(), back.size());
      EXPECT_TRUE(back == bg->host) << di.name << " " << bg->name << ": the device input differs from the host's";
    }
    std::printf("[ wave64 ] %s done: %zu cases so far, %.1f s\n", std::string(di.name).c_str(), r.cases,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  summary(r, "single-tensor kernels", {kernels, variants}, {md->set.singles.size(), md->set.single_variants()}, t0);
}

TEST(Wave64Gpu, EveryAmdListKernelBitExact) {
  AMAX_REQUIRE_MODEL();
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t seed = fresh_seed();
  Runner r(*md->backend);
  std::vector<unsigned char> args;
  std::size_t kernels = 0, variants = 0;
  for (const DTypeInfo& di : all_dtypes()) {
    DtypeInputs in =
        make_inputs(*md->backend, di.dtype, kSpecialElems + (kBigBytes / di.bytes) * 2, seed + index(di.dtype));
    for (std::size_t i = 0; i < md->set.multis.size(); ++i) {
      const MultiKernel& k = md->set.multis[i];
      if (k.dtype != di.dtype || !md->multis[i] || !selected(k.kernel.kernel_label() + " " + std::string(di.name)))
        continue;
      ++kernels;
      for (std::size_t v = 0; v < k.variants.size(); ++v, ++variants)
        run_list(r, md->multis[i], md->multi_faults[i], k, k.variants[v], variants, in, seed, args);
    }
    r.flush();
  }
  summary(r, "list kernels", {kernels, variants}, {md->set.multis.size(), md->set.multi_variants()}, t0);
}

// The control: a wave reduction whose offsets stop at 16 (a template that assumes 32 lanes) must
// give wrong answers in the model, where the intact kernel, on the same inputs, gives none.
TEST(Wave64Gpu, BrokenWaveReduceIsCaught) {
  AMAX_REQUIRE_MODEL();
  const KernelConfig& c = kControl;
  const DType d = kControlDtype;
  const std::vector<ModelProgram> programs{{"intact.wave64.cu", model_source(c, d)},
                                           {"broken_wave_reduce.wave64.cu", break_wave_reduce(model_source(c, d))}};
  std::vector<std::string> errors;
  auto modules = build(*md->backend, md->arch, programs, errors);
  ASSERT_TRUE(errors.empty()) << errors.front();
  const std::uint64_t seed = fresh_seed();
  constexpr std::size_t kRounds = 64;  // variant indices: offsets, NaN modes, lanes 32-63 rotate with it
  std::size_t wrong[2] = {0, 0}, cases[2] = {0, 0};
  for (int broken = 0; broken < 2; ++broken) {
    LoadedKernel k;
    k.config = c;
    k.dtype = d;
    k.main = modules[broken]->function(kernel_name(c, d));
    const FunctionHandle faults = modules[broken]->function(std::string(kFaultKernel));
    k.module = std::move(modules[broken]);
    Runner r(*md->backend);
    DtypeInputs in = make_inputs(*md->backend, d, elements_for(c), seed, false);  // no NaN background
    for (std::size_t vi = 0; vi < kRounds; ++vi)
      run_single(r, k, faults, c, vi, in, seed, static_cast<int>(Pattern::max_upper_lane));
    if (broken) {  // its mismatches are the expected outcome: counted, a few shown, not failures
      ::testing::TestPartResultArray results;
      {
        ::testing::ScopedFakeTestPartResultReporter capture(
            ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
        r.flush();
      }
      for (int i = 0; i < results.size() && i < 3; ++i)
        std::printf("[ wave64 ] broken (expected): %s\n", results.GetTestPartResult(i).message());
    } else {
      r.flush();
    }
    wrong[broken] = r.mismatches;
    cases[broken] = r.cases;
    EXPECT_EQ(r.fault_kernels, 0u) << "offsets stopping at 16 still pair every exchange: no wait may time out";
  }
  std::printf("[ wave64 ] %s %s: intact %zu of %zu cases wrong, offsets stopping at 16: %zu of %zu wrong\n",
              c.label().c_str(), std::string(to_string(d)).c_str(), wrong[0], cases[0], wrong[1], cases[1]);
  EXPECT_EQ(wrong[0], 0u);
  // Every case but the one-element ones (2 of each round's 15) has its maximum in lanes 32-63 and
  // 1.0 in lane 0: a reduction over lanes 0-31 returns 1.0.
  EXPECT_EQ(wrong[1], cases[1] - 2 * kRounds) << "the model did not catch a wave reduction that assumes 32 lanes";
  EXPECT_EQ(cases[1], 15 * kRounds);
}

// The handshake's tag tells this block execution's flags from what earlier blocks left in shared
// memory by %gridid: two launches must read different values.
TEST(Wave64Gpu, GrididDiffersBetweenLaunches) {
  AMAX_REQUIRE_MODEL();
  const std::vector<ModelProgram> probe{
      {"gridid_probe.cu", "extern \"C\" __global__ void gridid_probe(unsigned long long* out) {\n"
                          "  unsigned long long g;\n  asm volatile(\"mov.u64 %0, %%gridid;\" : \"=l\"(g));\n"
                          "  out[blockIdx.x] = g;\n}\n"}};
  std::vector<std::string> errors;
  auto modules = build(*md->backend, md->arch, probe, errors);
  ASSERT_TRUE(errors.empty()) << errors.front();
  Backend& b = *md->backend;
  constexpr int kLaunches = 3;
  DeviceBuffer out(b, 8 * 2 * kLaunches);
  const FunctionHandle f = modules[0]->function("gridid_probe");
  const StreamHandle s = b.create_stream();
  for (int i = 0; i < kLaunches; ++i) {  // two blocks each
    void* p = out.get(16 * static_cast<std::size_t>(i));
    void* args[] = {&p};
    b.launch(f, 2, 1, s, args);
  }
  b.synchronize(s);
  b.destroy_stream(s);
  std::uint64_t g[2 * kLaunches] = {};
  b.copy_to_host(g, out.get(), sizeof g);
  std::printf("[ wave64 ] %%gridid of %d launches: %llu, %llu, %llu\n", kLaunches,
              static_cast<unsigned long long>(g[0]), static_cast<unsigned long long>(g[2]),
              static_cast<unsigned long long>(g[4]));
  for (int i = 0; i < kLaunches; ++i) {
    EXPECT_EQ(g[2 * i], g[2 * i + 1]) << "the blocks of launch " << i << " read different %gridid";
    for (int j = 0; j < i; ++j)
      EXPECT_NE(g[2 * i], g[2 * j]) << "launches " << j << " and " << i << " read one %gridid";
  }
}
