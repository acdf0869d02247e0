// browser/origin_guard.h — which URLs a browser tab may go to (issue 17 plan §0.4, §2 "Fetch guard").
//
// Origins are enforced twice: the gatekeeper decides every navigation the model asks for (a tool's
// resolve_target names the destination origin, from requested_navigation() below), and the browser itself
// pauses every document request (`Fetch.enable{patterns: [{resourceType: Document}]}` at browser level) so
// that a page cannot take a thread anywhere its policy denies: a link the page follows by itself, an
// iframe, every hop of a redirect. A third check runs after a frame committed (`Page.frameNavigated`),
// because some navigations never reach Fetch (data:, blob:, about:).
//
// The rules (an allow-list: a scheme not named here is refused):
//   - http and https URLs have an origin (util/origin.h: lower-cased, default port filled in, IPv4 only in
//     dotted-decimal form, hosts in punycode); the OriginPolicy decides on it;
//   - about:blank is always allowed (it is empty and has no origin to reach);
//   - after a commit only: blob: URLs whose inner origin the policy allows, about:srcdoc and data: in
//     subframes (their content comes from the embedding page, which was allowed, and they have an opaque
//     origin), and chrome-error: (the page Chromium shows for a request keel failed or the network lost);
//   - everything else is refused: data:, javascript:, file:, filesystem:, chrome:, chrome-extension:,
//     chrome-untrusted:, devtools:, view-source:, about: other than about:blank, blob: of an opaque or
//     denied origin, ws:/wss: (a WebSocket is not a page), and any unknown scheme; a URL whose origin cannot
//     be named (no scheme, userinfo, a non-ASCII host, "127.1", a bad port, whitespace) is refused too.
// Every refusal is browser.navigation_refused, and its message names the URL (cut and made printable), the
// origin when there is one, and the rule (refusal_rule_name()), so a model reading it knows what to do.
//
// Pure functions over values (OriginPolicy is asked through a reference that must outlive the call);
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "util/origin.h"

namespace keel::browser {

// The policy seam (plan §1.9): whether a thread's pages may go to an origin. The CLI implements it with the
// gatekeeper and refuses only what it denies (an `ask` verdict is for tool calls). Called on the browser's
// thread while a request waits: it must be quick and must not block on the browser.
class OriginPolicy {
 public:
  virtual ~OriginPolicy() = default;
  // `origin` is the canonical serialization ("https://example.com", "http://127.0.0.1:8080").
  virtual bool allows_navigation(const std::string& thread_id, const std::string& origin) const = 0;
};

// Why a navigation was refused.
enum class RefusalRule {
  kBadUrl,        // no origin can be read from the URL (see the header comment)
  kScheme,        // a scheme keel never navigates to (data:, javascript:, file:, chrome:, unknown, ...)
  kWebSocket,     // ws:/wss: as a navigation
  kAboutPage,     // about: other than about:blank (about:srcdoc only in a committed subframe)
  kOpaqueBlob,    // a blob: URL whose inner URL has no http(s) origin
  kOriginDenied,  // the OriginPolicy denied the origin
};

// "bad_url", "scheme", "websocket", "about_page", "opaque_blob", "origin_denied".
std::string_view refusal_rule_name(RefusalRule rule);

enum class FrameKind { kMainFrame, kSubframe };

// What the guard decided.
struct GuardDecision {
  bool allowed = false;
  std::string origin;  // the URL's origin when it has one ("" for about:blank, data:, ...)
  RefusalRule rule = RefusalRule::kScheme;  // when refused
  std::string reason;  // when refused: short, for reports ("no host permission for this origin")
  std::string url;     // the URL as it may appear in a message: cut to 200 bytes, printable ASCII

  // browser.navigation_refused naming the URL, the origin and the rule. Only for a refusal.
  Error error() const;
};

// A navigation the model asked for (browser_navigate, browser_new_tab): http, https or about:blank, nothing
// else, decided before any CDP call (data: URLs are invisible to Fetch). The policy is not asked: the
// gatekeeper decides on `origin` (the tool's target) before the call runs.
struct RequestedNavigation {
  std::string url;               // as given
  std::optional<Origin> origin;  // nullopt for about:blank
};
Result<RequestedNavigation> requested_navigation(std::string_view url);

// A document request paused by the browser-wide Fetch guard (`Fetch.requestPaused`).
struct PausedDocumentRequest {
  std::string url;                          // request.url
  bool redirect = false;                    // redirectedRequestId is set: a hop of a redirect chain
  FrameKind frame = FrameKind::kMainFrame;  // a tab's document, or an iframe's
};

// Continue (`Fetch.continueRequest`) or fail (`Fetch.failRequest{errorReason: "BlockedByClient"}`, and
// record the decision in the tab's log) a paused document request of `thread_id`'s tab. Only http and
// https requests reach the network, so only those are allowed, and only to origins the policy allows.
GuardDecision decide_paused_request(const PausedDocumentRequest& request, const std::string& thread_id,
                                    const OriginPolicy& policy);

// The check after a frame committed (`Page.frameNavigated`): a refused URL is replaced by about:blank
// (`Page.navigate{frameId, url: "about:blank"}`) and recorded. See the header comment for what passes.
GuardDecision check_committed_url(std::string_view url, FrameKind frame, const std::string& thread_id,
                                  const OriginPolicy& policy);

}  // namespace keel::browser
