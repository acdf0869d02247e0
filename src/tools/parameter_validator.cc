// tools/parameter_validator.cc — compile_parameter_schema(): JSON Schema validation through valijson.
//
// valijson is confined to this file. It is compiled here with VALIJSON_USE_EXCEPTIONS so that a schema it
// cannot parse throws (caught below and reported as invalid_argument) instead of aborting the process,
// which is valijson's default. No other translation unit may include valijson without the same setting.
//
// A schema is parsed once, at registration; validation afterwards only reads it. valijson's Validator keeps
// a regex cache it mutates, so each validate() call uses its own Validator: the compiled schema is shared
// read-only between threads, nothing else is.
#define VALIJSON_USE_EXCEPTIONS 1
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#include <vector>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"
#include "tools/regex_support.h"

namespace keel {

namespace {

// RFC 6901 escaping of one reference token.
std::string escape_pointer_token(std::string_view token) {
  std::string escaped;
  for (const char c : token) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

// valijson names the failing value by a context path: "<root>", then "[name]" for each property or "[3]"
// for each array index. keel reports JSON Pointers ("/items/3/name"); the root is "/" for readability.
std::string json_pointer(const std::vector<std::string>& context) {
  std::string pointer;
  for (const std::string& part : context) {
    if (part == "<root>") continue;
    std::string_view token = part;
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']')
      token = token.substr(1, token.size() - 2);
    pointer += "/" + escape_pointer_token(token);
  }
  return pointer.empty() ? "/" : pointer;
}

// valijson follows a nested violation with one summary per enclosing level ("/items: Failed to validate
// item #1 in array."). Those say nothing the nested violation does not, so they are left out; a summary
// with no violation below it (should valijson ever produce one) is kept.
bool is_echo_of_nested_violation(const valijson::ValidationResults::Error& candidate,
                                 const std::vector<valijson::ValidationResults::Error>& all) {
  if (!candidate.description.starts_with("Failed to validate")) return false;
  const std::vector<std::string>& prefix = candidate.context;
  for (const auto& other : all) {
    if (other.context.size() > prefix.size() &&
        std::equal(prefix.begin(), prefix.end(), other.context.begin())) {
      return true;
    }
  }
  return false;
}

class ValijsonParameterValidator final : public ParameterValidator {
 public:
  Result<void> validate(const nlohmann::json& arguments) const override {
    if (!arguments.is_object()) {
      return fail(codes::kInvalidArgument,
                  "/: arguments must be a JSON object, got " + std::string(arguments.type_name()));
    }
    detail::prepare_concurrent_regex();  // valijson compiles "pattern" regexes while validating
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::ValidationResults results;
    const valijson::adapters::NlohmannJsonAdapter target(arguments);
    bool valid = false;
    try {
      valid = validator.validate(schema_, target, &results);
    } catch (const std::exception& e) {
      // valijson throws while validating only on what it cannot evaluate (e.g. a regex std::regex rejects).
      return fail(codes::kInvalidArgument,
                  std::string("/: the arguments could not be validated: ") + e.what());
    }
    if (valid) return {};
    const std::vector<valijson::ValidationResults::Error> violations(results.begin(), results.end());
    std::string message;
    for (const auto& violation : violations) {
      if (is_echo_of_nested_violation(violation, violations)) continue;
      if (!message.empty()) message += "; ";
      message += json_pointer(violation.context) + ": " + violation.description;
    }
    if (message.empty()) message = "/: the arguments do not match the schema";
    return fail(codes::kInvalidArgument, message);
  }

  valijson::Schema& schema() { return schema_; }

 private:
  valijson::Schema schema_;
};

}  // namespace

Result<std::shared_ptr<const ParameterValidator>> compile_parameter_schema(const nlohmann::json& schema) {
  if (!schema.is_object()) {
    return fail(codes::kInvalidArgument,
                "a JSON Schema must be an object, got " + std::string(schema.type_name()));
  }
  auto validator = std::make_shared<ValijsonParameterValidator>();
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    const valijson::adapters::NlohmannJsonAdapter adapter(schema);
    parser.populateSchema(adapter, validator->schema());
  } catch (const std::exception& e) {
    return fail(codes::kInvalidArgument, std::string("unusable JSON Schema: ") + e.what());
  }
  return std::shared_ptr<const ParameterValidator>(std::move(validator));
}

}  // namespace keel
