#include "transport/rpc_params.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "keel/error_codes.h"
#include "protocol/ops.h"

namespace keel::rpc {

using nlohmann::json;

namespace {

constexpr std::string_view kParamsPrefix = "params.";

// The table of methods, built from the embedded schema. The schema is part of the build, so a schema keel
// cannot read is a bug of the build, not an input: it throws, and the transport tests fail on it.
class MethodTable {
 public:
  MethodTable() {
    const json document = json::parse(protocol_schema_text());
    const json& definitions = document.at("definitions");
    // The methods are the op table's (protocol/ops.h); each one's params are checked against its schema
    // definition, which must exist (the schema test holds the table and the schema to each other).
    for (const protocol::OpSpec& op : protocol::all_ops()) {
      const std::string name = std::string(kParamsPrefix) + std::string(op.name);
      if (!definitions.contains(name)) throw std::logic_error("protocol schema: no definition " + name);
      const json& definition = definitions.at(name);
      MethodParams entry;
      entry.method = std::string(op.name);
      entry.op = &op;
      for (const json& key : definition.value("required", json::array()))
        entry.required.insert(key.get<std::string>());
      entry.receipted = op.receipted;
      // The definition with every other one beside it, so its $refs resolve.
      const json wrapper = {{"definitions", definitions},
                            {"allOf", json::array({{{"$ref", "#/definitions/" + name}}})}};
      auto validator = compile_parameter_schema(wrapper);
      if (!validator)
        throw std::logic_error("protocol schema: " + name + ": " + validator.error().to_string());
      entry.validator = std::move(*validator);
      methods_.emplace(entry.method, std::move(entry));
    }
  }
  const MethodParams* find(std::string_view method) const {
    auto found = methods_.find(method);
    return found == methods_.end() ? nullptr : &found->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : methods_) names.push_back(name);
    return names;
  }

 private:
  std::map<std::string, MethodParams, std::less<>> methods_;
};

const MethodTable& table() {
  static const MethodTable methods;
  return methods;
}

}  // namespace

const MethodParams* find_method(std::string_view method) { return table().find(method); }

std::vector<std::string> method_names() { return table().names(); }

Result<void> check_params(const MethodParams& method, json& params) {
  for (auto it = params.begin(); it != params.end();) {
    if (it->is_null() && !method.required.contains(it.key())) {
      it = params.erase(it);
    } else {
      ++it;
    }
  }
  return method.validator->validate(params);
}

}  // namespace keel::rpc
