// browser/tools/tool_support.h — small pieces every browser_* tool's op uses: argument readers, the tab a
// call acts on (refusing a blocked, crashed or moved one), page-script results mapped to coded errors.
//
// Runtime thread only (they read the connection's tab state).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "browser/browser_runtime.h"
#include "browser/ref_resolver.h"
#include "keel/cancellation.h"
#include "keel/error.h"
#include "keel/tool.h"

namespace keel::browser {

std::optional<int64_t> int_arg(const nlohmann::json& params, const char* key);
std::string string_arg(const nlohmann::json& params, const char* key);
bool bool_arg(const nlohmann::json& params, const char* key, bool fallback);

struct TabChecks {
  bool modal_blocks = true;  // an open dialog or file chooser is browser.modal_open
};

// The tab the call acts on (its `tab` argument or the thread's current tab), alive, not blocked by a modal
// (unless allowed), and — when the decided target names an origin and the call's frame is the main frame —
// still at that origin (browser.target_changed).
Result<int64_t> live_tab(BrowserThread& thread, const nlohmann::json& params, const ToolTarget& decided,
                         TabChecks checks);

// Cancelled when either the call is (interrupt) or the page blocks (a dialog opened, the tab crashed): the
// cancellation of a command an action sends to the page.
struct CallOrBlocked {
  CancellationSource source;
  CancellationRegistration by_call;
  CancellationRegistration by_page;
  CallOrBlocked(const CancellationToken& call, const CancellationToken& page) {
    CancellationSource on_call = source;
    CancellationSource on_page = source;
    by_call = call.on_cancel([on_call]() mutable { on_call.cancel("interrupted"); });
    by_page = page.on_cancel([on_page]() mutable { on_page.cancel("the page is blocked"); });
  }
};

// Maps a failed page-script action ({ok: false, reason, ...}) to its coded error, naming the ref.
Error action_failure(const ResolvedRef& ref, const nlohmann::json& result, std::string_view action);

// The result of an action: the report text and its details.
ToolResult report_result(std::string text, nlohmann::json details);

}  // namespace keel::browser
