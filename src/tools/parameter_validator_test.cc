// Tests for compile_parameter_schema() / ParameterValidator (keel/tool_registry.h).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"

namespace keel {
namespace {

const nlohmann::json kSchema = nlohmann::json::parse(R"({
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "count": {"type": "integer", "minimum": 0},
    "items": {"type": "array", "items": {"type": "object",
              "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    "a/b~c": {"type": "boolean"},
    "code": {"type": "string", "pattern": "^[A-Z]{3}$"}
  },
  "required": ["path"],
  "additionalProperties": false
})");

std::shared_ptr<const ParameterValidator> compile(const nlohmann::json& schema = kSchema) {
  auto validator = compile_parameter_schema(schema);
  EXPECT_TRUE(validator.has_value()) << validator.error().to_string();
  return validator.value_or(nullptr);
}

// The error of validating `arguments`, which must fail.
Error rejection(const nlohmann::json& arguments) {
  const auto validator = compile();
  const auto result = validator->validate(arguments);
  EXPECT_FALSE(result.has_value()) << "accepted " << arguments.dump();
  return result.has_value() ? Error("", "") : result.error();
}

bool mentions(const Error& error, const std::string& text) {
  return error.message().find(text) != std::string::npos;
}

TEST(ParameterValidatorTest, AcceptsArgumentsMatchingTheSchema) {
  const auto validator = compile();
  EXPECT_TRUE(validator->validate({{"path", "a.txt"}}).has_value());
  EXPECT_TRUE(
      validator->validate({{"path", "a.txt"}, {"count", 3}, {"items", {{{"name", "x"}}}}, {"code", "ABC"}})
          .has_value());
}

TEST(ParameterValidatorTest, WrongTypeIsRejectedWithThePathOfTheField) {
  const Error error = rejection({{"path", "a.txt"}, {"count", "three"}});
  EXPECT_EQ(error.code(), codes::kInvalidArgument);
  EXPECT_TRUE(mentions(error, "/count: ")) << error.message();
}

TEST(ParameterValidatorTest, TypesAreStrictNoStringToNumberCoercion) {
  EXPECT_TRUE(mentions(rejection({{"path", "a"}, {"count", "3"}}), "/count: "));
  EXPECT_TRUE(mentions(rejection({{"path", "a"}, {"count", 1.5}}), "/count: "));
}

TEST(ParameterValidatorTest, MissingRequiredFieldIsRejected) {
  const Error error = rejection({{"count", 1}});
  EXPECT_EQ(error.code(), codes::kInvalidArgument);
  EXPECT_TRUE(mentions(error, "path")) << error.message();
}

TEST(ParameterValidatorTest, ExtraFieldIsRejectedWhenAdditionalPropertiesIsFalse) {
  const Error error = rejection({{"path", "a"}, {"colour", "red"}});
  EXPECT_EQ(error.code(), codes::kInvalidArgument);
  EXPECT_TRUE(mentions(error, "colour")) << error.message();
}

TEST(ParameterValidatorTest, ArgumentsThatAreNotAnObjectAreRejected) {
  const auto validator = compile(nlohmann::json::object());  // even a schema that accepts anything
  for (const nlohmann::json& arguments : {nlohmann::json::array(), nlohmann::json("path"),
                                          nlohmann::json(nullptr), nlohmann::json(3), nlohmann::json(true)}) {
    const auto result = validator->validate(arguments);
    ASSERT_FALSE(result.has_value()) << arguments.dump();
    EXPECT_EQ(result.error().code(), codes::kInvalidArgument);
    EXPECT_TRUE(mentions(result.error(), "must be a JSON object")) << result.error().message();
  }
}

TEST(ParameterValidatorTest, EveryViolationIsReported) {
  const Error error = rejection({{"count", -1}, {"code", "abc"}, {"extra", 1}});
  EXPECT_TRUE(mentions(error, "path")) << error.message();
  EXPECT_TRUE(mentions(error, "/count: ")) << error.message();
  EXPECT_TRUE(mentions(error, "/code: ")) << error.message();
  EXPECT_TRUE(mentions(error, "extra")) << error.message();
}

TEST(ParameterValidatorTest, NestedViolationsAreNamedByJsonPointer) {
  const Error error = rejection({{"path", "a"}, {"items", {{{"name", "x"}}, {{"name", 7}}}}});
  EXPECT_TRUE(mentions(error, "/items/1/name: ")) << error.message();
}

TEST(ParameterValidatorTest, EnclosingLevelsDoNotRepeatANestedViolation) {
  const Error error = rejection({{"path", "a"}, {"items", {{{"name", 7}}}}});
  EXPECT_TRUE(mentions(error, "/items/0/name: ")) << error.message();
  EXPECT_FALSE(mentions(error, "Failed to validate")) << error.message();
  EXPECT_EQ(error.message().find(';'), std::string::npos) << error.message();
}

TEST(ParameterValidatorTest, PointerTokensEscapeSlashAndTilde) {
  const Error error = rejection({{"path", "a"}, {"a/b~c", "yes"}});
  EXPECT_TRUE(mentions(error, "/a~1b~0c: ")) << error.message();
}

TEST(ParameterValidatorTest, SchemaThatIsNotAnObjectCannotBeCompiled) {
  const auto validator = compile_parameter_schema(nlohmann::json::array());
  ASSERT_FALSE(validator.has_value());
  EXPECT_EQ(validator.error().code(), codes::kInvalidArgument);
}

TEST(ParameterValidatorTest, UnusableSchemaIsInvalidArgumentNotACrash) {
  for (const char* text :
       {R"({"type": "object", "properties": {"a": {"type": "no-such-type"}}})",
        R"({"type": "object", "required": "a"})", R"({"type": "object", "minProperties": -1})",
        R"({"type": "object", "properties": {"a": {"$ref": "#/definitions/missing"}}})"}) {
    const auto validator = compile_parameter_schema(nlohmann::json::parse(text));
    ASSERT_FALSE(validator.has_value()) << text;
    EXPECT_EQ(validator.error().code(), codes::kInvalidArgument) << text;
  }
}

TEST(ParameterValidatorTest, OneValidatorServesManyThreadsAtOnce) {
  const auto validator = compile();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const bool good = (i + t) % 2 == 0;
        const nlohmann::json arguments = {{"path", "a"}, {"code", good ? "ABC" : "abc"}};
        if (validator->validate(arguments).has_value() != good) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace keel
