// cli/approval_view.h — how every terminal front end (keel run, resume, chat, demo) shows an approval
// request and reads the person's answer.
//
// What it guarantees (docs/security.md, "What the approver sees"): the target comes first and whole (the
// absolute path, the origin, the MCP server), a sensitive target is marked on a line of its own, then the
// change (a diff or an excerpt that keeps the end of the text, with the sizes), then why keel asks. The
// choices name what a remembered decision would cover (the tool, the thread, the workspace) and for how
// long. Everything shown from the request has its control characters made visible (^[, ^M, \u009b), so a
// file's content cannot redraw the prompt. A request stored by an older keel (no preview) is shown with
// its arguments.
//
// Pure functions over the approval.request payload; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::cli {

// The lines that describe the request (without '\n'), the first one "? approve <tool> (<effects>): …".
std::vector<std::string> approval_lines(const nlohmann::json& request);
// The same lines joined with '\n' (with a final '\n').
std::string approval_text(const nlohmann::json& request);
// The choices; the last line is the one to answer ("[y] once  [t] turn  [s] session  [a] until revoked
// [n] decline", or "[y] accept  [n] decline"). When acceptForSite is offered it is preceded by a line naming
// what would be remembered and for how long ("or remember: write_file (write) on this machine, in this
// thread (T), in the workspace /w — for this turn [t], until keel exits [s], until revoked [a]").
std::vector<std::string> approval_choice_lines(const nlohmann::json& request);
// The approval.response params ({decision, remember?}) for the key the person typed ("y", "t", "s", "a",
// "n"), or nullopt when the key is not one of the choices.
std::optional<nlohmann::json> approval_answer(const nlohmann::json& request, std::string_view key);

// `text` on one line, as terminal_safe() shows it (line breaks as "^J"): for text inside an approval.
std::string visible_text(std::string_view text);

}  // namespace keel::cli
