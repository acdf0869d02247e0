// model_server/sse_test_support.h — reading back what the server writes, for the model server's tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model_server/wire_encoder.h"

namespace keel::model_server::testing {

struct SseEvent {
  std::string name;  // "" when the event has no `event:` line
  std::string data;
  bool is_json() const { return nlohmann::json::accept(data); }
  nlohmann::json json() const { return nlohmann::json::parse(data); }
};

// Splits an SSE body into events (comments dropped; data lines joined with "\n"; CRLF not expected here).
inline std::vector<SseEvent> parse_sse(std::string_view body) {
  std::vector<SseEvent> events;
  while (!body.empty()) {
    const size_t end = body.find("\n\n");
    const std::string_view block = body.substr(0, end);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 2);
    SseEvent event;
    bool any = false;
    std::string_view rest = block;
    while (!rest.empty()) {
      const size_t newline = rest.find('\n');
      const std::string_view line = rest.substr(0, newline);
      rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
      if (line.starts_with("event: ")) {
        event.name = line.substr(7);
        any = true;
      } else if (line.starts_with("data: ")) {
        if (!event.data.empty()) event.data += "\n";
        event.data += line.substr(6);
        any = true;
      }
    }
    if (any) events.push_back(std::move(event));
  }
  return events;
}

// Every byte a rendered stream writes, in order.
inline std::string written_bytes(const RenderedResponse& response) {
  std::string out;
  for (const Action& action : response.actions) {
    if (action.kind == Action::Kind::kWrite) out += action.bytes;
  }
  return out;
}

}  // namespace keel::model_server::testing
