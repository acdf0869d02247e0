// testing/file_modes.h — what tests of file permissions share: a umask set for one scope, a path's mode
// bits, and a file's whole contents.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace keel::testing {

// Sets the process umask for one scope and puts the old one back (tests that create files under a chosen
// umask; the umask is process-wide, so such tests must not run threads that create files meanwhile).
class UmaskScope {
 public:
  explicit UmaskScope(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskScope() { ::umask(old_); }
  UmaskScope(const UmaskScope&) = delete;
  UmaskScope& operator=(const UmaskScope&) = delete;

 private:
  mode_t old_;
};

// The permission bits (with setuid, setgid and sticky) of `path` itself, not of what a symlink names.
inline mode_t mode_of(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The whole contents of `path` ("" when it cannot be read).
inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace keel::testing
