// transport/protocol_schema.h — test support: checks messages against the protocol's JSON Schema
// (docs/protocol/keel-protocol-v1.schema.json) through keel's valijson-backed schema validator.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/error.h"
#include "keel/tool_registry.h"

namespace keel::testing {

class ProtocolSchema {
 public:
  // Loads the schema from the source tree (KEEL_PROTOCOL_SCHEMA_DIR).
  static Result<ProtocolSchema> load();

  // Validates `message` against definitions/<definition>.
  Result<void> check(const nlohmann::json& message, const std::string& definition);
  bool has(const std::string& definition) const;
  // Every server message (and each response's result, by the method its id was sent with). Returns the
  // violations, one line each.
  std::vector<std::string> check_server_messages(const std::vector<nlohmann::json>& messages,
                                                 const std::map<int, std::string>& methods);

  const nlohmann::json& document() const { return document_; }

 private:
  nlohmann::json document_;
  std::map<std::string, std::shared_ptr<const ParameterValidator>> compiled_;
};

}  // namespace keel::testing
