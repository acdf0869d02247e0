// Where keel serve and keel ui find the built web app, and the URL they print (issue 18, point 1).
#include "cli/web_ui.h"

#include <gtest/gtest.h>

#include <fstream>

#include "keel/error_codes.h"
#include "testing/temp_dir.h"

namespace keel::cli {
namespace {

namespace fs = std::filesystem;

void make_app(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "index.html") << "<!doctype html>";
}

TEST(WebUiTest, TheFlagWinsAndMustHoldAnIndex) {
  testing::TempDir dir;
  make_app(dir.path() / "flag");
  make_app(dir.path() / "found");
  auto flagged = find_ui_dir(dir.path() / "flag", {dir.path() / "found"});
  ASSERT_TRUE(flagged) << flagged.error().to_string();
  EXPECT_EQ(*flagged, dir.path() / "flag");
  auto empty = find_ui_dir(dir.path() / "nothing", {dir.path() / "found"});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code(), codes::kInvalidArgument);
  EXPECT_NE(empty.error().message().find("npm run build"), std::string::npos);
}

TEST(WebUiTest, WithoutTheFlagTheFirstBuiltCandidateElseNone) {
  testing::TempDir dir;
  make_app(dir.path() / "second");
  fs::create_directories(dir.path() / "first");  // no index.html: not built
  auto found = find_ui_dir(std::nullopt, {dir.path() / "first", dir.path() / "second"});
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, dir.path() / "second");
  auto none = find_ui_dir(std::nullopt, {dir.path() / "first"});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(WebUiTest, TheInstalledAndTheSourceTreeLocationsAreLookedAtBesideTheExecutable) {
  const auto candidates = ui_dir_candidates();
  ASSERT_GE(candidates.size(), 2u);
  EXPECT_TRUE(candidates[0].string().ends_with("share/keel/web")) << candidates[0];
  EXPECT_TRUE(candidates[1].string().ends_with("web/dist")) << candidates[1];
}

TEST(WebUiTest, TheUrlCarriesTheOneTimeTokenInItsFragment) {
  EXPECT_EQ(web_ui_url("127.0.0.1", 7777, "abc"), "http://127.0.0.1:7777/#token=abc");
  EXPECT_EQ(web_ui_url("::1", 7777, "abc"), "http://[::1]:7777/#token=abc");
  EXPECT_EQ(web_ui_url("127.0.0.1", 7777, ""), "http://127.0.0.1:7777/");
}

}  // namespace
}  // namespace keel::cli
