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
// Both kernel families share the layout: a multi-tensor entry's kernel is
// multi_kernel_name(config, dtype, capacity) (`amax_multi_t512_v8_u4_bf16_k192`), its label the
// MultiConfig's kernel_label() (`multi.t512.v8.u4`, the family tag first) and its template hash
// multi_template_hash() (bundle_template_hash).
// An entry is used only when its arch is the device's, its template hash is this build's (of the
// entry's family) and the file's size and SHA-256 match the index; anything else is refused with one warning (the caller
// then falls back to the kernel cache and JIT). The directory and its files are read under the
// trust rule of amax/trust.hpp (owned by the user or root, writable by nobody else).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amax/arch.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"

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

class Bundle;

/// The template hash this build gives entry `e`'s family: multi_template_hash() for a multi-tensor
/// entry (its label starts with `multi.`), else template_hash(). Thread-safe.
const std::string& bundle_template_hash(const BundleEntry& e);

/// Writes a bundle directory as a whole: code objects and the index go to a temporary sibling
/// directory (".<name>.tmp-<pid>"), which finish() puts in the place of `dir`; a writer destroyed
/// without finish() (an error, a failed compile) removes it, so a failed run leaves `dir` as it was
/// and never a half-written bundle. Not thread-safe (one writer per directory).
class BundleWriter {
 public:
  /// Checks that `dir` is absent, empty or a bundle (index.json and *.bin files only: what
  /// finish() may replace) and creates the temporary directory (mode 0755: a bundle is installed
  /// for every user). Errors: std::runtime_error naming the directory and, for a directory that
  /// is not a bundle, the first file that is not a bundle's.
  explicit BundleWriter(std::filesystem::path dir);
  /// Removes the temporary directory unless finish() put it in place.
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  /// Adds the code object of either family's `config` (its compile-time part; Config:
  /// KernelConfig or MultiConfig) for `dtype` and, multi-tensor, `capacity` descriptors per launch
  /// (0 for single tensors), compiled for `arch` by `compiler` (build_kernel): the entry's kernel,
  /// label and template hash are its family's. The file is written now (mode 0644). A second entry
  /// for the same kernel and arch replaces the first. Errors: std::runtime_error naming the file.
  template <class Config>
  void add(const Config& config, DType dtype, const ArchInfo& arch, const std::string& compiler,
           const std::vector<char>& binary, std::uint32_t capacity = 0);
  /// Adds entry `e` of the opened bundle `from` unchanged, with its code object read and verified
  /// (Bundle::read: size, SHA-256, template hash of this build). Errors: std::runtime_error with
  /// Bundle::read's reason.
  void add_copy(const Bundle& from, const BundleEntry& e);
  /// Adds the entries of `other`, a bundle directory another BundleWriter of this process (or a
  /// child of it) has just finished (its index is trusted, not checked under the trust rule),
  /// moving its code objects here; `other` is removed. Errors: std::runtime_error naming the file.
  void absorb(const std::filesystem::path& other);
  /// Writes index.json and puts the bundle in the place of `dir` (an existing bundle there is
  /// swapped out atomically with renameat2(RENAME_EXCHANGE), then deleted). Errors:
  /// std::runtime_error naming the path; `dir` is then as it was.
  void finish(const std::string& tool_version);
  const std::vector<BundleEntry>& entries() const noexcept { return entries_; }
  /// The directory being written (the temporary one until finish(), then `dir`).
  const std::filesystem::path& staging() const noexcept { return tmp_; }

 private:
  void add_entry(BundleEntry e);
  void add_code(BundleEntry e, const std::vector<char>& binary);
  std::filesystem::path dir_, tmp_;
  std::vector<BundleEntry> entries_;
  bool finished_ = false;
};

/// A bundle opened for reading. Thread-safety: all const methods may be called concurrently.
class Bundle {
 public:
  /// Opens the bundle directory `dir` and reads its index. Returns nullptr with *warning empty
  /// when `dir` does not exist; nullptr with *warning set (naming the path and why) when it is
  /// refused by the trust rule or its index is unreadable or damaged. Never throws beyond bad_alloc.
  static std::unique_ptr<Bundle> open(const std::filesystem::path& dir, std::string* warning);
  ~Bundle();

  /// The entry for either family's kernel of `config` for `dtype` and (multi-tensor) `capacity`
  /// descriptors per launch that device `arch` can load, or nullptr: the entry compiled for
  /// exactly `arch` (an AMD device's full target ID, e.g. `gfx942:sramecc+:xnack-`) first, else one
  /// whose target ID serves it (bundle_serves: `gfx942` compiled with xnack and sramecc "any"
  /// serves `gfx942:sramecc+:xnack+`).
  template <class Config>
  const BundleEntry* find(const Config& config, DType dtype, const ArchInfo& arch, std::uint32_t capacity = 0) const;
  /// The entry named `kernel` (either family's kernel name) that device `arch` can load, or
  /// nullptr: what find() looks up.
  const BundleEntry* find_kernel(std::string_view kernel, const ArchInfo& arch) const;
  /// The verified code object of `e` for `arch`: nullopt with *why naming the entry and the
  /// problem when `e` cannot serve `arch` (bundle_serves) or its template hash differs from this
  /// build's for its family (bundle_template_hash), or the file is missing, refused by the trust rule, truncated or modified (size or
  /// SHA-256 mismatch).
  std::optional<std::vector<char>> read(const BundleEntry& e, const ArchInfo& arch, std::string* why) const;
  /// The compiler of this bundle's entries for `arch` ("" when it has none; the entries for
  /// exactly `arch` first, else those that serve it): the identity the database's rows are
  /// checked against when the JIT compiler is not installed.
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

/// Whether a code object compiled for `entry_arch` (a bundle entry's arch) loads on a device of
/// `device`: equal names, or an AMD target ID whose processor is the device's and whose specified
/// features (sramecc, xnack) the device has (ArchInfo::accepts: `gfx942` serves every gfx942,
/// `gfx942:sramecc+:xnack-` only a device reporting those). False for an unparsable name. Pure.
bool bundle_serves(std::string_view entry_arch, const ArchInfo& device);

/// One code object a release bundle ships: a single-tensor kernel (`multi` empty), or the
/// multi-tensor kernel of `multi` for `capacity` descriptors per launch.
struct BundleKernel {
  KernelConfig single;
  std::optional<MultiConfig> multi;
  DType dtype{};
  std::uint32_t capacity = 0;
};

/// The bundle policy (the one place it is decided): the kernels a release bundle ships for `arch`,
/// one per compiled kernel (grid caps, chunk sizes and combines are launch parameters), those valid
/// for the arch only. First for `winners` (the fresh single-tensor database winners with their
/// dtypes) each as amax_compute and as amax_and_scale run it (fused_variant); then the built-in
/// default of every dtype (the small-n and the large-n shape of builtin_default) as amax_and_scale
/// runs it, and on its shape every strategy (AMAX_TUNE_FORCE_STRATEGY, the compile fallback) with
/// both epilogues; then for `group_winners` (the fresh group winners) and the built-in
/// multi-tensor default of every dtype, each with both epilogues and every descriptor capacity of
/// the arch (multi_capacities). *winner_kernels and *group_winner_kernels: how many of each
/// family's kernels come from the winners. Pure, thread-safe.
std::vector<BundleKernel> bundle_kernels(const ArchInfo& arch,
                                         const std::vector<std::pair<KernelConfig, DType>>& winners,
                                         const std::vector<std::pair<MultiConfig, DType>>& group_winners,
                                         std::size_t* winner_kernels, std::size_t* group_winner_kernels);

/// The bundle the runtime uses: $AMAX_TUNE_BUNDLE when set ("" disables: returns nullopt), else
/// the bundle installed with the library (<prefix>/share/amax-tune/kernels.bundle, found relative
/// to the library like the system database).
std::optional<std::filesystem::path> default_bundle_path();

}  // namespace amax
