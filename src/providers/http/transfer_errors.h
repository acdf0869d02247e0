// providers/http/transfer_errors.h — how a failed curl transfer becomes a keel Error, and how secrets are
// kept out of its message.
//
// The classification depends on how far the transfer got, which the client tracks: whether it went through
// a proxy, whether the connection (proxy tunnel and TLS included) was established, whether the response
// head had arrived. Pure functions; the client is their only production caller.
#pragma once

#include <curl/curl.h>

#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::providers {

struct TransferFacts {
  bool via_proxy = false;
  bool connected = false;      // curl reported the connection ready for the request
  bool head_received = false;  // the final response head was delivered
  std::string host;            // for the message (never the full URL: its query may hold a key)
};

// The Error for a transfer curl ended with `code` (not CURLE_OK); `detail` is curl's error buffer text.
Error transfer_error(CURLcode code, std::string_view detail, const TransferFacts& facts);

// `message` with every occurrence of each secret replaced by "[redacted]". Besides each whole value, every
// space-separated word of a value at least 8 characters long is a secret too ("Bearer sk-..." leaks as
// "sk-..." alone).
std::string redact(std::string message, const std::vector<std::string>& secret_values);

}  // namespace keel::providers
