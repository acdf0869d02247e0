// fuzz_ws_handshake — the checks of a WebSocket upgrade request (transport/ws_handshake.h:
// parse_handshake_header, then check_handshake under a fixed policy) on arbitrary bytes, as the server runs
// them on the header of every connection before its token is known. They must never throw or crash, and a
// request they let through must keep their promises: it is a WebSocket upgrade without a body, it named an
// allowed Host, it presented one of the policy's tokens and got that token's principal, and, when it has an
// Origin, that origin is keel's own or listed.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "transport/ws_handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using keel::fuzz::require;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  keel::HandshakePolicy policy;
  policy.credentials = {{"owner", "s3cret"}, {"bob", "bob-token"}};
  policy.listen_host = "127.0.0.1";
  policy.port = 7777;
  policy.allowed_origins = {"https://ui.example.org"};
  policy.allowed_hosts = {"keel.lan"};
  std::optional<keel::HandshakeRequest> request;
  keel::HandshakeVerdict verdict;
  try {
    request = keel::parse_handshake_header(bytes);
    if (!request) return 0;
    verdict = keel::check_handshake(*request, policy);
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
  require(request->upgrade && !request->has_body && !request->repeated_field,
          "let through without the basics");
  require(request->host.has_value(), "let through without a Host");
  require(verdict.principal == "owner" || verdict.principal == "bob",
          "let through without a known principal");
  const std::string expected = verdict.principal == "owner" ? "s3cret" : "bob-token";
  const bool in_header =
      request->authorization && request->authorization->find(expected) != std::string::npos;
  const bool in_query = request->target.find("token=") != std::string::npos;
  require(in_header || in_query, "a principal granted without its token in the request");
  if (request->origin) {
    std::string origin = *request->origin;
    for (char& c : origin) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    // keel's own origin names the bound port (not a default one); the listed one its host.
    require(origin.find(":7777") != std::string::npos || origin.find("ui.example.org") != std::string::npos,
            "an Origin let through that is neither keel's own nor listed");
  }
  return 0;
}
