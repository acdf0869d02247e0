#include "browser/origin_guard.h"

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

constexpr size_t kMaxUrlInMessage = 200;

// Where a URL is checked; each place lets through a little more than the one before (header comment).
enum class Stage { kRequested, kPaused, kCommitted };

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The URL as it may appear in a message and a tab's log: URLs come from pages (a data: URL can be megabytes,
// and may hold anything), while messages end up in JSON and terminals.
std::string printable_url(std::string_view url) {
  std::string out;
  for (size_t i = 0; i < url.size() && i < kMaxUrlInMessage; ++i) {
    const auto c = static_cast<unsigned char>(url[i]);
    out += (c > 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (url.size() > kMaxUrlInMessage) out += "...";
  return out;
}

// The lower-cased scheme (RFC 3986: a letter, then letters, digits, '+', '-', '.'); nullopt when the URL
// does not start with one.
std::optional<std::string> scheme_of(std::string_view url) {
  const size_t colon = url.find(':');
  if (colon == std::string_view::npos || colon == 0 || !is_alpha(url[0])) return std::nullopt;
  std::string scheme;
  for (char c : url.substr(0, colon)) {
    if (!(is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.')) return std::nullopt;
    scheme += ascii_lower(c);
  }
  return scheme;
}

// Whether `url` (of scheme "about") is about:<page>, optionally with a query or fragment (Chromium treats
// "about:blank#x" as about:blank).
bool is_about(std::string_view url, std::string_view page) {
  const std::string_view rest = url.substr(std::string_view("about:").size());
  if (!rest.starts_with(page)) return false;
  const std::string_view tail = rest.substr(page.size());
  return tail.empty() || tail.front() == '?' || tail.front() == '#';
}

// Why a scheme is never navigated to, for the model.
std::string scheme_reason(const std::string& scheme) {
  if (scheme == "data") return "data: URLs are never opened (the URL itself is the page, from anyone)";
  if (scheme == "javascript") return "javascript: URLs run code in the page; keel never navigates to them";
  if (scheme == "file" || scheme == "filesystem") {
    return scheme + ": URLs would open files of this machine or of the browser";
  }
  if (scheme == "blob") return "a blob: URL belongs to the page that made it; open the page instead";
  if (scheme == "chrome" || scheme == "chrome-extension" || scheme == "chrome-untrusted" ||
      scheme == "devtools" || scheme == "view-source" || scheme == "chrome-search" || scheme == "edge") {
    return scheme + ": pages belong to the browser itself, not to the web";
  }
  return "keel only opens http and https pages (and about:blank), not " + scheme + ": URLs";
}

GuardDecision allowed(std::string_view url, std::string origin) {
  GuardDecision decision;
  decision.allowed = true;
  decision.origin = std::move(origin);
  decision.url = printable_url(url);
  return decision;
}

GuardDecision refused(std::string_view url, RefusalRule rule, std::string reason, std::string origin = "") {
  GuardDecision decision;
  decision.rule = rule;
  decision.reason = std::move(reason);
  decision.origin = std::move(origin);
  decision.url = printable_url(url);
  return decision;
}

GuardDecision ask_policy(std::string_view url, const Origin& origin, const std::string& thread_id,
                         const OriginPolicy* policy) {
  std::string serialized = origin.to_string();
  if (policy != nullptr && !policy->allows_navigation(thread_id, serialized)) {
    std::string reason = "the policy does not allow " + serialized +
                         " for this thread (no host permission, or a rule denies it)";
    return refused(url, RefusalRule::kOriginDenied, std::move(reason), std::move(serialized));
  }
  return allowed(url, std::move(serialized));
}

// The rules of the header comment. `policy` is null where the policy is not asked (kRequested).
GuardDecision classify(std::string_view url, Stage stage, FrameKind frame, const std::string& thread_id,
                       const OriginPolicy* policy) {
  const std::optional<std::string> scheme = scheme_of(url);
  // "localhost:8080/x" reads as scheme "localhost"; it is a host and port written without a scheme.
  const bool host_and_port = scheme && url.size() > scheme->size() + 1 && is_digit(url[scheme->size() + 1]);
  if (!scheme || (host_and_port && !default_port(*scheme))) {
    return refused(url, RefusalRule::kBadUrl, "it has no scheme (expected e.g. https://example.com)");
  }
  if (*scheme == "http" || *scheme == "https") {
    Result<Origin> origin = parse_origin(url);
    if (!origin) return refused(url, RefusalRule::kBadUrl, origin.error().message());
    return ask_policy(url, *origin, thread_id, policy);
  }
  if (*scheme == "ws" || *scheme == "wss") {
    return refused(url, RefusalRule::kWebSocket, "a WebSocket URL is not a page");
  }
  if (*scheme == "about") {
    if (is_about(url, "blank")) return allowed(url, "");
    if (stage == Stage::kCommitted && frame == FrameKind::kSubframe && is_about(url, "srcdoc")) {
      return allowed(url, "");
    }
    return refused(url, RefusalRule::kAboutPage, "about: pages other than about:blank are not opened");
  }
  if (stage == Stage::kCommitted) {
    if (*scheme == "blob") {
      // util/origin.h gives a blob: URL the origin of the http(s) URL inside it, and refuses the others.
      Result<Origin> origin = parse_origin(url);
      if (!origin) {
        return refused(url, RefusalRule::kOpaqueBlob, "a blob: URL without an http(s) origin is not opened");
      }
      return ask_policy(url, *origin, thread_id, policy);
    }
    if (*scheme == "data" && frame == FrameKind::kSubframe) return allowed(url, "");
    if (*scheme == "chrome-error") return allowed(url, "");
  }
  return refused(url, RefusalRule::kScheme, scheme_reason(*scheme));
}

}  // namespace

std::string_view refusal_rule_name(RefusalRule rule) {
  switch (rule) {
    case RefusalRule::kBadUrl:
      return "bad_url";
    case RefusalRule::kScheme:
      return "scheme";
    case RefusalRule::kWebSocket:
      return "websocket";
    case RefusalRule::kAboutPage:
      return "about_page";
    case RefusalRule::kOpaqueBlob:
      return "opaque_blob";
    case RefusalRule::kOriginDenied:
      return "origin_denied";
  }
  return "scheme";
}

Error GuardDecision::error() const {
  std::string message = "navigation to " + url + " refused (rule " + std::string(refusal_rule_name(rule));
  if (!origin.empty()) message += ", origin " + origin;
  message += "): " + reason;
  return Error(codes::kBrowserNavigationRefused, std::move(message));
}

Result<RequestedNavigation> requested_navigation(std::string_view url) {
  const GuardDecision decision = classify(url, Stage::kRequested, FrameKind::kMainFrame, "", nullptr);
  if (!decision.allowed) return fail(decision.error());
  RequestedNavigation navigation;
  navigation.url = std::string(url);
  if (!decision.origin.empty()) {
    // classify() allowed an http(s) URL only after parse_origin accepted it.
    navigation.origin = *parse_origin(url);
  }
  return navigation;
}

GuardDecision decide_paused_request(const PausedDocumentRequest& request, const std::string& thread_id,
                                    const OriginPolicy& policy) {
  GuardDecision decision = classify(request.url, Stage::kPaused, request.frame, thread_id, &policy);
  // about:blank never reaches the network, so it never pauses; whatever pauses must be a web request.
  if (decision.allowed && decision.origin.empty()) {
    return refused(request.url, RefusalRule::kScheme, "only http and https requests are let through");
  }
  if (!decision.allowed) {
    const std::string_view what = request.redirect                        ? "a redirect hop"
                                  : request.frame == FrameKind::kSubframe ? "an iframe's document"
                                                                          : "a page's document";
    decision.reason = std::string(what) + ": " + decision.reason;
  }
  return decision;
}

GuardDecision check_committed_url(std::string_view url, FrameKind frame, const std::string& thread_id,
                                  const OriginPolicy& policy) {
  return classify(url, Stage::kCommitted, frame, thread_id, &policy);
}

}  // namespace keel::browser
