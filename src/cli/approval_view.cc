#include "cli/approval_view.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "util/terminal_text.h"

namespace keel::cli {

using nlohmann::json;

namespace {

std::string string_field(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool offered(const json& request, const std::string& decision) {
  if (!request.contains("offers") || !request["offers"].is_array()) return decision != "acceptForSite";
  const json& offers = request["offers"];
  return std::find(offers.begin(), offers.end(), decision) != offers.end();
}

// Built by appending: inserting into the digits trips g++ 12's -Wrestrict false positive.
std::string with_commas(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string sizes(const json& change) {
  const auto size = [&](const char* key) -> std::optional<int64_t> {
    const auto it = change.find(key);
    if (it == change.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  const std::optional<int64_t> before = size("bytesBefore");
  const std::optional<int64_t> after = size("bytesAfter");
  if (before && after) return with_commas(*before) + " → " + with_commas(*after) + " bytes";
  if (after) return "new, " + with_commas(*after) + " bytes";
  if (before) return with_commas(*before) + " bytes now";
  return "";
}

// Each line of `text` as its own entry, prefixed.
void add_block(std::vector<std::string>& lines, const std::string& text, const std::string& prefix) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(prefix + visible_text(std::string_view(text).substr(start, end - start)));
    start = end + 1;
  }
}

// The lifetimes the request's remember offer lists, in its order; none without an offer.
std::vector<std::string> lifetimes(const json& request) {
  std::vector<std::string> out;
  const json remember = request.value("remember", json::object());
  if (remember.is_object() && remember.contains("lifetimes") && remember["lifetimes"].is_array()) {
    for (const json& l : remember["lifetimes"]) {
      if (l.is_string()) out.push_back(l.get<std::string>());
    }
  }
  return out;
}

struct LifetimeKey {
  const char* key;
  const char* lifetime;
  const char* label;   // on the choices line (kept short: it is the chat's input line)
  const char* phrase;  // on the remember line
};
constexpr LifetimeKey kLifetimeKeys[] = {{"t", "turn", "turn", "for this turn"},
                                         {"s", "session", "session", "until keel exits"},
                                         {"a", "untilRevoked", "until revoked", "until revoked"}};

}  // namespace

std::string visible_text(std::string_view text) { return terminal_safe(text, LineBreaks::kShow); }

std::vector<std::string> approval_lines(const json& request) {
  std::vector<std::string> lines;
  const json tool = request.value("tool", json::object());
  std::string name = visible_text(string_field(tool, "name"));
  if (name.empty()) name = "a tool";
  const std::string effects = string_field(tool, "effects");
  const json preview = request.value("preview", json(nullptr));
  std::string head = "? approve " + name + (effects.empty() ? "" : " (" + effects + ")");
  if (!preview.is_object()) {
    // Stored by a keel without previews: the arguments, whole.
    lines.push_back(head);
    add_block(lines,
              request.value("arguments", json::object()).dump(2, ' ', false, json::error_handler_t::replace),
              "  │ ");
  } else {
    const std::string action = string_field(preview, "action");
    if (!action.empty()) head += ": " + visible_text(action);
    lines.push_back(head);
    const std::string target = string_field(preview, "target");
    if (!target.empty()) lines.push_back("  target  " + visible_text(target));
    if (preview.value("sensitive", false)) {
      std::string reasons;
      for (const json& reason : preview.value("sensitiveReasons", json::array())) {
        if (!reason.is_string()) continue;
        reasons += (reasons.empty() ? "" : "; ") + visible_text(reason.get<std::string>());
      }
      lines.push_back("  !! SENSITIVE: " + (reasons.empty() ? std::string("look closely") : reasons));
    }
    const json change = preview.value("change", json::object());
    const std::string size_text = change.is_object() ? sizes(change) : "";
    const std::string format = string_field(change, "format");
    if (!size_text.empty() || (!format.empty() && format != "none")) {
      lines.push_back(
          "  change  " + (format.empty() || format == "none" ? std::string() : format) +
          (size_text.empty() ? "" : (format.empty() || format == "none" ? "" : ", ") + size_text));
    }
    add_block(lines, string_field(change, "text"), "  │ ");
  }
  const std::string reason = string_field(request, "reason");
  if (!reason.empty()) lines.push_back("  why     " + visible_text(reason));
  return lines;
}

std::string approval_text(const json& request) {
  std::string text;
  for (const std::string& line : approval_lines(request)) text += line + "\n";
  return text;
}

std::vector<std::string> approval_choice_lines(const json& request) {
  std::vector<std::string> lines;
  if (!offered(request, "acceptForSite")) {
    lines.push_back("[y] accept  [n] decline");
    return lines;
  }
  const json remember = request.value("remember", json(nullptr));
  const std::vector<std::string> offered_lifetimes = lifetimes(request);
  if (!remember.is_object() || offered_lifetimes.empty()) {
    lines.push_back("[y] accept  [s] accept for this site  [n] decline");
    return lines;
  }
  std::string remember_line = "or remember: " + visible_text(string_field(remember, "text")) + " —";
  std::string choices = "[y] once";
  bool first = true;
  for (const LifetimeKey& k : kLifetimeKeys) {
    if (std::find(offered_lifetimes.begin(), offered_lifetimes.end(), k.lifetime) == offered_lifetimes.end())
      continue;
    remember_line += std::string(first ? " " : ", ") + k.phrase + " [" + k.key + "]";
    choices += std::string("  [") + k.key + "] " + k.label;
    first = false;
  }
  choices += "  [n] decline";
  lines.push_back(remember_line);
  lines.push_back(choices);
  return lines;
}

std::optional<json> approval_answer(const json& request, std::string_view key) {
  std::string k(key);
  std::transform(k.begin(), k.end(), k.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (k == "y" || k == "yes") return json{{"decision", "accept"}};
  if (k == "n" || k == "no") return json{{"decision", "decline"}};
  if (!offered(request, "acceptForSite")) return std::nullopt;
  const std::vector<std::string> offered_lifetimes = lifetimes(request);
  if (offered_lifetimes.empty() || !request.value("remember", json(nullptr)).is_object()) {
    if (k == "s") return json{{"decision", "acceptForSite"}};
    return std::nullopt;
  }
  for (const LifetimeKey& lk : kLifetimeKeys) {
    if (k != lk.key) continue;
    if (std::find(offered_lifetimes.begin(), offered_lifetimes.end(), lk.lifetime) == offered_lifetimes.end())
      return std::nullopt;
    return json{{"decision", "acceptForSite"}, {"remember", lk.lifetime}};
  }
  return std::nullopt;
}

}  // namespace keel::cli
