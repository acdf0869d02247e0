// keel demo --browser end to end: the binary run as a person runs it, with the shipped script against the
// shipped shop in a real Chromium. The script's refs are fixed (the shop's pages do not change, ref counters
// start at 1), so a change of the snapshot format that moves them makes a step click or fill the wrong
// element: the test names the first step the shop did not see.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "browser/browser_test_support.h"
#include "cli/demo.h"
#include "keel_process.h"
#include "model_server/script.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

namespace fs = std::filesystem;

const fs::path kBrowserDemoFiles = fs::path(KEEL_DEMO_FILES) / "browser";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The demo puts the shop's origin in for {{site}}; the script must parse with any origin there.
TEST(DemoBrowser, ShippedScriptParsesAndIsLabelledScripted) {
  const nlohmann::json raw = nlohmann::json::parse(read_text(kBrowserDemoFiles / "script.json"));
  EXPECT_NE(raw.at("comment").dump().find("SCRIPTED"), std::string::npos);
  EXPECT_NE(raw.at("comment").dump().find("not an AI"), std::string::npos);
  auto script = model_server::parse_script(raw);
  ASSERT_TRUE(script.has_value()) << script.error().to_string();
  EXPECT_FALSE(script->responses.empty());
}

TEST(DemoBrowser, OrdersFromTheShopWithOneApprovalAndReadsTheResultBack) {
  testing::TempDir dir;
  const e2e::KeelRun run = e2e::run_keel(KEEL_BINARY, {"demo", "--browser", "--dir", dir.file("demo")}, "",
                                         std::chrono::seconds(180));
  if (run.out.find("browser.launch_failed") != std::string::npos) {
    if (browser::testing::chromium_required()) FAIL() << "Chromium cannot start: " << run.out << run.err;
    GTEST_SKIP() << "Chromium cannot start: " << run.out;
  }
  EXPECT_NE(run.out.find("SCRIPTED"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("not an AI"), std::string::npos) << run.out;

  // The shop's request log, as the demo prints it: each step's line is ticked when its page was loaded.
  const char* const steps[] = {"opened the shop", "searched for \"lamp\"", "opened the desk lamp's page",
                               "opened its order form",
                               "placed the order (form submitted, confirmation accepted)"};
  for (const char* step : steps) {
    if (run.out.find(std::string("[x] ") + step) == std::string::npos) {
      const bool no_browser_tools = run.out.find("no tool named 'browser_navigate'") != std::string::npos;
      ADD_FAILURE() << "the first step the shop did not see: " << step
                    << (no_browser_tools ? " (the engine offers no browser tools: EngineHost registers them "
                                           "when [browser] is enabled)"
                                         : "")
                    << (std::string(step).find("placed the order") == 0
                            ? " (browser_fill_form's submit, then browser_handle_dialog on the confirm "
                              "dialog: needs the modal tracking of TabState::modal)"
                            : "")
                    << "\n"
                    << run.out << run.err;
      break;
    }
  }
  // Exactly the submit asked, and the demo said it approved it.
  EXPECT_NE(run.out.find("? approve browser_fill_form"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("demo: approving on your behalf"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(": 1 approval\n"), std::string::npos) << run.out;
  // The result page, read back by browser_read_text and reported by the scripted model only when it saw it.
  EXPECT_NE(run.out.find("KS-1042"), std::string::npos) << run.out;
  EXPECT_EQ(run.status, 0) << run.out << run.err;
}

}  // namespace
}  // namespace keel
