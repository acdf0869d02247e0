#include "browser/page_scripts.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace keel::browser {
namespace {

const std::filesystem::path kScriptsDir = KEEL_PAGE_SCRIPTS_DIR;

std::string read_source(const std::string& name) {
  std::ifstream in(kScriptsDir / name, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> bundle_order() {
  std::ifstream in(kScriptsDir / "bundle.order");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

TEST(PageScriptsTest, EmbedsEveryFileOfBundleOrderAsInTheSourceTree) {
  const std::vector<std::string> order = bundle_order();
  ASSERT_FALSE(order.empty());
  const auto files = page_script_files();
  ASSERT_EQ(files.size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(files[i].name, order[i]);
    EXPECT_EQ(files[i].text, read_source(order[i])) << order[i] << " differs from the source tree";
  }
}

TEST(PageScriptsTest, BundleIsHeadThenTheFilesInOrderThenTail) {
  std::string expected = read_source("bundle.head");
  for (const std::string& name : bundle_order()) expected += read_source(name);
  expected += read_source("bundle.tail");
  EXPECT_EQ(page_script_bundle(), expected);
  EXPECT_TRUE(page_script_bundle().starts_with("(() => {"));
}

TEST(PageScriptsTest, VersionMatchesTheScripts) {
  const std::string declaration = "const KEEL_SCRIPTS_VERSION = " + std::to_string(kPageScriptsVersion) + ";";
  EXPECT_NE(page_script_bundle().find(declaration), std::string_view::npos)
      << "api.js and kPageScriptsVersion disagree";
}

}  // namespace
}  // namespace keel::browser
