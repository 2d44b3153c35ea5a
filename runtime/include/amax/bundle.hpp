#pragma once
// Release bundles of compiled kernels: the code objects of a database's winners and of the
// built-in defaults, compiled ahead of time for a list of arches (`amax-tune bundle`) and installed
// beside the system database, so that a user's first call needs no JIT compiler.
//
// Layout: a directory holding index.json and one file per code object, named by its SHA-256
// ("<sha256>.bin"; identical code objects are stored once). index.json:
//   {"format": "amax-tune-bundle", "version": 1, "tool_version": "0.1.0",
//    "entries": [{"kernel": "<kernel_name(config, dtype)>", "label": "<config.kernel_label()>",
//                 "dtype": "bf16", "arch": "sm_90" or a full target ID, "template_hash": "...",
//                 "compiler": "nvrtc 13.0", "sha256": "<hex>", "size": <bytes>,
//                 "file": "<sha256>.bin"}, ...]}
// An entry is used only when its arch is the device's, its template hash is this build's and the
// file's size and SHA-256 match the index; anything else is refused with one warning (the caller
// then falls back to the kernel cache and JIT). The directory and its files are read under the
// trust rule of amax/trust.hpp (owned by the user or root, writable by nobody else).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"

namespace amax {

/// Lower-case hex SHA-256 of `bytes` (OpenSSL's libcrypto). Thread-safe.
std::string sha256_hex(std::string_view bytes);

/// One code object of a bundle (see the layout above).
struct BundleEntry {
  std::string kernel;         ///< kernel_name(config, dtype): the stage-one entry point
  std::string label;          ///< config.kernel_label(), e.g. "one_pass.t512.v8.u2"
  std::string dtype;          ///< "bf16"
  std::string arch;           ///< "sm_90" / "gfx942:sramecc+:xnack-": what it was compiled for
  std::string template_hash;  ///< template_hash() of the build that compiled it
  std::string compiler;       ///< "nvrtc 13.0"
  std::string sha256;         ///< of the code object
  std::uint64_t size = 0;     ///< bytes of the code object
  std::string file;           ///< file name inside the bundle directory
};

/// Writes a bundle directory. Not thread-safe (one writer per directory).
class BundleWriter {
 public:
  /// Creates `dir` (mode 0755 directories: a bundle is installed for every user) and removes an
  /// index.json left there. Errors: std::runtime_error naming the directory.
  explicit BundleWriter(std::filesystem::path dir);
  /// Adds a code object for (config, dtype) compiled for `arch` by `compiler`; the file is written
  /// now (mode 0644). A second entry for the same kernel and arch replaces the first.
  /// Errors: std::runtime_error naming the file.
  void add(const KernelConfig& config, DType dtype, const ArchInfo& arch, const std::string& compiler,
           const std::vector<char>& binary);
  /// Writes index.json (to a temporary file, then renamed into place). Errors: std::runtime_error.
  void finish(const std::string& tool_version);
  const std::vector<BundleEntry>& entries() const noexcept { return entries_; }

 private:
  std::filesystem::path dir_;
  std::vector<BundleEntry> entries_;
};

/// A bundle opened for reading. Thread-safety: all const methods may be called concurrently.
class Bundle {
 public:
  /// Opens the bundle directory `dir` and reads its index. Returns nullptr with *warning empty
  /// when `dir` does not exist; nullptr with *warning set (naming the path and why) when it is
  /// refused by the trust rule or its index is unreadable or damaged. Never throws beyond bad_alloc.
  static std::unique_ptr<Bundle> open(const std::filesystem::path& dir, std::string* warning);
  ~Bundle();

  /// The entry for (config's kernel, dtype) on `arch` (matched on the arch name; features of a
  /// target ID must match too), or nullptr.
  const BundleEntry* find(const KernelConfig& config, DType dtype, const ArchInfo& arch) const;
  /// The verified code object of `e` for `arch`: nullopt with *why naming the entry and the
  /// problem when the arch or template hash differs from this build's, or the file is missing,
  /// refused by the trust rule, truncated or modified (size or SHA-256 mismatch).
  std::optional<std::vector<char>> read(const BundleEntry& e, const ArchInfo& arch, std::string* why) const;
  /// The compiler of this bundle's entries for `arch` ("" when it has none): the identity the
  /// database's rows are checked against when the JIT compiler is not installed.
  std::string compiler_for(const ArchInfo& arch) const;
  const std::vector<BundleEntry>& entries() const noexcept { return entries_; }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct Dir;
  Bundle() = default;
  std::filesystem::path path_;
  std::vector<BundleEntry> entries_;
  std::unique_ptr<Dir> dir_;
};

/// The bundle the runtime uses: $AMAX_TUNE_BUNDLE when set ("" disables: returns nullopt), else
/// the bundle installed with the library (<prefix>/share/amax-tune/kernels.bundle, found relative
/// to the library like the system database).
std::optional<std::filesystem::path> default_bundle_path();

}  // namespace amax
