// cli/cli_errors.h — error codes of the command-line front ends (stable; scripts match on them).
#pragma once

namespace keel::codes {

inline constexpr char kServeTokenFile[] = "serve.token_file";  // the WebSocket token file is unusable
inline constexpr char kChatNoTerminal[] = "chat.no_terminal";  // keel chat needs a terminal it can put in raw mode
inline constexpr char kLogOpenFailed[] = "log.open_failed";    // the log file cannot be opened

}  // namespace keel::codes
