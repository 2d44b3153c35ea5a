/* amax-tune runtime: amax = max |x| of a device tensor, dispatched from the tuning tables.
 *
 * Usage (two-phase, as CUB):
 *   amax_context_options_t opt; amax_context_options_init(&opt);
 *   amax_context_t ctx; if (amax_context_create(&opt, &ctx) != AMAX_STATUS_SUCCESS) ... amax_last_error()
 *   size_t ws; amax_workspace_size(ctx, AMAX_DTYPE_BF16, n, &ws);     // never 0
 *   ... allocate ws bytes of device memory (or take them from your allocator) ...
 *   amax_compute(ctx, x, AMAX_DTYPE_BF16, n, d_amax, workspace, ws, stream);
 *
 * Every function returns a status; on failure amax_last_error() returns a readable message for
 * the calling thread (naming the argument and its value). Nothing here aborts the process.
 *
 * Threads and streams: a context may be used from several threads at once, each with its own
 * streams. amax_compute never synchronises, never allocates device memory and never compiles
 * while the stream is being captured into a CUDA/HIP graph: a kernel that is not loaded yet
 * gives AMAX_STATUS_NOT_PRELOADED during capture (call amax_preload first), unless the release
 * bundle of compiled kernels holds it (it is then loaded, which is not a stream operation).
 *
 * Streams: NULL is the legacy default stream; the per-thread default stream handle
 * (cudaStreamPerThread / hipStreamPerThread) is a different stream in each thread and is treated
 * so. Kernels of the strategies whose rows of kStrategies use the stream slot keep their state in
 * a context-owned slot per stream, zeroed once at context creation (4096 slots, one per distinct
 * stream handle seen in the lifetime of the context and its siblings; AMAX_STATUS_TOO_MANY_STREAMS
 * past that; their words and device memory: docs/api.md, "Never blocks, never allocates behind
 * your back"). A graph captured on a
 * stream uses that stream's slot: do not run the graph at the same time as other amax work on its
 * capture stream, by the context or any of its siblings, in either NaN mode (two graphs captured
 * on two different streams may run at the same time). A workspace must not be shared by calls
 * that can run at the same time. Destroy a context only when no call is running and no graph that
 * captured its calls will run again.
 *
 * Sizes: n is a 64-bit element count (up to the device's memory); results are exact for any n.
 *
 * Several GPUs: a context serves the one device of options.device (its kernels, stream slots and
 * tables are its own, shared only with its siblings: amax_context_create_sibling); create one
 * context per device, and use them from any threads at once.
 * amax_compute refuses, with AMAX_STATUS_WRONG_DEVICE and a message naming both devices, a stream
 * created on another device or in another CUDA context than the device's primary context, and
 * input, output or workspace pointers into another device's memory (managed memory and host
 * memory are not refused; peer access does not make another device's memory acceptable: copy it
 * first). Every call leaves the calling thread's current device/context as it found it. HIP before
 * ROCm 6 cannot tell a stream's device (no hipStreamGetDevice): there only pointers are checked.
 * The checks cost one cuStreamGetCtx per call, and where the process sees more than one GPU of
 * the vendor three cuPointerGetAttributes (with one GPU no other device's memory exists).
 */
#ifndef AMAX_TUNE_H
#define AMAX_TUNE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(AMAX_BUILDING_LIBRARY)
#define AMAX_API __declspec(dllexport)
#elif defined(_WIN32)
#define AMAX_API __declspec(dllimport)
#else
#define AMAX_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes. Each failure also sets the thread's amax_last_error() message. */
typedef enum amax_status_t {
  AMAX_STATUS_SUCCESS = 0,
  AMAX_STATUS_INVALID_ARGUMENT = 1,    /**< a value out of range (options, sizes, struct_size) */
  AMAX_STATUS_NULL_POINTER = 2,        /**< a required pointer is NULL (context, input, output, out-parameter) */
  AMAX_STATUS_MISALIGNED_POINTER = 3,  /**< input not aligned to its element size, or output not to 4 bytes */
  AMAX_STATUS_UNKNOWN_DTYPE = 4,       /**< dtype is not one of amax_dtype_t */
  AMAX_STATUS_WORKSPACE_TOO_SMALL = 5, /**< workspace_bytes below amax_workspace_size() */
  AMAX_STATUS_NOT_PRELOADED = 6,       /**< the kernel is not loaded and the stream is capturing */
  AMAX_STATUS_NO_DEVICE = 7,           /**< no GPU, no driver, or this build lacks its backend */
  AMAX_STATUS_COMPILE_FAILED = 8,      /**< JIT compilation failed (the message holds the log) */
  AMAX_STATUS_DRIVER_ERROR = 9,        /**< a CUDA/HIP call failed (the message names it) */
  AMAX_STATUS_TOO_MANY_STREAMS = 10,   /**< more streams than one_pass / self_reset stream slots (4096) */
  AMAX_STATUS_INTERNAL_ERROR = 11,
  AMAX_STATUS_WRONG_DEVICE = 12        /**< a stream or pointer of another device or context (the
                                            message names both devices) */
} amax_status_t;

/** Element types. */
typedef enum amax_dtype_t { AMAX_DTYPE_FP32 = 0, AMAX_DTYPE_FP16 = 1, AMAX_DTYPE_BF16 = 2 } amax_dtype_t;

/** NaN semantics (docs/DESIGN.md section 2). PROPAGATE (default): any NaN gives NaN (written as
 *  0x7fc00000), PyTorch's amax. IGNORE: NaNs are skipped as fmaxf does, TransformerEngine's
 *  behaviour; an all-NaN tensor gives +0.0. */
typedef enum amax_nan_mode_t { AMAX_NAN_PROPAGATE = 0, AMAX_NAN_IGNORE = 1 } amax_nan_mode_t;

/** Options of amax_context_create. Initialise with amax_context_options_init. Paths may be NULL
 *  for the defaults; strings are copied. */
typedef struct amax_context_options_t {
  uint32_t struct_size;           /**< sizeof(amax_context_options_t), set by _init */
  int device;                     /**< device ordinal (default 0) */
  amax_nan_mode_t nan_mode;       /**< default AMAX_NAN_PROPAGATE */
  const char* user_db_path;       /**< default: $AMAX_TUNE_DB, else ~/.local/share/amax-tune/tuning.db;
                                       "" disables the user database */
  const char* system_db_path;     /**< default: $AMAX_TUNE_SYSTEM_DB, else the database installed
                                       with the library (<prefix>/share/amax-tune/system.db); ""
                                       disables it */
  const char* kernel_cache_dir;   /**< compiled-kernel cache; default: $AMAX_TUNE_CACHE_DIR, else
                                       ~/.cache/amax-tune/kernels; "" disables it. Used only where
                                       nobody but you or root can write it (docs/security.md);
                                       else one warning and kernels are compiled */
} amax_context_options_t;

typedef struct amax_context* amax_context_t;

/** Where a dispatch decision came from, in lookup order. */
typedef enum amax_source_t {
  AMAX_SOURCE_OVERRIDE = 0,   /**< AMAX_TUNE_FORCE_LABEL / AMAX_TUNE_FORCE_STRATEGY */
  AMAX_SOURCE_USER_DB = 1,    /**< the per-user tuning database */
  AMAX_SOURCE_SYSTEM_DB = 2,  /**< the pre-tuned database shipped with the library */
  AMAX_SOURCE_DEFAULT = 3     /**< the built-in default of the arch family */
} amax_source_t;

/** What amax_explain reports. */
typedef struct amax_explanation_t {
  amax_source_t source;
  char label[96];              /**< canonical variant label, e.g. "one_pass.t512.v8.u2.b4cu" */
  uint64_t tuned_n;            /**< the tuned size the entry was measured at (0 for defaults) */
  double expected_us;          /**< the entry's measured median at tuned_n (0 when unknown) */
  double expected_gbps;        /**< bytes / time at tuned_n, GB/s (0 when unknown) */
  uint32_t grid;               /**< blocks of the launch for this n */
  uint32_t launches;           /**< kernel/memset launches per call: 1 (one_pass, self_reset,
                                    first_reset(_warp), two_stage with one block) or 2 (atomic: memset + kernel;
                                    two_stage: two kernels); n = 0: 1 memset (3 for
                                    amax_explain_scale: amax, scale, scale_inv) */
  uint64_t workspace_bytes;    /**< what amax_workspace_size returns for this n */
  char detail[512];            /**< "code object: bundle" | "kernel cache" | "JIT (<ms> ms)" | "not loaded yet",
                                    then "; " and a sentence: which entry, measured where and when, or why a fallback */
} amax_explanation_t;

/** Sets defaults (device 0, NaN propagate, default paths). */
AMAX_API void amax_context_options_init(amax_context_options_t* options);

/** Creates a context on a device: opens the databases (read-only), loads and validates their
 *  entries for this device's arch (one warning per bad or stale row), reads the override
 *  environment variables (docs/api.md, "Lookup order"), allocates the stream slots (zeroed once;
 *  their size: docs/api.md, "Never blocks, never allocates behind your back"). Errors: NULL_POINTER,
 *  INVALID_ARGUMENT, NO_DEVICE, DRIVER_ERROR. A damaged or missing database is not an error: it is
 *  skipped with one warning. */
AMAX_API amax_status_t amax_context_create(const amax_context_options_t* options, amax_context_t* context);

/** Creates a sibling of `base`: a context of the other (or the same) NaN mode that shares all of
 *  base's state (device, databases' tables, kernel cache, plans, compile failures, stream slots),
 *  so a caller of both NaN modes (PyTorch's propagate and TransformerEngine's ignore) loads the
 *  databases and compiles each kernel once. Nothing is allocated on the device, and no database
 *  and no environment variable is read: calls on a sibling behave as on `base` with `nan_mode`,
 *  whose tables hold the databases and overrides (AMAX_TUNE_FORCE_LABEL, AMAX_TUNE_FORCE_STRATEGY,
 *  NVTE_USE_ATOMIC_AMAX, AMAX_TUNE_FORCE_MULTI_LABEL) as they were when base was created; a variable
 *  changed since applies to a context created after the change (amax_context_create), not to a
 *  sibling. The 4096 stream slots are shared (TOO_MANY_STREAMS counts the streams of all siblings).
 *  Contexts and siblings may be destroyed in any order: the shared state lives until the last of
 *  them is destroyed. Thread-safe. Errors: NULL_POINTER, INVALID_ARGUMENT (nan_mode not 0 or 1). */
AMAX_API amax_status_t amax_context_create_sibling(amax_context_t base, amax_nan_mode_t nan_mode,
                                                   amax_context_t* sibling);

/** Destroys a context (waits for nothing; do not destroy while its work is in flight). NULL is a no-op. */
AMAX_API amax_status_t amax_context_destroy(amax_context_t context);

/** Workspace bytes amax_compute needs for (dtype, n): the block maxima of the chosen variant
 *  (two_stage, one_pass), at least 4 bytes (never 0, also when the variant needs none: atomic,
 *  self_reset). Errors: NULL_POINTER, UNKNOWN_DTYPE. */
AMAX_API amax_status_t amax_workspace_size(amax_context_t context, amax_dtype_t dtype, uint64_t n, size_t* bytes);

/** Enqueues amax of n elements at `input` (device memory, aligned to the element size, any offset)
 *  into the fp32 at `output` (device memory) on `stream` (CUstream / hipStream_t; NULL = the
 *  default stream), with the context's NaN mode. n == 0 writes +0.0 and launches no kernel.
 *  `workspace` (device memory, any content) must hold amax_workspace_size bytes.
 *  Errors: NULL_POINTER, MISALIGNED_POINTER, UNKNOWN_DTYPE, WORKSPACE_TOO_SMALL, NOT_PRELOADED,
 *  COMPILE_FAILED, DRIVER_ERROR, TOO_MANY_STREAMS, WRONG_DEVICE (a stream or pointer of another
 *  device or context: see "Several GPUs" above). */
AMAX_API amax_status_t amax_compute(amax_context_t context, const void* input, amax_dtype_t dtype, uint64_t n,
                                    float* output, void* workspace, size_t workspace_bytes, void* stream);

/** Compiles (or loads from the kernel cache) the kernels that amax_compute would use for every
 *  (dtype, size) pair given, plus the built-in defaults of those dtypes, so that later calls
 *  (including under graph capture) need no JIT. Errors: NULL_POINTER, UNKNOWN_DTYPE,
 *  COMPILE_FAILED, DRIVER_ERROR. */
AMAX_API amax_status_t amax_preload(amax_context_t context, const amax_dtype_t* dtypes, size_t num_dtypes,
                                    const uint64_t* sizes, size_t num_sizes);

/* ---- Fused scale: amax, scale and scale_inv in the launch of the reduction (FP8 current scaling,
 * docs/DESIGN.md section 6) ----
 * The rule (TransformerEngine's compute_scale_from_amax, exactly; commits cited in
 * common/include/amax/scale_rule.hpp, its CPU reference), with m the format's largest finite value
 * or the explicit max:
 *   1. amax < epsilon: amax = epsilon (for the scale only; amax_out receives the true amax);
 *   2. amax infinite, zero or NaN: scale = 1;
 *   3. else scale = m / amax, fp32 division rounded to nearest;
 *   4. a quotient that overflows to infinity (e.g. a denormal amax) becomes FLT_MAX (TE PR #786);
 *   5. force_pow2: scale rounded down to a power of two (its mantissa bits cleared);
 *   6. scale_inv = 1 / scale, rounded to nearest in fp32 (denormals kept).
 * nan_propagates (torchao's choice): a NaN amax gives scale = scale_inv = NaN (0x7fc00000) instead
 * of rule 2's 1. A NaN amax arises only under the context's AMAX_NAN_PROPAGATE mode; under
 * AMAX_NAN_IGNORE NaNs are skipped and the option changes nothing. */

/** The scale's numerator: an FP8 format's largest finite value, or the explicit max. */
typedef enum amax_fp8_format_t {
  AMAX_FP8_E4M3 = 0,              /**< 448 (OCP E4M3, TE's default forward format) */
  AMAX_FP8_E5M2 = 1,              /**< 57344 */
  AMAX_FP8_E4M3FNUZ = 2,          /**< 240 (AMD MI300 E4M3) */
  AMAX_FP8_E5M2FNUZ = 3,          /**< 57344 (AMD MI300 E5M2) */
  AMAX_FP8_EXPLICIT_MAX = 255     /**< amax_scale_options_t.max is the numerator */
} amax_fp8_format_t;

/** Options of amax_and_scale. Initialise with amax_scale_options_init. */
typedef struct amax_scale_options_t {
  uint32_t struct_size;       /**< sizeof(amax_scale_options_t), set by _init */
  amax_fp8_format_t format;   /**< default AMAX_FP8_E4M3 */
  float max;                  /**< the numerator with AMAX_FP8_EXPLICIT_MAX: finite and > 0 (ignored,
                                   and must be 0, with a format) */
  float epsilon;              /**< floor of the amax for the scale (TE's amax_epsilon): finite and
                                   >= 0; default 0 */
  int force_pow2;             /**< 0 or 1 (TE's force_pow_2_scales); default 0 */
  int nan_propagates;         /**< 0 (TE: scale 1 for a NaN amax) or 1 (torchao: NaN); default 0 */
} amax_scale_options_t;

/** Sets the defaults: E4M3, epsilon 0, no pow2 rounding, TE's NaN rule (scale 1). */
AMAX_API void amax_scale_options_init(amax_scale_options_t* options);

/** Checks options without a context or a device: INVALID_ARGUMENT naming the field and its value
 *  ("options.epsilon is -1 (must be finite and >= 0)", "options.format is 7 (...)",
 *  "options.max is inf (must be finite and > 0) with AMAX_FP8_EXPLICIT_MAX"), NULL_POINTER.
 *  amax_and_scale makes the same checks. Thread-safe. */
AMAX_API amax_status_t amax_scale_options_check(const amax_scale_options_t* options);

/** Enqueues amax of n elements at `input` into the fp32 at `amax_out` and, from it, the fp32
 *  `scale_out` and `scale_inv_out` by the rule above: all three written by the launch(es) that
 *  compute the amax (no separate scale kernel; one launch where amax_compute's choice is atomic,
 *  which runs here as self_reset; a forced atomic keeps its memset and also uses the stream's slot
 *  to find its last block). Inputs, workspace
 *  (amax_workspace_size bytes: the same as for amax_compute), stream and NaN mode as for
 *  amax_compute; the three outputs are fp32 in device memory, each 4-byte aligned, distinct.
 *  n == 0 writes amax +0.0 and the rule's scale and scale_inv for it with memsets.
 *  Bit-exact with the rule on the CPU (amax::reference_scale_bits) for every variant.
 *  The variant is the one amax_compute dispatches to for (dtype, n), with the scale epilogue
 *  (label ending in `.scale`), an atomic choice run as self_reset of its threads and vector width
 *  where that variant is in the pruned space (fused_variant in search_space.hpp sets its unroll
 *  and grid cap); amax_explain_scale names it. Bad input writes nothing and enqueues nothing.
 *  Errors: those of amax_compute, and INVALID_ARGUMENT (options, as amax_scale_options_check),
 *  NULL_POINTER / MISALIGNED_POINTER naming amax_out, scale_out or scale_inv_out.
 *  Thread-safety: as amax_compute (concurrent calls need their own workspaces and outputs). */
AMAX_API amax_status_t amax_and_scale(amax_context_t context, const void* input, amax_dtype_t dtype, uint64_t n,
                                      const amax_scale_options_t* options, float* amax_out, float* scale_out,
                                      float* scale_inv_out, void* workspace, size_t workspace_bytes, void* stream);

/** amax_preload for amax_and_scale's kernels (the fused variants of the same (dtype, size) pairs
 *  and of the built-in defaults): call it before capturing amax_and_scale into a graph.
 *  Errors: as amax_preload. */
AMAX_API amax_status_t amax_preload_scale(amax_context_t context, const amax_dtype_t* dtypes, size_t num_dtypes,
                                          const uint64_t* sizes, size_t num_sizes);

/** Which entry or fallback amax_compute uses for (dtype, n), and what it expects. Loads nothing
 *  (the detail says "not loaded yet" before the first call). Errors: NULL_POINTER (context,
 *  explanation), UNKNOWN_DTYPE. Thread-safe. */
AMAX_API amax_status_t amax_explain(amax_context_t context, amax_dtype_t dtype, uint64_t n,
                                    amax_explanation_t* explanation);

/** amax_explain for amax_and_scale: the fused variant it runs for (dtype, n) (label ending in
 *  ".scale"), its launches and grid, and the entry it derives from. The fused call runs amax_compute's
 *  choice with the scale epilogue, except that an `atomic` choice (memset + kernel) runs as
 *  `self_reset` of its threads and vector width (one launch; the detail then says so); forced
 *  variants run as forced. expected_us / expected_gbps are the amax-only entry's. Errors and
 *  thread-safety as amax_explain. */
AMAX_API amax_status_t amax_explain_scale(amax_context_t context, amax_dtype_t dtype, uint64_t n,
                                          amax_explanation_t* explanation);

/* ---- Many tensors per call (docs/DESIGN.md section 6) ----
 *
 *   amax_tensor_t t[3] = {{w0, n0, AMAX_DTYPE_BF16}, {w1, n1, AMAX_DTYPE_BF16}, {NULL, 0, AMAX_DTYPE_FP32}};
 *   size_t ws; amax_multi_workspace_size(ctx, t, 3, &ws);           // never 0
 *   amax_multi_compute(ctx, t, 3, d_amax, workspace, ws, stream);   // d_amax[i] = amax of t[i]
 *
 * One launch of the multi-tensor kernel serves up to 1600 tensors of one dtype on NVIDIA sm_70+
 * (the descriptors travel by value in the kernel parameters, which CUDA 12.1+ allows up to 32764
 * bytes), 192 on AMD (HIP's 4 KiB of kernel arguments) and older NVIDIA: a list of one dtype costs
 * ceil(count / 1600) launches, a mixed list that per dtype. Tensors are cut into chunks (the
 * variant's chunk bytes) and each block reduces a run of consecutive chunks (as many as the
 * variant's grid cap requires), one tensor after another; a tensor cut between blocks is combined
 * by the block of its launch that finishes last, through the caller's workspace and the stream's
 * slot (as one_pass), so no memset is launched. Every result follows the single-tensor contract
 * (exact, the context's NaN mode, +0.0 for n == 0). amax_multi_and_scale writes, from the same
 * launches, scale and scale_inv per tensor by amax_and_scale's rule. Under graph capture each
 * launch's descriptors are copied into the graph: no host memory outlives the call, and a replay
 * reads whatever the tensors hold then. The rules of streams, slots and workspaces are those of amax_compute. */

/** Lists a thread keeps prepared per process (all contexts together; also at most 64 MiB of them):
 *  a list it enqueued before (the same pointers, counts and dtypes in the same order, on the same
 *  context and call kind) reuses its validation, split and packed launch parameters; beyond this
 *  many the least recently used is dropped and its next call is validated and packed again. */
#define AMAX_MULTI_PREPARED_LISTS 256

/** One tensor of a multi-tensor call. */
typedef struct amax_tensor_t {
  const void* data;    /**< device memory aligned to the element size (any offset); NULL allowed when n == 0 */
  uint64_t n;          /**< element count, 0 to 2^40 - 1 */
  amax_dtype_t dtype;  /**< element type; a list may mix dtypes (one launch group per dtype) */
} amax_tensor_t;

/** Workspace bytes amax_multi_compute and amax_multi_and_scale need for this list (for its largest
 *  launch: 16 per block plus 4 per chunk; at least 4; it depends on the counts and dtypes only, not
 *  on the pointers). count may be 0.
 *  Errors: NULL_POINTER (context, bytes, or tensors NULL with count > 0), UNKNOWN_DTYPE (naming the
 *  tensor's index and value), INVALID_ARGUMENT (count above 2^24 - 1, n above 2^40 - 1). */
AMAX_API amax_status_t amax_multi_workspace_size(amax_context_t context, const amax_tensor_t* tensors, size_t count,
                                                 size_t* bytes);

/** Enqueues the amax of every tensor of the list into output[i] (fp32, device memory, 4-byte
 *  aligned, count entries) on `stream`, with the context's NaN mode; count == 0 enqueues nothing.
 *  Everything is validated before anything is enqueued, so a failed call writes no output:
 *  NULL_POINTER (context; tensors NULL with count > 0; tensors[i].data NULL with n > 0; output NULL
 *  with count > 0), MISALIGNED_POINTER (tensors[i].data not aligned to its element size; output not
 *  to 4 bytes), UNKNOWN_DTYPE (tensors[i].dtype), INVALID_ARGUMENT (count above 2^24 - 1, n above
 *  2^40 - 1), WORKSPACE_TOO_SMALL, NOT_PRELOADED (a kernel the list needs is not loaded and the
 *  stream is capturing: call amax_multi_preload first), WRONG_DEVICE (as amax_compute, for the
 *  stream, output, workspace and each tensor), COMPILE_FAILED, TOO_MANY_STREAMS; each
 *  message names the tensor's index and the value. DRIVER_ERROR from a launch may leave later
 *  launches of the call not enqueued. */
AMAX_API amax_status_t amax_multi_compute(amax_context_t context, const amax_tensor_t* tensors, size_t count,
                                          float* output, void* workspace, size_t workspace_bytes, void* stream);

/** Compiles (or loads from the kernel cache) the kernels amax_multi_compute uses for lists of this
 *  shape (dtypes, counts; pointers are not read), so that it needs no JIT during graph capture.
 *  Errors: as amax_multi_workspace_size, COMPILE_FAILED, DRIVER_ERROR. */
AMAX_API amax_status_t amax_multi_preload(amax_context_t context, const amax_tensor_t* tensors, size_t count);

/** amax_multi_compute plus FP8 current scaling per tensor: amax_out[i], scale_out[i] and
 *  scale_inv_out[i] of tensors[i] (fp32, device memory, 4-byte aligned, count entries each, three
 *  disjoint arrays), written by the same launches as the amaxes with amax_and_scale's rule and
 *  `options` (one rule for the whole list). Same workspace as amax_multi_compute
 *  (amax_multi_workspace_size). An n == 0 tensor gets amax +0.0 and the rule's scale for it.
 *  Errors: those of amax_multi_compute (output named amax_out), INVALID_ARGUMENT for bad options
 *  (as amax_and_scale, naming the field and value) or overlapping output arrays (naming both),
 *  NULL_POINTER / MISALIGNED_POINTER for scale_out and scale_inv_out; nothing is enqueued then.
 *  During graph capture the fused kernels must have been loaded by amax_multi_preload_scale. */
AMAX_API amax_status_t amax_multi_and_scale(amax_context_t context, const amax_tensor_t* tensors, size_t count,
                                            const amax_scale_options_t* options, float* amax_out, float* scale_out,
                                            float* scale_inv_out, void* workspace, size_t workspace_bytes,
                                            void* stream);

/** amax_multi_preload for amax_multi_and_scale's (fused) kernels. Errors: as amax_multi_preload. */
AMAX_API amax_status_t amax_multi_preload_scale(amax_context_t context, const amax_tensor_t* tensors, size_t count);

/** Which multi-tensor variant serves the tensors of `dtype` in this list, and how. */
typedef struct amax_multi_explanation_t {
  amax_source_t source;       /**< override, user/system database, or built-in default */
  char label[96];             /**< e.g. "multi.t512.v8.u4.c32k.b4cu.thread" ("" when the list has no tensor of dtype) */
  uint64_t tensors;           /**< tensors of dtype in the list */
  uint64_t total_bytes;       /**< their bytes */
  uint64_t largest_bytes;     /**< the largest one's bytes */
  uint32_t launches;          /**< kernel launches for them */
  uint32_t tensors_per_launch;/**< descriptors per launch of the kernel used (192, 512 or 1600 on NVIDIA sm_70+) */
  uint64_t workspace_bytes;   /**< what they need of the workspace */
  char detail[512];           /**< a sentence: which entry, or why the default */
} amax_multi_explanation_t;

/** Explains the dispatch of the list's tensors of `dtype`. Errors: as amax_multi_workspace_size. */
AMAX_API amax_status_t amax_multi_explain(amax_context_t context, const amax_tensor_t* tensors, size_t count,
                                          amax_dtype_t dtype, amax_multi_explanation_t* explanation);

/* ---- FP8 quantize, current scaling (docs/DESIGN.md section 9) ----
 * amax, scale, scale_inv (amax_and_scale's rule) and the n FP8 bytes q[i] = FP8(x[i] * scale) of
 * one tensor in one call: the product in fp32 rounded to nearest, then converted by the cast rule
 * (amax_cast_rule_t), bit-exact with the CPU reference (common/include/amax/fp8_cast.hpp, which
 * cites TransformerEngine's and torchao's sources) for every value, NaN and infinity included.
 * The launches are the variant's (amax_explain_quantize names it): one cooperative launch (kinds
 * `keep` and `reread`: amax, a grid-wide barrier, the cast; the grid capped at the blocks the
 * device holds at once; its 3 sync words in the stream's slot) or two (`cast`: amax_and_scale's
 * fused variant for (dtype, n), then a cast kernel that reads the scale from device memory).
 * Workspace, stream, slot, graph-capture and NaN-mode rules are amax_compute's. */

/** Whose conversion of the fp32 product gives the FP8 byte. */
typedef enum amax_cast_rule_t {
  AMAX_CAST_TRANSFORMER_ENGINE = 0, /**< TE's cast: round to nearest even, saturate to +-max, NaN -> NaN
                                         (fnuz: +-Inf -> NaN) */
  AMAX_CAST_TORCHAO = 1             /**< torchao's to_fp8_saturated: clamp to +-max (+-Inf too), then convert */
} amax_cast_rule_t;

/** Options of amax_quantize. Initialise with amax_quantize_options_init. */
typedef struct amax_quantize_options_t {
  uint32_t struct_size;       /**< sizeof(amax_quantize_options_t), set by _init */
  amax_fp8_format_t format;   /**< the FP8 format of the bytes (its largest finite value is the scale's
                                   numerator): AMAX_FP8_E4M3 (default) or AMAX_FP8_E5M2; AMAX_FP8_E4M3FNUZ and
                                   AMAX_FP8_E5M2FNUZ on gfx942 only; not AMAX_FP8_EXPLICIT_MAX */
  float epsilon;              /**< as amax_scale_options_t.epsilon: finite and >= 0; default 0 */
  int force_pow2;             /**< as amax_scale_options_t.force_pow2: 0 or 1; default 0 */
  int nan_propagates;         /**< as amax_scale_options_t.nan_propagates: 0 or 1; default 0 */
  amax_cast_rule_t cast_rule; /**< default AMAX_CAST_TRANSFORMER_ENGINE */
} amax_quantize_options_t;

/** Sets the defaults: E4M3, epsilon 0, no pow2 rounding, TE's NaN rule, TE's cast. */
AMAX_API void amax_quantize_options_init(amax_quantize_options_t* options);

/** Checks options without a context or a device: INVALID_ARGUMENT naming the field and its value
 *  ("options.cast_rule is 2 (...)", "options.format is 255 (...)"), NULL_POINTER. Whether the
 *  device supports the format is checked by the calls. Thread-safe. */
AMAX_API amax_status_t amax_quantize_options_check(const amax_quantize_options_t* options);

/** Workspace bytes amax_quantize needs for (dtype, n, options->format): at least 4 (never 0).
 *  Errors: NULL_POINTER, UNKNOWN_DTYPE, INVALID_ARGUMENT (options, a format this device does not
 *  support). Thread-safe. */
AMAX_API amax_status_t amax_quantize_workspace_size(amax_context_t context, amax_dtype_t dtype, uint64_t n,
                                                    const amax_quantize_options_t* options, size_t* bytes);

/** Enqueues the quantize of n elements at `input` (device memory, aligned to the element size)
 *  on `stream`: the n FP8 bytes at `output` (device memory, any alignment, not overlapping the
 *  input), and amax_out, scale_out, scale_inv_out (fp32, device memory, 4-byte aligned, three
 *  distinct words) by amax_and_scale's rule with `options`; amax with the context's NaN mode.
 *  n == 0 writes amax +0.0 and the rule's scale and scale_inv for it with memsets, no byte, no
 *  kernel. `workspace`: amax_quantize_workspace_size bytes (any content). Everything is checked
 *  before anything is enqueued: a refused call writes nothing.
 *  Errors: those of amax_and_scale (output named `output`, NULL only when n == 0), INVALID_ARGUMENT
 *  (options as amax_quantize_options_check; a fnuz format on a device other than gfx942, naming
 *  the device; output overlapping the input). Thread-safety: as amax_compute. */
AMAX_API amax_status_t amax_quantize(amax_context_t context, const void* input, amax_dtype_t dtype, uint64_t n,
                                     const amax_quantize_options_t* options, uint8_t* output, float* amax_out,
                                     float* scale_out, float* scale_inv_out, void* workspace, size_t workspace_bytes,
                                     void* stream);

/** Compiles (or loads from the kernel cache) every kernel amax_quantize uses for the (dtype, size)
 *  pairs with options->format, and the built-in defaults of those pairs, so that later calls
 *  (graph capture included) need no JIT. Errors: as amax_preload, INVALID_ARGUMENT (options). */
AMAX_API amax_status_t amax_preload_quantize(amax_context_t context, const amax_dtype_t* dtypes, size_t num_dtypes,
                                             const uint64_t* sizes, size_t num_sizes,
                                             const amax_quantize_options_t* options);

/** Which variant amax_quantize runs for (dtype, n, options->format): its label (`quant.<kind>...`;
 *  for `cast` the detail also names the fused amax variant before it), launches (1, or the fused
 *  variant's launches + 1; n = 0: 3 memsets), grid of the quantize kernel and workspace. Loads
 *  nothing. Errors: as amax_explain, INVALID_ARGUMENT (options). Thread-safe. */
AMAX_API amax_status_t amax_explain_quantize(amax_context_t context, amax_dtype_t dtype, uint64_t n,
                                             const amax_quantize_options_t* options,
                                             amax_explanation_t* explanation);

/** Quantizes every tensor of a list, each with its own amax, scale and scale_inv (amax_out[i],
 *  scale_out[i], scale_inv_out[i]: fp32, device memory, 4-byte aligned, count entries each, three
 *  disjoint arrays; outputs[i]: tensors[i].n FP8 bytes, a host array of count device pointers).
 *  Runs as a sequence of amax_quantize calls on `stream`, one per tensor (no list kernel of the
 *  quantize family yet: count x the per-tensor launches), sharing the workspace, which must hold
 *  amax_multi_quantize_workspace_size bytes. Everything is validated first: a refused call
 *  writes nothing (DRIVER_ERROR from a launch may leave later tensors not enqueued).
 *  Errors: those of amax_quantize and amax_multi_compute, naming the tensor's index. */
AMAX_API amax_status_t amax_multi_quantize(amax_context_t context, const amax_tensor_t* tensors, size_t count,
                                           const amax_quantize_options_t* options, uint8_t* const* outputs,
                                           float* amax_out, float* scale_out, float* scale_inv_out, void* workspace,
                                           size_t workspace_bytes, void* stream);

/** Workspace bytes of amax_multi_quantize for the list: the largest of its tensors'
 *  amax_quantize_workspace_size (at least 4). Errors: as amax_multi_workspace_size, and options. */
AMAX_API amax_status_t amax_multi_quantize_workspace_size(amax_context_t context, const amax_tensor_t* tensors,
                                                          size_t count, const amax_quantize_options_t* options,
                                                          size_t* bytes);

/** The calling thread's message for its last failed call ("" if none). Valid until the thread's
 *  next amax call. */
AMAX_API const char* amax_last_error(void);

/** "AMAX_STATUS_WORKSPACE_TOO_SMALL" etc. */
AMAX_API const char* amax_status_string(amax_status_t status);

/** "0.1.0" */
AMAX_API const char* amax_version(void);

#ifdef __cplusplus
}
#endif
#endif /* AMAX_TUNE_H */
