#include "browser/tools/register.h"

#include <utility>

#include "browser/tools/tool_runs.h"

namespace keel::browser {
namespace {

using nlohmann::json;

json tab_param() {
  return {{"type", "integer"}, {"minimum", 1}, {"description", "tab id (default: current tab)"}};
}
json ref_param() {
  return {{"type", "string"}, {"maxLength", 32}, {"description", "ref from the latest browser_snapshot"}};
}
json element_param() {
  return {{"type", "string"},
          {"maxLength", 200},
          {"description", "what the element is, in words (shown to the person approving)"}};
}

json object_schema(json properties, std::vector<std::string> required = {}) {
  json schema = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) schema["required"] = std::move(required);
  return schema;
}

BrowserToolEntry entry(std::string name, std::string label, std::string description, ToolLevel level,
                       ToolEffects effects, ToolRecovery recovery, TargetKind target, json parameters,
                       BrowserToolRun run) {
  BrowserToolEntry e;
  e.spec.name = std::move(name);
  e.spec.label = std::move(label);
  e.spec.description = std::move(description);
  e.spec.level = level;
  e.spec.effects = effects;
  e.spec.recovery = recovery;
  e.spec.parameters = std::move(parameters);
  e.target = target;
  e.run = run;
  return e;
}

}  // namespace

std::vector<BrowserToolEntry> browser_tool_table() {
  using L = ToolLevel;
  using E = ToolEffects;
  using R = ToolRecovery;
  using T = TargetKind;
  std::vector<BrowserToolEntry> table;
  // L0: reading the page.
  table.push_back(entry(
      "browser_snapshot", "Page snapshot",
      "Outline of the page: roles, names, values, states; refs (e12, f2e7) for other tools. Viewport first, "
      "bounded; scope with ref, depth or find.",
      L::kL0, E::kRead, R::kRetrySafe, T::kTab,
      object_schema({{"mode", {{"type", "string"}, {"enum", {"viewport", "full"}}}},
                     {"ref", ref_param()},
                     {"depth", {{"type", "integer"}, {"minimum", 0}, {"maximum", 100}}},
                     {"find", {{"type", "string"}, {"maxLength", 200}}},
                     {"max_chars", {{"type", "integer"}, {"minimum", 1000}, {"maximum", 200000}}},
                     {"tab", tab_param()}}),
      runs::snapshot));
  table.push_back(
      entry("browser_find_text", "Find text", "Find visible text on the page; returns snippets.", L::kL0,
            E::kRead, R::kRetrySafe, T::kTab,
            object_schema({{"text", {{"type", "string"}, {"minLength", 1}, {"maxLength", 500}}},
                           {"max_results", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}}},
                           {"tab", tab_param()}},
                          {"text"}),
            runs::find_text));
  table.push_back(
      entry("browser_read_text", "Read page text", "The page's visible text, in pages of max_chars.", L::kL0,
            E::kRead, R::kRetrySafe, T::kTab,
            object_schema({{"offset", {{"type", "integer"}, {"minimum", 0}}},
                           {"max_chars", {{"type", "integer"}, {"minimum", 100}, {"maximum", 50000}}},
                           {"tab", tab_param()}}),
            runs::read_text));
  table.push_back(entry("browser_list_tabs", "List tabs",
                        "This thread's tabs: id, URL, title, which is current.", L::kL0, E::kRead,
                        R::kRetrySafe, T::kNone, object_schema(json::object()), runs::list_tabs));
  table.push_back(entry(
      "browser_console", "Console messages", "The page's console messages and errors.", L::kL0, E::kRead,
      R::kRetrySafe, T::kTab,
      object_schema({{"level", {{"type", "string"}, {"enum", {"log", "info", "warning", "error", "debug"}}}},
                     {"since", {{"type", "integer"}, {"minimum", 0}}},
                     {"tab", tab_param()}}),
      runs::console));
  table.push_back(entry("browser_network", "Network log",
                        "The page's document, XHR and fetch requests, and failures.", L::kL0, E::kRead,
                        R::kRetrySafe, T::kTab,
                        object_schema({{"failed_only", {{"type", "boolean"}}},
                                       {"filter", {{"type", "string"}, {"maxLength", 200}}},
                                       {"tab", tab_param()}}),
                        runs::network));
  // L1: navigation.
  table.push_back(
      entry("browser_navigate", "Open page", "Open a URL (http, https) in the current tab (or a new one).",
            L::kL1, E::kWrite, R::kNeverRetry, T::kUrl,
            object_schema(
                {{"url", {{"type", "string"}, {"minLength", 1}, {"maxLength", 4096}}}, {"tab", tab_param()}},
                {"url"}),
            runs::navigate));
  table.push_back(entry("browser_back", "Go back", "Go back one page in the tab's history.", L::kL1,
                        E::kWrite, R::kNeverRetry, T::kTab, object_schema({{"tab", tab_param()}}),
                        runs::back));
  table.push_back(entry("browser_forward", "Go forward", "Go forward one page in the tab's history.", L::kL1,
                        E::kWrite, R::kNeverRetry, T::kTab, object_schema({{"tab", tab_param()}}),
                        runs::forward));
  table.push_back(entry("browser_reload", "Reload page", "Reload the tab's page.", L::kL1, E::kWrite,
                        R::kNeverRetry, T::kTab, object_schema({{"tab", tab_param()}}), runs::reload));
  table.push_back(
      entry("browser_wait_for", "Wait",
            "Wait until text appears (text) or disappears (text_gone), or the page settles.", L::kL1,
            E::kRead, R::kRetrySafe, T::kTab,
            object_schema({{"text", {{"type", "string"}, {"maxLength", 500}}},
                           {"text_gone", {{"type", "string"}, {"maxLength", 500}}},
                           {"timeout_ms", {{"type", "integer"}, {"minimum", 0}, {"maximum", 30000}}},
                           {"tab", tab_param()}}),
            runs::wait_for));
  // L1: acting on elements.
  table.push_back(entry(
      "browser_click", "Click", "Click an element by ref.", L::kL1, E::kWrite, R::kNeverRetry, T::kRef,
      object_schema({{"ref", ref_param()}, {"element", element_param()}, {"tab", tab_param()}}, {"ref"}),
      runs::click));
  table.push_back(entry("browser_type", "Type text",
                        "Replace a text field's value; submit: then submit its form.", L::kL1, E::kWrite,
                        R::kNeverRetry, T::kRef,
                        object_schema({{"ref", ref_param()},
                                       {"text", {{"type", "string"}, {"maxLength", 100000}}},
                                       {"submit", {{"type", "boolean"}}},
                                       {"element", element_param()},
                                       {"tab", tab_param()}},
                                      {"ref", "text"}),
                        runs::type));
  table.push_back(
      entry("browser_fill_form", "Fill form",
            "Fill several fields in one call (value: text; true/false for checkboxes; a list for selects), "
            "then click "
            "submit_ref if given.",
            L::kL1, E::kWrite, R::kNeverRetry, T::kRef,
            object_schema({{"fields",
                            {{"type", "array"},
                             {"minItems", 1},
                             {"maxItems", 100},
                             {"items", object_schema({{"ref", ref_param()},
                                                      {"value", {{"type", {"string", "boolean", "array"}}}}},
                                                     {"ref", "value"})}}},
                           {"submit_ref", ref_param()},
                           {"element", element_param()},
                           {"tab", tab_param()}},
                          {"fields"}),
            runs::fill_form));
  table.push_back(
      entry("browser_select_option", "Select option", "Select options of a select by label or value.", L::kL1,
            E::kWrite, R::kInspectFirst, T::kRef,
            object_schema({{"ref", ref_param()},
                           {"values", {{"type", "array"}, {"minItems", 1}, {"items", {{"type", "string"}}}}},
                           {"element", element_param()},
                           {"tab", tab_param()}},
                          {"ref", "values"}),
            runs::select_option));
  table.push_back(entry("browser_set_checked", "Check or uncheck",
                        "Check or uncheck a checkbox, radio or switch.", L::kL1, E::kWrite, R::kInspectFirst,
                        T::kRef,
                        object_schema({{"ref", ref_param()},
                                       {"checked", {{"type", "boolean"}}},
                                       {"element", element_param()},
                                       {"tab", tab_param()}},
                                      {"ref", "checked"}),
                        runs::set_checked));
  table.push_back(entry(
      "browser_hover", "Hover", "Move the pointer over an element.", L::kL1, E::kRead, R::kRetrySafe, T::kRef,
      object_schema({{"ref", ref_param()}, {"element", element_param()}, {"tab", tab_param()}}, {"ref"}),
      runs::hover));
  table.push_back(entry(
      "browser_scroll", "Scroll", "Scroll an element into view (ref) or the page (direction, amount px).",
      L::kL1, E::kRead, R::kRetrySafe, T::kTab,
      object_schema({{"ref", ref_param()},
                     {"direction", {{"type", "string"}, {"enum", {"up", "down", "left", "right"}}}},
                     {"amount", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100000}}},
                     {"tab", tab_param()}}),
      runs::scroll));
  table.push_back(
      entry("browser_press_key", "Press key",
            "Press a key or chord (Enter, Tab, Escape, ArrowDown, Control+A) on the focused element or ref.",
            L::kL1, E::kWrite, R::kNeverRetry, T::kTab,
            object_schema({{"key", {{"type", "string"}, {"minLength", 1}, {"maxLength", 64}}},
                           {"ref", ref_param()},
                           {"tab", tab_param()}},
                          {"key"}),
            runs::press_key));
  // L1: tabs and modal states.
  table.push_back(entry("browser_new_tab", "New tab",
                        "Open a new tab (at url, if given); it becomes current.", L::kL1, E::kWrite,
                        R::kNeverRetry, T::kUrl,
                        object_schema({{"url", {{"type", "string"}, {"maxLength", 4096}}}}), runs::new_tab));
  table.push_back(entry("browser_switch_tab", "Switch tab", "Make a tab the current one.", L::kL1, E::kRead,
                        R::kRetrySafe, T::kTab, object_schema({{"tab", tab_param()}}, {"tab"}),
                        runs::switch_tab));
  table.push_back(entry("browser_close_tab", "Close tab", "Close a tab (default: the current one).", L::kL1,
                        E::kWrite, R::kInspectFirst, T::kTab, object_schema({{"tab", tab_param()}}),
                        runs::close_tab));
  table.push_back(entry("browser_handle_dialog", "Answer dialog",
                        "Accept or dismiss the open alert/confirm/prompt/beforeunload dialog.", L::kL1,
                        E::kWrite, R::kNeverRetry, T::kTab,
                        object_schema({{"accept", {{"type", "boolean"}}},
                                       {"prompt_text", {{"type", "string"}, {"maxLength", 10000}}},
                                       {"tab", tab_param()}},
                                      {"accept"}),
                        runs::handle_dialog));
  table.push_back(
      entry("browser_upload_file", "Upload files",
            "Choose workspace files for the open file chooser (paths: [] cancels it).", L::kL1, E::kWrite,
            R::kNeverRetry, T::kTab,
            object_schema({{"paths",
                            {{"type", "array"},
                             {"maxItems", 20},
                             {"items", {{"type", "string"}, {"minLength", 1}, {"maxLength", 4096}}}}},
                           {"tab", tab_param()}},
                          {"paths"}),
            runs::upload_file));
  // L2: pixels and trusted input, through the tab's input session.
  json coordinate = {{"type", "number"}, {"minimum", 0}, {"maximum", 100000}};
  table.push_back(
      entry("browser_screenshot", "Screenshot",
            "Image of the viewport, of a ref's element (ref), or of the page (full_page).", L::kL2, E::kRead,
            R::kRetrySafe, T::kRefOrTab,
            object_schema({{"ref", ref_param()}, {"full_page", {{"type", "boolean"}}}, {"tab", tab_param()}}),
            runs::screenshot));
  table.back().spec.needs_vision = true;
  table.push_back(entry(
      "browser_mouse", "Mouse", "Trusted mouse input at viewport point x,y (CSS px) or at a ref's centre.",
      L::kL2, E::kWrite, R::kNeverRetry, T::kRefOrTab,
      object_schema({{"action", {{"type", "string"}, {"enum", {"click", "double_click", "move", "wheel"}}}},
                     {"ref", ref_param()},
                     {"x", coordinate},
                     {"y", coordinate},
                     {"button", {{"type", "string"}, {"enum", {"left", "middle", "right"}}}},
                     {"delta_x", {{"type", "number"}}},
                     {"delta_y", {{"type", "number"}}},
                     {"tab", tab_param()}},
                    {"action"}),
      runs::mouse));
  table.push_back(
      entry("browser_keyboard", "Keyboard",
            "Trusted keys to the focused element (ref: focus it first): keys (a chord or list: Control+A, "
            "Enter) or text.",
            L::kL2, E::kWrite, R::kNeverRetry, T::kRefOrTab,
            object_schema({{"keys",
                            {{"type", {"string", "array"}},
                             {"maxItems", 100},
                             {"items", {{"type", "string"}, {"minLength", 1}, {"maxLength", 64}}}}},
                           {"text", {{"type", "string"}, {"maxLength", 10000}}},
                           {"ref", ref_param()},
                           {"tab", tab_param()}}),
            runs::keyboard));
  table.push_back(entry("browser_drag", "Drag",
                        "Trusted drag with the left button, from a ref or point to a ref or point.", L::kL2,
                        E::kWrite, R::kNeverRetry, T::kRefOrTab,
                        object_schema({{"from_ref", ref_param()},
                                       {"from_x", coordinate},
                                       {"from_y", coordinate},
                                       {"to_ref", ref_param()},
                                       {"to_x", coordinate},
                                       {"to_y", coordinate},
                                       {"tab", tab_param()}}),
                        runs::drag));
  return table;
}

Result<void> register_browser_tools(ToolRegistry& registry, std::shared_ptr<BrowserRuntime> runtime) {
  for (BrowserToolEntry& e : browser_tool_table()) {
    auto tool = std::make_shared<BrowserTool>(runtime, std::move(e.spec), e.target, e.run);
    Result<std::shared_ptr<const ToolDescriptor>> registered = registry.register_tool(std::move(tool));
    if (!registered) return fail(registered.error());
  }
  return {};
}

}  // namespace keel::browser
