// model_server/request_log.h — the record of every request the scripted server received.
//
// One JSON object per request: {"n", "method", "path", "headers", "body"} — header names in lower case,
// the values of credential headers (authorization, proxy-authorization, x-api-key, api-key, cookie)
// replaced by "[redacted]" (an authorization scheme such as "Bearer" is kept, so a test can still see how
// the key was sent), and the body as parsed JSON, or as "body_text" when it is not JSON. Kept in memory and,
// when a path is given, appended to that file as JSON lines, flushed per request so another process can
// follow it. Thread-safe.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/error.h"
#include "util/thread_annotations.h"

namespace keel::model_server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

bool is_credential_header(std::string_view name);

nlohmann::json request_record(uint64_t number, std::string_view method, std::string_view path,
                              const HeaderList& headers, std::string_view body);

class RequestLog {
 public:
  RequestLog() = default;  // in memory only
  // `path` "" keeps the records in memory only. Fails with model_server.record_failed when the file cannot
  // be opened for appending.
  static Result<std::unique_ptr<RequestLog>> open(const std::string& path);

  void append(nlohmann::json record);
  std::vector<nlohmann::json> records() const;

 private:
  mutable Mutex mu_;
  std::ofstream file_ GUARDED_BY(mu_);  // closed when recording to memory only
  std::vector<nlohmann::json> records_ GUARDED_BY(mu_);
};

}  // namespace keel::model_server
