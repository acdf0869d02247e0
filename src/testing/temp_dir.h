// testing/temp_dir.h — a fresh directory under $TMPDIR (or /tmp), removed with its contents on
// destruction. Gives each test its own database files.
#pragma once

#include <filesystem>
#include <string>

namespace keel::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // path() / name, as a string.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace keel::testing
