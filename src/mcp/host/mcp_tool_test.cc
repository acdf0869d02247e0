#include "mcp/host/mcp_tool.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/tool_registry.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/testing/fake_mcp_session.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using testing::FakeMcpSession;

McpToolInfo tool_info(std::string name = "search") {
  McpToolInfo info;
  info.name = std::move(name);
  info.description = "Searches things.";
  info.input_schema = {{"type", "object"}, {"properties", {{"q", {{"type", "string"}}}}}};
  return info;
}

McpToolOrigin origin(bool trusted = false) {
  McpToolOrigin o;
  o.server = "docs";
  o.endpoint = "docs-server --stdio";
  o.auth_identity = "";
  o.trusted = trusted;
  o.limits.idle_timeout = std::chrono::seconds(7);
  o.limits.max_total = std::chrono::seconds(70);
  return o;
}

McpCallResult text_result_of(std::string text) {
  McpCallResult result;
  result.content = json::array({{{"type", "text"}, {"text", std::move(text)}}});
  return result;
}

class McpToolTest : public ::testing::Test {
 protected:
  std::shared_ptr<McpTool> make(McpToolInfo info = tool_info(), McpToolOrigin o = origin()) {
    auto tool =
        make_mcp_tool(info, "docs__" + info.name, o,
                      [session = session_]() -> Result<std::shared_ptr<McpSession>> { return session; });
    EXPECT_TRUE(tool.has_value()) << tool.error().to_string();
    return tool.value_or(nullptr);
  }

  // Starts a call; the future has its result.
  std::future<Result<ToolResult>> call(McpTool& tool, json params, CancellationToken cancel = {}) {
    auto promise = std::make_shared<std::promise<Result<ToolResult>>>();
    ToolCallContext context;
    context.tool_call_id = "call-1";
    context.cancel = std::move(cancel);
    context.progress = [this](ToolProgress p) { progress_.push_back(std::move(p)); };
    tool.execute(std::move(context), std::move(params),
                 [promise](Result<ToolResult> result) { promise->set_value(std::move(result)); });
    return promise->get_future();
  }

  std::shared_ptr<FakeMcpSession> session_ = std::make_shared<FakeMcpSession>();
  std::vector<ToolProgress> progress_;
};

TEST_F(McpToolTest, TheSpecIsAnMcpLevelToolBoundToItsServer) {
  auto tool = make();
  const ToolSpec& spec = tool->spec();
  EXPECT_EQ(spec.name, "docs__search");
  EXPECT_EQ(spec.level, ToolLevel::kMcp);
  EXPECT_EQ(spec.binding.kind, ToolBinding::Kind::kMcp);
  EXPECT_EQ(spec.binding.server, "docs");
  EXPECT_EQ(spec.binding.endpoint, "docs-server --stdio");
  EXPECT_EQ(spec.label, "search");
  EXPECT_EQ(tool->server_tool_name(), "search");
  ToolRegistry registry;
  auto descriptor = registry.register_tool(tool);
  ASSERT_TRUE(descriptor.has_value()) << descriptor.error().to_string();
  EXPECT_EQ((*descriptor)->trust, ToolTrust::kUntrusted);
  EXPECT_EQ((*descriptor)->provenance, ToolProvenance::kMcp);
}

TEST_F(McpToolTest, TheBindingEntersTheDigest) {
  McpToolOrigin other_endpoint = origin();
  other_endpoint.endpoint = "docs-server --stdio --v2";
  McpToolOrigin other_auth = origin();
  other_auth.auth_identity = "docs-token";
  const auto digest = [](const std::shared_ptr<McpTool>& tool) {
    auto d = make_tool_descriptor(tool->spec());
    EXPECT_TRUE(d.has_value());
    return d ? d->digest : "";
  };
  const std::string base = digest(make());
  EXPECT_EQ(base, digest(make()));
  EXPECT_NE(base, digest(make(tool_info(), other_endpoint)));
  EXPECT_NE(base, digest(make(tool_info(), other_auth)));
}

TEST_F(McpToolTest, AnUntrustedServersToolIsAWriteNeverRetriedWhateverItClaims) {
  McpToolInfo info = tool_info();
  info.annotations = {{"readOnlyHint", true}, {"idempotentHint", true}, {"destructiveHint", false}};
  auto tool = make(info, origin(false));
  EXPECT_EQ(tool->spec().effects, ToolEffects::kWrite);
  EXPECT_EQ(tool->spec().recovery, ToolRecovery::kNeverRetry);
}

TEST_F(McpToolTest, ATrustedServersAnnotationsMapToEffectsAndRecovery) {
  EXPECT_EQ(mcp_tool_effects({{"readOnlyHint", true}}, true).effects, ToolEffects::kRead);
  EXPECT_EQ(mcp_tool_effects({{"readOnlyHint", true}}, true).recovery, ToolRecovery::kRetrySafe);
  EXPECT_EQ(mcp_tool_effects({{"idempotentHint", true}}, true).effects, ToolEffects::kWrite);
  EXPECT_EQ(mcp_tool_effects({{"idempotentHint", true}}, true).recovery, ToolRecovery::kRetrySafe);
  EXPECT_EQ(mcp_tool_effects({{"destructiveHint", false}}, true).effects, ToolEffects::kWrite);
  EXPECT_EQ(mcp_tool_effects({{"destructiveHint", false}}, true).recovery, ToolRecovery::kNeverRetry);
  EXPECT_EQ(mcp_tool_effects(json::object(), true).recovery, ToolRecovery::kNeverRetry);
  EXPECT_EQ(mcp_tool_effects({{"readOnlyHint", "yes"}}, true).effects, ToolEffects::kWrite);
  McpToolInfo info = tool_info();
  info.annotations = {{"readOnlyHint", true}};
  ToolRegistry registry;
  auto descriptor = registry.register_tool(make(info, origin(true)));
  ASSERT_TRUE(descriptor.has_value());
  EXPECT_EQ((*descriptor)->effects, ToolEffects::kRead);
  EXPECT_EQ((*descriptor)->recovery, ToolRecovery::kRetrySafe);
}

TEST_F(McpToolTest, ACallSendsTheArgumentsAndTimeoutsAndReturnsTheText) {
  auto tool = make();
  auto result = call(*tool, {{"q", "keel"}});
  ASSERT_TRUE(session_->wait_calls(1));
  const McpCallRequest request = session_->requests().at(0);
  EXPECT_EQ(request.tool, "search");
  EXPECT_EQ(request.arguments, json({{"q", "keel"}}));
  EXPECT_EQ(request.idle_timeout, std::chrono::seconds(7));
  EXPECT_EQ(request.max_total, std::chrono::seconds(70));
  session_->complete_call(text_result_of("found"));
  const Result<ToolResult> out = result.get();
  ASSERT_TRUE(out.has_value()) << out.error().to_string();
  ASSERT_EQ(out->content.size(), 1u);
  EXPECT_EQ(out->content[0].text, "found");
  EXPECT_GT(*tool->time_budget({}), std::chrono::seconds(70));
}

TEST_F(McpToolTest, ProgressBecomesToolProgress) {
  auto tool = make();
  auto result = call(*tool, json::object());
  ASSERT_TRUE(session_->wait_calls(1));
  session_->progress(McpProgress{3, 10.0, ""});
  session_->progress(McpProgress{5, std::nullopt, "indexing"});
  session_->complete_call(text_result_of("done"));
  ASSERT_TRUE(result.get().has_value());
  ASSERT_EQ(progress_.size(), 2u);
  EXPECT_EQ(progress_[0].text, "progress 3 of 10");
  EXPECT_EQ(progress_[0].details["total"], 10.0);
  EXPECT_EQ(progress_[1].text, "indexing");
  EXPECT_EQ(progress_[1].details["progress"], 5);
}

TEST_F(McpToolTest, CancellingTheCallEndsItCancelled) {
  auto tool = make();
  CancellationSource source;
  auto result = call(*tool, json::object(), source.token());
  ASSERT_TRUE(session_->wait_calls(1));
  source.cancel("interrupt");
  const Result<ToolResult> out = result.get();
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), codes::kCancelled);
}

TEST_F(McpToolTest, TheSessionsTimeoutReachesTheModelAsAnError) {
  auto tool = make();
  auto result = call(*tool, json::object());
  ASSERT_TRUE(session_->wait_calls(1));
  session_->complete_call(fail("mcp.call_timed_out", "no answer in 7 s"));
  const Result<ToolResult> out = result.get();
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), "mcp.call_timed_out");
}

TEST_F(McpToolTest, IsErrorBecomesAToolErrorWithTheServersText) {
  auto tool = make();
  auto result = call(*tool, json::object());
  ASSERT_TRUE(session_->wait_calls(1));
  McpCallResult failed = text_result_of("no such index");
  failed.is_error = true;
  session_->complete_call(failed);
  const Result<ToolResult> out = result.get();
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), codes::kMcpToolError);
  EXPECT_EQ(out.error().message(), "no such index");
}

TEST_F(McpToolTest, AServerThatIsNotConnectedFailsTheCall) {
  auto tool =
      make_mcp_tool(tool_info(), "docs__search", origin(), []() -> Result<std::shared_ptr<McpSession>> {
        return fail(codes::kMcpServerUnavailable, "reconnecting");
      });
  ASSERT_TRUE(tool.has_value());
  auto out = call(**tool, json::object()).get();
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), codes::kMcpServerUnavailable);
}

TEST_F(McpToolTest, PreviewNamesTheServerAndTheArguments) {
  auto tool = make();
  const CallPreview preview = tool->preview({{"q", "keel"}}, *tool->resolve_target({}));
  EXPECT_EQ(preview.target, "MCP server docs");
  EXPECT_EQ(preview.change_format, "arguments");
  EXPECT_NE(preview.change.find("q: keel"), std::string::npos);
  EXPECT_EQ(tool->resolve_target({})->server_id, "docs");
}

TEST_F(McpToolTest, ASchemaWithARemoteRefMakesNoTool) {
  McpToolInfo info = tool_info();
  info.input_schema["properties"]["q"] = {{"$ref", "https://example.com/q.json"}};
  auto tool = make_mcp_tool(info, "docs__search", origin(), nullptr);
  ASSERT_FALSE(tool.has_value());
  EXPECT_EQ(tool.error().code(), codes::kMcpSchemaRemoteRef);
}

// --- results ---

McpCallLimits limits() { return McpCallLimits{}; }

TEST(McpCallResult, ImagesStayImagesAndOtherContentIsDescribed) {
  McpCallResult result;
  result.content = json::parse(R"([
    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"},
    {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
    {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": "AAAA", "mimeType": "application/x"}},
    {"type": "hologram"}
  ])");
  auto out = convert_call_result(result, "docs", nullptr, limits());
  ASSERT_TRUE(out.has_value()) << out.error().to_string();
  ASSERT_EQ(out->content.size(), 6u);
  EXPECT_EQ(out->content[0].kind, ContentBlock::Kind::kImage);
  EXPECT_EQ(out->content[0].media_type, "image/png");
  EXPECT_EQ(out->content[0].data_base64, "iVBORw0KGgo=");
  EXPECT_NE(out->content[1].text.find("audio (audio/wav)"), std::string::npos);
  EXPECT_NE(out->content[2].text.find("a.txt <file:///a.txt>"), std::string::npos);
  EXPECT_NE(out->content[3].text.find("bee"), std::string::npos);
  EXPECT_NE(out->content[4].text.find("file:///c.bin"), std::string::npos);
  EXPECT_NE(out->content[5].text.find("hologram"), std::string::npos);
  ASSERT_TRUE(out->details["content"].is_array());
  EXPECT_EQ(out->details["content"][0]["data"], "UklGRg==");  // the audio, for the UI
}

TEST(McpCallResult, BinaryDataOverTheDetailBoundIsLeftOutOfDetails) {
  McpCallLimits small = limits();
  small.max_detail_bytes = 16;
  McpCallResult result;
  result.content =
      json::array({{{"type", "audio"}, {"data", std::string(100, 'A')}, {"mimeType", "audio/wav"}}});
  auto out = convert_call_result(result, "docs", nullptr, small);
  ASSERT_TRUE(out.has_value());
  EXPECT_FALSE(out->details["content"][0].contains("data"));
  EXPECT_EQ(out->details["content"][0]["truncated"], true);
}

TEST(McpCallResult, AResultOverTheSizeBoundIsRefused) {
  McpCallLimits small = limits();
  small.max_result_bytes = 100;
  auto out = convert_call_result(text_result_of(std::string(200, 'x')), "docs", nullptr, small);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), codes::kMcpResultTooLarge);
}

TEST(McpCallResult, ContentThatIsNotAListIsRefused) {
  McpCallResult result;
  result.content = "text";
  auto out = convert_call_result(result, "docs", nullptr, limits());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), codes::kMcpBadToolResult);
}

TEST(McpCallResult, StructuredContentIsCheckedAgainstTheOutputSchema) {
  auto validator = compile_parameter_schema(
      {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}});
  ASSERT_TRUE(validator.has_value());
  McpCallResult good;
  good.structured_content = json{{"n", 3}};
  auto ok = convert_call_result(good, "docs", validator->get(), limits());
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  EXPECT_EQ(ok->content.at(0).text, R"({"n":3})");  // no text content: the JSON is the text
  EXPECT_EQ(ok->details["structuredContent"], json({{"n", 3}}));

  McpCallResult bad = text_result_of("three");
  bad.structured_content = json{{"n", "three"}};
  auto mismatch = convert_call_result(bad, "docs", validator->get(), limits());
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_EQ(mismatch.error().code(), codes::kMcpOutputMismatch);

  auto missing = convert_call_result(text_result_of("three"), "docs", validator->get(), limits());
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), codes::kMcpOutputMismatch);
}

TEST(McpCallResult, AnErrorResultIsNotCheckedAgainstTheOutputSchema) {
  auto validator = compile_parameter_schema({{"type", "object"}, {"required", {"n"}}});
  ASSERT_TRUE(validator.has_value());
  McpCallResult failed = text_result_of("bad input");
  failed.is_error = true;
  auto out = convert_call_result(failed, "docs", validator->get(), limits());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code(), codes::kMcpToolError);
}

}  // namespace
}  // namespace keel::mcp
