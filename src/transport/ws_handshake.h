// transport/ws_handshake.h — what a WebSocket upgrade request must pass before keel reads anything more
// from its connection, and who the client is once it passes (docs/security.md, "The WebSocket").
//
// The server reads the request's header only (at most kMaxHandshakeHeaderBytes, never a body), parses those
// bytes with parse_handshake_header and decides with check_handshake, before the upgrade and so before any
// JSON-RPC message. The checks, in order:
//   - Host (DNS rebinding): a loopback name or address, the listen address, a name the policy allows, or,
//     for a listener the person opened to the network on purpose, any IP literal (a page that rebinds a
//     DNS name to keel has that name in Host, never an address). Else 403 rpc.host_refused.
//   - Origin (a web page): none is a non-browser client and passes; keel's own origin (http, this Host,
//     the bound port: the web interface keel will serve) and the policy's allowed origins pass; every other,
//     `null` included, gets 403 rpc.origin_refused.
//   - A body (Content-Length other than 0, or Transfer-Encoding): 400 rpc.body_refused; it is never read.
//   - The token (Authorization: Bearer, or the `token` query parameter), compared in constant time with each
//     credential: 401 rpc.unauthorized. The credential that matches names the client's principal.
//   - A WebSocket upgrade (GET, HTTP/1.1, Upgrade: websocket): else 426.
// Pure functions, no I/O, no state; the fuzz target fuzz_ws_handshake runs them on arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

inline constexpr size_t kMaxHandshakeHeaderBytes = 8 * 1024;

// A token and the principal (identity) of the clients that present it.
struct HandshakeCredential {
  std::string principal;
  std::string token;
};

struct HandshakePolicy {
  // Empty: every client is let in without a token, as `anonymous_principal`.
  std::vector<HandshakeCredential> credentials;
  std::string anonymous_principal = "anonymous";
  std::string listen_host = "127.0.0.1";     // the IP address the server listens on
  uint16_t port = 0;                         // the bound port (keel's own origin)
  std::vector<std::string> allowed_origins;  // "scheme://host[:port]", besides keel's own
  std::vector<std::string> allowed_hosts;    // Host names besides loopback ones and the listen address
  bool any_ip_host = false;                  // a listener opened to the network: any IP-literal Host
};

// The parts of a request header the checks read.
struct HandshakeRequest {
  bool upgrade = false;   // a WebSocket upgrade (GET, HTTP/1.1, Connection: upgrade, Upgrade: websocket)
  bool has_body = false;  // Content-Length other than 0, or Transfer-Encoding
  std::string target;
  std::optional<std::string> host;
  std::optional<std::string> origin;
  std::optional<std::string> authorization;
  bool repeated_field = false;  // Host, Origin or Authorization given twice: ambiguous, refused
};

// nullopt when `bytes` is not one complete HTTP request header (ending with the empty line) of at most
// kMaxHandshakeHeaderBytes.
std::optional<HandshakeRequest> parse_handshake_header(std::string_view bytes);

struct HandshakeVerdict {
  unsigned status = 101;  // 101: go on with the upgrade; else the HTTP status of the refusal
  std::string code;       // keel's dotted code of a refusal
  std::string message;
  std::string principal;  // the client's principal when accepted
  bool accepted() const { return status == 101; }
};

HandshakeVerdict check_handshake(const HandshakeRequest& request, const HandshakePolicy& policy);

// Whether `address` (an IP literal) is a loopback address; false for anything else, names included.
bool is_loopback_address(std::string_view address);

}  // namespace keel
