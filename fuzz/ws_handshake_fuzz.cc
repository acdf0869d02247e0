// fuzz_ws_handshake — the checks of a request to keel's port (transport/ws_handshake.h:
// parse_handshake_header, then check_handshake under a fixed policy with web sessions) on arbitrary bytes, as
// the server runs them on the header of every connection before its token is known. They must never throw
// or crash, and a request they let through must keep their promises: it has no body and named an allowed
// Host, and, when it has an Origin, that origin is keel's own or listed; an upgrade presented one of the
// policy's tokens and got that token's principal (or the owner's session cookie from keel's own Origin); a
// file is a GET or HEAD; a web session is opened only by POST /session with the server token or the
// one-time token, and the one-time token only once.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "transport/ws_handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using keel::fuzz::require;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  keel::UiSessions sessions("once-token-0123");
  keel::HandshakePolicy policy;
  policy.credentials = {{"owner", "s3cret"}, {"bob", "bob-token"}};
  policy.listen_host = "127.0.0.1";
  policy.port = 7777;
  policy.allowed_origins = {"https://ui.example.org"};
  policy.allowed_hosts = {"keel.lan"};
  policy.sessions = &sessions;
  std::optional<keel::HandshakeRequest> request;
  keel::HandshakeVerdict verdict;
  keel::HandshakeVerdict second;
  try {
    request = keel::parse_handshake_header(bytes);
    if (!request) return 0;
    verdict = keel::check_handshake(*request, policy);
    second = keel::check_handshake(*request, policy);
  } catch (...) {
    require(false, "the handshake checks threw");
  }
  require(bytes.size() <= keel::kMaxHandshakeHeaderBytes, "a header over the bound was parsed");
  if (!verdict.accepted()) {
    require(verdict.status >= 400 && verdict.status < 500, "a refusal that is not a 4xx status");
    require(!verdict.code.empty() && verdict.principal.empty(),
            "a refusal without a code, or with a principal");
    return 0;
  }
  require(!request->has_body && !request->repeated_field, "let through without the basics");
  require(request->host.has_value() && !verdict.self_host.empty(), "let through without a Host");
  if (request->origin) {
    std::string origin = *request->origin;
    for (char& c : origin) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    // keel's own origin names the bound port (not a default one); the listed one its host.
    require(origin.find(":7777") != std::string::npos || origin.find("ui.example.org") != std::string::npos,
            "an Origin let through that is neither keel's own nor listed");
  }
  const auto has = [&](const std::string& token) {
    const bool in_header = request->authorization && request->authorization->find(token) != std::string::npos;
    return in_header || request->target.find("token=") != std::string::npos;
  };
  switch (verdict.action) {
    case keel::HandshakeAction::kRefuse:
      require(false, "accepted() with the refuse action");
      break;
    case keel::HandshakeAction::kServeFile:
      require(!request->upgrade && (request->method == "GET" || request->method == "HEAD"),
              "a file for something else than a GET or HEAD");
      break;
    case keel::HandshakeAction::kOpenSession:
    case keel::HandshakeAction::kKeepSession:
      require(!request->upgrade && request->method == "POST" && request->target.starts_with("/session"),
              "a session for something else than POST /session");
      require(
          verdict.action == keel::HandshakeAction::kKeepSession || has("s3cret") || has("once-token-0123"),
          "a session opened without the server token or the one-time token");
      if (!has("s3cret")) {
        require(second.action != keel::HandshakeAction::kOpenSession, "the one-time token worked twice");
      }
      break;
    case keel::HandshakeAction::kUpgrade: {
      require(request->upgrade, "an upgrade that is not one");
      require(verdict.principal == "owner" || verdict.principal == "bob",
              "let through without a known principal");
      const std::string expected = verdict.principal == "owner" ? "s3cret" : "bob-token";
      // No session was opened, so no cookie can stand in for the token.
      require(has(expected), "a principal granted without its token in the request");
      break;
    }
  }
  return 0;
}
