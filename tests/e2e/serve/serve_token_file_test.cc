// keel serve --token-file (issue 15, point 8): the token file is written through a fresh temporary and never
// through a symlink, and a token file that is not private to this user is refused, like the master key.
// The WebSocket server is started as a person would, through the binary, with files prepared beside it.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "serve_fixture.h"
#include "testing/file_modes.h"

namespace keel::e2e {
namespace {

namespace fs = std::filesystem;
using testing::mode_of;
using testing::read_all;

class ServeTokenFileTest : public ServeFixture {
 protected:
  void SetUp() override { start_model(unused_script()); }

  // keel serve --listen with the token file at `path`; SIGTERMed once it listens. Its stderr.
  std::string serve_once(const fs::path& path, int expected_status) {
    ServeProcess& process =
        spawn({"--listen", "127.0.0.1:0", "--token-file", path.string(), "--workspace", workspace_.string()});
    if (expected_status == 0) {
      EXPECT_TRUE(process.wait_stderr("keel: listening on ws://")) << process.err();
      process.signal(SIGTERM);
    }
    EXPECT_EQ(process.wait_exit(), expected_status) << process.err();
    return process.err();
  }

  // A file of someone else's that a prepared symlink points at.
  fs::path victim() {
    const fs::path path = dir_.path() / "victim";
    if (!fs::exists(path)) std::ofstream(path) << "precious\n";
    return path;
  }
};

TEST_F(ServeTokenFileTest, ASymlinkAtTheTokenPathIsRefusedAndItsTargetUntouched) {
  const fs::path token = dir_.path() / "new-token";
  fs::create_symlink(victim(), token);
  const std::string err = serve_once(token, 2);
  EXPECT_NE(err.find("serve.token_file_unsafe"), std::string::npos) << err;
  EXPECT_EQ(read_all(victim()), "precious\n");
  EXPECT_TRUE(fs::is_symlink(token));
}

TEST_F(ServeTokenFileTest, ASymlinkAtTheOldFixedTemporaryNameIsNotFollowed) {
  // Earlier versions wrote "<token file>.tmp" with O_CREAT|O_TRUNC: a symlink there got the token.
  const fs::path token = dir_.path() / "new-token";
  fs::create_symlink(victim(), token.string() + ".tmp");
  serve_once(token, 0);
  EXPECT_EQ(read_all(victim()), "precious\n");
  EXPECT_TRUE(fs::is_symlink(token.string() + ".tmp"));
  ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(token)));
  EXPECT_EQ(mode_of(token), 0600u);
  EXPECT_GE(read_all(token).size(), 17u);  // a token and its newline
  // No temporary is left behind.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir_.path())) {
    if (entry.path().filename().string().starts_with("new-token.tmp-")) ++files;
  }
  EXPECT_EQ(files, 0u);
}

TEST_F(ServeTokenFileTest, ATokenFileKeelCreatesHasMode0600UnderAnyUmask) {
  const fs::path token = dir_.path() / "fresh-token";
  {
    const testing::UmaskScope umask(0);  // the child inherits it: the widest umask
    serve_once(token, 0);
  }
  EXPECT_EQ(mode_of(token), 0600u);
}

TEST_F(ServeTokenFileTest, ATokenFileOthersCanReadOrWriteIsRefused) {
  const fs::path token = dir_.path() / "shared-token";
  std::ofstream(token) << "0123456789abcdef0123456789abcdef\n";
  ASSERT_EQ(::chmod(token.c_str(), 0666), 0);
  const std::string err = serve_once(token, 2);
  EXPECT_NE(err.find("serve.token_file_permissions"), std::string::npos) << err;
  EXPECT_NE(err.find("0666"), std::string::npos) << err;
}

TEST_F(ServeTokenFileTest, ATokenFileOfAnotherUserIsRefused) {
  const fs::path token = dir_.path() / "their-token";
  std::ofstream(token) << "0123456789abcdef0123456789abcdef\n";
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  // Another owner: as root, chown to a uid nobody here has; otherwise a file keel's user cannot own is one
  // that exists already for everyone (/etc/hostname is root's, 0644: refused either way, for its owner
  // first).
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(token.c_str(), 4242, 4242), 0);
    const std::string err = serve_once(token, 2);
    EXPECT_NE(err.find("serve.token_file_unsafe"), std::string::npos) << err;
    EXPECT_NE(err.find("belongs to user 4242"), std::string::npos) << err;
  } else {
    const std::string err = serve_once("/etc/hostname", 2);
    EXPECT_NE(err.find("serve.token_file_unsafe"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace keel::e2e
