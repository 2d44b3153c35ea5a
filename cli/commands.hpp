#pragma once
// Subcommands of the amax-tune command line. Each add_* registers its options on `app` and returns
// the subcommand; run_* executes it and returns the process exit code.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "amax/arch.hpp"
#include "amax/bench_multi.hpp"
#include "amax/dtype.hpp"
#include "amax/kernel_config.hpp"

namespace amax::cli {

/// Exit codes: 0 success, 1 the work failed, 2 bad arguments (named in the message).
inline constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

/// Thrown for bad user input; main() prints "amax-tune: error: <what>" and exits kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `amax-tune emit`.
void add_emit(CLI::App& app);
/// `amax-tune [tune] --arch ...`: the default command.
void add_tune(CLI::App& app);
/// `amax-tune bench`.
void add_bench(CLI::App& app);
/// `amax-tune bench-multi [--groups 500x4096:fp32,...]`.
void add_bench_multi(CLI::App& app);
/// Parses `500x4096:fp32,4096x16k:bf16` (counts as for --sizes). UsageError naming the bad item.
std::vector<tune::GroupSpec> parse_multi_groups(const std::string& text);
/// `amax-tune check [--db F] [--retune] [--dtypes ...] [--sizes ...]`.
void add_check(CLI::App& app);
/// `amax-tune bundle --db DB --arch LIST -o DIR`: a release bundle of compiled kernels.
void add_bundle(CLI::App& app);
/// `amax-tune show | export | import | merge`.
void add_db_commands(CLI::App& app);
/// The database a command reads or writes: @p given (its --db) when not empty, else $AMAX_TUNE_DB,
/// else $XDG_DATA_HOME/amax-tune/tuning.db, else ~/.local/share/amax-tune/tuning.db.
std::filesystem::path db_path_or_default(const std::string& given);
/// Splits a comma-separated list into its items, each without the spaces and tabs around it
/// ("1M, 4M" -> "1M", "4M"; "" -> one empty item). Every list option goes through it.
std::vector<std::string> split_list(const std::string& text);
/// One count: 1048576, 2^20, 1M = 2^20, 4k = 4096, 1G = 2^30. std::invalid_argument with the
/// reason alone ("not a number", "exponent must be 0..62", "too large"): the caller names the option.
std::uint64_t parse_count(std::string text);
/// An arch a user names with --arch: ArchInfo::parse_known (an arch this tool knows; "" is an
/// error). UsageError naming the value and listing the known archs.
ArchInfo parse_user_arch(const std::string& arch);
/// Parses a comma-separated dtype list ("fp32,bf16"). UsageError naming the bad item.
std::vector<DType> parse_dtypes(const std::string& list);
/// Parses a comma-separated strategy list ("first_reset,self_reset"; duplicates kept once, in order).
/// UsageError naming the bad item (an empty one included) and listing the strategies.
std::vector<Strategy> parse_strategies(const std::string& list);
/// Parses a size list: comma-separated items, each a count (1048576, 2^20, 1M = 2^20, 4k = 4096,
/// 1G = 2^30) or a range A..B of the powers of two from A to B. UsageError naming the bad item.
std::vector<std::uint64_t> parse_sizes(const std::string& text);
/// Why the directory `dir` cannot receive output files, found without creating anything: "" when
/// it exists and can be written, or does not exist and its nearest existing ancestor can be
/// written (it is created then); otherwise the reason ("'x' is not a directory", "its nearest
/// existing directory '/' is not writable by this user (uid 65534): owned by root ..."). Thread-safe.
std::string output_dir_problem(const std::filesystem::path& dir);
/// The options `bench` and `bench-multi` share, checked and copied from their arguments (`Args`:
/// db, system_db, device, rounds, out, quiet) into their options (`Options`: user_db, system_db,
/// device, rounds, out_dir, progress). Errors: UsageError naming the value (rounds below 3, a
/// negative device ordinal); std::runtime_error naming -o when the output directory cannot be
/// written (output_dir_problem).
template <class Options, class Args>
void set_bench_common(Options& o, const Args& a) {
  if (a.rounds < 3) throw UsageError("--rounds must be at least 3, got " + std::to_string(a.rounds));
  if (a.device < 0) throw UsageError("--device must be a device ordinal >= 0, got " + std::to_string(a.device));
  // The output directory is checked before the measurement: a run must not end unable to write.
  if (const std::string why = output_dir_problem(a.out); !why.empty())
    throw std::runtime_error("-o " + a.out + ": " + why + "; nothing was measured");
  o.user_db = a.db;
  o.system_db = a.system_db;
  o.device = a.device;
  o.rounds = a.rounds;
  o.out_dir = a.out;
  o.progress = !a.quiet;
}

/// UsageError when `out` exists and is the same file as `in` (also through links).
void refuse_same_file(const std::filesystem::path& out, const std::filesystem::path& in, const char* what);
/// Why `path` cannot be written as an output file, found before any work and without creating
/// anything: "" when it can; otherwise the reason, e.g. "its directory 'out' does not exist", "it is a
/// directory", "its directory '/' is not writable by this user (uid 65534): owned by root (uid 0), mode
/// 0755 (rwxr-xr-x)". A file is written through a temporary beside it (write_file_atomically), so
/// the directory must be writable. Thread-safe.
std::string output_file_problem(const std::filesystem::path& path);
/// Writes a file through a temporary beside it, renamed into place only after `write` succeeded:
/// an existing file is never left half-written. Errors name the file and the reason.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

}  // namespace amax::cli
