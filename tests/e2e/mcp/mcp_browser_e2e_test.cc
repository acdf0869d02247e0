// keel mcp-server --browser through the real binary, as an MCP client sees it: the browser_* tools in
// tools/list, a navigation and a snapshot of a page served by StaticSite, a click on a snapshot's ref that
// runs with --allow-writes and is refused without it, and a navigation to an origin keel has no host
// permission for, refused by the gatekeeper. One
// Chromium per keel process (the server launches it lazily); when it cannot start, the tests skip (or fail
// under KEEL_REQUIRE_CHROMIUM=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "browser/browser_test_support.h"
#include "cli/engine_host.h"
#include "keel/clock.h"
#include "keel/ids.h"
#include "keel_process.h"
#include "model_server/static_site.h"
#include "policy/policy_gatekeeper.h"
#include "testing/temp_dir.h"

namespace keel::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json request(int id, const std::string& method, json params) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json call(int id, const std::string& tool, json arguments) {
  return request(id, "tools/call", {{"name", tool}, {"arguments", std::move(arguments)}});
}

// The ref a snapshot gave the line that contains `what` (`link "Forms"`), or "" when none does.
std::string ref_of(const std::string& snapshot, const std::string& what) {
  const std::regex line("^[ -]*((?:f[0-9]+)?e[0-9]+) (.*)$");
  std::istringstream lines(snapshot);
  for (std::string text; std::getline(lines, text);) {
    std::smatch match;
    if (std::regex_match(text, match, line) && match[2].str().find(what) != std::string::npos)
      return match[1].str();
  }
  return "";
}

// The text of a CallToolResult's content blocks, joined.
std::string text_of(const json& result) {
  std::string text;
  if (!result.contains("content")) return text;
  for (const json& block : result["content"]) {
    if (block.value("type", "") == "text") text += block.value("text", "") + "\n";
  }
  return text;
}

class McpBrowserEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    auto site = model_server::StaticSite::start(
        model_server::StaticSiteOptions{.root = KEEL_BROWSER_PAGES, .listeners = 2});
    ASSERT_TRUE(site) << site.error().to_string();
    site_ = std::move(*site);
    fs::create_directories(workspace());
    std::ofstream(config_file()) << "data_dir = \"" << dir_.file("data") << "\"\n";
  }

  fs::path workspace() const { return dir_.path() / "ws"; }
  std::string config_file() const { return dir_.file("config.toml"); }
  // The page's origin, and another site served from the same folder (localhost, the second listener).
  std::string allowed_origin() const { return site_->origin(0); }
  std::string other_origin() const { return site_->origin(1, "localhost"); }

  // A policy change written into the store before keel opens it, as the same op from a client of keel's
  // engine would write it.
  void change_policy(const std::string& method, const json& params) {
    config::Config config;
    config.data_dir = dir_.file("data");
    config.store_path = config.data_dir / "keel.db";
    auto store = cli::open_store(config, /*exclusive=*/true);
    ASSERT_TRUE(store) << store.error().to_string();
    SystemClock clock;
    UuidV7Source ids{clock};
    auto gatekeeper = PolicyGatekeeper::open(*store->store, clock, ids, PolicyMode::kAskWrites);
    ASSERT_TRUE(gatekeeper) << gatekeeper.error().to_string();
    auto tx = store->store->begin(TxMode::kWrite);
    ASSERT_TRUE(tx) << tx.error().to_string();
    auto change = (*gatekeeper)->write_change(**tx, method, params);
    ASSERT_TRUE(change) << change.error().to_string();
    ASSERT_TRUE((*tx)->commit());
  }

  std::unique_ptr<KeelProcess> start_keel(bool allow_writes) {
    std::vector<std::string> args = {"--config",  config_file(), "mcp-server",
                                     "--browser", "--workspace", workspace().string()};
    if (allow_writes) args.push_back("--allow-writes");
    auto keel = std::make_unique<KeelProcess>(KEEL_BINARY, args);
    EXPECT_TRUE(keel->started());
    send(*keel, request(1, "initialize",
                        {{"protocolVersion", "2025-11-25"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "e2e"}, {"version", "1"}}}}));
    EXPECT_FALSE(answer(*keel, 1).is_null());
    send(*keel, json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return keel;
  }

  static void send(KeelProcess& keel, const json& message) { keel.write_stdin(message.dump() + "\n"); }

  // Waits for the JSON line on stdout that answers `id` (the server writes an object's keys sorted, so
  // the line starts with its id); null (and a failure) when none comes.
  static json answer(KeelProcess& keel, int id) {
    const std::string marker = "{\"id\":" + std::to_string(id) + ",";
    if (keel.wait_stdout_line(marker, std::chrono::seconds(90))) {
      std::istringstream lines(keel.out());
      for (std::string text; std::getline(lines, text);) {
        if (text.rfind(marker, 0) != 0) continue;
        const json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (!message.is_discarded()) return message;
      }
    }
    ADD_FAILURE() << "no answer to " << id << " in:\n" << keel.out() << "\nstderr:\n" << keel.err();
    return json();
  }

  // Runs one tools/call and returns its CallToolResult. Skips the test (or fails it, under
  // KEEL_REQUIRE_CHROMIUM=1) when the browser could not be launched.
  json call_tool(KeelProcess& keel, int id, const std::string& tool, json arguments) {
    send(keel, call(id, tool, std::move(arguments)));
    const json message = answer(keel, id);
    if (!message.contains("result")) {
      ADD_FAILURE() << "tools/call " << tool << " answered no result: " << message.dump();
      return json::object();
    }
    return message["result"];
  }

  static bool launch_failed(const json& result) {
    return result.value("isError", false) && result.contains("_meta") &&
           result["_meta"].value("keel/code", "") == "browser.launch_failed";
  }

  testing::TempDir dir_;
  std::unique_ptr<model_server::StaticSite> site_;
};

// Skips (or fails, under KEEL_REQUIRE_CHROMIUM=1) when the first browser call could not launch Chromium.
#define KEEL_SKIP_IF_LAUNCH_FAILED(result)                                                \
  do {                                                                                    \
    if (launch_failed(result)) {                                                          \
      if (::keel::browser::testing::chromium_required()) {                                \
        FAIL() << "Chromium cannot start (KEEL_REQUIRE_CHROMIUM=1): " << text_of(result); \
      }                                                                                   \
      GTEST_SKIP() << "Chromium cannot start: " << text_of(result);                       \
    }                                                                                     \
  } while (false)

TEST_F(McpBrowserEndToEnd, ListsTheBrowserToolsAndRefusesANavigationWithoutAllowWrites) {
  auto keel = start_keel(/*allow_writes=*/false);
  send(*keel, request(2, "tools/list", json::object()));
  const json list = answer(*keel, 2);
  std::vector<std::string> names;
  for (const json& tool : list["result"]["tools"]) {
    names.push_back(tool["name"]);
    if (tool["name"] == "browser_snapshot") {
      EXPECT_EQ(tool["annotations"]["readOnlyHint"], true) << tool.dump();
      EXPECT_EQ(tool["annotations"]["openWorldHint"], true) << tool.dump();
    }
    if (tool["name"] == "browser_click") {
      EXPECT_EQ(tool["annotations"]["destructiveHint"], true) << tool.dump();
    }
  }
  for (const std::string expected : {"browser_snapshot", "browser_click", "browser_navigate", "read_file"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }

  // A navigation is a write that asks in ask_writes: without --allow-writes it is refused, not run.
  const json refused = call_tool(*keel, 3, "browser_navigate", {{"url", allowed_origin() + "/index.html"}});
  EXPECT_EQ(refused.value("isError", false), true) << refused.dump();
  EXPECT_EQ(refused["_meta"].value("keel/code", ""), "mcp.call_refused") << refused.dump();
  EXPECT_NE(text_of(refused).find("--allow-writes"), std::string::npos) << refused.dump();
  EXPECT_EQ(site_->requests().size(), 0u) << "the refused navigation loaded nothing";
  keel->close_stdin();
  EXPECT_EQ(keel->wait_exit(), 0) << keel->err();
}

TEST_F(McpBrowserEndToEnd, AllowWritesNavigatesSnapshotsAndClicksARef) {
  auto keel = start_keel(/*allow_writes=*/true);
  const json navigated = call_tool(*keel, 2, "browser_navigate", {{"url", allowed_origin() + "/index.html"}});
  KEEL_SKIP_IF_LAUNCH_FAILED(navigated);
  ASSERT_EQ(navigated.value("isError", true), false) << navigated.dump();

  const json snapshot = call_tool(*keel, 3, "browser_snapshot", json::object());
  ASSERT_EQ(snapshot.value("isError", true), false) << snapshot.dump();
  const std::string outline = text_of(snapshot);
  EXPECT_NE(outline.find("keel browser test pages"), std::string::npos) << outline;
  const std::string forms = ref_of(outline, "link \"Forms\"");
  ASSERT_NE(forms, "") << outline;

  const json clicked = call_tool(*keel, 4, "browser_click", {{"ref", forms}});
  ASSERT_EQ(clicked.value("isError", true), false) << clicked.dump();
  EXPECT_TRUE(site_->wait_for_request("/forms.html", std::chrono::seconds(30))) << clicked.dump();
  const json after = call_tool(*keel, 5, "browser_snapshot", json::object());
  EXPECT_NE(ref_of(text_of(after), "textbox \"Full name\""), "") << text_of(after);
  keel->close_stdin();
  EXPECT_EQ(keel->wait_exit(), 0) << keel->err();
}

TEST_F(McpBrowserEndToEnd, WithoutAllowWritesAClickTheRulesDoNotAllowIsRefusedAndNotRun) {
  // Navigations to the page's origin are allowed by a site rule; a click (a write) still asks.
  change_policy("policy.addRule",
                {{"scope", allowed_origin()}, {"tool", "browser_navigate"}, {"decision", "allow"}});
  auto keel = start_keel(/*allow_writes=*/false);
  const json navigated = call_tool(*keel, 2, "browser_navigate", {{"url", allowed_origin() + "/index.html"}});
  KEEL_SKIP_IF_LAUNCH_FAILED(navigated);
  ASSERT_EQ(navigated.value("isError", true), false) << navigated.dump();
  const json snapshot = call_tool(*keel, 3, "browser_snapshot", json::object());
  const std::string forms = ref_of(text_of(snapshot), "link \"Forms\"");
  ASSERT_NE(forms, "") << snapshot.dump();

  const json clicked = call_tool(*keel, 4, "browser_click", {{"ref", forms}});
  EXPECT_EQ(clicked.value("isError", false), true) << clicked.dump();
  EXPECT_EQ(clicked["_meta"].value("keel/code", ""), "mcp.call_refused") << clicked.dump();
  EXPECT_NE(text_of(clicked).find("--allow-writes"), std::string::npos) << clicked.dump();
  const std::vector<std::string> requests = site_->requests();
  EXPECT_EQ(std::count(requests.begin(), requests.end(), "/forms.html"), 0) << "the refused click ran";
  keel->close_stdin();
  EXPECT_EQ(keel->wait_exit(), 0) << keel->err();
}

TEST_F(McpBrowserEndToEnd, ANavigationToAnOriginWithoutHostPermissionIsRefused) {
  change_policy("policy.setHostPermissions", {{"patterns", json::array({allowed_origin()})}});
  auto keel = start_keel(/*allow_writes=*/true);
  const json navigated = call_tool(*keel, 2, "browser_navigate", {{"url", allowed_origin() + "/index.html"}});
  KEEL_SKIP_IF_LAUNCH_FAILED(navigated);
  ASSERT_EQ(navigated.value("isError", true), false) << navigated.dump();

  const json refused = call_tool(*keel, 3, "browser_navigate", {{"url", other_origin() + "/forms.html"}});
  EXPECT_EQ(refused.value("isError", false), true) << refused.dump();
  EXPECT_EQ(refused["_meta"].value("keel/code", ""), "mcp.call_refused") << refused.dump();
  EXPECT_NE(text_of(refused).find("host permission"), std::string::npos) << refused.dump();
  const std::vector<std::string> requests = site_->requests();
  EXPECT_EQ(std::count(requests.begin(), requests.end(), "/forms.html"), 0)
      << "the refused navigation loaded nothing";
  keel->close_stdin();
  EXPECT_EQ(keel->wait_exit(), 0) << keel->err();
}

}  // namespace
}  // namespace keel::e2e
