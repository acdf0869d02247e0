// mcp/auth/http_fetch.cc — a blocking exchange over the streaming HTTP client.
#include "mcp/auth/http_fetch.h"

#include <condition_variable>
#include <mutex>
#include <optional>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

// Collects one response and wakes the waiting caller when it is complete.
class CollectingHandler final : public providers::HttpStreamHandler {
 public:
  CollectingHandler(size_t max_body_bytes, CancellationSource cancel)
      : max_body_bytes_(max_body_bytes), cancel_(std::move(cancel)) {}

  void on_response_head(int status, const std::vector<providers::HttpHeader>& headers) override {
    std::lock_guard lock(mu_);
    reply_.status = status;
    for (const auto& header : headers) reply_.headers.emplace_back(header.name, header.value);
  }
  void on_body(std::string_view chunk) override {
    std::lock_guard lock(mu_);
    if (too_large_) return;
    if (reply_.body.size() + chunk.size() > max_body_bytes_) {
      too_large_ = true;
      cancel_.cancel("response too large");
      return;
    }
    reply_.body.append(chunk);
  }
  void on_complete(Result<void> result) override {
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    done_.notify_all();
  }

  Result<HttpReply> wait() {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return result_.has_value(); });
    if (too_large_) {
      return std::unexpected(
          Error(codes::kMcpAuthBadMetadata,
                "the response is larger than " + std::to_string(max_body_bytes_) + " bytes"));
    }
    if (!*result_) return std::unexpected(result_->error());
    return std::move(reply_);
  }

 private:
  const size_t max_body_bytes_;
  CancellationSource cancel_;
  std::mutex mu_;
  std::condition_variable done_;
  HttpReply reply_;
  bool too_large_ = false;
  std::optional<Result<void>> result_;
};

}  // namespace

HttpFetch make_http_fetch(std::shared_ptr<providers::HttpClient> client, HttpFetchOptions options) {
  return [client = std::move(client), options](const HttpCall& call) -> Result<HttpReply> {
    providers::HttpRequest request;
    request.method = call.method;
    request.url = call.url;
    for (const auto& [name, value] : call.headers) request.headers.push_back({name, value});
    request.body = call.body;
    request.connect_timeout = options.connect_timeout;
    request.idle_timeout = options.total_timeout;
    request.total_timeout = options.total_timeout;
    CancellationSource cancel;
    auto handler = std::make_shared<CollectingHandler>(options.max_body_bytes, cancel);
    client->start(std::move(request), cancel.token(), handler);
    return handler->wait();
  };
}

}  // namespace keel::mcp
