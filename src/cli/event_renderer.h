// cli/event_renderer.h — AgentEvents as a person reads them on a terminal, or as JSON lines for programs.
//
// The text renderer streams the assistant's text as it comes, shows each tool call with its arguments and
// each result (shortened to a few lines), steers as they enter the conversation, the queue, usage and cost,
// and how the turn ended, with a note when a reply may be incomplete (max_tokens, content_filter).
// Approval and interaction requests are left to the front end, which asks the person.
//
// The JSON renderer writes each event as one line: {"type","threadId","seq","payload"}.
// Not thread-safe: one renderer per output, fed from one thread.
#pragma once

#include <map>
#include <ostream>
#include <string>

#include "keel/protocol.h"

namespace keel::cli {

struct RenderStyle {
  bool color = false;           // ANSI colours (a terminal that is not dumb)
  bool show_reasoning = false;  // reasoning deltas, dimmed
  size_t result_lines = 6;      // lines of a tool result shown before "…"
};

class TextRenderer {
 public:
  TextRenderer(std::ostream& out, RenderStyle style) : out_(out), style_(style) {}
  void render(const AgentEvent& event);
  // Ends a line of streamed text, if one is open (before a prompt is printed).
  void break_line();

 private:
  void render_node(const nlohmann::json& node);
  std::string dim(const std::string& text) const;
  std::string bold(const std::string& text) const;

  std::ostream& out_;
  RenderStyle style_;
  bool mid_line_ = false;
  std::map<std::string, std::string> tool_names_;  // by tool call id
};

void render_json_line(std::ostream& out, const AgentEvent& event);

// Text of the content blocks in a node body's "content" (text blocks joined; images as "[image]").
std::string content_text(const nlohmann::json& content);
// `text` cut to `max_chars` (on a UTF-8 boundary) with "…" appended when cut.
std::string shorten(const std::string& text, size_t max_chars);
// A line telling how a turn ended, from turn.complete's payload ("completed", "interrupted", ...).
std::string describe_turn_end(const nlohmann::json& payload);

}  // namespace keel::cli
