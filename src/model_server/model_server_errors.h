// model_server/model_server_errors.h — error codes of the scripted model server (stable).
#pragma once

#include "keel/error_codes.h"

namespace keel::codes {

inline constexpr char kModelServerBadScript[] = "model_server.bad_script";  // unreadable or invalid script
inline constexpr char kModelServerListenFailed[] = "model_server.listen_failed";  // could not bind 127.0.0.1
inline constexpr char kModelServerRecordFailed[] = "model_server.record_failed";  // request log not writable

}  // namespace keel::codes
