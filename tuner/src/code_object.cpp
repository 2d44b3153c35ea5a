#include "amax/code_object.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#if AMAX_HAVE_LLVM
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/Error.h>
#endif

namespace amax {

bool can_read_amdgpu_code_objects() noexcept { return AMAX_HAVE_LLVM; }

std::string code_object_reader_llvm() {
#if AMAX_HAVE_LLVM
  return LLVM_VERSION_STRING;
#else
  return "";
#endif
}

std::optional<std::string> amdgpu_resource_problem(const ResourceUsage& u, const ArchInfo& arch,
                                                   std::uint32_t threads) {
  if (u.spills()) return "spills " + std::to_string(u.spill_stores) + " registers";
  if (u.stack_bytes > 0) return "uses " + std::to_string(u.stack_bytes) + " bytes of scratch per lane";
  if (u.wave_size > 0 && u.wave_size != arch.wave_size)
    return "compiled for wave" + std::to_string(u.wave_size) + ", not the wave" + std::to_string(arch.wave_size) +
           " of " + arch.processor;
  const AmdArchFacts* f = amd_arch_facts(arch.processor);
  if (!f || u.registers < 0) return std::nullopt;
  const auto round_up = [](int v, int g) { return (v + g - 1) / g * g; };
  const int waves = static_cast<int>((threads + arch.wave_size - 1) / arch.wave_size);
  const int per_simd = (waves + f->simds_per_cu - 1) / f->simds_per_cu;
  int vgprs = u.registers;
  if (f->unified_agprs && u.agprs > 0) vgprs = round_up(vgprs, 4) + u.agprs;
  vgprs = round_up(std::max(vgprs, 1), f->vgpr_granule);
  const int by_vgprs = std::min(f->max_waves_per_simd, f->vgprs_per_simd_lane / vgprs);
  if (per_simd > by_vgprs)
    return "a block of " + std::to_string(threads) + " threads needs " + std::to_string(per_simd) +
           " waves per SIMD but " + std::to_string(vgprs) + " VGPRs allow " + std::to_string(by_vgprs) + " on " +
           arch.processor;
  if (u.shared_bytes > 0 && static_cast<std::uint32_t>(u.shared_bytes) > f->lds_bytes_per_cu)
    return "LDS " + std::to_string(u.shared_bytes) + " bytes per block exceeds the " +
           std::to_string(f->lds_bytes_per_cu) + " bytes of a " + arch.processor + " CU";
  return std::nullopt;
}

#if AMAX_HAVE_LLVM
namespace {

// A clang offload bundle: magic, entry count, then {offset, size, id length, id} per entry.
std::span<const char> unbundle(std::span<const char> bytes) {
  static constexpr char kMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
  constexpr std::size_t kMagicLen = sizeof(kMagic) - 1;
  if (bytes.size() < kMagicLen || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) return bytes;
  auto u64 = [&](std::size_t at) {
    if (at + 8 > bytes.size()) throw std::runtime_error("truncated clang offload bundle");
    std::uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  std::size_t at = kMagicLen;
  const std::uint64_t n = u64(at);
  at += 8;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t off = u64(at), size = u64(at + 8), id_len = u64(at + 16);
    at += 24;
    if (at + id_len > bytes.size()) throw std::runtime_error("truncated clang offload bundle");
    const std::string id(bytes.data() + at, id_len);
    at += id_len;
    if (id.find("amdgcn") != std::string::npos) {
      if (off + size > bytes.size()) throw std::runtime_error("truncated clang offload bundle");
      return bytes.subspan(off, size);
    }
  }
  throw std::runtime_error("clang offload bundle has no amdgcn code object");
}

int get_int(llvm::msgpack::MapDocNode& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end()) return -1;
  auto& n = it->second;
  if (n.getKind() == llvm::msgpack::Type::UInt) return static_cast<int>(n.getUInt());
  if (n.getKind() == llvm::msgpack::Type::Int) return static_cast<int>(n.getInt());
  return -1;
}

// Calls `read(root map)` on the msgpack metadata of the code object's NT_AMDGPU_METADATA note.
template <class Read>
auto with_metadata(std::span<const char> code_object, Read read) {
  const std::span<const char> elf_bytes = unbundle(code_object);
  auto obj = llvm::object::ELF64LEObjectFile::create(
      llvm::MemoryBufferRef(llvm::StringRef(elf_bytes.data(), elf_bytes.size()), "code object"));
  if (!obj)
    throw std::runtime_error("not an AMD code object (ELF64): " + llvm::toString(obj.takeError()));
  const auto& elf = obj->getELFFile();
  auto headers = elf.program_headers();
  if (!headers) throw std::runtime_error("code object: " + llvm::toString(headers.takeError()));
  for (const auto& ph : *headers) {
    if (ph.p_type != llvm::ELF::PT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto& note : elf.notes(ph, err)) {
      if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA) continue;
      // LLVM 17 added the segment's alignment to getDesc() (descriptors of 8-byte aligned
      // notes start at an 8-byte boundary); LLVM 14-16 assume 4.
#if LLVM_VERSION_MAJOR >= 17
      auto desc = note.getDesc(ph.p_align);
#else
      auto desc = note.getDesc();
#endif
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(llvm::StringRef(reinterpret_cast<const char*>(desc.data()), desc.size()),
                            false))
        throw std::runtime_error("code object: unreadable AMDGPU metadata (msgpack)");
      llvm::consumeError(std::move(err));
      return read(doc.getRoot().getMap());
    }
    if (err) throw std::runtime_error("code object notes: " + llvm::toString(std::move(err)));
  }
  throw std::runtime_error("code object has no NT_AMDGPU_METADATA note");
}

}  // namespace

std::map<std::string, ResourceUsage> amdgpu_resource_usage(std::span<const char> code_object) {
  return with_metadata(code_object, [](llvm::msgpack::MapDocNode& root) {
    auto kernels = root.find("amdhsa.kernels");
    if (kernels == root.end()) throw std::runtime_error("code object metadata has no amdhsa.kernels");
    std::map<std::string, ResourceUsage> out;
    for (auto& k : kernels->second.getArray()) {
      auto& m = k.getMap();
      auto name = m.find(".name");
      if (name == m.end()) continue;
      ResourceUsage u;
      u.registers = get_int(m, ".vgpr_count");
      u.sgprs = get_int(m, ".sgpr_count");
      const int vs = get_int(m, ".vgpr_spill_count"), ss = get_int(m, ".sgpr_spill_count");
      u.spill_stores = u.spill_loads = (vs < 0 && ss < 0) ? -1 : std::max(vs, 0) + std::max(ss, 0);
      u.stack_bytes = get_int(m, ".private_segment_fixed_size");
      u.shared_bytes = get_int(m, ".group_segment_fixed_size");
      u.agprs = get_int(m, ".agpr_count");
      u.wave_size = get_int(m, ".wavefront_size");
      u.max_block = get_int(m, ".max_flat_workgroup_size");
      out[name->second.getString().str()] = u;
    }
    return out;
  });
}

std::string amdgpu_target(std::span<const char> code_object) {
  return with_metadata(code_object, [](llvm::msgpack::MapDocNode& root) {
    auto t = root.find("amdhsa.target");
    if (t == root.end() || t->second.getKind() != llvm::msgpack::Type::String)
      throw std::runtime_error("code object metadata has no amdhsa.target");
    return t->second.getString().str();
  });
}
#else
std::map<std::string, ResourceUsage> amdgpu_resource_usage(std::span<const char>) {
  throw std::runtime_error("this build cannot read AMD code objects (LLVM was not found)");
}
std::string amdgpu_target(std::span<const char>) {
  throw std::runtime_error("this build cannot read AMD code objects (LLVM was not found)");
}
#endif

}  // namespace amax
