// The browser tool table: its schemas stay small enough to send with every request, and every tool's level,
// effects and recovery class are those of the plan's table (issue 17 plan §1.7, docs/browser.md "Tools").
#include "browser/tools/register.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

namespace keel::browser {
namespace {

using nlohmann::json;

TEST(BrowserToolTable, AllSchemasTogetherStayWithinTwelveKilobytes) {
  size_t bytes = 0;
  for (const BrowserToolEntry& e : browser_tool_table()) {
    json tool = {
        {"name", e.spec.name}, {"description", e.spec.description}, {"parameters", e.spec.parameters}};
    bytes += tool.dump().size();
  }
  RecordProperty("schema_bytes", static_cast<int>(bytes));
  EXPECT_LE(bytes, 12u * 1024u);
}

TEST(BrowserToolTable, LevelsEffectsAndRecoveryAreThoseOfThePlan) {
  using L = ToolLevel;
  using E = ToolEffects;
  using R = ToolRecovery;
  const std::map<std::string, std::tuple<L, E, R>> plan = {
      {"browser_snapshot", {L::kL0, E::kRead, R::kRetrySafe}},
      {"browser_find_text", {L::kL0, E::kRead, R::kRetrySafe}},
      {"browser_read_text", {L::kL0, E::kRead, R::kRetrySafe}},
      {"browser_list_tabs", {L::kL0, E::kRead, R::kRetrySafe}},
      {"browser_console", {L::kL0, E::kRead, R::kRetrySafe}},
      {"browser_network", {L::kL0, E::kRead, R::kRetrySafe}},
      {"browser_navigate", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_back", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_forward", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_reload", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_click", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_type", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_fill_form", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_select_option", {L::kL1, E::kWrite, R::kInspectFirst}},
      {"browser_set_checked", {L::kL1, E::kWrite, R::kInspectFirst}},
      {"browser_hover", {L::kL1, E::kRead, R::kRetrySafe}},
      {"browser_scroll", {L::kL1, E::kRead, R::kRetrySafe}},
      {"browser_press_key", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_new_tab", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_switch_tab", {L::kL1, E::kRead, R::kRetrySafe}},
      {"browser_close_tab", {L::kL1, E::kWrite, R::kInspectFirst}},
      {"browser_handle_dialog", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_upload_file", {L::kL1, E::kWrite, R::kNeverRetry}},
      {"browser_wait_for", {L::kL1, E::kRead, R::kRetrySafe}},
      {"browser_screenshot", {L::kL2, E::kRead, R::kRetrySafe}},
      {"browser_mouse", {L::kL2, E::kWrite, R::kNeverRetry}},
      {"browser_keyboard", {L::kL2, E::kWrite, R::kNeverRetry}},
      {"browser_drag", {L::kL2, E::kWrite, R::kNeverRetry}},
  };
  std::map<std::string, std::tuple<L, E, R>> table;
  for (const BrowserToolEntry& e : browser_tool_table()) {
    ASSERT_TRUE(e.spec.recovery.has_value()) << e.spec.name;
    table[e.spec.name] = {e.spec.level, e.spec.effects, *e.spec.recovery};
    EXPECT_EQ(e.spec.needs_vision, e.spec.name == "browser_screenshot") << e.spec.name;
  }
  EXPECT_EQ(table, plan);
}

}  // namespace
}  // namespace keel::browser
