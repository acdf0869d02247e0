#include "providers/http/transfer_errors.h"

#include <gtest/gtest.h>

#include "providers/http/http_errors.h"

namespace keel::providers {
namespace {

TransferFacts facts(bool via_proxy, bool connected, bool head_received, std::string host = "") {
  TransferFacts out;
  out.via_proxy = via_proxy;
  out.connected = connected;
  out.head_received = head_received;
  out.host = std::move(host);
  return out;
}

TEST(TransferErrorsTest, RefusedConnectionIsARetryableConnectFailure) {
  const Error error =
      transfer_error(CURLE_COULDNT_CONNECT, "Failed to connect", facts(false, false, false, "127.0.0.1"));
  EXPECT_EQ(error.code(), codes::kHttpConnectFailed);
  EXPECT_TRUE(error.retryable());
  EXPECT_NE(error.message().find("127.0.0.1"), std::string::npos);
}

TEST(TransferErrorsTest, FailureBeforeConnectingThroughAProxyIsTheProxys) {
  const Error error = transfer_error(CURLE_COULDNT_CONNECT, "", facts(true, false, false));
  EXPECT_EQ(error.code(), codes::kHttpProxyFailed);
  EXPECT_FALSE(error.retryable());
  EXPECT_EQ(transfer_error(CURLE_COULDNT_RESOLVE_PROXY, "", TransferFacts{}).code(), codes::kHttpProxyFailed);
}

TEST(TransferErrorsTest, CertificateFailuresAreNotRetryableButAFailedHandshakeIs) {
  const Error verify = transfer_error(CURLE_PEER_FAILED_VERIFICATION, "", TransferFacts{});
  EXPECT_EQ(verify.code(), codes::kHttpTlsFailed);
  EXPECT_FALSE(verify.retryable());
  const Error handshake = transfer_error(CURLE_SSL_CONNECT_ERROR, "", TransferFacts{});
  EXPECT_EQ(handshake.code(), codes::kHttpTlsFailed);
  EXPECT_TRUE(handshake.retryable());
}

TEST(TransferErrorsTest, ADropAfterConnectingIsALostConnection) {
  const Error error = transfer_error(CURLE_PARTIAL_FILE, "", facts(false, true, true));
  EXPECT_EQ(error.code(), codes::kHttpConnectionLost);
  EXPECT_TRUE(error.retryable());
  EXPECT_EQ(transfer_error(CURLE_RECV_ERROR, "", facts(true, true, false)).code(),
            codes::kHttpConnectionLost);
}

TEST(TransferErrorsTest, ConnectTimeoutIsAConnectFailure) {
  EXPECT_EQ(transfer_error(CURLE_OPERATION_TIMEDOUT, "", TransferFacts{}).code(), codes::kHttpConnectFailed);
}

TEST(TransferErrorsTest, BadUrlIsAnInvalidArgument) {
  EXPECT_EQ(transfer_error(CURLE_URL_MALFORMAT, "", TransferFacts{}).code(), codes::kInvalidArgument);
}

TEST(TransferErrorsTest, RedactsHeaderValuesAndTheirLongWords) {
  const std::string message = redact("sent Bearer sk-secret-value to x; echo sk-secret-value",
                                     {"Bearer sk-secret-value", "", "short"});
  EXPECT_EQ(message.find("sk-secret-value"), std::string::npos) << message;
  EXPECT_NE(message.find("[redacted]"), std::string::npos);
}

TEST(TransferErrorsTest, RedactionLeavesOtherTextAlone) {
  EXPECT_EQ(redact("nothing to hide", {"sk-secret-value"}), "nothing to hide");
}

}  // namespace
}  // namespace keel::providers
