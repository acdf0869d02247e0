// Tests for providers/wire/provider_error_mapping.h and decode_http_error (wire_codec.h): each API's error
// bodies map to coded, correctly retryable Errors whose messages never carry credentials or request
// headers.
#include "providers/wire/provider_error_mapping.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/engine_errors.h"
#include "providers/provider_errors.h"
#include "providers/wire/wire_codec.h"

namespace keel::providers {
namespace {

constexpr WireFormat kChat = WireFormat::kOpenAiChat;
constexpr WireFormat kResponses = WireFormat::kOpenAiResponses;
constexpr WireFormat kAnthropic = WireFormat::kAnthropicMessages;

TEST(ProviderErrorCodesTest, SharedCodesMatchTheEngines) {
  EXPECT_STREQ(codes::kProviderProtocolError, codes::kProviderProtocol);
  EXPECT_STREQ(codes::kProviderOtherError, codes::kProviderFailed);
}

TEST(DecodeHttpErrorTest, OpenAiRateLimitIsRetryableAndNamesRetryAfter) {
  const Error e = decode_http_error(
      kChat, 429,
      R"({"error": {"message": "Rate limit reached for gpt-4o in organization org-x on tokens per min.",
                    "type": "tokens", "param": null, "code": "rate_limit_exceeded"}})",
      "20");
  EXPECT_EQ(e.code(), codes::kProviderRateLimited);
  EXPECT_TRUE(e.retryable());
  EXPECT_NE(e.message().find("HTTP 429"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("Rate limit reached"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("retry after 20 s"), std::string::npos) << e.message();
}

TEST(DecodeHttpErrorTest, ExhaustedQuotaIsNotRetryableDespite429) {
  const Error e = decode_http_error(
      kResponses, 429,
      R"({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                                     "code": "insufficient_quota"}})",
      std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderQuotaExceeded);
  EXPECT_FALSE(e.retryable());
}

TEST(DecodeHttpErrorTest, ContextOverflowIsRecognizedByCodeOrByMessage) {
  Error e =
      decode_http_error(kChat, 400,
                        R"({"error": {"message": "This model's maximum context length is 128000 tokens.",
                                            "type": "invalid_request_error", "code": "context_length_exceeded"}})",
                        std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderContextTooLong);
  EXPECT_FALSE(e.retryable());
  e = decode_http_error(kAnthropic, 400,
                        R"({"type": "error", "error": {"type": "invalid_request_error",
                                                       "message": "prompt is too long: 210000 tokens > 200000 maximum"}})",
                        std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderContextTooLong);
  e = decode_http_error(
      kAnthropic, 400,
      R"({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: field required"}})",
      std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderBadRequest);
  EXPECT_FALSE(e.retryable());
}

TEST(DecodeHttpErrorTest, AnthropicOverloadedAndServerErrorsAreRetryable) {
  Error e = decode_http_error(
      kAnthropic, 529, R"({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})",
      std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderOverloaded);
  EXPECT_TRUE(e.retryable());
  e = decode_http_error(kAnthropic, 500,
                        R"({"type": "error", "error": {"type": "api_error", "message": "Internal"}})",
                        std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderServerError);
  EXPECT_TRUE(e.retryable());
  // A 5xx is retryable whatever its body calls it.
  e = decode_http_error(kChat, 503,
                        R"({"error": {"message": "upstream said", "type": "invalid_request_error"}})",
                        std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderServerError);
  EXPECT_TRUE(e.retryable());
}

TEST(DecodeHttpErrorTest, StatusDecidesWhenTheBodyDoesNot) {
  const std::vector<std::tuple<int, std::string, bool>> cases = {
      {400, codes::kProviderBadRequest, false},      {401, codes::kProviderUnauthorized, false},
      {403, codes::kProviderForbidden, false},       {404, codes::kProviderNotFound, false},
      {408, codes::kProviderTimeout, true},          {409, codes::kProviderServerError, true},
      {413, codes::kProviderRequestTooLarge, false}, {422, codes::kProviderBadRequest, false},
      {429, codes::kProviderRateLimited, true},      {500, codes::kProviderServerError, true},
      {502, codes::kProviderServerError, true},      {504, codes::kProviderServerError, true},
      {529, codes::kProviderOverloaded, true},       {302, codes::kProviderOtherError, false}};
  for (const auto& [status, code, retryable] : cases) {
    const Error e = decode_http_error(kChat, status, "<html><body>Bad Gateway</body></html>", std::nullopt);
    EXPECT_EQ(e.code(), code) << status;
    EXPECT_EQ(e.retryable(), retryable) << status;
    EXPECT_EQ(e.message().find("html"), std::string::npos) << e.message();
  }
}

TEST(DecodeHttpErrorTest, CompatibleServersErrorShapesAreRead) {
  // vLLM
  Error e = decode_http_error(kChat, 400,
                              R"({"object": "error", "message": "bad temperature", "type": "BadRequestError",
                                              "param": null, "code": 400})",
                              std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderBadRequest);
  EXPECT_NE(e.message().find("bad temperature"), std::string::npos);
  // Ollama
  e = decode_http_error(kChat, 404, R"({"error": "model 'llama9' not found"})", std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderNotFound);
  EXPECT_NE(e.message().find("llama9"), std::string::npos);
  // FastAPI-style
  e = decode_http_error(kResponses, 404, R"({"detail": "Not Found"})", std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderNotFound);
  EXPECT_NE(e.message().find("Not Found"), std::string::npos);
}

TEST(DecodeHttpErrorTest, CredentialErrorsNeverRepeatTheProvidersMessage) {
  const Error e = decode_http_error(
      kChat, 401,
      R"({"error": {"message": "Incorrect API key provided: sk-proj-abcd****************wxyz. You can find your API key at https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error", "code": "invalid_api_key"}})",
      std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderUnauthorized);
  EXPECT_FALSE(e.retryable());
  EXPECT_EQ(e.message().find("sk-"), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find("wxyz"), std::string::npos) << e.message();
  const Error a = decode_http_error(
      kAnthropic, 401,
      R"({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})",
      std::nullopt);
  EXPECT_EQ(a.code(), codes::kProviderUnauthorized);
  EXPECT_EQ(a.message().find("x-api-key"), std::string::npos) << a.message();
}

TEST(DecodeHttpErrorTest, NonJsonBodiesAreNeverQuoted) {
  const Error e = decode_http_error(
      kChat, 502, "Authorization: Bearer sk-live-1234567890abcdef\r\nX-Api-Key: hunter2", std::nullopt);
  EXPECT_EQ(e.code(), codes::kProviderServerError);
  EXPECT_EQ(e.message().find("hunter2"), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find("Bearer"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("not a JSON error"), std::string::npos) << e.message();
  EXPECT_NE(decode_http_error(kChat, 500, "", std::nullopt).message().find("empty"), std::string::npos);
}

TEST(DecodeHttpErrorTest, MalformedRetryAfterIsLeftOut) {
  Error e = decode_http_error(kAnthropic, 429, "{}", "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_NE(e.message().find("retry after Wed, 21 Oct 2015 07:28:00 GMT"), std::string::npos) << e.message();
  e = decode_http_error(kAnthropic, 429, "{}", "5\r\nSet-Cookie: x=y");
  EXPECT_EQ(e.message().find("Set-Cookie"), std::string::npos) << e.message();
  EXPECT_EQ(e.message().find("retry after"), std::string::npos) << e.message();
}

TEST(ClassifyProviderErrorTest, StreamErrorsAndHttpErrorsShareCodes) {
  const Error in_stream = classify_provider_error(
      {.api = "Anthropic Messages", .type = "overloaded_error", .message = "Overloaded"});
  const Error http = decode_http_error(
      kAnthropic, 529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
      std::nullopt);
  EXPECT_EQ(in_stream.code(), http.code());
  EXPECT_EQ(in_stream.retryable(), http.retryable());
  const Error unknown = classify_provider_error({.api = "x", .type = "odd", .message = "?"});
  EXPECT_EQ(unknown.code(), codes::kProviderOtherError);
  EXPECT_FALSE(unknown.retryable());
}

TEST(SanitizeProviderMessageTest, RemovesCredentialsAndControlCharacters) {
  EXPECT_EQ(sanitize_provider_message("line\none\ttab\x01"), "line one tab ");
  EXPECT_EQ(sanitize_provider_message("bad key sk-ant-api03-AbCdEf"), "bad key [redacted]");
  EXPECT_EQ(sanitize_provider_message("Authorization: Bearer abc"), "Authorization: [redacted] [redacted]");
  EXPECT_EQ(sanitize_provider_message("api_key=hunter2 rejected"), "api_key=[redacted] rejected");
  EXPECT_EQ(sanitize_provider_message("token 0123456789abcdefABCDEF0123"), "token [redacted]");
  EXPECT_EQ(sanitize_provider_message("model gpt-4o-2024-08-06 is busy"), "model gpt-4o-2024-08-06 is busy");
}

TEST(SanitizeProviderMessageTest, KeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(sanitize_provider_message("caf\xC3\xA9 \xFF\xC3 ok"), "caf\xC3\xA9 ?? ok");
  EXPECT_EQ(sanitize_provider_message("\xED\xA0\x80"), "???");  // a surrogate is not UTF-8
}

TEST(SanitizeProviderMessageTest, BoundsTheLengthOnACharacterBoundary) {
  const std::string long_text(400, 'a');
  EXPECT_EQ(sanitize_provider_message(long_text, 300), std::string(300, 'a') + "...");
  const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC";  // 6 bytes
  EXPECT_EQ(sanitize_provider_message(euros, 4), "\xE2\x82\xAC...");
}

}  // namespace
}  // namespace keel::providers
