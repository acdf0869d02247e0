#include "browser/browser_state_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "browser/browser_errors.h"
#include "browser/ref_table.h"
#include "testing/temp_dir.h"

namespace keel::browser {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

BrowserState sample_state() {
  RefTable refs;
  RefKey key;
  key.tab_id = 1;
  key.frame_id = "F1";
  key.loader_id = "L1";
  key.js_index = 12;
  EXPECT_TRUE(refs.issue(key, "button", "Buy"));
  BrowserState state;
  state.profile = "/var/lib/keel/browser/profile";
  state.tab_high_water = 7;  // tabs 2 and 4 to 7 were closed
  SavedThread thread;
  thread.tabs = {{1, "https://shop.example/cart", "Cart — Keel Supply", false},
                 {3, "http://127.0.0.1:8731/r/9", "Receipt", true}};
  thread.ref_high_water = refs.high_water();
  state.threads["019a-thread-a"] = thread;
  state.threads["019a-thread-b"] = SavedThread{};
  return state;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text, mode_t mode = 0600) {
  fs::create_directories(path.parent_path());
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  }
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

// A valid file's JSON, to damage one field at a time.
json sample_json() { return json::parse(encode_browser_state(sample_state())); }

void expect_damaged(const json& value, const std::string& problem) {
  const Result<BrowserState> decoded = decode_browser_state(value.dump());
  ASSERT_FALSE(decoded) << value.dump();
  EXPECT_EQ(decoded.error().code(), codes::kBrowserStateFileDamaged);
  EXPECT_NE(decoded.error().message().find(problem), std::string::npos)
      << "expected \"" << problem << "\" in: " << decoded.error().message();
}

TEST(BrowserStateFileTest, EncodeDecodeRoundTrip) {
  const BrowserState state = sample_state();
  const Result<BrowserState> decoded = decode_browser_state(encode_browser_state(state));
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  EXPECT_EQ(*decoded, state);
  EXPECT_EQ(encode_browser_state(*decoded), encode_browser_state(state)) << "the encoding is deterministic";
}

TEST(BrowserStateFileTest, TheEncodingHasTheDocumentedShape) {
  const json value = sample_json();
  EXPECT_EQ(value["version"], 2);
  EXPECT_EQ(value["profile"], "/var/lib/keel/browser/profile");
  EXPECT_EQ(value["tabHighWater"], 7);
  const json& thread = value["threads"]["019a-thread-a"];
  EXPECT_EQ(
      thread["tabs"][1],
      json({{"tab", 3}, {"url", "http://127.0.0.1:8731/r/9"}, {"title", "Receipt"}, {"current", true}}));
  EXPECT_EQ(thread["refHighWater"]["indices"]["0"], 12);
}

TEST(BrowserStateFileTest, TheTabHighWaterMarkIsWrittenAtLeastAsHighAsEverySavedTab) {
  BrowserState state = sample_state();
  state.tab_high_water = 0;
  const json value = json::parse(encode_browser_state(state));
  EXPECT_EQ(value["tabHighWater"], 3);
  const Result<BrowserState> decoded = decode_browser_state(value.dump());
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  EXPECT_EQ(decoded->tab_high_water, 3);
}

TEST(BrowserStateFileTest, AVersion1FileIsReadWithItsHighestTabIdAsTheHighWaterMark) {
  json v = sample_json();
  v["version"] = 1;
  v.erase("tabHighWater");
  const Result<BrowserState> decoded = decode_browser_state(v.dump());
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  EXPECT_EQ(decoded->tab_high_water, 3);
  EXPECT_EQ(decoded->threads, sample_state().threads);
  EXPECT_EQ(decoded->profile, sample_state().profile);
  // Version 1 never had the field: one there is not what keel wrote.
  v["tabHighWater"] = 9;
  expect_damaged(v, "unknown field \"tabHighWater\"");
  // The next save writes version 2.
  EXPECT_EQ(json::parse(encode_browser_state(*decoded))["version"], 2);
}

TEST(BrowserStateFileTest, RestoredRefCountersMakeOldRefsFromBeforeTheRestart) {
  const Result<BrowserState> decoded = decode_browser_state(encode_browser_state(sample_state()));
  ASSERT_TRUE(decoded);
  RefTable after_restart;
  ASSERT_TRUE(after_restart.restore_high_water(decoded->threads.at("019a-thread-a").ref_high_water));
  EXPECT_EQ(after_restart.next_index(0), 13);
  const auto old = after_restart.find("e12", 1);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code(), codes::kBrowserUnknownRef);
  EXPECT_NE(old.error().message().find("restarted"), std::string::npos) << old.error().message();
}

TEST(BrowserStateFileTest, InvalidUtf8InATitleIsWrittenAsReplacementCharacters) {
  BrowserState state = sample_state();
  state.threads["019a-thread-a"].tabs[0].title = "bad \xff title";
  const Result<BrowserState> decoded = decode_browser_state(encode_browser_state(state));
  ASSERT_TRUE(decoded) << decoded.error().to_string();
  EXPECT_EQ(decoded->threads.at("019a-thread-a").tabs[0].title, "bad \xEF\xBF\xBD title");
}

TEST(BrowserStateFileTest, DamagedTextIsACodedErrorNeverACrash) {
  const std::string valid = encode_browser_state(sample_state());
  // Every prefix of a valid file (a torn or truncated write) is refused with the code, or is the whole file.
  for (size_t cut = 0; cut < valid.size(); ++cut) {
    const Result<BrowserState> decoded = decode_browser_state(std::string_view(valid).substr(0, cut));
    if (decoded) {
      EXPECT_EQ(valid.substr(cut).find_first_not_of(" \n"), std::string::npos) << "cut at " << cut;
      continue;
    }
    EXPECT_EQ(decoded.error().code(), codes::kBrowserStateFileDamaged) << "cut at " << cut;
  }
  for (const std::string& text :
       {std::string(""), std::string("null"), std::string("[]"), std::string("\"x\""),
        std::string("{\"version\":1"), std::string("\xff\xfe{}"), std::string(100'000, '['),
        std::string("{\"a\":1,\"a\":2}")}) {
    const Result<BrowserState> decoded = decode_browser_state(text);
    ASSERT_FALSE(decoded) << text.substr(0, 40);
    EXPECT_EQ(decoded.error().code(), codes::kBrowserStateFileDamaged);
  }
}

TEST(BrowserStateFileTest, RefusesATooLargeFile) {
  const std::string huge(kMaxBrowserStateBytes + 1, ' ');
  const Result<BrowserState> decoded = decode_browser_state(huge);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(decoded.error().code(), codes::kBrowserStateFileDamaged);
  EXPECT_NE(decoded.error().message().find("larger than"), std::string::npos);
}

TEST(BrowserStateFileTest, RefusesEachWrongField) {
  json v = sample_json();
  v["version"] = 3;
  expect_damaged(v, "version 3");
  v = sample_json();
  v["version"] = 0;
  expect_damaged(v, "version 0");
  v = sample_json();
  v["version"] = "1";
  expect_damaged(v, "\"version\" is not an integer");
  v = sample_json();
  v.erase("profile");
  expect_damaged(v, "has no \"profile\"");
  v = sample_json();
  v["extra"] = true;
  expect_damaged(v, "unknown field \"extra\"");
  v = sample_json();
  v["threads"] = json::array();
  expect_damaged(v, "\"threads\" is not an object");
  v = sample_json();
  v.erase("tabHighWater");
  expect_damaged(v, "has no \"tabHighWater\"");
  for (const json& mark : {json(-1), json("7"), json(2.5), json(18446744073709551615u)}) {
    v = sample_json();
    v["tabHighWater"] = mark;
    expect_damaged(v, "\"tabHighWater\" is not a natural number");
  }
  v = sample_json();
  v["tabHighWater"] = 2;
  expect_damaged(v, "\"tabHighWater\" 2 is below tab 3");
  v = sample_json();
  v["threads"][""] = v["threads"]["019a-thread-b"];
  expect_damaged(v, "empty id");

  const auto with_tab = [&](const std::function<void(json&)>& change, const std::string& problem) {
    json copy = sample_json();
    change(copy["threads"]["019a-thread-a"]["tabs"][0]);
    expect_damaged(copy, problem);
  };
  with_tab([](json& t) { t["tab"] = 0; }, "tab is not a positive integer");
  with_tab([](json& t) { t["tab"] = -4; }, "tab is not a positive integer");
  with_tab([](json& t) { t["tab"] = 1.5; }, "tab is not a positive integer");
  with_tab([](json& t) { t["tab"] = 18446744073709551615u; }, "tab is not a positive integer");
  with_tab([](json& t) { t["url"] = ""; }, "url is not a non-empty string");
  with_tab([](json& t) { t["url"] = 7; }, "url is not a non-empty string");
  with_tab([](json& t) { t["title"] = nullptr; }, "title is not a string");
  with_tab([](json& t) { t["current"] = "yes"; }, "current is not true or false");
  with_tab([](json& t) { t.erase("url"); }, "has no \"url\"");
  with_tab([](json& t) { t["frame"] = "F1"; }, "unknown field \"frame\"");
  with_tab([](json& t) { t = json::array(); }, "is not an object");
  with_tab([](json& t) { t["tab"] = 3; }, "repeats tab 3");
  with_tab([](json& t) { t["current"] = true; }, "second current tab");

  v = sample_json();
  v["threads"]["019a-thread-a"]["tabs"] = json::object();
  expect_damaged(v, "tabs is not an array");
  v = sample_json();
  v["threads"]["019a-thread-a"]["refHighWater"] = json{{"frames", -1}, {"indices", json::object()}};
  expect_damaged(v, "refHighWater");
  v = sample_json();
  v["threads"]["019a-thread-a"]["refHighWater"]["indices"]["x"] = 3;
  expect_damaged(v, "refHighWater");
  v = sample_json();
  v["threads"]["019a-thread-a"].erase("refHighWater");
  expect_damaged(v, "has no \"refHighWater\"");
}

TEST(BrowserStateFileTest, SaveAndLoadThroughAPrivateFile) {
  testing::TempDir dir;
  const fs::path data_dir = dir.path() / "data";
  const Result<std::optional<BrowserState>> none = load_browser_state(data_dir);
  ASSERT_TRUE(none) << none.error().to_string();
  EXPECT_FALSE(*none) << "no file yet: a first start";

  ASSERT_TRUE(save_browser_state(data_dir, sample_state()));
  const fs::path path = browser_state_path(data_dir);
  EXPECT_EQ(path, data_dir / "browser" / "state.json");
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(path.parent_path().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0700u);

  const Result<std::optional<BrowserState>> loaded = load_browser_state(data_dir);
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  ASSERT_TRUE(*loaded);
  EXPECT_EQ(**loaded, sample_state());

  BrowserState changed = sample_state();
  changed.threads.erase("019a-thread-b");
  ASSERT_TRUE(save_browser_state(data_dir, changed));
  EXPECT_EQ(**load_browser_state(data_dir), changed);
  for (const auto& entry : fs::directory_iterator(path.parent_path())) {
    EXPECT_EQ(entry.path().filename(), "state.json") << "no temporary left behind";
  }
}

TEST(BrowserStateFileTest, ADamagedFileIsReportedAndTheNextSaveReplacesIt) {
  testing::TempDir dir;
  const fs::path path = browser_state_path(dir.path());
  write_text(path, "{\"version\": 1, \"profile\": \"\", \"thr");
  const Result<std::optional<BrowserState>> loaded = load_browser_state(dir.path());
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), codes::kBrowserStateFileDamaged);
  EXPECT_NE(loaded.error().message().find("ignores it"), std::string::npos) << loaded.error().message();

  ASSERT_TRUE(save_browser_state(dir.path(), sample_state()));
  const Result<std::optional<BrowserState>> again = load_browser_state(dir.path());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(**again, sample_state());
}

TEST(BrowserStateFileTest, AFileOthersCanReadIsNotTrusted) {
  testing::TempDir dir;
  const fs::path path = browser_state_path(dir.path());
  write_text(path, encode_browser_state(sample_state()), 0644);
  const Result<std::optional<BrowserState>> loaded = load_browser_state(dir.path());
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), codes::kBrowserStateFileUnsafe);
}

TEST(BrowserStateFileTest, ASymlinkIsNeitherReadNorFollowedOnSave) {
  testing::TempDir dir;
  const fs::path target = dir.path() / "elsewhere.json";
  write_text(target, encode_browser_state(sample_state()));
  const fs::path path = browser_state_path(dir.path());
  fs::create_directories(path.parent_path());
  fs::create_symlink(target, path);
  const Result<std::optional<BrowserState>> loaded = load_browser_state(dir.path());
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), codes::kBrowserStateFileUnsafe);

  BrowserState empty;
  ASSERT_TRUE(save_browser_state(dir.path(), empty));
  EXPECT_FALSE(fs::is_symlink(path)) << "the save replaced the link";
  EXPECT_EQ(read_text(target), encode_browser_state(sample_state())) << "the link's target is untouched";
  EXPECT_EQ(**load_browser_state(dir.path()), empty);
}

TEST(BrowserStateFileTest, AnUnwritableFolderIsAnIoError) {
  // A data directory that is a regular file (mode bits would not stop root, which the tests may run as).
  testing::TempDir dir;
  write_text(dir.path() / "data", "not a directory");
  const Result<void> saved = save_browser_state(dir.path() / "data", sample_state());
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code(), codes::kBrowserStateFileIo);
}

}  // namespace
}  // namespace keel::browser
