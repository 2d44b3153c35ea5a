// amax-tune emit: print or write rendered kernel sources, or list the search space.
#include <filesystem>
#include <fstream>
#include <set>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "amax/multi_config.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "commands.hpp"

namespace amax::cli {
namespace {

struct EmitOptions {
  std::string arch = "sm_90";
  std::string dtype = "fp32";
  bool dtype_given = false;  // without --dtype fp32 is assumed, and emit says so
  std::string label;
  bool list = false;
  bool full = false;
  std::string family = "single";
  std::string out;
  std::string out_dir;
};

// "" with --dtype; else the words saying fp32 was assumed and how to choose, for notes and errors.
std::string assumed_dtype(const EmitOptions& o) {
  return o.dtype_given ? std::string() : "--dtype not given, fp32 assumed; choose with --dtype fp16 or bf16";
}

// The variant's problem for `arch` and `dtype`, as a usage error saying which dtype was assumed.
UsageError invalid_variant(const EmitOptions& o, const ArchInfo& arch, DType dtype, const std::string& why) {
  const std::string assumed = assumed_dtype(o);
  return UsageError("variant not valid for " + arch.name + " " + std::string(to_string(dtype)) +
                    (assumed.empty() ? "" : " (" + assumed + ")") + ": " + why);
}

DType need_dtype(const std::string& s) {
  auto d = parse_dtype(s);
  if (!d) throw UsageError("unknown dtype '" + s + "' (expected fp32, fp16 or bf16)");
  return *d;
}

void make_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::runtime_error("cannot create the directory " + dir + ": " +
                             (ec ? ec.message() : std::string("a file of that name exists")));
}

// One rendered source to stdout (no -o, or -o -) or to the file -o names.
void write_source(const EmitOptions& o, const std::string& src) {
  if (o.out.empty() || o.out == "-")
    std::cout << src;
  else
    write_file_atomically(o.out, [&](std::ostream& f) { f << src; });
}

// The multi-tensor family: labels multi.*, sources at the arch's largest descriptor capacity.
int run_emit_multi(const EmitOptions& o, const ArchInfo& arch, DType dtype) {
  const auto space = enumerate_multi_space(arch, dtype, o.full ? SpaceKind::full : SpaceKind::pruned);
  const std::uint32_t k = multi_max_tensors(arch);
  if (o.list) {
    for (const auto& c : space) std::cout << c.label() << "\n";
    std::cerr << fmt::format("{} multi-tensor variants in the {} space for {} {} ({} tensors per launch at most)\n",
                             space.size(), o.full ? "full" : "pruned", arch.name, to_string(dtype), k);
    return kExitOk;
  }
  if (!o.out_dir.empty()) {
    make_out_dir(o.out_dir);
    std::set<std::string> kernels;  // variants that differ only in launch parameters share one kernel
    for (std::uint32_t cap : multi_capacities(arch))  // every descriptor capacity the runtime launches
      for (const auto& c : space) {
        const std::string name = multi_kernel_name(c, dtype, cap);
        if (kernels.insert(name).second)
          std::ofstream(std::filesystem::path(o.out_dir) / (name + (arch.vendor == Vendor::nvidia ? ".cu" : ".hip")))
              << render_multi_source(c, dtype, arch, cap);
      }
    std::cerr << fmt::format("wrote {} multi-tensor kernel sources ({} variants) to {}\n", kernels.size(), space.size(),
                             o.out_dir);
    return kExitOk;
  }
  if (o.label.empty()) throw UsageError("emit needs --label LABEL, --list or --out-dir DIR");
  MultiConfig c;
  try {
    c = MultiConfig::parse(o.label);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (auto why = c.validate(arch, dtype)) throw invalid_variant(o, arch, dtype, *why);
  write_source(o, render_multi_source(c, dtype, arch, k));
  return kExitOk;
}

int run_emit(const EmitOptions& o) {
  const ArchInfo arch = parse_user_arch(o.arch);
  const DType dtype = need_dtype(o.dtype);

  const auto space = enumerate_space(arch, dtype, o.full ? SpaceKind::full : SpaceKind::pruned);
  if (int(o.list) + int(!o.label.empty()) + int(!o.out_dir.empty()) > 1)
    throw UsageError("emit takes one of --label, --list and --out-dir");
  if (o.list && !o.out.empty()) throw UsageError("-o/--out goes with --label (--list prints to stdout)");
  if (o.family != "single" && o.family != "multi")
    throw UsageError("unknown --family '" + o.family + "' (expected single or multi)");
  if (o.family == "multi" || MultiConfig::is_multi_label(o.label)) return run_emit_multi(o, arch, dtype);
  if (o.list) {
    for (const auto& c : space) std::cout << c.label() << "\n";
    const auto excluded = space_exclusions(arch, dtype, o.full ? SpaceKind::full : SpaceKind::pruned);
    for (const auto& [c, why] : excluded) std::cerr << fmt::format("left out: {}: {}\n", c.label(), why);
    for (const auto& note : space_notes(arch, o.full ? SpaceKind::full : SpaceKind::pruned))
      std::cerr << fmt::format("left out: {}\n", note);
    std::cerr << fmt::format("{} variants ({} compiled kernels) in the {} space for {} {}{}\n",
                             space.size(), distinct_kernels(space).size(),
                             o.full ? "full" : "pruned", arch.name, to_string(dtype),
                             excluded.empty() ? "" : fmt::format(" ({} left out)", excluded.size()));
    return kExitOk;
  }
  if (!o.out_dir.empty()) {
    make_out_dir(o.out_dir);
    const auto kernels = distinct_kernels(space);
    for (const auto& c : kernels) {
      const auto path = std::filesystem::path(o.out_dir) /
                        (kernel_name(c, dtype) + (arch.vendor == Vendor::nvidia ? ".cu" : ".hip"));
      std::ofstream(path) << render_source(c, dtype, arch.vendor);
    }
    std::cerr << fmt::format("wrote {} kernel sources to {}\n", kernels.size(), o.out_dir);
    return kExitOk;
  }
  if (o.label.empty()) throw UsageError("emit needs --label LABEL, --list or --out-dir DIR");
  KernelConfig c;
  try {
    c = KernelConfig::parse(o.label);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (auto why = c.validate(arch, dtype)) throw invalid_variant(o, arch, dtype, *why);
  write_source(o, render_source(c, dtype, arch.vendor));
  return kExitOk;
}

}  // namespace

void add_emit(CLI::App& app) {
  auto o = std::make_shared<EmitOptions>();
  auto* sub = app.add_subcommand("emit", "Print the rendered kernel source of a variant, or list the space");
  sub->add_option("--arch", o->arch, "Target: sm_XY or an AMD target ID (gfx942:sramecc+:xnack-)")
      ->capture_default_str();
  sub->add_option_function<std::string>(
         "--dtype", [o](const std::string& v) { o->dtype = v, o->dtype_given = true; },
         "Element type: fp32, fp16, bf16 (default fp32; emit says when it assumed it)");
  sub->add_option("--label", o->label,
                  "Variant label, e.g. two_stage.t256.v8.u4.b8cu, or a multi-tensor one, multi.t512.v8.u4.c32k.b4cu.thread");
  sub->add_option("--family", o->family, "Kernel family of --list and --out-dir: single or multi (many tensors per launch)")
      ->capture_default_str();
  sub->add_flag("--list", o->list, "List the variant labels of the space (one per line)");
  sub->add_flag("--full", o->full, "Use the full space instead of the pruned default");
  sub->add_option("-o,--out", o->out, "Write the source to this file instead of stdout");
  sub->add_option("--out-dir", o->out_dir, "Write every kernel source of the space into this directory");
  sub->final_callback([o] {
    const int rc = run_emit(*o);
    // After the output (on stderr: stdout holds only the source or the list); an invalid variant's
    // error says it itself.
    if (const std::string assumed = assumed_dtype(*o); !assumed.empty()) std::cerr << "note: " << assumed << "\n";
    throw CLI::RuntimeError(rc);
  });
}

}  // namespace amax::cli
