// providers/http/transfer_errors.cc — curl result codes to keel error codes.
#include "providers/http/transfer_errors.h"

#include "providers/http/http_errors.h"

namespace keel::providers {

namespace {

bool is_tls_error(CURLcode code) {
  switch (code) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      return true;
    default:
      return false;
  }
}

bool is_connection_drop(CURLcode code) {
  switch (code) {
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace

Error transfer_error(CURLcode code, std::string_view detail, const TransferFacts& facts) {
  std::string message = "request to " + (facts.host.empty() ? std::string("the server") : facts.host);
  message += facts.via_proxy ? " through the proxy: " : ": ";
  message += detail.empty() ? curl_easy_strerror(code) : std::string(detail);
  message += " (curl " + std::to_string(static_cast<int>(code)) + ")";

  if (code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL) {
    return Error(codes::kInvalidArgument, message, false);
  }
  if (code == CURLE_COULDNT_RESOLVE_PROXY || code == CURLE_PROXY) {
    return Error(codes::kHttpProxyFailed, message, false);
  }
  // A handshake that fails outright (CURLE_SSL_CONNECT_ERROR) may be a reset mid-handshake; a certificate
  // or trust failure will fail the same way next time.
  if (is_tls_error(code)) return Error(codes::kHttpTlsFailed, message, code == CURLE_SSL_CONNECT_ERROR);
  if (!facts.connected) {
    // Before the connection is up through a proxy, the proxy is what failed: reaching it, or its tunnel.
    if (facts.via_proxy) return Error(codes::kHttpProxyFailed, message, false);
    if (code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_CONNECT ||
        code == CURLE_OPERATION_TIMEDOUT || is_connection_drop(code)) {
      return Error(codes::kHttpConnectFailed, message, true);
    }
  }
  if (code == CURLE_OPERATION_TIMEDOUT) return Error(codes::kHttpTimeout, message, true);
  if (is_connection_drop(code)) return Error(codes::kHttpConnectionLost, message, true);
  return Error(codes::kHttpFailed, message, false);
}

std::string redact(std::string message, const std::vector<std::string>& secret_values) {
  static constexpr std::string_view kMask = "[redacted]";
  std::vector<std::string> secrets;
  for (const std::string& value : secret_values) {
    if (value.empty()) continue;
    secrets.push_back(value);
    size_t begin = 0;
    while (begin < value.size()) {
      size_t end = value.find(' ', begin);
      if (end == std::string::npos) end = value.size();
      if (end - begin >= 8 && end - begin < value.size()) secrets.push_back(value.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  for (const std::string& secret : secrets) {
    for (size_t at = message.find(secret); at != std::string::npos;
         at = message.find(secret, at + kMask.size())) {
      message.replace(at, secret.size(), kMask);
    }
  }
  return message;
}

}  // namespace keel::providers
