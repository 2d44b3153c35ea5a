#pragma once
// The compile layer: kernel source -> loadable binary through the vendor's JIT compiler
// (NVRTC -> CUBIN on NVIDIA, hipRTC -> AMD code object on AMD).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "amax/arch.hpp"

namespace amax {

/// Resources one kernel uses, as its compiler reports them. -1 = not reported by this compiler.
/// NVIDIA: from ptxas' verbose report (registers per thread, spill store/load bytes, stack frame
/// bytes, static shared memory bytes). AMD: from the code object's AMDGPU metadata note
/// (.vgpr_count, .agpr_count, .sgpr_count, .vgpr_spill_count + .sgpr_spill_count,
/// .group_segment_fixed_size, .private_segment_fixed_size, .wavefront_size,
/// .max_flat_workgroup_size); spills on AMD are counted in registers spilled, not bytes.
struct ResourceUsage {
  int registers = -1;         ///< NVIDIA registers / AMD VGPRs per thread
  int sgprs = -1;             ///< AMD scalar registers per wave
  int spill_stores = -1;      ///< NVIDIA bytes stored by spills; AMD registers spilled
  int spill_loads = -1;       ///< NVIDIA bytes loaded by spills; AMD: same as spill_stores
  int stack_bytes = -1;       ///< NVIDIA stack frame / AMD private segment, bytes per thread
  int shared_bytes = -1;      ///< static shared memory (LDS) per block, bytes
  int agprs = -1;             ///< AMD accumulation VGPRs per thread (CDNA; share the VGPR file on gfx90a+)
  int wave_size = -1;         ///< AMD: the wave size the code object was compiled for (64 on CDNA)
  int max_block = -1;         ///< AMD: the launch bound compiled in (.max_flat_workgroup_size)
  bool spills() const { return spill_stores > 0 || spill_loads > 0; }
};

/// A compiled program: the binary the driver loads (CUBIN or AMD code object ELF) and what the
/// compiler said.
struct CompiledProgram {
  std::vector<char> binary;
  std::string log;                                ///< full compiler log (may be empty)
  std::map<std::string, ResourceUsage> usage;     ///< per kernel name, where the compiler reports it
  double compile_ms = 0;                          ///< wall time of the compile call
};

/// A compile failure; what() names the program and target, log() holds the full compiler log.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& what, std::string log)
      : std::runtime_error(what), log_(std::move(log)) {}
  const std::string& log() const noexcept { return log_; }

 private:
  std::string log_;
};

/// A JIT compiler for one vendor. Implementations are thread-safe: compile() may be called from
/// several threads at once (each call creates its own program object); NVRTC and hipRTC 6 compile
/// in parallel, hipRTC 5 one call at a time (its comgr is not safe to call concurrently).
class JitCompiler {
 public:
  virtual ~JitCompiler() = default;
  virtual Vendor vendor() const noexcept = 0;
  /// "nvrtc 13.0" / "hiprtc 5.2.21153", from the compiler library itself: recorded in the DB and
  /// part of the binary-cache key. Empty when the library is unavailable (see unavailable_reason()).
  /// The first call of version(), unavailable_reason() or compile() opens the library (dlopen).
  virtual const std::string& version() const noexcept = 0;
  /// Empty when the compiler library could be loaded; otherwise the libraries tried and dlerror()'s
  /// messages (NVRTC: libnvrtc.so.13, .so.12, .so or AMAX_TUNE_NVRTC_LIBRARY; hipRTC:
  /// libhiprtc.so.6, libamdhip64.so.5, ... or AMAX_TUNE_HIPRTC_LIBRARY).
  virtual const std::string& unavailable_reason() const noexcept = 0;
  bool available() const noexcept { return unavailable_reason().empty(); }
  /// The compiler libraries as loaded in this process, for logs and test reports, e.g.
  /// "hipRTC 5.7.31921 (/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.7.31921); comgr API 2.6
  /// (/usr/lib/x86_64-linux-gnu/libamd_comgr.so.2.6.0); LLVM libraries loaded: libLLVM-17.so.1". hipRTC loads comgr at
  /// its first compile; before that the comgr part reads "comgr not loaded yet". Opens the library
  /// like version(). Thread-safe.
  virtual std::string toolchain() const { return available() ? version() : unavailable_reason(); }
  /// Why this compiler cannot compile for `arch` in this process, or nullopt when it can (as far as
  /// is known: a target it does not know may still fail with a CompileError). compile() throws
  /// std::invalid_argument with this reason. Thread-safe.
  virtual std::optional<std::string> unsupported(const ArchInfo&) const { return std::nullopt; }
  /// Compiles `source` (a self-contained program; `program_name` appears in diagnostics) for
  /// `arch` to a loadable binary. Never flushes denormals, never uses fast math.
  /// Errors: CompileError (with the full log) when the compiler rejects the program, and
  /// CompileError naming what is missing (empty log) when the compiler library is unavailable;
  /// std::invalid_argument when `arch` is another vendor's or unsupported() names a reason;
  /// std::runtime_error when the compiler library itself fails.
  virtual CompiledProgram compile(std::string_view source, std::string_view program_name,
                                  const ArchInfo& arch) const = 0;
};

/// Per-kernel usage from ptxas' verbose report (NVRTC's log with --ptxas-options=-v): for each
/// "Function properties for NAME" block, the stack frame, spill stores/loads and registers.
/// Kernels the log does not mention are absent. Thread-safe.
std::map<std::string, ResourceUsage> parse_ptxas_report(const std::string& log);

/// The compiler for `vendor`. Errors: std::runtime_error naming the vendor when this build has no
/// backend for it.
std::unique_ptr<JitCompiler> make_compiler(Vendor vendor);
/// True when this build includes the compiler for `vendor` (its library may still be missing at
/// run time: JitCompiler::available()).
bool have_compiler(Vendor vendor) noexcept;

/// How many JIT compiles this process has started (every vendor; calls rejected because the
/// compiler library is missing are not counted). For tests that prove a path needs no JIT.
/// Thread-safe.
std::uint64_t jit_compile_count() noexcept;

}  // namespace amax
