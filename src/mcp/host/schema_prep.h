// mcp/host/schema_prep.h — turning an MCP tool's inputSchema/outputSchema into a schema keel can use.
//
// MCP servers write JSON Schema draft 7 or 2020-12 (2020-12 is the default since the 2025-06-18 revision);
// keel validates with valijson in draft 7 mode and offers the schema to model providers, many of which do
// not follow $ref. prepare_mcp_schema() therefore returns a self-contained draft-7 schema:
//   - every local $ref ("#", "#/$defs/x", "#/definitions/x", any JSON Pointer into the same document) is
//     replaced by what it points to (a $ref with sibling keywords becomes {"allOf": [target, siblings]}, the
//     2020-12 meaning; under draft 7 the siblings were ignored, so this can only validate more). Expansion
//     is bounded (nesting depth, total size); a $ref that reaches itself again (a recursive schema) is
//     refused, as keel cannot inline it;
//   - a $ref that is not local is refused with mcp.schema_remote_ref: keel never fetches anything;
//   - 2020-12 keywords with a draft-7 equivalent are rewritten (prefixItems/items -> items/additionalItems,
//     dependentRequired/dependentSchemas -> dependencies); those without one (unevaluatedProperties,
//     unevaluatedItems, minContains, maxContains, contentSchema, $anchor, $dynamicAnchor, $vocabulary) are
//     dropped, so the validator checks less than the server asked for, never something different;
//     $dynamicRef and $recursiveRef are refused (they would need the recursion keel does not inline);
//   - $schema, $id, $comment and the now unused $defs/definitions are removed;
//   - the result must compile (compile_parameter_schema); an input schema must be an object schema.
// Anything refused is mcp.schema_unusable (or mcp.schema_remote_ref) with a message naming the place
// (a JSON Pointer into the original schema). Keywords are recognised only where a schema is expected, so a
// property named "$ref" is a property.
#pragma once

#include <nlohmann/json.hpp>

#include "keel/error.h"

namespace keel::mcp {

enum class SchemaRole { kInput, kOutput };

struct SchemaLimits {
  size_t max_depth = 64;      // nesting of schemas, after expansion
  size_t max_nodes = 20'000;  // JSON values in the prepared schema
  size_t max_ref_expansions = 2'000;
};

Result<nlohmann::json> prepare_mcp_schema(const nlohmann::json& schema, SchemaRole role,
                                          const SchemaLimits& limits = {});

}  // namespace keel::mcp
