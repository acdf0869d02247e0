// Which file of the web interface a request path names (issue 18, point 1): types, caching, the not-built
// page, and every way out of the UI directory refused.
#include "transport/static_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "testing/temp_dir.h"

namespace keel {
namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ui_ = dir_.path() / "dist";
    write_text(ui_ / "index.html", "<!doctype html><script type=module src=/assets/app-1a2b.js></script>");
    write_text(ui_ / "assets" / "app-1a2b.js", "console.log(1)");
    write_text(ui_ / "assets" / "app-1a2b.css", "body{}");
    write_text(ui_ / "assets" / "logo.svg", "<svg/>");
    write_text(ui_ / "assets" / "font.woff2", "wOF2");
    write_text(ui_ / "assets" / "app-1a2b.js.map", "{}");
    write_text(ui_ / ".hidden", "secret");
    write_text(dir_.path() / "outside.txt", "private");
  }
  testing::TempDir dir_;
  fs::path ui_;
};

TEST_F(StaticFilesTest, RootIsIndexHtmlNotCachedAndAssetsAreCachedLong) {
  const StaticAnswer index = resolve_static_file(ui_, "/");
  EXPECT_EQ(index.status, 200u);
  EXPECT_EQ(index.file, fs::canonical(ui_ / "index.html"));
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(index.cache_control, "no-cache");
  EXPECT_EQ(resolve_static_file(ui_, "/?x=1").file, index.file);
  EXPECT_EQ(resolve_static_file(ui_, "/index.html").cache_control, "no-cache");
  const StaticAnswer script = resolve_static_file(ui_, "/assets/app-1a2b.js");
  EXPECT_EQ(script.status, 200u);
  EXPECT_EQ(script.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(script.cache_control, "public, max-age=31536000, immutable");
}

TEST_F(StaticFilesTest, EachKindOfFileGetsItsType) {
  EXPECT_EQ(resolve_static_file(ui_, "/assets/app-1a2b.css").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(resolve_static_file(ui_, "/assets/logo.svg").content_type, "image/svg+xml");
  EXPECT_EQ(resolve_static_file(ui_, "/assets/font.woff2").content_type, "font/woff2");
  EXPECT_EQ(resolve_static_file(ui_, "/assets/app-1a2b.js.map").content_type, "application/json");
  EXPECT_EQ(content_type_for("a.PNG"), "image/png");
  EXPECT_EQ(content_type_for("a.json"), "application/json");
  EXPECT_EQ(content_type_for("a.exe"), "application/octet-stream");
}

TEST_F(StaticFilesTest, TraversalEncodedSlashesHiddenFilesAndDirectoriesAre404) {
  for (const char* target :
       {"/../outside.txt", "/assets/../../outside.txt", "/%2e%2e/outside.txt", "/%2E%2E/outside.txt",
        "/assets%2f..%2f..%2foutside.txt", "/assets%5capp-1a2b.js", "/assets/%00", "/.hidden", "/assets/",
        "/assets", "//etc/passwd", "/assets//app-1a2b.js", "/./index.html", "/%zz", "/%2",
        "http://x/index.html", "/missing.js", ""}) {
    const StaticAnswer answer = resolve_static_file(ui_, target);
    EXPECT_EQ(answer.status, 404u) << target;
    EXPECT_TRUE(answer.file.empty()) << target;
  }
}

TEST_F(StaticFilesTest, ASymlinkPointingOutOfTheDirectoryIsRefusedOneInsideIsFollowed) {
  fs::create_symlink(dir_.path() / "outside.txt", ui_ / "assets" / "leak.js");
  fs::create_directory_symlink(dir_.path(), ui_ / "up");
  fs::create_symlink(ui_ / "assets" / "app-1a2b.js", ui_ / "alias.js");
  EXPECT_EQ(resolve_static_file(ui_, "/assets/leak.js").status, 404u);
  EXPECT_EQ(resolve_static_file(ui_, "/up/outside.txt").status, 404u);
  EXPECT_EQ(resolve_static_file(ui_, "/alias.js").status, 200u);
}

TEST_F(StaticFilesTest, WithoutABuiltAppRootSaysHowToBuildItWithoutScripts) {
  for (const fs::path& dir : {fs::path(), dir_.path() / "nowhere", dir_.path()}) {
    const StaticAnswer page = resolve_static_file(dir, "/");
    EXPECT_EQ(page.status, 200u) << dir;
    EXPECT_TRUE(page.file.empty());
    EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
    EXPECT_NE(page.body.find("npm ci &amp;&amp; npm run build"), std::string::npos);
    EXPECT_NE(page.body.find("./scripts/setup.sh"), std::string::npos);
    EXPECT_EQ(page.body.find("<script"), std::string::npos);
    EXPECT_EQ(resolve_static_file(dir, "/assets/app-1a2b.js").status, 404u) << dir;
  }
}

TEST(SecurityHeadersTest, TheCspAllowsOnlyTheOwnOriginAndItsWebSocket) {
  const auto headers = security_headers("127.0.0.1:7777");
  std::map<std::string, std::string> by_name(headers.begin(), headers.end());
  EXPECT_EQ(
      by_name["Content-Security-Policy"],
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src "
      "'self' ws://127.0.0.1:7777; object-src 'none'; base-uri 'none'; frame-ancestors 'none'");
  EXPECT_EQ(by_name["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(by_name["Referrer-Policy"], "no-referrer");
  EXPECT_EQ(by_name["X-Frame-Options"], "DENY");
}

}  // namespace
}  // namespace keel
