// model_server/request_log.cc — redacted request records, in memory and as JSON lines.
#include "model_server/request_log.h"

#include <algorithm>
#include <cctype>

#include "model_server/model_server_errors.h"

namespace keel::model_server {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string redacted(std::string_view value) {
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) return "[redacted]";
  return std::string(value.substr(0, space)) + " [redacted]";
}

}  // namespace

bool is_credential_header(std::string_view name) {
  const std::string n = lower(name);
  return n == "authorization" || n == "proxy-authorization" || n == "x-api-key" || n == "api-key" ||
         n == "cookie";
}

nlohmann::json request_record(uint64_t number, std::string_view method, std::string_view path,
                              const HeaderList& headers, std::string_view body) {
  nlohmann::json header_object = nlohmann::json::object();
  for (const auto& [name, value] : headers) {
    const std::string key = lower(name);
    const std::string shown = is_credential_header(key) ? redacted(value) : value;
    if (header_object.contains(key)) {
      header_object[key] = header_object[key].get<std::string>() + ", " + shown;
    } else {
      header_object[key] = shown;
    }
  }
  nlohmann::json record = {
      {"n", number}, {"method", method}, {"path", path}, {"headers", std::move(header_object)}};
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    record["body_text"] = body;
  } else {
    record["body"] = std::move(parsed);
  }
  return record;
}

Result<std::unique_ptr<RequestLog>> RequestLog::open(const std::string& path) {
  auto log = std::make_unique<RequestLog>();
  if (!path.empty()) {
    MutexLock lock(log->mu_);  // nobody else has the log yet; the lock is for the analysis
    log->file_.open(path, std::ios::app | std::ios::binary);
    if (!log->file_)
      return fail(codes::kModelServerRecordFailed, path + ": cannot open the request log for appending");
  }
  return log;
}

void RequestLog::append(nlohmann::json record) {
  MutexLock lock(mu_);
  if (file_.is_open()) {
    file_ << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    file_.flush();
  }
  records_.push_back(std::move(record));
}

std::vector<nlohmann::json> RequestLog::records() const {
  MutexLock lock(mu_);
  return records_;
}

}  // namespace keel::model_server
