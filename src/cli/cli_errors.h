// cli/cli_errors.h — error codes of the command-line front ends (stable; scripts match on them).
#pragma once

namespace keel::codes {

inline constexpr char kServeTokenFile[] = "serve.token_file";  // the WebSocket token file is unusable
inline constexpr char kChatNoTerminal[] =
    "chat.no_terminal";  // keel chat needs a terminal it can put in raw mode
inline constexpr char kLogOpenFailed[] = "log.open_failed";  // the log file cannot be opened
// The engine host (cli/engine_host.h), the blocking client (cli/engine_client.h) and keel demo (cli/demo.h).
inline constexpr char kStoreInUse[] = "host.store_in_use";         // another keel engine holds the store
inline constexpr char kNoModel[] = "host.no_model";                // no model named and none configured
inline constexpr char kNoAnswer[] = "client.no_answer";            // an op got no answer from the engine
inline constexpr char kDemoFilesMissing[] = "demo.files_missing";  // no demo/ beside keel or in the sources
inline constexpr char kDemoDirNotEmpty[] = "demo.dir_not_empty";   // --dir names a folder that holds files
inline constexpr char kDemoDirFailed[] = "demo.dir_failed";        // the folder cannot be made or filled
inline constexpr char kDemoNoResult[] = "demo.no_result";          // the turn ended without SUMMARY.md

}  // namespace keel::codes
