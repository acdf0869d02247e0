#include "cli/event_renderer.h"

#include <sstream>

#include "util/utf8.h"

namespace keel::cli {

using nlohmann::json;

std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) return text;
  for (const json& block : content) {
    const std::string type = block.value("type", "");
    if (type == "text") {
      if (!text.empty() && text.back() != '\n') text += "\n";
      text += block.value("text", "");
    } else if (type == "image") {
      text += "[image]";
    }
  }
  return text;
}

std::string shorten(const std::string& text, size_t max_chars) {
  if (text.size() <= max_chars) return text;
  return text.substr(0, utf8_prefix_length(text, max_chars)) + "…";
}

std::string describe_turn_end(const json& payload) {
  const std::string reason = payload.value("stopReason", "");
  if (reason == "end") return "completed";
  if (reason == "max_tokens") return "stopped at the model's output limit — the reply may be incomplete";
  if (reason == "content_filter")
    return "stopped by the provider's content filter — the reply may be incomplete";
  if (reason == "interrupted") return "interrupted";
  if (reason == "budget_pause") return "paused: the turn's token budget is spent (resume to continue)";
  if (reason == "error") {
    const json& error = payload.contains("error") ? payload["error"] : json::object();
    return "failed: " + error.value("code", "error") + ": " + error.value("message", "");
  }
  return reason.empty() ? "ended" : reason;
}

std::string TextRenderer::dim(const std::string& text) const {
  return style_.color ? "\x1b[2m" + text + "\x1b[0m" : text;
}

std::string TextRenderer::bold(const std::string& text) const {
  return style_.color ? "\x1b[1m" + text + "\x1b[0m" : text;
}

void TextRenderer::break_line() {
  if (mid_line_) out_ << "\n";
  mid_line_ = false;
  out_.flush();
}

void TextRenderer::render(const AgentEvent& event) {
  const json& p = event.payload;
  if (event.type == "item.delta") {
    if (p.contains("text")) {
      const std::string text = p["text"].get<std::string>();
      out_ << text;
      if (!text.empty()) mid_line_ = text.back() != '\n';
    } else if (p.contains("reasoning") && style_.show_reasoning) {
      out_ << dim(p["reasoning"].get<std::string>());
      mid_line_ = true;
    }
    out_.flush();
    return;
  }
  if (event.type == "item.complete") {
    if (p.contains("node")) render_node(p["node"]);
  } else if (event.type == "turn.start") {
    if (p.value("recovered", false)) {
      break_line();
      out_ << dim("(resumed after a restart)") << "\n";
    } else if (p.value("resumed", false)) {
      break_line();
      out_ << dim("(turn resumed)") << "\n";
    }
  } else if (event.type == "queue.updated") {
    if (p.value("held", false)) {
      break_line();
      out_ << "queue held: " << p["error"].value("message", "") << "\n";
    } else if (p.contains("items")) {
      break_line();
      out_ << dim("queue: " + std::to_string(p["items"].size()) + " waiting") << "\n";
    }
  } else if (event.type == "run.uncertain") {
    break_line();
    out_ << "! " << p.value("name", "a tool")
         << " was running when keel stopped; whether it took effect is unknown "
         << "(resolve with retry, mark_done or fail)\n";
  } else if (event.type == "turn.complete") {
    break_line();
    std::string line = "— " + describe_turn_end(p);
    if (p.contains("usage")) {
      const json& usage = p["usage"];
      line += " · " + std::to_string(usage.value("inputTokens", 0)) + " in / " +
              std::to_string(usage.value("outputTokens", 0)) + " out tokens";
      if (usage.contains("costUsd")) {
        std::ostringstream cost;
        cost.precision(4);
        cost << std::fixed << usage["costUsd"].get<double>();
        line += " · $" + cost.str();
      }
    }
    out_ << dim(line) << "\n";
  }
  out_.flush();
}

void TextRenderer::render_node(const json& node) {
  const std::string kind = node.value("kind", "");
  const json& body = node.contains("body") ? node["body"] : json::object();
  if (kind == "assistant_message") {
    break_line();
  } else if (kind == "tool_call") {
    break_line();
    const std::string name = body.value("name", "?");
    tool_names_[body.value("toolCallId", "")] = name;
    out_ << bold("→ " + name) << " " << dim(shorten(body.value("arguments", json::object()).dump(), 200))
         << "\n";
  } else if (kind == "tool_result") {
    break_line();
    auto it = tool_names_.find(body.value("toolCallId", ""));
    const std::string name = it == tool_names_.end() ? "result" : it->second;
    std::istringstream lines(content_text(body.value("content", json::array())));
    std::string shown;
    size_t count = 0;
    for (std::string line; std::getline(lines, line);) {
      if (count++ < style_.result_lines) shown += "  " + shorten(line, 160) + "\n";
    }
    if (count > style_.result_lines)
      shown += "  … (" + std::to_string(count - style_.result_lines) + " more lines)\n";
    out_ << (body.value("isError", false) ? "✗ " : "← ") << name << "\n" << dim(shown);
  } else if (kind == "user_message" && body.value("steered", false)) {
    break_line();
    out_ << "↳ steer: " << shorten(content_text(body.value("content", json::array())), 300) << "\n";
  } else if (kind == "notice") {
    break_line();
    out_ << dim("note: " + body.value("text", "")) << "\n";
  } else if (kind == "compaction") {
    break_line();
    out_ << dim("(earlier history summarized to fit the model's window)") << "\n";
  } else if (kind == "approval_decision") {
    break_line();
    out_ << dim("approval: " + body.value("decision", "")) << "\n";
  }
}

void render_json_line(std::ostream& out, const AgentEvent& event) {
  out << event.to_json().dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  out.flush();
}

}  // namespace keel::cli
