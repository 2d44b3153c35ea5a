// Issue 17 on the CPU: the trust rule of amax/trust.hpp. GPU code is read from the kernel cache only
// where nobody but the user (or root) can have written it; anything else is refused with one
// warning and never read (the lookup is a miss, the planted file is left as it was); writes cannot
// be redirected; databases others can write are still read, with one warning. "Another user" is a
// forked child dropped to uid/gid 65534 (CI runs as root), or a chown to 65534; the tests that need
// one skip when not run as root.
#include <sys/stat.h>

#include <functional>

#include "amax/binary_cache.hpp"
#include "amax/db/tuning_db.hpp"
#include "amax/dispatch.hpp"
#include "amax/render.hpp"
#include "amax/trust.hpp"
#include "test_util.hpp"

namespace amax::reliability::test {
namespace {

constexpr uid_t kOther = 65534;
const BinaryKey kKey{"00c0ffee00c0ffee", "sm_90", "nvrtc 13.0"};

CachedBinary some_binary(char fill = 'k') {
  CachedBinary b;
  b.binary.assign(3000, fill);
  b.log = "ptxas info    : Used 16 registers";
  return b;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

uid_t owner_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_uid;
}

std::string octal(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(m));
  return b;
}

class TrustTest : public TempDirTest {
 protected:
  /// A cache directory filled by the library with one valid entry (kKey), and that entry's bytes.
  fs::path filled_cache(const std::string& name, std::string* bytes) {
    const fs::path d = file(name);
    EXPECT_TRUE(BinaryCache(d).store(kKey, some_binary()));
    *bytes = read_bytes(BinaryCache(d).path_of(kKey));
    EXPECT_FALSE(bytes->empty());
    return d;
  }
};

TEST_F(TrustTest, CacheCreatedByTheLibraryIsPrivate) {
  const fs::path top = file("home/.cache");
  const fs::path d = top / "amax-tune/kernels";
  const BinaryCache c(d);
  ASSERT_TRUE(c.store(kKey, some_binary()));
  for (const fs::path& p : {top, top / "amax-tune", d}) EXPECT_EQ(octal(mode_of(p)), "0700") << p;
  EXPECT_EQ(octal(mode_of(file("home"))), "0700") << "a missing parent is created 0700 too";
  EXPECT_EQ(octal(mode_of(c.path_of(kKey))), "0600");
  EXPECT_EQ(listing(d), std::vector<std::string>{c.path_of(kKey).filename().string()});
  LogCapture log;
  const auto got = c.load(kKey);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->binary, some_binary().binary);
  EXPECT_EQ(log.text(), "") << "a private cache loads without a warning";
}

TEST_F(TrustTest, WorldWritableCacheDirectoriesAreRefused) {
  for (const mode_t mode : {mode_t{0777}, mode_t{01777}, mode_t{0770}}) {
    SCOPED_TRACE(octal(mode));
    std::string planted;
    const fs::path d = filled_cache("cache" + octal(mode), &planted);
    ASSERT_EQ(::chmod(d.c_str(), mode), 0);
    const BinaryCache c(d);
    LogCapture log;
    EXPECT_FALSE(c.load(kKey).has_value()) << "an entry in a directory others can write was loaded";
    EXPECT_FALSE(c.store(kKey, some_binary('x'))) << "stored into a directory others can write";
    EXPECT_FALSE(BinaryCache(d).load(kKey).has_value());
    EXPECT_EQ(log.count("warning: kernel cache " + d.string() + " is not trusted"), 1)
        << "one warning per process and directory:\n" << log.text();
    EXPECT_EQ(log.count("mode " + octal(mode)), 1) << log.text();
    EXPECT_EQ(log.count("owner uid 0"), ::geteuid() == 0 ? 1 : 0) << log.text();
    EXPECT_EQ(log.count(mode == 0770 ? "can be written by its group" : "can be written by every user"), 1)
        << log.text();
    EXPECT_EQ(log.count("chmod go-w " + d.string()), 1) << "says what to do:\n" << log.text();
    EXPECT_EQ(read_bytes(c.path_of(kKey)), planted) << "the refused entry was changed";
    EXPECT_EQ(listing(d).size(), 1u) << "nothing was written beside it";
  }
}

TEST_F(TrustTest, CacheBelowADirectoryOthersCanRenameIsRefusedBelowStickyTmpItIsUsed) {
  std::string planted;
  ASSERT_EQ(::mkdir(file("open").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(file("sticky").c_str(), 0700), 0);
  const fs::path open_below = filled_cache("open/kernels", &planted);
  const fs::path sticky_below = filled_cache("sticky/kernels", &planted);
  ASSERT_EQ(::chmod(file("open").c_str(), 0777), 0);
  ASSERT_EQ(::chmod(file("sticky").c_str(), 01777), 0);  // like /tmp
  LogCapture log;
  EXPECT_FALSE(BinaryCache(open_below).load(kKey).has_value());
  EXPECT_EQ(log.count("directory " + file("open").string() + " above " + open_below.string()), 1) << log.text();
  EXPECT_EQ(log.count("is not sticky"), 1) << log.text();
  EXPECT_TRUE(BinaryCache(sticky_below).load(kKey).has_value()) << log.text();
  EXPECT_EQ(log.count("warning: "), 1) << log.text();
}

TEST_F(TrustTest, GroupWritableEntryIsRefusedThenReplacedByAPrivateOne) {
  std::string planted;
  const fs::path d = filled_cache("kc", &planted);
  const BinaryCache c(d);
  const fs::path entry = c.path_of(kKey);
  ASSERT_EQ(::chmod(entry.c_str(), 0660), 0);
  LogCapture log;
  EXPECT_FALSE(c.load(kKey).has_value()) << "a group-writable entry was loaded";
  EXPECT_EQ(log.count("warning: kernel cache " + d.string() + " is not trusted" + ": file " +
                      entry.string()),
            1)
      << log.text();
  EXPECT_EQ(log.count("mode 0660) can be written by its group"), 1) << log.text();
  EXPECT_EQ(read_bytes(entry), planted);
  EXPECT_EQ(octal(mode_of(entry)), "0660");
  EXPECT_FALSE(c.load(kKey).has_value());
  EXPECT_EQ(log.count("warning: "), 1) << "one warning per process and directory:\n" << log.text();
  // The user's own entry with a loose mode is replaced by the next store (mode 0600), then used.
  ASSERT_TRUE(c.store(kKey, some_binary('y')));
  EXPECT_EQ(octal(mode_of(entry)), "0600");
  const auto got = c.load(kKey);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->binary, some_binary('y').binary);
}

TEST_F(TrustTest, AnotherUsersEntryIsNeitherLoadedNorReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give an entry to uid 65534";
  std::string planted;
  const fs::path d = filled_cache("kc", &planted);
  const BinaryCache c(d);
  const fs::path entry = c.path_of(kKey);
  ASSERT_EQ(::chown(entry.c_str(), kOther, kOther), 0);
  LogCapture log;
  EXPECT_FALSE(c.load(kKey).has_value()) << "another user's entry was loaded";
  EXPECT_EQ(log.count("file " + entry.string() + " (owner uid 65534"), 1) << log.text();
  EXPECT_EQ(log.count("does not belong to you (uid 0 (root))"), 1) << log.text();
  EXPECT_FALSE(c.store(kKey, some_binary('z'))) << "replaced another user's file";
  EXPECT_EQ(read_bytes(entry), planted);
  EXPECT_EQ(owner_of(entry), kOther);
  EXPECT_EQ(listing(d), std::vector<std::string>{entry.filename().string()}) << "the temporary was not removed";
  EXPECT_EQ(log.count("warning: "), 1) << "one warning per process and directory:\n" << log.text();
}

TEST_F(TrustTest, SharedCacheMadeByAnotherUserIsNeverRead) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as uid 65534";
  // The attack of issue 17 without a GPU: in a /tmp-like directory, another user makes the
  // "shared" cache, plants a valid entry for our key with BinaryCache itself, and opens it up.
  const fs::path tmp = file("tmp");
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(tmp.c_str(), 01777), 0);
  const fs::path shared = tmp / "shared/kernels";
  const int rc = run_in_child([&]() -> int {
    if (!drop_privileges(kOther, kOther)) return 10;
    if (!BinaryCache(shared).store(kKey, some_binary('A'))) return 11;
    if (::chmod(shared.parent_path().c_str(), 0777) != 0 || ::chmod(shared.c_str(), 01777) != 0) return 12;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const fs::path entry = BinaryCache(shared).path_of(kKey);
  ASSERT_EQ(owner_of(entry), kOther);
  const std::string planted = read_bytes(entry);
  LogCapture log;
  const BinaryCache victim(shared);
  EXPECT_FALSE(victim.load(kKey).has_value()) << "loaded another user's planted entry";
  EXPECT_FALSE(victim.store(kKey, some_binary('B')));
  EXPECT_EQ(read_bytes(entry), planted);
  EXPECT_EQ(log.count("warning: kernel cache " + shared.string() + " is not trusted: directory " + shared.string() +
                      " (owner uid 65534"), 1) << log.text();
  EXPECT_EQ(log.count("owner uid 65534"), 1) << log.text();
  EXPECT_EQ(listing(shared), std::vector<std::string>{entry.filename().string()});
}

TEST_F(TrustTest, SymbolicLinkPlantedAtTheTemporarysNameIsNotWrittenThrough) {
  std::string planted;
  const fs::path d = filled_cache("kc", &planted);
  const BinaryCache c(d);
  BinaryKey other = kKey;
  other.source_hash = "feedfacefeedface";
  const fs::path victim = file("victim.txt");
  write_bytes(victim, "the victim's file\n");
  if (::geteuid() == 0) {  // the victim: another user's file
    ASSERT_EQ(::chown(victim.c_str(), kOther, kOther), 0);
  }
  const fs::path tmp = c.temporary_path(other, 0);
  ASSERT_EQ(::symlink(victim.c_str(), tmp.c_str()), 0);
  LogCapture log;
  EXPECT_FALSE(c.store(other, some_binary('s'))) << "stored through a planted symbolic link";
  EXPECT_EQ(read_bytes(victim), "the victim's file\n") << "the planted link was followed";
  EXPECT_FALSE(c.load(other).has_value());
  EXPECT_EQ(log.count("warning: kernel cache " + d.string() + " is not trusted" + ": " + tmp.string() +
                      " (a symbolic link, owner uid"),
            1)
      << log.text();
  EXPECT_TRUE(fs::is_symlink(tmp));
  // An own leftover regular file at that name (a killed writer that had this pid) is skipped over.
  ASSERT_EQ(::unlink(tmp.c_str()), 0);
  write_bytes(tmp, "half an entry of a killed writer");
  ASSERT_TRUE(c.store(other, some_binary('s')));
  EXPECT_EQ(read_bytes(tmp), "half an entry of a killed writer");
  EXPECT_TRUE(c.load(other).has_value());
}

TEST_F(TrustTest, SymbolicLinkAsEntryIsNotFollowed) {
  std::string planted;
  const fs::path d = filled_cache("kc", &planted);
  const fs::path elsewhere = filled_cache("elsewhere", &planted);
  const BinaryCache c(d);
  const fs::path entry = c.path_of(kKey);
  ASSERT_EQ(::unlink(entry.c_str()), 0);
  ASSERT_EQ(::symlink(BinaryCache(elsewhere).path_of(kKey).c_str(), entry.c_str()), 0);
  LogCapture log;
  EXPECT_FALSE(c.load(kKey).has_value()) << "a symbolic link was followed to GPU code";
  EXPECT_EQ(log.count(entry.string() + " is a symbolic link"), 1) << log.text();
  EXPECT_TRUE(fs::is_symlink(entry));
}

TEST_F(TrustTest, ReadTrustedFileForBundles) {
  std::string why;
  const fs::path d = file("bundle");
  std::error_code ec;
  ASSERT_TRUE(trust::create_private_directories(d, ec)) << ec.message();
  write_bytes(d / "kernels.bin", "code");
  ASSERT_EQ(::chmod((d / "kernels.bin").c_str(), 0644), 0);
  EXPECT_EQ(trust::read_trusted_file(d / "kernels.bin", &why), std::optional<std::string>("code"));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(trust::read_trusted_file(d / "missing.bin", &why).has_value());
  EXPECT_EQ(why, "") << "a missing file is no refusal";
  ASSERT_EQ(::chmod((d / "kernels.bin").c_str(), 0646), 0);
  EXPECT_FALSE(trust::read_trusted_file(d / "kernels.bin", &why).has_value());
  EXPECT_NE(why.find("file " + (d / "kernels.bin").string() + " (owner uid"), std::string::npos) << why;
  EXPECT_NE(why.find("mode 0646) can be written by every user"), std::string::npos) << why;
  EXPECT_NE(why.find("chmod go-w"), std::string::npos) << why;
}

// Databases another user can write are still read (rows are validated and only pick generated
// variants), with one warning naming the file, why, and what it can cost.
const db::Provenance kId{.device_name = "NVIDIA H200", .arch = "sm_90", .cu_count = 132, .compiler = "nvrtc 13.0",
                         .template_hash = template_hash(), .tool_version = std::string(generator_version())};

void make_db(const fs::path& p) {
  auto d = db::TuningDb::open(p);
  const db::Trial t{"atomic.t256.v4.u2.b8cu", db::TrialStatus::ok, "", 2.0, 0.1, 5, 1.0, 32, 0};
  d.record<SingleFamily>(db::TuningKey{"sm_90", DType::fp32, 1u << 20},
               db::Provenance{"NVIDIA H200", "sm_90", 132, "driver", "nvrtc 13.0", template_hash(),
                              std::string(generator_version()), "test", "2026-12-01T00:00:00Z"},
               std::span(&t, 1), db::Winner{t.label, 2.0, 1.0});
  d.use_rollback_journal();
}

TEST_F(TrustTest, DatabasesOthersCanWriteAreReadWithOneWarning) {
  struct Case {
    const char* what;
    std::function<void(const fs::path& db)> open_up;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"private", [](const fs::path&) {}, nullptr},
      {"file 0666", [](const fs::path& p) { ::chmod(p.c_str(), 0666); }, "the file {} has owner uid"},
      {"directory 0777", [](const fs::path& p) { ::chmod(p.parent_path().c_str(), 0777); }, "its directory"},
      {"directory 1777", [](const fs::path& p) { ::chmod(p.parent_path().c_str(), 01777); }, "mode 1777"},
      {"another user's file", [](const fs::path& p) { (void)!::chown(p.c_str(), kOther, kOther); }, "owner uid 65534"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    if (std::string(c.what) == "another user's file" && ::geteuid() != 0) continue;
    const fs::path dir = file("db" + std::to_string(n++));
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    const fs::path p = dir / "tuning.db";
    make_db(p);
    c.open_up(p);
    for (const Source which : {Source::user_db, Source::system_db}) {
      DispatchTables t(ArchInfo::parse("sm_90"), kId);
      LogCapture quiet;
      EXPECT_EQ(t.load(which, p.string()), 1u) << "the rows are still read";
      EXPECT_EQ(t.choose(DType::fp32, 1u << 20).config.label(), "atomic.t256.v4.u2.b8cu");
      if (!c.expect) {
        EXPECT_TRUE(t.warnings().empty()) << t.warnings()[0];
        EXPECT_EQ(trust::database_writable_by_others(p), "");
        continue;
      }
      ASSERT_EQ(t.warnings().size(), 1u);
      const std::string& w = t.warnings()[0];
      const std::string head = std::string(which == Source::user_db ? "user" : "system") + " database " +
                               p.string() + " can be changed by users other than you";
      EXPECT_EQ(w.rfind(head, 0), 0u) << w;
      std::string expect = c.expect;
      if (auto at = expect.find("{}"); at != std::string::npos) expect.replace(at, 2, p.string());
      EXPECT_NE(w.find(expect), std::string::npos) << w;
      EXPECT_NE(w.find("can only choose among the generated variants"), std::string::npos) << w;
      EXPECT_NE(w.find("a slower variant"), std::string::npos) << w;
      EXPECT_EQ(quiet.count("warning: " + head), 1) << quiet.text();
    }
  }
}

}  // namespace
}  // namespace amax::reliability::test
