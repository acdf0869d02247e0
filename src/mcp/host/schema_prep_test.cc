#include "mcp/host/schema_prep.h"

#include <gtest/gtest.h>

#include "keel/tool_registry.h"
#include "mcp/host/mcp_host_errors.h"

namespace keel::mcp {
namespace {

using nlohmann::json;

json prepared(const json& schema, SchemaRole role = SchemaRole::kInput) {
  auto result = prepare_mcp_schema(schema, role);
  EXPECT_TRUE(result.has_value()) << result.error().to_string();
  return result.value_or(json());
}

std::string refused(const json& schema, SchemaRole role = SchemaRole::kInput) {
  auto result = prepare_mcp_schema(schema, role);
  EXPECT_FALSE(result.has_value()) << result->dump();
  return result ? "" : result.error().code();
}

bool accepts(const json& schema, const json& value) {
  auto validator = compile_parameter_schema(schema);
  EXPECT_TRUE(validator.has_value());
  return validator && (*validator)->validate(value).has_value();
}

TEST(McpSchemaPrep, ADraft7SchemaIsKeptAndGetsTypeObject) {
  const json schema = {{"properties", {{"path", {{"type", "string"}}}}}, {"required", {"path"}}};
  const json out = prepared(schema);
  EXPECT_EQ(out["type"], "object");
  EXPECT_EQ(out["properties"], schema["properties"]);
  EXPECT_EQ(out["required"], schema["required"]);
}

TEST(McpSchemaPrep, LocalDefsAndDefinitionsAreInlined) {
  const json schema = json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/point"}, "b": {"$ref": "#/definitions/name"}},
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
    "definitions": {"name": {"type": "string"}}
  })");
  const json out = prepared(schema);
  EXPECT_FALSE(out.contains("$defs"));
  EXPECT_FALSE(out.contains("definitions"));
  EXPECT_FALSE(out.contains("$schema"));
  EXPECT_EQ(out["properties"]["a"]["required"], json({"x"}));
  EXPECT_EQ(out["properties"]["b"], json({{"type", "string"}}));
  EXPECT_TRUE(accepts(out, {{"a", {{"x", 1}}}, {"b", "n"}}));
  EXPECT_FALSE(accepts(out, {{"a", json::object()}}));
  EXPECT_FALSE(accepts(out, {{"b", 3}}));
}

TEST(McpSchemaPrep, ARefWithSiblingsKeepsBoth) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "n": {"$ref": "#/$defs/num", "maximum": 5}}, "$defs": {"num": {"type": "number"}}})");
  const json out = prepared(schema);
  EXPECT_TRUE(out["properties"]["n"].contains("allOf"));
  EXPECT_TRUE(accepts(out, {{"n", 4}}));
  EXPECT_FALSE(accepts(out, {{"n", 6}}));
  EXPECT_FALSE(accepts(out, {{"n", "x"}}));
}

TEST(McpSchemaPrep, EscapedPointersResolve) {
  const json schema = json::parse(R"({"type": "object", "properties": {"p": {"$ref": "#/$defs/a~1b%20c"}},
      "$defs": {"a/b c": {"type": "boolean"}}})");
  EXPECT_EQ(prepared(schema)["properties"]["p"], json({{"type", "boolean"}}));
}

TEST(McpSchemaPrep, ARemoteRefRefusesTheSchema) {
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$ref", "https://example.com/s.json"}}}}}}),
            codes::kMcpSchemaRemoteRef);
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$ref", "other.json#/x"}}}}}}),
            codes::kMcpSchemaRemoteRef);
}

TEST(McpSchemaPrep, ARecursiveRefIsRefusedNotExpandedForever) {
  const json tree = json::parse(R"({"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}},
      "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array",
      "items": {"$ref": "#/$defs/node"}}}}}})");
  EXPECT_EQ(refused(tree), codes::kMcpSchemaUnusable);
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"self", {{"$ref", "#"}}}}}}),
            codes::kMcpSchemaUnusable);
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$ref", "#/properties/a"}}}}}}),
            codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, ARefToNothingOrAnAnchorIsRefused) {
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$ref", "#/$defs/missing"}}}}}}),
            codes::kMcpSchemaUnusable);
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$ref", "#anchor"}}}}}}),
            codes::kMcpSchemaUnusable);
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$ref", 5}}}}}}), codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, ExponentialExpansionIsBounded) {
  // Each level refers to the one below twice: 2^30 copies if expanded naively.
  json defs = json::object();
  defs["l0"] = {{"type", "string"}};
  for (int i = 1; i <= 30; ++i) {
    const std::string below = "#/$defs/l" + std::to_string(i - 1);
    defs["l" + std::to_string(i)] = {{"type", "object"},
                                     {"properties", {{"a", {{"$ref", below}}}, {"b", {{"$ref", below}}}}}};
  }
  const json schema = {
      {"type", "object"}, {"properties", {{"top", {{"$ref", "#/$defs/l30"}}}}}, {"$defs", defs}};
  EXPECT_EQ(refused(schema), codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, PrefixItemsBecomeDraft7Items) {
  const json schema = json::parse(R"({"type": "object", "properties": {"pair": {"type": "array",
      "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}}})");
  const json out = prepared(schema);
  EXPECT_TRUE(out["properties"]["pair"]["items"].is_array());
  EXPECT_EQ(out["properties"]["pair"]["additionalItems"], false);
  EXPECT_TRUE(accepts(out, {{"pair", {"a", 1}}}));
  EXPECT_FALSE(accepts(out, {{"pair", {1, "a"}}}));
  EXPECT_FALSE(accepts(out, {{"pair", {"a", 1, 2}}}));
}

TEST(McpSchemaPrep, DependentRequiredBecomesDependencies) {
  const json schema = json::parse(R"({"type": "object", "dependentRequired": {"a": ["b"]},
      "dependentSchemas": {"c": {"required": ["d"]}}})");
  const json out = prepared(schema);
  EXPECT_TRUE(accepts(out, {{"a", 1}, {"b", 2}}));
  EXPECT_FALSE(accepts(out, {{"a", 1}}));
  EXPECT_FALSE(accepts(out, {{"c", 1}}));
}

TEST(McpSchemaPrep, KeywordsWithoutADraft7MeaningAreDroppedNotRefused) {
  const json schema = json::parse(R"({"type": "object", "unevaluatedProperties": false, "$anchor": "x",
      "$comment": "c", "properties": {"l": {"type": "array", "minContains": 2, "contains": {"type": "number"}}}})");
  const json out = prepared(schema);
  EXPECT_FALSE(out.contains("unevaluatedProperties"));
  EXPECT_FALSE(out["properties"]["l"].contains("minContains"));
  EXPECT_TRUE(accepts(out, {{"l", {1}}, {"extra", true}}));
}

TEST(McpSchemaPrep, DynamicRefIsRefused) {
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"$dynamicRef", "#node"}}}}}}),
            codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, APropertyNamedLikeAKeywordIsAProperty) {
  const json schema = {{"type", "object"},
                       {"properties", {{"$ref", {{"type", "string"}}}, {"$defs", {{"type", "number"}}}}}};
  const json out = prepared(schema);
  EXPECT_EQ(out["properties"]["$ref"], json({{"type", "string"}}));
  EXPECT_EQ(out["properties"]["$defs"], json({{"type", "number"}}));
}

TEST(McpSchemaPrep, AnInputSchemaMustDescribeAnObject) {
  EXPECT_EQ(refused({{"type", "string"}}), codes::kMcpSchemaUnusable);
  EXPECT_EQ(refused(json::array()), codes::kMcpSchemaUnusable);
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", 3}}}}), codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, ASchemaTheValidatorCannotCompileIsRefused) {
  EXPECT_EQ(refused({{"type", "object"}, {"properties", {{"a", {{"type", "nonsense"}}}}}}),
            codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, DeepNestingIsRefused) {
  json schema = {{"type", "string"}};
  for (int i = 0; i < 100; ++i) schema = {{"type", "object"}, {"properties", {{"a", schema}}}};
  EXPECT_EQ(refused(schema), codes::kMcpSchemaUnusable);
}

TEST(McpSchemaPrep, AnOutputSchemaIsPreparedTheSameWay) {
  const json schema = json::parse(R"({"type": "object", "properties": {"r": {"$ref": "#/$defs/r"}},
      "$defs": {"r": {"type": "integer"}}})");
  const json out = prepared(schema, SchemaRole::kOutput);
  EXPECT_TRUE(accepts(out, {{"r", 1}}));
  EXPECT_FALSE(accepts(out, {{"r", "x"}}));
}

}  // namespace
}  // namespace keel::mcp
