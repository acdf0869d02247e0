#include "model_server/script.h"

#include <gtest/gtest.h>

#include <fstream>

#include "model_server/model_server_errors.h"
#include "testing/temp_dir.h"

namespace keel::model_server {
namespace {

using nlohmann::json;

// The script's error message, or "" when it parsed.
std::string problem(const json& script) {
  auto parsed = parse_script(script);
  if (parsed) return "";
  EXPECT_EQ(parsed.error().code(), codes::kModelServerBadScript);
  return parsed.error().message();
}

json one_response(json steps) { return {{"responses", {{{"steps", std::move(steps)}}}}}; }

TEST(ScriptTest, ParsesEveryStepKind) {
  const json script = {
      {"api_key", "sk-test"},
      {"responses",
       {{{"match", "weather"},
         {"chunk_delay_ms", 5},
         {"stop_reason", "end_turn"},
         {"usage",
          {{"input_tokens", 10}, {"output_tokens", 4}, {"cached_input_tokens", 3}, {"reasoning_tokens", 2}}},
         {"steps",
          {{{"type", "reasoning"}, {"text", "hmm"}, {"signature", "sig"}, {"chunk_size", 2}},
           {{"type", "text"}, {"text", "Hello"}},
           {{"type", "delay"}, {"ms", 20}},
           {{"type", "ping"}},
           {{"type", "malformed"}},
           {{"type", "tool_calls"},
            {"interleave", false},
            {"calls", {{{"id", "c1"}, {"name", "get"}, {"arguments", {{"q", 1}}}}, {{"name", "put"}}}}},
           {{"type", "hang"}}}}},
        {{"steps",
          {{{"type", "error"}, {"status", 529}, {"retry_after", 3}, {"headers", {{"x-extra", "1"}}}}}}},
        {{"steps", {{{"type", "not_sse"}, {"body", "<html/>"}}}}},
        {{"steps", {{{"type", "text"}, {"text", "a"}}, {{"type", "disconnect"}}}}}}}};
  auto parsed = parse_script(script);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  ASSERT_EQ(parsed->responses.size(), 4u);
  EXPECT_EQ(parsed->api_key, "sk-test");
  const ScriptedResponse& first = parsed->responses[0];
  EXPECT_EQ(first.match, "weather");
  EXPECT_EQ(first.chunk_delay, std::chrono::milliseconds(5));
  EXPECT_EQ(first.usage.cached_input_tokens, 3);
  ASSERT_EQ(first.steps.size(), 7u);
  EXPECT_EQ(first.steps[0].signature, "sig");
  EXPECT_EQ(first.steps[0].chunk_size, 2u);
  EXPECT_FALSE(first.steps[4].raw.empty());
  EXPECT_FALSE(first.steps[5].interleave);
  EXPECT_EQ(first.steps[5].calls[0].arguments, R"({"q":1})");
  EXPECT_EQ(first.steps[5].calls[1].arguments, "{}");
  EXPECT_EQ(parsed->responses[1].steps[0].retry_after, "3");
  EXPECT_EQ(parsed->responses[1].steps[0].headers.size(), 1u);
  EXPECT_EQ(parsed->responses[2].steps[0].status, 200);
}

TEST(ScriptTest, NamesAnUnknownStepType) {
  EXPECT_EQ(problem(one_response({{{"type", "txt"}, {"text", "x"}}})),
            "responses[0].steps[0].type: unknown step type 'txt'");
}

TEST(ScriptTest, NamesAnUnknownKeySoTyposAreCaught) {
  EXPECT_EQ(problem(one_response({{{"type", "text"}, {"text", "x"}, {"chunksize", 3}}})),
            "responses[0].steps[0]: unknown key 'chunksize'");
  EXPECT_EQ(problem({{"responses", {{{"steps", json::array()}, {"mach", "x"}}}}}),
            "responses[0]: unknown key 'mach'");
}

TEST(ScriptTest, NamesAWrongValue) {
  EXPECT_EQ(problem(one_response({{{"type", "text"}, {"text", "x"}, {"chunk_size", 0}}})),
            "responses[0].steps[0].chunk_size: must be between 1 and 1073741824");
  EXPECT_EQ(problem(one_response({{{"type", "text"}, {"text", 5}}})),
            "responses[0].steps[0].text: must be a string");
  EXPECT_EQ(problem(one_response({{{"type", "error"}, {"status", 200}}})),
            "responses[0].steps[0].status: must be between 400 and 599");
  EXPECT_EQ(problem(one_response({{{"type", "tool_calls"}, {"calls", json::array()}}})),
            "responses[0].steps[0]: a tool_calls step needs a non-empty 'calls' array");
  EXPECT_EQ(problem(one_response({{{"type", "tool_calls"}, {"calls", {{{"id", "x"}}}}}})),
            "responses[0].steps[0].calls[0]: a tool call needs a 'name'");
}

TEST(ScriptTest, RefusesStepsWhereTheyCannotTakeEffect) {
  EXPECT_EQ(problem(one_response({{{"type", "disconnect"}}, {{"type", "text"}, {"text", "x"}}})),
            "responses[0].steps[0]: nothing can follow a step that ends the stream");
  EXPECT_EQ(problem(one_response({{{"type", "text"}, {"text", "x"}}, {{"type", "not_sse"}}})),
            "responses[0].steps[1]: a not_sse step must be the only step");
}

TEST(ScriptTest, NeedsResponses) {
  EXPECT_EQ(problem(json::array()), "script: must be a JSON object with a 'responses' array");
  EXPECT_EQ(problem({{"responses", json::array()}}), "script: needs a non-empty 'responses' array");
  EXPECT_EQ(problem({{"responses", {{{"match", "x"}}}}}), "responses[0]: a response needs a 'steps' array");
}

TEST(ScriptTest, LoadNamesTheFileAndThePlace) {
  testing::TempDir dir;
  const std::string path = dir.file("script.json");
  std::ofstream(path) << R"({"responses": [{"steps": [{"type": "nope"}]}]})";
  auto loaded = load_script(path);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message(), path + ": responses[0].steps[0].type: unknown step type 'nope'");
}

TEST(ScriptTest, LoadReportsInvalidJsonWithItsPosition) {
  testing::TempDir dir;
  const std::string path = dir.file("broken.json");
  std::ofstream(path) << "{\"responses\": [\n  {\"steps\": [}\n]}";
  auto loaded = load_script(path);
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().code(), codes::kModelServerBadScript);
  EXPECT_NE(loaded.error().message().find(path + ": not valid JSON"), std::string::npos);
  EXPECT_NE(loaded.error().message().find("line 2"), std::string::npos) << loaded.error().message();
}

TEST(ScriptTest, LoadReportsAMissingFile) {
  auto loaded = load_script("/nonexistent/keel/script.json");
  ASSERT_FALSE(loaded);
  EXPECT_EQ(loaded.error().message(), "/nonexistent/keel/script.json: cannot open the script file");
}

}  // namespace
}  // namespace keel::model_server
