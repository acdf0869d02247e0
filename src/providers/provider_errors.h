// providers/provider_errors.h — the stable error codes of the providers layer (SSE, wire codecs, HTTP
// errors).
//
// Pending a merge into keel/error_codes.h; until then they live here. The same rules apply: never rename or
// reuse a code, add new ones. Which codes are retryable is decided where the Error is made (see
// wire/provider_error_mapping.h); the code alone does not say it.
#pragma once

namespace keel::codes {

// A stream that breaks the wire format's grammar (events out of order, deltas for a call that was never
// started, anything after the terminal event). The same string as the engine's kProviderProtocol
// (engine/engine_errors.h), which the providers layer cannot include; a test keeps the two equal.
inline constexpr char kProviderProtocolError[] = "provider.protocol_error";
inline constexpr char kProviderBadEventJson[] = "provider.bad_event_json";  // an event's data is not JSON
inline constexpr char kProviderUnknownEvent[] = "provider.unknown_event";   // a type the API never sends
inline constexpr char kProviderStreamTruncated[] = "provider.stream_truncated";  // ended before its end
inline constexpr char kProviderEventTooLarge[] = "provider.event_too_large";  // one SSE event over the bound

// Requests the codec cannot express for the configured model.
inline constexpr char kProviderImageUnsupported[] =
    "provider.image_unsupported";  // images, model lacks vision
inline constexpr char kProviderToolsUnsupported[] =
    "provider.tools_unsupported";  // tools, model lacks tool use
inline constexpr char kProviderReservedParameter[] =
    "provider.reserved_parameter";  // parameter the codec owns

// Errors the provider reported (an HTTP error response, or an error event in the stream).
inline constexpr char kProviderBadRequest[] = "provider.bad_request";
inline constexpr char kProviderUnauthorized[] = "provider.unauthorized";
inline constexpr char kProviderForbidden[] = "provider.forbidden";
inline constexpr char kProviderNotFound[] = "provider.not_found";
inline constexpr char kProviderRequestTooLarge[] = "provider.request_too_large";
inline constexpr char kProviderContextTooLong[] = "provider.context_too_long";
inline constexpr char kProviderRefused[] = "provider.refused";  // a content policy refused the request
inline constexpr char kProviderRateLimited[] = "provider.rate_limited";
inline constexpr char kProviderQuotaExceeded[] = "provider.quota_exceeded";  // billing: waiting will not help
inline constexpr char kProviderOverloaded[] = "provider.overloaded";
// A 2xx answer whose content type is not text/event-stream (a proxy's page, a non-streaming endpoint).
inline constexpr char kProviderNotSse[] = "provider.not_sse";
inline constexpr char kProviderServerError[] = "provider.server_error";
inline constexpr char kProviderTimeout[] = "provider.timeout";
// An error the provider reported in a form none of the above fits. The same string as the engine's
// kProviderFailed.
inline constexpr char kProviderOtherError[] = "provider.error";

}  // namespace keel::codes
