// model_server/script.cc — strict parsing of script files, every error naming where it is.
#include "model_server/script.h"

#include <fstream>
#include <set>
#include <sstream>

#include "model_server/model_server_errors.h"

namespace keel::model_server {

namespace {

using nlohmann::json;

std::unexpected<Error> bad(const std::string& where, const std::string& what) {
  return fail(codes::kModelServerBadScript, where + ": " + what);
}

// Every key of `object` must be in `allowed` ("comment" is always allowed, for notes in the file).
Result<void> known_keys(const json& object, const std::string& where,
                        std::initializer_list<const char*> allowed) {
  std::set<std::string> names(allowed.begin(), allowed.end());
  names.insert("comment");
  for (const auto& [key, value] : object.items()) {
    if (!names.contains(key)) return bad(where, "unknown key '" + key + "'");
  }
  return {};
}

Result<std::string> string_field(const json& object, const std::string& where, const char* key) {
  const json& value = object.at(key);
  if (!value.is_string()) return bad(where + "." + key, "must be a string");
  return value.get<std::string>();
}

Result<int64_t> integer_field(const json& object, const std::string& where, const char* key, int64_t min,
                              int64_t max) {
  const json& value = object.at(key);
  if (!value.is_number_integer()) return bad(where + "." + key, "must be an integer");
  const int64_t number = value.get<int64_t>();
  if (number < min || number > max) {
    return bad(where + "." + key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return number;
}

Result<std::optional<std::string>> optional_string(const json& object, const std::string& where,
                                                   const char* key) {
  if (!object.contains(key)) return std::optional<std::string>();
  return std::optional<std::string>(KEEL_TRY(string_field(object, where, key)));
}

Result<size_t> chunk_size(const json& step, const std::string& where) {
  if (!step.contains("chunk_size")) return size_t{0};
  return static_cast<size_t>(KEEL_TRY(integer_field(step, where, "chunk_size", 1, 1 << 30)));
}

Result<ScriptedToolCall> parse_call(const json& call, const std::string& where) {
  if (!call.is_object()) return bad(where, "must be an object");
  KEEL_TRY(known_keys(call, where, {"id", "name", "arguments"}));
  ScriptedToolCall out;
  if (!call.contains("name")) return bad(where, "a tool call needs a 'name'");
  out.name = KEEL_TRY(string_field(call, where, "name"));
  if (call.contains("id")) out.id = KEEL_TRY(string_field(call, where, "id"));
  if (call.contains("arguments")) {
    const json& arguments = call.at("arguments");
    // A string is sent as written (it may be deliberately broken JSON); anything else is serialized.
    out.arguments = arguments.is_string() ? arguments.get<std::string>() : arguments.dump();
  } else {
    out.arguments = "{}";
  }
  return out;
}

Result<Step> parse_step(const json& step, const std::string& where) {
  if (!step.is_object()) return bad(where, "a step must be an object");
  if (!step.contains("type") || !step.at("type").is_string())
    return bad(where, "a step needs a string 'type'");
  const std::string type = step.at("type").get<std::string>();
  Step out;
  if (type == "text" || type == "reasoning") {
    out.kind = type == "text" ? Step::Kind::kText : Step::Kind::kReasoning;
    if (type == "text") {
      KEEL_TRY(known_keys(step, where, {"type", "text", "chunk_size"}));
    } else {
      KEEL_TRY(known_keys(step, where, {"type", "text", "signature", "chunk_size"}));
    }
    if (!step.contains("text")) return bad(where, "a " + type + " step needs 'text'");
    out.text = KEEL_TRY(string_field(step, where, "text"));
    if (step.contains("signature")) out.signature = KEEL_TRY(string_field(step, where, "signature"));
    out.chunk_size = KEEL_TRY(chunk_size(step, where));
  } else if (type == "tool_calls") {
    out.kind = Step::Kind::kToolCalls;
    KEEL_TRY(known_keys(step, where, {"type", "calls", "chunk_size", "interleave"}));
    if (!step.contains("calls") || !step.at("calls").is_array() || step.at("calls").empty()) {
      return bad(where, "a tool_calls step needs a non-empty 'calls' array");
    }
    for (size_t i = 0; i < step.at("calls").size(); ++i) {
      out.calls.push_back(
          KEEL_TRY(parse_call(step.at("calls")[i], where + ".calls[" + std::to_string(i) + "]")));
    }
    out.chunk_size = KEEL_TRY(chunk_size(step, where));
    if (step.contains("interleave")) {
      if (!step.at("interleave").is_boolean()) return bad(where + ".interleave", "must be true or false");
      out.interleave = step.at("interleave").get<bool>();
    }
  } else if (type == "delay") {
    out.kind = Step::Kind::kDelay;
    KEEL_TRY(known_keys(step, where, {"type", "ms"}));
    if (!step.contains("ms")) return bad(where, "a delay step needs 'ms'");
    out.delay = std::chrono::milliseconds(KEEL_TRY(integer_field(step, where, "ms", 0, 3'600'000)));
  } else if (type == "error") {
    out.kind = Step::Kind::kError;
    KEEL_TRY(known_keys(step, where,
                        {"type", "status", "body", "error_type", "message", "retry_after", "headers"}));
    if (step.contains("status"))
      out.status = static_cast<int>(KEEL_TRY(integer_field(step, where, "status", 400, 599)));
    if (step.contains("body")) out.body = step.at("body");
    if (step.contains("error_type")) out.error_type = KEEL_TRY(string_field(step, where, "error_type"));
    if (step.contains("message")) out.message = KEEL_TRY(string_field(step, where, "message"));
    if (step.contains("retry_after")) {
      const json& value = step.at("retry_after");
      if (value.is_number_integer() && value.get<int64_t>() >= 0) {
        out.retry_after = std::to_string(value.get<int64_t>());
      } else if (value.is_string()) {
        out.retry_after = value.get<std::string>();
      } else {
        return bad(where + ".retry_after", "must be a number of seconds or an HTTP-date string");
      }
    }
    if (step.contains("headers")) {
      const json& headers = step.at("headers");
      if (!headers.is_object()) return bad(where + ".headers", "must be an object of strings");
      for (const auto& [name, value] : headers.items()) {
        if (!value.is_string()) return bad(where + ".headers." + name, "must be a string");
        out.headers.emplace_back(name, value.get<std::string>());
      }
    }
  } else if (type == "malformed") {
    out.kind = Step::Kind::kMalformed;
    KEEL_TRY(known_keys(step, where, {"type", "raw"}));
    out.raw = "data: {\"this is not\": json\n\n";
    if (step.contains("raw")) out.raw = KEEL_TRY(string_field(step, where, "raw"));
    if (out.raw.empty()) return bad(where + ".raw", "must not be empty");
  } else if (type == "not_sse") {
    out.kind = Step::Kind::kNotSse;
    KEEL_TRY(known_keys(step, where, {"type", "status", "content_type", "body"}));
    out.status = 200;
    if (step.contains("status"))
      out.status = static_cast<int>(KEEL_TRY(integer_field(step, where, "status", 200, 599)));
    out.content_type = "text/html; charset=utf-8";
    if (step.contains("content_type")) out.content_type = KEEL_TRY(string_field(step, where, "content_type"));
    out.body = json("<html><body>Service temporarily unavailable</body></html>");
    if (step.contains("body")) out.body = step.at("body");
  } else if (type == "ping" || type == "disconnect" || type == "hang") {
    out.kind = type == "ping"         ? Step::Kind::kPing
               : type == "disconnect" ? Step::Kind::kDisconnect
                                      : Step::Kind::kHang;
    KEEL_TRY(known_keys(step, where, {"type"}));
  } else {
    return bad(where + ".type", "unknown step type '" + type + "'");
  }
  return out;
}

Result<ScriptedUsage> parse_usage(const json& usage, const std::string& where) {
  if (!usage.is_object()) return bad(where, "must be an object");
  KEEL_TRY(
      known_keys(usage, where, {"input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"}));
  ScriptedUsage out;
  constexpr int64_t kMax = int64_t{1} << 40;
  if (usage.contains("input_tokens"))
    out.input_tokens = KEEL_TRY(integer_field(usage, where, "input_tokens", 0, kMax));
  if (usage.contains("output_tokens"))
    out.output_tokens = KEEL_TRY(integer_field(usage, where, "output_tokens", 0, kMax));
  if (usage.contains("cached_input_tokens")) {
    out.cached_input_tokens = KEEL_TRY(integer_field(usage, where, "cached_input_tokens", 0, kMax));
  }
  if (usage.contains("reasoning_tokens")) {
    out.reasoning_tokens = KEEL_TRY(integer_field(usage, where, "reasoning_tokens", 0, kMax));
  }
  return out;
}

// Steps that end or replace the stream must stand where they can take effect.
Result<void> check_placement(const std::vector<Step>& steps, const std::string& where) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string at = where + ".steps[" + std::to_string(i) + "]";
    const Step::Kind kind = steps[i].kind;
    const bool last = i + 1 == steps.size();
    if (kind == Step::Kind::kNotSse && steps.size() != 1)
      return bad(at, "a not_sse step must be the only step");
    if ((kind == Step::Kind::kDisconnect || kind == Step::Kind::kHang || kind == Step::Kind::kError) &&
        !last) {
      return bad(at, "nothing can follow a step that ends the stream");
    }
  }
  return {};
}

Result<ScriptedResponse> parse_response(const json& response, const std::string& where) {
  if (!response.is_object()) return bad(where, "a response must be an object");
  KEEL_TRY(known_keys(response, where, {"match", "steps", "usage", "stop_reason", "chunk_delay_ms"}));
  ScriptedResponse out;
  out.match = KEEL_TRY(optional_string(response, where, "match"));
  out.stop_reason = KEEL_TRY(optional_string(response, where, "stop_reason"));
  if (response.contains("chunk_delay_ms")) {
    out.chunk_delay =
        std::chrono::milliseconds(KEEL_TRY(integer_field(response, where, "chunk_delay_ms", 0, 60'000)));
  }
  if (response.contains("usage")) out.usage = KEEL_TRY(parse_usage(response.at("usage"), where + ".usage"));
  if (!response.contains("steps") || !response.at("steps").is_array()) {
    return bad(where, "a response needs a 'steps' array");
  }
  const json& steps = response.at("steps");
  for (size_t i = 0; i < steps.size(); ++i) {
    out.steps.push_back(KEEL_TRY(parse_step(steps[i], where + ".steps[" + std::to_string(i) + "]")));
  }
  KEEL_TRY(check_placement(out.steps, where));
  return out;
}

}  // namespace

Result<Script> parse_script(const json& script) {
  if (!script.is_object()) return bad("script", "must be a JSON object with a 'responses' array");
  KEEL_TRY(known_keys(script, "script", {"responses", "api_key"}));
  Script out;
  out.api_key = KEEL_TRY(optional_string(script, "script", "api_key"));
  if (!script.contains("responses") || !script.at("responses").is_array() || script.at("responses").empty()) {
    return bad("script", "needs a non-empty 'responses' array");
  }
  const json& responses = script.at("responses");
  for (size_t i = 0; i < responses.size(); ++i) {
    out.responses.push_back(KEEL_TRY(parse_response(responses[i], "responses[" + std::to_string(i) + "]")));
  }
  return out;
}

Result<Script> load_script(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(codes::kModelServerBadScript, path + ": cannot open the script file");
  std::stringstream text;
  text << in.rdbuf();
  json parsed;
  try {  // nlohmann reports the position only through its exception: caught here, at the library boundary
    parsed = json::parse(text.str());
  } catch (const json::parse_error& error) {
    return fail(codes::kModelServerBadScript, path + ": not valid JSON: " + error.what());
  }
  auto script = parse_script(parsed);
  if (!script) return fail(script.error().with_context(path));
  return script;
}

}  // namespace keel::model_server
