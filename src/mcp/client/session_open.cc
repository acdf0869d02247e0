// mcp/client/session_open.cc — see session_open.h: the version probe and the handshake of both generations.
//
// The probe (2026-07-28, "version negotiation" on stdio): server/discover with the modern _meta goes first.
//   - a result: the server speaks the stateless generation (unless its supportedVersions leave 2026-07-28
//     out and name an older revision keel speaks: then initialize);
//   - a recognised modern error (-32020 .. -32022): a modern server; -32022 UnsupportedProtocolVersion whose
//     data.supported names an older revision keel speaks leads to initialize, anything else ends the attempt;
//   - any other error, or silence within the probe timeout: an older server; initialize follows.
// The probe's timeout sends no notifications/cancelled: an older server may not know the request at all.
#include "mcp/client/session_open.h"

#include <algorithm>

#include "mcp/client/mcp_results.h"
#include "mcp/client/mcp_session_impl.h"
#include "mcp/mcp_errors.h"

namespace keel::mcp {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHeaderMismatch = -32020;
constexpr int kMissingRequiredClientCapability = -32021;
constexpr int kUnsupportedProtocolVersion = -32022;

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

// A timeout during the handshake is the handshake's.
Error handshake_error(const Error& error) {
  if (error.code() == codes::kMcpCallTimedOut) return Error(codes::kMcpHandshakeTimedOut, error.message());
  return error;
}

// Whether a list of versions (the DiscoverResult's, or an error's data.supported) names one keel speaks of
// the older generation.
bool names_legacy_revision(const json& versions) {
  if (!versions.is_array()) return false;
  return std::ranges::any_of(versions, [](const json& v) {
    return v.is_string() && is_legacy_revision_keel_speaks(v.get<std::string>());
  });
}

enum class Generation { kModern, kLegacy };

Result<Generation> probe(McpSessionImpl& session, const McpClientOptions& options, Clock::time_point deadline,
                         McpServerInfo& info) {
  const auto probe_timeout = std::min(options.probe_timeout, left_until(deadline));
  Result<json> reply = session.request_blocking("server/discover", json{{"_meta", session.modern_meta()}},
                                                probe_timeout, /*cancel_on_timeout=*/false,
                                                /*errors_as_values=*/true);
  if (!reply) {
    if (reply.error().code() == codes::kMcpCallTimedOut) return Generation::kLegacy;  // silence
    return fail(reply.error());  // the server exited, the channel closed
  }
  if (const auto error = reply->find("error"); reply->is_object() && error != reply->end()) {
    const json code = error->is_object() ? error->value("code", json()) : json();
    if (!code.is_number_integer()) return Generation::kLegacy;
    const int64_t number = code.get<int64_t>();
    if (number == kUnsupportedProtocolVersion) {
      const json data = error->value("data", json::object());
      if (data.is_object() && names_legacy_revision(data.value("supported", json())))
        return Generation::kLegacy;
      return fail(codes::kMcpVersionUnsupported,
                  "the server supports none of the protocol revisions keel speaks (" +
                      data.dump().substr(0, 200) + ")");
    }
    if (number == kMissingRequiredClientCapability || number == kHeaderMismatch) {
      return fail(codes::kMcpRpcError, "server/discover: the server requires what keel does not offer: " +
                                           error->value("message", std::string()).substr(0, 200));
    }
    return Generation::kLegacy;  // method not found, not initialized, ...: an older server
  }
  const json versions = reply->is_object() ? reply->value("supportedVersions", json()) : json();
  // A DiscoverResult always lists supportedVersions; a result without them is an older server answering
  // every method it does not know with an empty result (the conformance suite's legacy mock servers do).
  if (!versions.is_array()) return Generation::kLegacy;
  if (versions.is_array() &&
      std::ranges::none_of(versions, [](const json& v) { return v == kModernRevision; })) {
    if (names_legacy_revision(versions)) return Generation::kLegacy;
    return fail(codes::kMcpVersionUnsupported,
                "the server supports none of the protocol revisions keel speaks (" +
                    versions.dump().substr(0, 200) + ")");
  }
  info = KEEL_TRY(parse_server_info(*reply));
  info.protocol_version = kModernRevision;
  return Generation::kModern;
}

Result<McpServerInfo> initialize(McpSessionImpl& session, Clock::time_point deadline) {
  const json params = {{"protocolVersion", kLegacyRevisions[0]},
                       // Only what keel implements: no elicitation, sampling or roots yet.
                       {"capabilities", json::object()},
                       {"clientInfo", session.client_info()}};
  Result<json> reply = session.request_blocking("initialize", params, left_until(deadline),
                                                /*cancel_on_timeout=*/false, /*errors_as_values=*/false);
  if (!reply) return fail(handshake_error(reply.error()));
  McpServerInfo info = KEEL_TRY(parse_server_info(*reply));
  const auto version = reply->find("protocolVersion");
  if (version == reply->end() || !version->is_string())
    return fail(codes::kMcpBadResponse, "initialize: the result names no protocolVersion");
  info.protocol_version = version->get<std::string>();
  if (!is_legacy_revision_keel_speaks(info.protocol_version))
    return fail(codes::kMcpVersionUnsupported, "the server answered with protocol revision " +
                                                   info.protocol_version.substr(0, 64) +
                                                   ", which keel does not speak");
  KEEL_TRY(session.notify("notifications/initialized", json()));
  return info;
}

}  // namespace

Result<std::shared_ptr<McpSession>> open_mcp_session(std::unique_ptr<McpTransport> transport,
                                                     McpClientOptions options, McpSessionEvents events) {
  if (!transport) return fail(Error(codes::kMcpTransportClosed, "no transport"));
  const auto deadline = Clock::now() + options.handshake_timeout;
  auto session = std::make_shared<McpSessionImpl>(std::move(transport), options, std::move(events));
  Result<void> handshake = [&]() -> Result<void> {
    KEEL_TRY(session->start());
    McpServerInfo info;
    const Generation generation = KEEL_TRY(probe(*session, options, deadline, info));
    if (generation == Generation::kLegacy) info = KEEL_TRY(initialize(*session, deadline));
    session->become_ready(std::move(info), generation == Generation::kModern);
    if (generation == Generation::kLegacy && !options.log_level.empty() &&
        session->server_info().capabilities.contains("logging"))
      session->request_log_level(options.log_level);
    return {};
  }();
  if (!handshake) {
    session->close();
    return fail(handshake.error());
  }
  return std::shared_ptr<McpSession>(std::move(session));
}

}  // namespace keel::mcp
