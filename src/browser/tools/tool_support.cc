#include "browser/tools/tool_support.h"

#include <utility>

#include "browser/action_observer.h"
#include "browser/browser_errors.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser {
using builtin::valid_utf8;

using nlohmann::json;

std::optional<int64_t> int_arg(const json& params, const char* key) {
  if (!params.is_object()) return std::nullopt;
  auto it = params.find(key);
  if (it == params.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string string_arg(const json& params, const char* key) {
  if (!params.is_object()) return {};
  auto it = params.find(key);
  return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool bool_arg(const json& params, const char* key, bool fallback) {
  if (!params.is_object()) return fallback;
  auto it = params.find(key);
  return it != params.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

Result<int64_t> live_tab(BrowserThread& thread, const json& params, const ToolTarget& decided,
                         TabChecks checks) {
  Result<int64_t> tab_id = thread.tab(int_arg(params, "tab"));
  if (!tab_id) return tab_id;
  std::shared_ptr<BrowserConnection> connection = thread.connection();
  const TabState* tab = connection ? connection->tab(*tab_id) : nullptr;
  if (tab == nullptr || tab->closed) {
    return fail(codes::kBrowserNoSuchTab, "tab " + std::to_string(*tab_id) + " is closed");
  }
  if (tab->crashed) {
    return fail(codes::kBrowserTabCrashed,
                "tab " + std::to_string(*tab_id) + " crashed; browser_navigate reopens a page in it");
  }
  if (checks.modal_blocks) {
    Result<void> clear = check_no_modal(*tab);
    if (!clear) return fail(clear.error());
  }
  if (decided.origin && decided.tab_id == *tab_id && (!decided.frame_id || *decided.frame_id == 0)) {
    const FrameState* main = tab->main_frame();
    const std::string origin = main != nullptr ? main->origin : "";
    if (origin != *decided.origin) {
      return fail(codes::kBrowserTargetChanged, "tab " + std::to_string(*tab_id) + " is now at " +
                                                    (origin.empty() ? std::string("no origin") : origin) +
                                                    ", not at " + *decided.origin +
                                                    " as decided for this call; nothing was done");
    }
  }
  return tab_id;
}

Error action_failure(const ResolvedRef& ref, const json& result, std::string_view action) {
  const std::string reason = result.is_object() ? result.value("reason", std::string("unknown")) : "unknown";
  const std::string who = describe_ref(ref.record);
  if (reason == "covered") {
    std::string cover = "another element";
    if (result.contains("cover") && result["cover"].is_object()) {
      const json& c = result["cover"];
      cover = c.value("role", std::string("element"));
      const std::string name = c.value("name", std::string());
      if (!name.empty()) cover += " \"" + valid_utf8(name) + "\"";
    }
    return Error(codes::kBrowserElementCovered,
                 who + " is covered by " + cover + " at the point of the " + std::string(action) +
                     "; nothing was clicked. Close or move what covers it first.");
  }
  if (reason == "stale") {
    return Error(codes::kBrowserStaleRef, "Ref " + who +
                                              " no longer points at an element in the page. Take a new "
                                              "snapshot (browser_snapshot) and use its refs.");
  }
  if (reason == "origin") {
    return Error(codes::kBrowserTargetChanged,
                 "the frame of " + who + " is no longer at " + ref.origin + "; nothing was done");
  }
  std::string why = reason;
  if (reason == "not_visible") why = "it has no visible box on the page";
  if (reason == "disabled") why = "it is disabled";
  if (reason == "not_editable") why = "it is not a text field";
  if (reason == "not_checkable") why = "it is not a checkbox, radio or switch";
  if (reason == "not_select") why = "it is not a select";
  if (reason == "no_such_option") {
    why = "it has no such option";
    if (result.contains("options") && result["options"].is_array()) {
      std::string options;
      for (const json& option : result["options"]) {
        if (option.is_string() && options.size() < 400) {
          options += (options.empty() ? "" : ", ") + std::string("\"") +
                     valid_utf8(option.get<std::string>()) + "\"";
        }
      }
      why += " (options: " + options + ")";
    }
  }
  return Error(codes::kBrowserNotActionable, "cannot " + std::string(action) + " " + who + ": " + why);
}

ToolResult report_result(std::string text, json details) {
  return text_result(std::move(text), std::move(details));
}

}  // namespace keel::browser
