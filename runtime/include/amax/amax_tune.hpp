// amax-tune runtime, C++ API (C++17): a thin RAII layer over amax_tune.h (header-only; links the
// same library). Failures throw amax_tune::Error carrying the status and the message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "amax/amax_tune.h"

namespace amax_tune {

/// A failed call: status() is the amax_status_t, what() the library's message.
class Error : public std::runtime_error {
 public:
  Error(amax_status_t s, const std::string& what) : std::runtime_error(what), status_(s) {}
  amax_status_t status() const noexcept { return status_; }

 private:
  amax_status_t status_;
};

/// Throws Error for any status but success, with "AMAX_STATUS_...: <message>".
inline void check(amax_status_t s) {
  if (s != AMAX_STATUS_SUCCESS) throw Error(s, std::string(amax_status_string(s)) + ": " + amax_last_error());
}

/// Options of a Context; unset paths take the defaults of amax_context_options_t.
struct Options {
  int device = 0;
  amax_nan_mode_t nan_mode = AMAX_NAN_PROPAGATE;
  std::optional<std::string> user_db_path, system_db_path, kernel_cache_dir;
};

/// Options of Context::amax_and_scale (amax_scale_options_t; the rule is in amax_tune.h).
/// An explicit numerator: `ScaleOptions::explicit_max(1.0f)`.
struct ScaleOptions {
  amax_fp8_format_t format = AMAX_FP8_E4M3;
  float max = 0.0f;  ///< only with AMAX_FP8_EXPLICIT_MAX: finite and > 0
  float epsilon = 0.0f;
  bool force_pow2 = false;
  bool nan_propagates = false;

  static ScaleOptions explicit_max(float m) {
    ScaleOptions o;
    o.format = AMAX_FP8_EXPLICIT_MAX;
    o.max = m;
    return o;
  }
  amax_scale_options_t to_c() const {
    amax_scale_options_t c;
    amax_scale_options_init(&c);
    c.format = format;
    c.max = max;
    c.epsilon = epsilon;
    c.force_pow2 = force_pow2 ? 1 : 0;
    c.nan_propagates = nan_propagates ? 1 : 0;
    return c;
  }
};

/// Options of Context::quantize (amax_quantize_options_t; the scale rule and the cast rules are in
/// amax_tune.h): the FP8 format of the bytes, the scale rule's options and whose cast.
struct QuantizeOptions {
  amax_fp8_format_t format = AMAX_FP8_E4M3;  ///< not AMAX_FP8_EXPLICIT_MAX; fnuz formats on gfx942 only
  float epsilon = 0.0f;
  bool force_pow2 = false;
  bool nan_propagates = false;
  amax_cast_rule_t cast_rule = AMAX_CAST_TRANSFORMER_ENGINE;

  amax_quantize_options_t to_c() const {
    amax_quantize_options_t c;
    amax_quantize_options_init(&c);
    c.format = format;
    c.epsilon = epsilon;
    c.force_pow2 = force_pow2 ? 1 : 0;
    c.nan_propagates = nan_propagates ? 1 : 0;
    c.cast_rule = cast_rule;
    return c;
  }
};

/// One device's amax dispatcher. Thread-safe as amax_tune.h describes; movable, not copyable.
class Context {
 public:
  explicit Context(const Options& o = {}) {
    amax_context_options_t c;
    amax_context_options_init(&c);
    c.device = o.device;
    c.nan_mode = o.nan_mode;
    if (o.user_db_path) c.user_db_path = o.user_db_path->c_str();
    if (o.system_db_path) c.system_db_path = o.system_db_path->c_str();
    if (o.kernel_cache_dir) c.kernel_cache_dir = o.kernel_cache_dir->c_str();
    check(amax_context_create(&c, &ctx_));
  }
  Context(Context&& o) noexcept : ctx_(std::exchange(o.ctx_, nullptr)) {}
  Context& operator=(Context&& o) noexcept {
    if (this != &o) {
      amax_context_destroy(ctx_);
      ctx_ = std::exchange(o.ctx_, nullptr);
    }
    return *this;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() { amax_context_destroy(ctx_); }

  /// A context of NaN mode `nan_mode` sharing this one's state (amax_context_create_sibling): no
  /// second database load, kernel cache or slot allocation; the overrides of the environment are
  /// this one's, read at its creation. Either may outlive the other.
  Context sibling(amax_nan_mode_t nan_mode) const {
    Context s(Adopt{});
    check(amax_context_create_sibling(ctx_, nan_mode, &s.ctx_));
    return s;
  }

  /// Workspace bytes for (dtype, n); never 0.
  std::size_t workspace_size(amax_dtype_t dtype, std::uint64_t n) const {
    std::size_t b = 0;
    check(amax_workspace_size(ctx_, dtype, n, &b));
    return b;
  }
  /// Enqueues amax of n elements of `input` into *output on `stream` (see amax_compute).
  void compute(const void* input, amax_dtype_t dtype, std::uint64_t n, float* output, void* workspace,
               std::size_t workspace_bytes, void* stream = nullptr) {
    check(amax_compute(ctx_, input, dtype, n, output, workspace, workspace_bytes, stream));
  }
  /// Enqueues amax, scale and scale_inv of n elements of `input` in the reduction's launch (see
  /// amax_and_scale); throws Error (INVALID_ARGUMENT for bad options) having enqueued nothing.
  void amax_and_scale(const void* input, amax_dtype_t dtype, std::uint64_t n, const ScaleOptions& options,
                      float* amax_out, float* scale_out, float* scale_inv_out, void* workspace,
                      std::size_t workspace_bytes, void* stream = nullptr) {
    const amax_scale_options_t o = options.to_c();
    check(::amax_and_scale(ctx_, input, dtype, n, &o, amax_out, scale_out, scale_inv_out, workspace,
                           workspace_bytes, stream));
  }
  /// amax_preload_scale: the fused kernels ahead of graph capture.
  void preload_scale(const std::vector<amax_dtype_t>& dtypes, const std::vector<std::uint64_t>& sizes) {
    check(amax_preload_scale(ctx_, dtypes.data(), dtypes.size(), sizes.data(), sizes.size()));
  }
  /// Compiles or loads ahead the kernels for every (dtype, size) pair.
  void preload(const amax_dtype_t* dtypes, std::size_t num_dtypes, const std::uint64_t* sizes, std::size_t num_sizes) {
    check(amax_preload(ctx_, dtypes, num_dtypes, sizes, num_sizes));
  }
  void preload(const std::vector<amax_dtype_t>& dtypes, const std::vector<std::uint64_t>& sizes) {
    preload(dtypes.data(), dtypes.size(), sizes.data(), sizes.size());
  }
  /// Which entry or fallback is used for (dtype, n).
  amax_explanation_t explain(amax_dtype_t dtype, std::uint64_t n) const {
    amax_explanation_t e{};
    check(amax_explain(ctx_, dtype, n, &e));
    return e;
  }
  /// Which fused variant amax_and_scale runs for (dtype, n) (amax_explain_scale). Throws Error.
  amax_explanation_t explain_scale(amax_dtype_t dtype, std::uint64_t n) const {
    amax_explanation_t e{};
    check(amax_explain_scale(ctx_, dtype, n, &e));
    return e;
  }
  /// Workspace bytes for a multi-tensor call on `tensors` (see amax_multi_workspace_size).
  std::size_t multi_workspace_size(const amax_tensor_t* tensors, std::size_t count) const {
    std::size_t b = 0;
    check(amax_multi_workspace_size(ctx_, tensors, count, &b));
    return b;
  }
  std::size_t multi_workspace_size(const std::vector<amax_tensor_t>& tensors) const {
    return multi_workspace_size(tensors.data(), tensors.size());
  }
  /// Enqueues output[i] = amax of tensors[i] for every i on `stream` (see amax_multi_compute).
  void multi_compute(const amax_tensor_t* tensors, std::size_t count, float* output, void* workspace,
                     std::size_t workspace_bytes, void* stream = nullptr) {
    check(amax_multi_compute(ctx_, tensors, count, output, workspace, workspace_bytes, stream));
  }
  void multi_compute(const std::vector<amax_tensor_t>& tensors, float* output, void* workspace,
                     std::size_t workspace_bytes, void* stream = nullptr) {
    multi_compute(tensors.data(), tensors.size(), output, workspace, workspace_bytes, stream);
  }
  /// Compiles or loads ahead the multi-tensor kernels for lists of this shape.
  void multi_preload(const std::vector<amax_tensor_t>& tensors) {
    check(amax_multi_preload(ctx_, tensors.data(), tensors.size()));
  }
  /// Enqueues amax_out[i], scale_out[i] and scale_inv_out[i] of every tensors[i] on `stream` with
  /// the rule of `options` (see amax_multi_and_scale); throws Error having enqueued nothing for bad
  /// input.
  void multi_and_scale(const std::vector<amax_tensor_t>& tensors, const ScaleOptions& options, float* amax_out,
                       float* scale_out, float* scale_inv_out, void* workspace, std::size_t workspace_bytes,
                       void* stream = nullptr) {
    const amax_scale_options_t o = options.to_c();
    check(::amax_multi_and_scale(ctx_, tensors.data(), tensors.size(), &o, amax_out, scale_out, scale_inv_out,
                                 workspace, workspace_bytes, stream));
  }
  /// Compiles or loads ahead the fused multi-tensor kernels of multi_and_scale for lists of this shape.
  void multi_preload_scale(const std::vector<amax_tensor_t>& tensors) {
    check(amax_multi_preload_scale(ctx_, tensors.data(), tensors.size()));
  }
  /// Which multi-tensor variant serves the list's tensors of `dtype`.
  amax_multi_explanation_t multi_explain(const std::vector<amax_tensor_t>& tensors, amax_dtype_t dtype) const {
    amax_multi_explanation_t e{};
    check(amax_multi_explain(ctx_, tensors.data(), tensors.size(), dtype, &e));
    return e;
  }
  /// Workspace bytes of quantize for (dtype, n, options.format); never 0. Throws Error.
  std::size_t quantize_workspace_size(amax_dtype_t dtype, std::uint64_t n, const QuantizeOptions& options = {}) const {
    const amax_quantize_options_t o = options.to_c();
    std::size_t b = 0;
    check(amax_quantize_workspace_size(ctx_, dtype, n, &o, &b));
    return b;
  }
  /// Enqueues the quantize of n elements of `input` (see amax_quantize): the n FP8 bytes at
  /// `output`, amax, scale and scale_inv; throws Error having enqueued nothing for bad input.
  void quantize(const void* input, amax_dtype_t dtype, std::uint64_t n, const QuantizeOptions& options,
                std::uint8_t* output, float* amax_out, float* scale_out, float* scale_inv_out, void* workspace,
                std::size_t workspace_bytes, void* stream = nullptr) {
    const amax_quantize_options_t o = options.to_c();
    check(::amax_quantize(ctx_, input, dtype, n, &o, output, amax_out, scale_out, scale_inv_out, workspace,
                          workspace_bytes, stream));
  }
  /// amax_preload_quantize: the quantize kernels of options.format for every (dtype, size) pair,
  /// ahead of graph capture. Throws Error.
  void preload_quantize(const std::vector<amax_dtype_t>& dtypes, const std::vector<std::uint64_t>& sizes,
                        const QuantizeOptions& options = {}) {
    const amax_quantize_options_t o = options.to_c();
    check(amax_preload_quantize(ctx_, dtypes.data(), dtypes.size(), sizes.data(), sizes.size(), &o));
  }
  /// Which variant quantize runs for (dtype, n, options.format) (amax_explain_quantize). Throws Error.
  amax_explanation_t explain_quantize(amax_dtype_t dtype, std::uint64_t n, const QuantizeOptions& options = {}) const {
    const amax_quantize_options_t o = options.to_c();
    amax_explanation_t e{};
    check(amax_explain_quantize(ctx_, dtype, n, &o, &e));
    return e;
  }
  /// Workspace bytes of multi_quantize for this list (amax_multi_quantize_workspace_size). Throws Error.
  std::size_t multi_quantize_workspace_size(const std::vector<amax_tensor_t>& tensors,
                                            const QuantizeOptions& options = {}) const {
    const amax_quantize_options_t o = options.to_c();
    std::size_t b = 0;
    check(amax_multi_quantize_workspace_size(ctx_, tensors.data(), tensors.size(), &o, &b));
    return b;
  }
  /// Enqueues the quantize of every tensors[i] into outputs[i] with its own amax_out[i], scale_out[i]
  /// and scale_inv_out[i] (see amax_multi_quantize: a per-tensor sequence); throws Error having
  /// enqueued nothing for bad input.
  void multi_quantize(const std::vector<amax_tensor_t>& tensors, const QuantizeOptions& options,
                      const std::vector<std::uint8_t*>& outputs, float* amax_out, float* scale_out,
                      float* scale_inv_out, void* workspace, std::size_t workspace_bytes, void* stream = nullptr) {
    if (outputs.size() != tensors.size())
      throw Error(AMAX_STATUS_INVALID_ARGUMENT, "AMAX_STATUS_INVALID_ARGUMENT: " + std::to_string(outputs.size()) +
                                                    " outputs for " + std::to_string(tensors.size()) + " tensors");
    const amax_quantize_options_t o = options.to_c();
    check(::amax_multi_quantize(ctx_, tensors.data(), tensors.size(), &o, outputs.data(), amax_out, scale_out,
                                scale_inv_out, workspace, workspace_bytes, stream));
  }
  amax_context_t get() const noexcept { return ctx_; }

 private:
  struct Adopt {};
  explicit Context(Adopt) {}
  amax_context_t ctx_ = nullptr;
};

}  // namespace amax_tune
