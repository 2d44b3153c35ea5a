#include "amax/bundle.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "amax/family.hpp"
#include "amax/render.hpp"
#include "amax/search_space.hpp"
#include "amax/trust.hpp"

namespace amax {

namespace fs = std::filesystem;

namespace {
constexpr const char* kIndex = "index.json";
constexpr const char* kFormat = "amax-tune-bundle";
constexpr int kVersion = 1;

void write_file(const fs::path& p, std::string_view bytes) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                  ec);
  fs::rename(tmp, p, ec);
  if (ec) throw std::runtime_error("cannot rename " + tmp.string() + " to " + p.string() + ": " + ec.message());
}
}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("EVP_Digest(SHA-256) failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

namespace {
nlohmann::json to_json(const BundleEntry& e) {
  return {{"kernel", e.kernel}, {"label", e.label}, {"dtype", e.dtype}, {"arch", e.arch},
          {"template_hash", e.template_hash}, {"compiler", e.compiler}, {"sha256", e.sha256},
          {"size", e.size}, {"file", e.file}};
}

// The entries of an index.json's text. Errors: std::exception (nlohmann's or runtime_error)
// naming the problem.
std::vector<BundleEntry> parse_index(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  if (j.at("format").get<std::string>() != kFormat || j.at("version").get<int>() != kVersion)
    throw std::runtime_error("format " + j.at("format").dump() + " version " + j.at("version").dump() +
                             " (expected \"" + kFormat + "\" version " + std::to_string(kVersion) + ")");
  std::vector<BundleEntry> out;
  for (const auto& x : j.at("entries")) {
    BundleEntry e;
    e.kernel = x.at("kernel").get<std::string>();
    e.label = x.at("label").get<std::string>();
    e.dtype = x.at("dtype").get<std::string>();
    e.arch = x.at("arch").get<std::string>();
    e.template_hash = x.at("template_hash").get<std::string>();
    e.compiler = x.at("compiler").get<std::string>();
    e.sha256 = x.at("sha256").get<std::string>();
    e.size = x.at("size").get<std::uint64_t>();
    e.file = x.at("file").get<std::string>();
    if (e.file.empty() || e.file.find('/') != std::string::npos || e.file[0] == '.')
      throw std::runtime_error("entry " + e.kernel + " names the file '" + e.file + "' (expected <sha256>.bin)");
    out.push_back(std::move(e));
  }
  return out;
}

bool is_bundle_file(const fs::path& name) { return name == kIndex || name.extension() == ".bin"; }

// Removes a bundle directory: its index.json and *.bin files, then the directory if that left it
// empty (anything else in it is kept, never deleted).
void remove_bundle_dir(const fs::path& dir) {
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec))
    if (is_bundle_file(f.path().filename())) fs::remove(f.path(), ec);
  fs::remove(dir, ec);  // fails (and keeps it) when something else is left
}
}  // namespace

BundleWriter::BundleWriter(fs::path dir) : dir_(std::move(dir)) {
  if (dir_.filename().empty()) dir_ = dir_.parent_path();  // "out/" -> "out"
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir_, ec))) {
    if (!fs::is_directory(fs::symlink_status(dir_, ec)))
      throw std::runtime_error("cannot write the bundle directory " + dir_.string() +
                               ": it exists and is not a directory (choose another output)");
    for (const auto& f : fs::directory_iterator(dir_, ec))
      if (!is_bundle_file(f.path().filename()) || !f.is_regular_file())
        throw std::runtime_error("cannot write the bundle directory " + dir_.string() +
                                 ": it exists and is not a kernel bundle (it holds " + f.path().filename().string() +
                                 "); choose another output or remove it");
  }
  tmp_ = dir_.parent_path() / ("." + dir_.filename().string() + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(tmp_, ec);
  fs::create_directories(tmp_, ec);
  if (ec) throw std::runtime_error("cannot create the bundle directory " + tmp_.string() + ": " + ec.message());
  fs::permissions(tmp_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec, ec);
}

BundleWriter::~BundleWriter() {
  if (finished_) return;
  std::error_code ec;
  fs::remove_all(tmp_, ec);
}

void BundleWriter::add_entry(BundleEntry e) {
  for (auto& old : entries_)
    if (old.kernel == e.kernel && old.arch == e.arch) {
      old = std::move(e);
      return;
    }
  entries_.push_back(std::move(e));
}

// `e` holds the kernel's names, dtype, arch, template hash and compiler; the code object's
// hash, size and file are filled in here.
void BundleWriter::add_code(BundleEntry e, const std::vector<char>& binary) {
  e.sha256 = sha256_hex(std::string_view(binary.data(), binary.size()));
  e.size = binary.size();
  e.file = e.sha256 + ".bin";
  write_file(tmp_ / e.file, std::string_view(binary.data(), binary.size()));
  add_entry(std::move(e));
}

template <class Config>
void BundleWriter::add(const Config& config, DType dtype, const ArchInfo& arch, const std::string& compiler,
                       const std::vector<char>& binary, std::uint32_t capacity) {
  using F = family_of_t<Config>;
  add_code(BundleEntry{.kernel = F::kernel_name(config, dtype, capacity), .label = config.kernel_label(),
                       .dtype = std::string(info(dtype).name), .arch = arch.name, .template_hash = F::template_hash(),
                       .compiler = compiler},
           binary);
}

void BundleWriter::add_copy(const Bundle& from, const BundleEntry& e) {
  std::string why;
  const ArchInfo arch = [&] {
    try {
      return ArchInfo::parse(e.arch);
    } catch (const std::invalid_argument& x) {
      throw std::runtime_error("bundle " + from.path().string() + ": entry " + e.kernel + ": " + x.what());
    }
  }();
  const auto bytes = from.read(e, arch, &why);
  if (!bytes) throw std::runtime_error(why);
  write_file(tmp_ / e.file, std::string_view(bytes->data(), bytes->size()));
  add_entry(e);
}

void BundleWriter::absorb(const fs::path& other) {
  std::ifstream in(other / kIndex, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  std::vector<BundleEntry> got;
  try {
    got = parse_index(text);
  } catch (const std::exception& x) {
    throw std::runtime_error("cannot read " + (other / kIndex).string() + ": " + x.what());
  }
  for (auto& e : got) {
    std::error_code ec;
    fs::rename(other / e.file, tmp_ / e.file, ec);  // the same name is the same bytes (SHA-256)
    if (ec && !fs::exists(tmp_ / e.file))
      throw std::runtime_error("cannot move " + (other / e.file).string() + " into " + tmp_.string() + ": " +
                               ec.message());
    add_entry(std::move(e));
  }
  std::error_code ec;
  fs::remove_all(other, ec);
}

void BundleWriter::finish(const std::string& tool_version) {
  nlohmann::json j{{"format", kFormat}, {"version", kVersion}, {"tool_version", tool_version}};
  auto& list = j["entries"] = nlohmann::json::array();
  for (const auto& e : entries_) list.push_back(to_json(e));
  write_file(tmp_ / kIndex, j.dump(1) + "\n");
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir_, ec))) {
    fs::rename(tmp_, dir_, ec);
    if (ec) throw std::runtime_error("cannot rename " + tmp_.string() + " to " + dir_.string() + ": " + ec.message());
  } else if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) == 0) {
    remove_bundle_dir(tmp_);  // the bundle that was there
  } else {
    // A file system without RENAME_EXCHANGE (NFS): the old bundle aside, the new one in place.
    const fs::path old = dir_.parent_path() / ("." + dir_.filename().string() + ".old-" + std::to_string(::getpid()));
    fs::rename(dir_, old, ec);
    if (ec) throw std::runtime_error("cannot move the bundle " + dir_.string() + " aside: " + ec.message());
    fs::rename(tmp_, dir_, ec);
    if (ec) {
      std::error_code back;
      fs::rename(old, dir_, back);
      throw std::runtime_error("cannot rename " + tmp_.string() + " to " + dir_.string() + ": " + ec.message());
    }
    remove_bundle_dir(old);
  }
  finished_ = true;
  tmp_ = dir_;
}

struct Bundle::Dir {
  trust::TrustedDir dir;
};

Bundle::~Bundle() = default;

std::unique_ptr<Bundle> Bundle::open(const fs::path& dir, std::string* warning) {
  warning->clear();
  auto td = trust::TrustedDir::open(dir);
  if (td.missing()) return nullptr;
  if (!td.ok()) {
    *warning = "kernel bundle " + dir.string() + " is not used (its kernels will be JIT-compiled): " + td.reason();
    return nullptr;
  }
  std::string why;
  const auto text = td.read(kIndex, &why);
  if (!text) {
    if (why.empty()) return nullptr;  // a directory without an index: not a bundle (nothing installed)
    *warning = "kernel bundle " + dir.string() + " is not used (its kernels will be JIT-compiled): " + why;
    return nullptr;
  }
  auto b = std::unique_ptr<Bundle>(new Bundle);
  try {
    b->entries_ = parse_index(*text);
  } catch (const std::exception& ex) {
    *warning = "kernel bundle " + dir.string() + " is not used (its kernels will be JIT-compiled): " + kIndex +
               " is damaged: " + ex.what();
    return nullptr;
  }
  b->path_ = dir;
  b->dir_ = std::make_unique<Dir>(Dir{std::move(td)});
  return b;
}

bool bundle_serves(std::string_view entry_arch, const ArchInfo& device) {
  if (entry_arch == device.name) return true;
  try {
    return ArchInfo::parse(entry_arch).accepts(device);
  } catch (const std::invalid_argument&) {
    return false;
  }
}

const std::string& bundle_template_hash(const BundleEntry& e) {
  return MultiConfig::is_multi_label(e.label) ? multi_template_hash() : template_hash();
}

template <class Config>
const BundleEntry* Bundle::find(const Config& config, DType dtype, const ArchInfo& arch, std::uint32_t capacity) const {
  return find_kernel(family_of_t<Config>::kernel_name(config, dtype, capacity), arch);
}

template void BundleWriter::add(const KernelConfig&, DType, const ArchInfo&, const std::string&, const std::vector<char>&,
                                std::uint32_t);
template void BundleWriter::add(const MultiConfig&, DType, const ArchInfo&, const std::string&, const std::vector<char>&,
                                std::uint32_t);
template const BundleEntry* Bundle::find(const KernelConfig&, DType, const ArchInfo&, std::uint32_t) const;
template const BundleEntry* Bundle::find(const MultiConfig&, DType, const ArchInfo&, std::uint32_t) const;

const BundleEntry* Bundle::find_kernel(std::string_view k, const ArchInfo& arch) const {
  const BundleEntry* serving = nullptr;
  for (const auto& e : entries_) {
    if (e.kernel != k) continue;
    if (e.arch == arch.name) return &e;
    if (!serving && bundle_serves(e.arch, arch)) serving = &e;
  }
  return serving;
}

std::optional<std::vector<char>> Bundle::read(const BundleEntry& e, const ArchInfo& arch, std::string* why) const {
  const std::string what = "bundled kernel " + e.kernel + " (" + e.arch + ") in " + path_.string();
  if (!bundle_serves(e.arch, arch)) {
    *why = what + " was compiled for " + e.arch + ", not for this device's " + arch.name;
    return std::nullopt;
  }
  if (const std::string& current = bundle_template_hash(e); e.template_hash != current) {
    *why = what + " was compiled from other kernel templates (template hash " + e.template_hash + ", this build's " +
           current + ")";
    return std::nullopt;
  }
  std::string err;
  const auto bytes = dir_->dir.read(e.file, &err);
  if (!bytes) {
    *why = what + ": " + (err.empty() ? "its file " + e.file + " is missing" : err);
    return std::nullopt;
  }
  if (bytes->size() != e.size) {
    *why = what + ": " + e.file + " has " + std::to_string(bytes->size()) + " bytes, the index says " +
           std::to_string(e.size) + " (truncated or replaced)";
    return std::nullopt;
  }
  if (const std::string h = sha256_hex(*bytes); h != e.sha256) {
    *why = what + ": " + e.file + " has SHA-256 " + h + ", the index says " + e.sha256 + " (modified)";
    return std::nullopt;
  }
  return std::vector<char>(bytes->begin(), bytes->end());
}

std::string Bundle::compiler_for(const ArchInfo& arch) const {
  for (const auto& e : entries_)
    if (e.arch == arch.name) return e.compiler;
  for (const auto& e : entries_)
    if (bundle_serves(e.arch, arch)) return e.compiler;
  return "";
}

std::optional<fs::path> default_bundle_path() {
  if (const char* p = std::getenv("AMAX_TUNE_BUNDLE")) {
    if (!*p) return std::nullopt;
    return fs::path(p);
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_bundle_path), &info) && info.dli_fname) {
    // Beside the installed system database (AMAX_SYSTEM_DB_FROM_LIBDIR, relative to the library).
    const auto candidate =
        (fs::path(info.dli_fname).parent_path() / AMAX_SYSTEM_DB_FROM_LIBDIR).parent_path() / "kernels.bundle";
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal();
  }
  return fs::path(AMAX_SYSTEM_DB_INSTALLED).parent_path() / "kernels.bundle";
}

std::vector<BundleKernel> bundle_kernels(const ArchInfo& arch,
                                         const std::vector<std::pair<KernelConfig, DType>>& winners,
                                         const std::vector<std::pair<MultiConfig, DType>>& group_winners,
                                         std::size_t* winner_kernels, std::size_t* group_winner_kernels) {
  std::vector<BundleKernel> out;
  std::set<std::string> seen;
  auto add_one = [&](KernelConfig c, DType d) {
    c.max_blocks = BlockCap::uncapped();
    if (!c.validate(arch, d) && seen.insert(kernel_name(c, d)).second) out.push_back(BundleKernel{c, {}, d, 0});
  };
  for (const auto& [c, d] : winners) {
    add_one(c, d);
    add_one(fused_variant(c, arch, d), d);
  }
  *winner_kernels = out.size();
  for (const auto& d : all_dtypes())
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{1} << 30}) {
      const KernelConfig def = builtin_default(arch, d.dtype, n);
      add_one(fused_variant(def, arch, d.dtype), d.dtype);
      for (const Strategy s : all_strategies()) {
        KernelConfig c = def;
        c.strategy = s;
        for (const auto& e : kEpilogues) {
          c.epilogue = e.value;
          add_one(c, d.dtype);
        }
      }
    }
  const std::size_t single = out.size();
  auto add_multi = [&](MultiConfig c, DType d) {
    c = c.compile_time_part();
    if (c.validate(arch, d)) return;
    for (const auto& e : kEpilogues) {
      c.epilogue = e.value;
      for (const std::uint32_t k : multi_capacities(arch))
        if (seen.insert(multi_kernel_name(c, d, k)).second) out.push_back(BundleKernel{{}, c, d, k});
    }
  };
  for (const auto& [c, d] : group_winners) add_multi(c, d);
  *group_winner_kernels = out.size() - single;
  for (const auto& d : all_dtypes()) add_multi(builtin_multi_default(arch, d.dtype, GroupShape{}), d.dtype);
  return out;
}

}  // namespace amax
