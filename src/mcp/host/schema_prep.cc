// mcp/host/schema_prep.cc — prepare_mcp_schema() (schema_prep.h).
#include "mcp/host/schema_prep.h"

#include <array>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/tool_registry.h"
#include "mcp/host/mcp_host_errors.h"

namespace keel::mcp {

namespace {

using nlohmann::json;

// Keywords whose value is one schema.
constexpr std::array<std::string_view, 10> kSchemaKeywords = {"additionalProperties",
                                                              "additionalItems",
                                                              "contains",
                                                              "propertyNames",
                                                              "if",
                                                              "then",
                                                              "else",
                                                              "not",
                                                              "items",
                                                              "contentSchema"};
// Keywords whose value is an object of schemas.
constexpr std::array<std::string_view, 2> kSchemaMapKeywords = {"properties", "patternProperties"};
// Keywords whose value is an array of schemas.
constexpr std::array<std::string_view, 3> kSchemaArrayKeywords = {"allOf", "anyOf", "oneOf"};
// Removed: metadata, definitions that are inlined, and 2020-12 keywords without a draft-7 equivalent.
constexpr std::array<std::string_view, 14> kDropped = {"$schema",          "$id",
                                                       "$comment",         "$defs",
                                                       "definitions",      "$anchor",
                                                       "$dynamicAnchor",   "$recursiveAnchor",
                                                       "$vocabulary",      "unevaluatedProperties",
                                                       "unevaluatedItems", "minContains",
                                                       "maxContains",      "contentSchema"};
// Refused: dynamic references need the recursion keel does not inline.
constexpr std::array<std::string_view, 2> kRefused = {"$dynamicRef", "$recursiveRef"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& set, std::string_view key) {
  for (std::string_view s : set) {
    if (s == key) return true;
  }
  return false;
}

std::string escape_token(std::string_view token) {
  std::string out;
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string at(std::string_view where) { return where.empty() ? "/" : std::string(where); }

// Percent-decodes a URI fragment; nullopt when an escape is malformed.
std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int high = hex(text[i + 1]);
    const int low = hex(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

class Preparer {
 public:
  Preparer(const json& root, const SchemaLimits& limits) : root_(root), limits_(limits) {}

  Result<json> schema(const json& node, const std::string& where, size_t depth) {
    if (depth > limits_.max_depth) return unusable(where, "schemas nest deeper than keel accepts");
    KEEL_TRY(spend(1, where));
    if (node.is_boolean()) return node;
    if (!node.is_object()) {
      return unusable(where, "a schema must be an object or a boolean, got " + std::string(node.type_name()));
    }
    if (const auto ref = node.find("$ref"); ref != node.end()) return reference(node, *ref, where, depth);

    json out = json::object();
    for (const auto& [key, value] : node.items()) {
      const std::string path = where + "/" + escape_token(key);
      if (one_of(kRefused, key)) return unusable(path, key + " is not supported");
      if (one_of(kDropped, key) || key == "prefixItems" || key == "dependentRequired" ||
          key == "dependentSchemas") {
        continue;
      }
      if (key == "items" && value.is_array()) {
        out[key] = KEEL_TRY(schema_array(value, path, depth));
      } else if (one_of(kSchemaKeywords, key)) {
        out[key] = KEEL_TRY(schema(value, path, depth + 1));
      } else if (one_of(kSchemaMapKeywords, key)) {
        out[key] = KEEL_TRY(schema_map(value, path, depth));
      } else if (one_of(kSchemaArrayKeywords, key)) {
        out[key] = KEEL_TRY(schema_array(value, path, depth));
      } else if (key == "dependencies") {
        out[key] = KEEL_TRY(dependencies(value, path, depth));
      } else {
        KEEL_TRY(spend(count(value), path));
        out[key] = value;
      }
    }
    // 2020-12: prefixItems is draft 7's array form of items, and items beside it is additionalItems.
    if (const auto prefix = node.find("prefixItems"); prefix != node.end()) {
      const std::string path = where + "/prefixItems";
      if (out.contains("items")) {
        if (out["items"].is_array()) return unusable(path, "prefixItems beside an array of items");
        out["additionalItems"] = std::move(out["items"]);
      }
      out["items"] = KEEL_TRY(schema_array(*prefix, path, depth));
    }
    // 2020-12: dependentRequired and dependentSchemas are the two halves of draft 7's dependencies.
    for (const char* split : {"dependentRequired", "dependentSchemas"}) {
      const auto part = node.find(split);
      if (part == node.end()) continue;
      const std::string path = where + "/" + split;
      if (!part->is_object()) return unusable(path, "must be an object");
      json& merged = out["dependencies"];
      if (merged.is_null()) merged = json::object();
      for (const auto& [name, value] : part->items()) {
        if (merged.contains(name)) return unusable(path, "names a property dependencies names too");
        const std::string item = path + "/" + escape_token(name);
        if (std::string_view(split) == "dependentRequired") {
          if (!value.is_array()) return unusable(item, "must be an array of property names");
          KEEL_TRY(spend(count(value), item));
          merged[name] = value;
        } else {
          merged[name] = KEEL_TRY(schema(value, item, depth + 1));
        }
      }
    }
    return out;
  }

 private:
  static std::unexpected<Error> unusable(std::string_view where, const std::string& why) {
    return fail(codes::kMcpSchemaUnusable, at(where) + ": " + why);
  }

  static size_t count(const json& value) {
    size_t n = 1;
    if (value.is_structured()) {
      for (const auto& item : value) n += count(item);
    }
    return n;
  }

  Result<void> spend(size_t nodes, std::string_view where) {
    nodes_ += nodes;
    if (nodes_ > limits_.max_nodes) return unusable(where, "the schema is larger than keel accepts");
    return {};
  }

  Result<json> schema_map(const json& value, const std::string& where, size_t depth) {
    if (!value.is_object()) return unusable(where, "must be an object of schemas");
    json out = json::object();
    for (const auto& [name, item] : value.items()) {
      out[name] = KEEL_TRY(schema(item, where + "/" + escape_token(name), depth + 1));
    }
    return out;
  }

  Result<json> schema_array(const json& value, const std::string& where, size_t depth) {
    if (!value.is_array()) return unusable(where, "must be an array of schemas");
    json out = json::array();
    for (size_t i = 0; i < value.size(); ++i) {
      out.push_back(KEEL_TRY(schema(value[i], where + "/" + std::to_string(i), depth + 1)));
    }
    return out;
  }

  Result<json> dependencies(const json& value, const std::string& where, size_t depth) {
    if (!value.is_object()) return unusable(where, "must be an object");
    json out = json::object();
    for (const auto& [name, item] : value.items()) {
      const std::string path = where + "/" + escape_token(name);
      if (item.is_array()) {
        KEEL_TRY(spend(count(item), path));
        out[name] = item;
      } else {
        out[name] = KEEL_TRY(schema(item, path, depth + 1));
      }
    }
    return out;
  }

  Result<json> reference(const json& node, const json& ref, const std::string& where, size_t depth) {
    const std::string path = where + "/$ref";
    if (!ref.is_string()) return unusable(path, "must be a string");
    const std::string& text = ref.get_ref<const std::string&>();
    if (text.empty() || text.front() != '#') {
      return fail(codes::kMcpSchemaRemoteRef,
                  at(path) + ": refers outside the schema; keel does not fetch schemas");
    }
    const std::optional<std::string> pointer = percent_decode(std::string_view(text).substr(1));
    if (!pointer || (!pointer->empty() && pointer->front() != '/')) {
      return unusable(path, "is neither \"#\" nor a JSON Pointer fragment (\"#/$defs/name\")");
    }
    for (const std::string& active : active_) {
      if (active == *pointer) return unusable(path, "refers to a schema it is part of (a recursive schema)");
    }
    if (++expansions_ > limits_.max_ref_expansions)
      return unusable(path, "more $ref expansions than keel accepts");
    const json* target = nullptr;
    try {
      const json::json_pointer parsed(*pointer);
      if (root_.contains(parsed)) target = &root_.at(parsed);
    } catch (const std::exception&) {
      return unusable(path, "is not a valid JSON Pointer");
    }
    if (target == nullptr) return unusable(path, "refers to nothing in the schema");

    active_.push_back(*pointer);
    Result<json> resolved = schema(*target, "#" + *pointer, depth + 1);
    active_.pop_back();
    if (!resolved) return resolved;

    json siblings = node;
    siblings.erase("$ref");
    for (std::string_view dropped : kDropped) siblings.erase(std::string(dropped));
    if (siblings.empty()) return resolved;
    json rest = KEEL_TRY(schema(siblings, where, depth + 1));
    return json{{"allOf", json::array({std::move(*resolved), std::move(rest)})}};
  }

  const json& root_;
  const SchemaLimits& limits_;
  std::vector<std::string> active_{""};  // the pointers being expanded through $ref (and the root)
  size_t nodes_ = 0;
  size_t expansions_ = 0;
};

}  // namespace

Result<nlohmann::json> prepare_mcp_schema(const nlohmann::json& schema, SchemaRole role,
                                          const SchemaLimits& limits) {
  if (!schema.is_object()) {
    return fail(codes::kMcpSchemaUnusable,
                "/: a tool schema must be a JSON object, got " + std::string(schema.type_name()));
  }
  Preparer preparer(schema, limits);
  json prepared = KEEL_TRY(preparer.schema(schema, "", 0));
  if (role == SchemaRole::kInput) {
    const auto type = prepared.find("type");
    if (type == prepared.end()) {
      prepared["type"] = "object";
    } else if (*type != "object") {
      return fail(codes::kMcpSchemaUnusable, "/type: an input schema must be of type \"object\"");
    }
  }
  if (auto compiled = compile_parameter_schema(prepared); !compiled) {
    return fail(codes::kMcpSchemaUnusable, compiled.error().message());
  }
  return prepared;
}

}  // namespace keel::mcp
