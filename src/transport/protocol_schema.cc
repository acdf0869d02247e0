#include "transport/protocol_schema.h"

#include <fstream>
#include <sstream>

#include "keel/error_codes.h"

namespace keel::testing {

using nlohmann::json;

Result<ProtocolSchema> ProtocolSchema::load() {
  const std::string path = std::string(KEEL_PROTOCOL_SCHEMA_DIR) + "/keel-protocol-v1.schema.json";
  std::ifstream file(path);
  if (!file) return fail(codes::kInvalidArgument, "cannot open " + path);
  std::stringstream text;
  text << file.rdbuf();
  ProtocolSchema schema;
  if (!json::accept(text.str())) return fail(codes::kInvalidArgument, path + " is not JSON");
  schema.document_ = json::parse(text.str());
  return schema;
}

bool ProtocolSchema::has(const std::string& definition) const {
  return document_["definitions"].contains(definition);
}

Result<void> ProtocolSchema::check(const json& message, const std::string& definition) {
  auto found = compiled_.find(definition);
  if (found == compiled_.end()) {
    if (!has(definition)) return fail(codes::kInvalidArgument, "no definition " + definition);
    const json wrapper = {{"definitions", document_["definitions"]},
                          {"allOf", json::array({{{"$ref", "#/definitions/" + definition}}})}};
    auto compiled = KEEL_TRY(compile_parameter_schema(wrapper));
    found = compiled_.emplace(definition, std::move(compiled)).first;
  }
  if (message.is_array()) {
    // The validator takes objects; a batch response is checked element by element.
    for (const json& element : message) KEEL_TRY(found->second->validate(element));
    return {};
  }
  return found->second->validate(message);
}

std::vector<std::string> ProtocolSchema::check_server_messages(const std::vector<json>& messages,
                                                               const std::map<int, std::string>& methods) {
  std::vector<std::string> violations;
  for (const json& message : messages) {
    const std::string definition = message.is_array() ? "resultResponse" : "serverMessage";
    if (message.is_array()) {
      for (const json& element : message) {
        if (auto checked = check(element, "serverMessage"); !checked)
          violations.push_back(checked.error().message() + " in " + element.dump());
      }
      continue;
    }
    if (auto checked = check(message, definition); !checked) {
      violations.push_back(checked.error().message() + " in " + message.dump().substr(0, 400));
      continue;
    }
    if (message.contains("result") && message["id"].is_number_integer()) {
      auto method = methods.find(message["id"].get<int>());
      if (method != methods.end() && has("result." + method->second)) {
        if (auto checked = check(message["result"], "result." + method->second); !checked)
          violations.push_back(method->second + " result: " + checked.error().message() + " in " +
                               message.dump().substr(0, 400));
      }
    }
  }
  return violations;
}

}  // namespace keel::testing
