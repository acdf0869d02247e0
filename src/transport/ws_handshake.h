// transport/ws_handshake.h — what a request to keel's port must pass before keel reads anything more from
// its connection, what it gets (a WebSocket upgrade, a file of the web interface, a web session), and who the
// client is once it passes (docs/security.md, "The WebSocket" and "The web interface's session";
// docs/web.md).
//
// The server reads the request's header only (at most kMaxHandshakeHeaderBytes, never a body), parses those
// bytes with parse_handshake_header and decides with check_handshake, before the upgrade and so before any
// JSON-RPC message. The checks, in order, for every request:
//   - Host (DNS rebinding): a loopback name or address, the listen address, a name the policy allows, or,
//     for a listener the person opened to the network on purpose, any IP literal (a page that rebinds a
//     DNS name to keel has that name in Host, never an address). Else 403 rpc.host_refused.
//   - Origin (a web page): none is a non-browser client and passes; keel's own origin (http, this Host,
//     the bound port: the web interface keel will serve) and the policy's allowed origins pass; every other,
//     `null` included, gets 403 rpc.origin_refused.
//   - A body (Content-Length other than 0, or Transfer-Encoding): 400 rpc.body_refused; it is never read.
// Then by what is asked:
//   - A WebSocket upgrade (GET, HTTP/1.1, Upgrade: websocket; any path, `/rpc` for the web interface): the
//     token (Authorization: Bearer, or the `token` query parameter), compared in constant time with each
//     credential, names the client's principal; else a valid web-session cookie (keel_session_<port>) names
//     "owner", but only with keel's own Origin (the page keel served); else 401 rpc.unauthorized.
//   - `POST /session` (the web interface's login): the server token (principal "owner") or the one-time
//     token, which this consumes (a second use is 401); without a token, a valid cookie with keel's own
//     Origin keeps its session, and with no credentials configured (--no-token) anyone gets one. Else 401.
//     Other methods on /session: 405.
//   - `GET`/`HEAD` of any other path (no token: the web interface's files are no secret; the server
//     resolves the path, transport/static_files.h); a plain GET of /rpc: 426. Other methods: 405.
// Pure functions, no I/O; the only state is the one-time token of `policy.sessions`. The fuzz target
// fuzz_ws_handshake runs them on arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/ui_sessions.h"

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
  // The web interface's sessions (must outlive the checks); null: no POST /session and no cookie accepted.
  UiSessions* sessions = nullptr;
};

// The name of the web-session cookie of keel on `port`: cookies are not isolated by port, so two keels on
// one host must not read each other's.
std::string session_cookie_name(uint16_t port);

// The parts of a request header the checks read.
struct HandshakeRequest {
  bool upgrade = false;   // a WebSocket upgrade (GET, HTTP/1.1, Connection: upgrade, Upgrade: websocket)
  bool has_body = false;  // Content-Length other than 0, or Transfer-Encoding
  std::string method;     // "GET", "POST", ...
  std::string target;
  std::optional<std::string> host;
  std::optional<std::string> origin;
  std::optional<std::string> authorization;
  std::vector<std::string> cookies;  // every Cookie field's value
  bool repeated_field = false;       // Host, Origin or Authorization given twice: ambiguous, refused
};

// nullopt when `bytes` is not one complete HTTP request header (ending with the empty line) of at most
// kMaxHandshakeHeaderBytes.
std::optional<HandshakeRequest> parse_handshake_header(std::string_view bytes);

// What the server does with a request that passed.
enum class HandshakeAction {
  kRefuse,       // answer `status` with the refusal's code and close
  kUpgrade,      // go on with the WebSocket upgrade (101) as `principal`
  kServeFile,    // GET or HEAD of a file of the web interface (the server resolves `target`)
  kOpenSession,  // POST /session: open a web session and set its cookie (204)
  kKeepSession,  // POST /session with a valid cookie and no token: nothing new (204)
};

struct HandshakeVerdict {
  unsigned status = 101;  // 101 upgrade, 200 a file, 204 a session; else the HTTP status of the refusal
  std::string code;       // keel's dotted code of a refusal
  std::string message;
  std::string principal;  // the client's principal when upgraded
  HandshakeAction action = HandshakeAction::kRefuse;
  // "host:port" of the request, once its Host passed: what the page's CSP lets it connect to.
  std::string self_host;
  bool accepted() const { return action != HandshakeAction::kRefuse; }
};

HandshakeVerdict check_handshake(const HandshakeRequest& request, const HandshakePolicy& policy);

// Whether `address` (an IP literal) is a loopback address; false for anything else, names included.
bool is_loopback_address(std::string_view address);

}  // namespace keel
