// providers/http/http_client.cc — CurlHttpClient: one worker thread driving a curl multi handle.
//
// Threads: start() and cancellation callbacks run on any thread; they only queue work under `mu_` and wake
// the worker with curl_multi_wakeup(). Everything else — curl calls, the active transfers, the handlers —
// belongs to the worker thread. No lock is held while a handler or a cancellation callback runs, and a
// transfer's CancellationRegistration is destroyed without holding `mu_` (its destructor waits for a running
// callback, which may itself be waiting for `mu_`).
//
// Timeouts: curl enforces the connect timeout; the worker enforces the idle and total timeouts itself
// against the injected clock, because curl's low-speed limit works in whole seconds of average speed rather
// than "no byte for N ms".
#include "providers/http/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <exception>
#include <map>
#include <thread>
#include <utility>

#include "providers/http/http_errors.h"
#include "providers/http/transfer_errors.h"
#include "util/thread_annotations.h"

namespace keel::providers {

namespace {

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct MultiDeleter {
  void operator()(CURLM* handle) const { curl_multi_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using MultiHandle = std::unique_ptr<CURLM, MultiDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

constexpr auto kMaxPollWait = std::chrono::milliseconds(1000);

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r' || text.back() == '\n')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string url_part(CURLU* url, CURLUPart part) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, 0) != CURLUE_OK || value == nullptr) return "";
  std::string out(value);
  curl_free(value);
  return out;
}

Error cancelled_error(const CancellationToken& token) {
  std::string reason = token.reason();
  return Error(codes::kCancelled, reason.empty() ? "the request was cancelled" : reason, false);
}

}  // namespace

std::optional<std::string_view> find_header(const std::vector<HttpHeader>& headers, std::string_view name) {
  for (const HttpHeader& header : headers) {
    if (iequals(header.name, name)) return std::string_view(header.value);
  }
  return std::nullopt;
}

// One request in flight. Owned by the worker (by `incoming_` until adopted); curl's callbacks reach it
// through their user-data pointer, which stays valid because the easy handle is removed from the multi
// handle before the Transfer is destroyed.
struct Transfer {
  uint64_t id = 0;
  HttpRequest request;
  CancellationToken cancel;
  std::shared_ptr<HttpStreamHandler> handler;
  CancellationRegistration registration;
  const Clock* clock = nullptr;

  EasyHandle easy;
  HeaderList header_list;
  std::array<char, CURL_ERROR_SIZE> error_buffer{};
  TransferFacts facts;
  std::vector<std::string> secrets;  // header values and URL query: kept out of error messages

  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point last_activity;
  int pending_status = 0;
  std::vector<HttpHeader> pending_headers;

  void deliver_head(int status) noexcept {
    facts.head_received = true;
    handler->on_response_head(status, pending_headers);
    pending_headers.clear();
  }

  size_t header_line(std::string_view line) noexcept {
    last_activity = clock->steady_now();
    if (cancel.is_cancelled()) return 0;
    if (facts.head_received) return line.size();  // trailers of a chunked body
    std::string_view text = trim(line);
    if (text.starts_with("HTTP/")) {
      const size_t space = text.find(' ');
      pending_status =
          space == std::string_view::npos ? 0 : std::atoi(std::string(text.substr(space + 1, 3)).c_str());
      pending_headers.clear();
    } else if (text.empty()) {
      if (pending_status >= 200) deliver_head(pending_status);  // a 1xx head is followed by the real one
    } else if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
      pending_headers.push_back(
          {std::string(trim(text.substr(0, colon))), std::string(trim(text.substr(colon + 1)))});
    }
    return line.size();
  }

  size_t body(std::string_view chunk) noexcept {
    last_activity = clock->steady_now();
    if (cancel.is_cancelled()) return 0;  // a short count makes curl abort the transfer
    if (!facts.head_received) {
      long status = 0;
      curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
      deliver_head(static_cast<int>(status));
    }
    handler->on_body(chunk);
    return chunk.size();
  }

  void connection_ready() noexcept {
    facts.connected = true;
    last_activity = clock->steady_now();
  }
};

namespace {

size_t on_header(char* data, size_t size, size_t count, void* user) {
  return static_cast<Transfer*>(user)->header_line(std::string_view(data, size * count));
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  return static_cast<Transfer*>(user)->body(std::string_view(data, size * count));
}

int on_prereq(void* user, char*, char*, int, int) {
  static_cast<Transfer*>(user)->connection_ready();
  return CURL_PREREQFUNC_OK;
}

}  // namespace

class CurlHttpClient::Worker {
 public:
  explicit Worker(HttpClientOptions options)
      : proxy_(options.proxy ? std::move(*options.proxy) : ProxySettings::from_environment()),
        clock_(options.clock != nullptr ? options.clock : &system_clock_),
        user_agent_(std::move(options.user_agent)),
        ca_file_(std::move(options.ca_file)) {
    // Reference-counted and thread-safe since curl 7.84 (Debian 12 ships 7.88).
    curl_global_init(CURL_GLOBAL_DEFAULT);
    multi_.reset(curl_multi_init());
    if (!multi_) std::terminate();  // only on allocation failure
    thread_ = std::thread([this] { run(); });
  }

  ~Worker() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    curl_multi_wakeup(multi_.get());
    thread_.join();
    multi_.reset();
    curl_global_cleanup();
  }

  void start(HttpRequest request, CancellationToken cancel, std::shared_ptr<HttpStreamHandler> handler) {
    auto transfer = std::make_unique<Transfer>();
    transfer->id = next_id_.fetch_add(1);
    transfer->request = std::move(request);
    transfer->cancel = cancel;
    transfer->handler = std::move(handler);
    transfer->clock = clock_;
    const uint64_t id = transfer->id;
    // Registered before the transfer is queued: a cancel that lands in between is still seen, because the
    // worker checks the token when it adopts the transfer.
    transfer->registration = cancel.on_cancel([this, id] { notify_cancelled(id); });
    {
      MutexLock lock(mu_);
      incoming_.push_back(std::move(transfer));
    }
    curl_multi_wakeup(multi_.get());
  }

 private:
  void notify_cancelled(uint64_t id) {
    {
      MutexLock lock(mu_);
      cancelled_.push_back(id);
    }
    curl_multi_wakeup(multi_.get());
  }

  void run() {
    for (;;) {
      std::vector<std::unique_ptr<Transfer>> incoming;
      std::vector<uint64_t> cancelled;
      bool stopping = false;
      {
        MutexLock lock(mu_);
        incoming.swap(incoming_);
        cancelled.swap(cancelled_);
        stopping = stopping_;
      }
      for (auto& transfer : incoming) adopt(std::move(transfer));
      for (uint64_t id : cancelled) {
        auto it = active_.find(id);
        if (it != active_.end()) finish(id, fail(cancelled_error(it->second->cancel)));
      }
      if (stopping) {
        while (!active_.empty()) {
          finish(active_.begin()->first, fail(codes::kCancelled, "the HTTP client was shut down"));
        }
        return;
      }
      int running = 0;
      curl_multi_perform(multi_.get(), &running);
      collect_finished();
      enforce_timeouts();
      curl_multi_poll(multi_.get(), nullptr, 0, poll_wait_ms(), nullptr);
    }
  }

  void adopt(std::unique_ptr<Transfer> transfer) {
    Transfer& t = *transfer;
    if (t.cancel.is_cancelled()) {
      complete(std::move(transfer), fail(cancelled_error(t.cancel)));
      return;
    }
    if (auto prepared = prepare(t); !prepared) {
      complete(std::move(transfer), fail(prepared.error()));
      return;
    }
    t.started = clock_->steady_now();
    t.last_activity = t.started;
    if (curl_multi_add_handle(multi_.get(), t.easy.get()) != CURLM_OK) {
      complete(std::move(transfer), fail(codes::kInternal, "curl refused the transfer"));
      return;
    }
    active_.emplace(t.id, std::move(transfer));
  }

  Result<void> prepare(Transfer& t) {
    HttpRequest& request = t.request;
    UrlHandle url(curl_url());
    if (!url || curl_url_set(url.get(), CURLUPART_URL, request.url.c_str(), 0) != CURLUE_OK) {
      return fail(codes::kInvalidArgument, "the request URL is malformed");
    }
    const std::string scheme = url_part(url.get(), CURLUPART_SCHEME);
    if (scheme != "http" && scheme != "https") {
      return fail(codes::kInvalidArgument, "the request URL must be http or https, not '" + scheme + "'");
    }
    t.facts.host = url_part(url.get(), CURLUPART_HOST);
    const std::string proxy = proxy_.proxy_for(scheme, t.facts.host);
    t.facts.via_proxy = !proxy.empty();
    t.secrets.push_back(url_part(url.get(), CURLUPART_QUERY));
    t.secrets.push_back(url_part(url.get(), CURLUPART_PASSWORD));

    curl_slist* list = nullptr;
    for (const HttpHeader& header : request.headers) {
      if (header.name.find_first_of("\r\n:") != std::string::npos ||
          header.value.find_first_of("\r\n") != std::string::npos) {
        curl_slist_free_all(list);
        return fail(codes::kInvalidArgument,
                    "header '" + header.name.substr(0, 64) + "' has a line break or colon");
      }
      t.secrets.push_back(header.value);
      // "Name;" is curl's spelling of a header sent with an empty value.
      const std::string line = header.value.empty() ? header.name + ";" : header.name + ": " + header.value;
      list = curl_slist_append(list, line.c_str());
    }
    // Without this curl may wait a second for "100 Continue" before sending a large body.
    list = curl_slist_append(list, "Expect:");
    t.header_list.reset(list);

    t.easy.reset(curl_easy_init());
    if (!t.easy) return fail(codes::kInternal, "curl could not make a transfer");
    CURL* easy = t.easy.get();
    curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    // "" disables curl's own reading of the proxy variables: ProxySettings decided already.
    curl_easy_setopt(easy, CURLOPT_PROXY, proxy.c_str());
    curl_easy_setopt(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, user_agent_.c_str());
    if (!ca_file_.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file_.c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t.header_list.get());
    if (request.method == "GET") {
      curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    } else {
      if (request.method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t.error_buffer.data());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(easy, CURLOPT_PREREQDATA, &t);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, &t);
    return {};
  }

  void collect_finished() {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi_.get(), &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode code = message->data.result;
      if (code == CURLE_OK) {
        if (!t->facts.head_received) {
          long status = 0;
          curl_easy_getinfo(t->easy.get(), CURLINFO_RESPONSE_CODE, &status);
          t->deliver_head(static_cast<int>(status));
        }
        finish(t->id, {});
      } else if (t->cancel.is_cancelled()) {
        finish(t->id, fail(cancelled_error(t->cancel)));
      } else {
        Error error = transfer_error(code, t->error_buffer.data(), t->facts);
        finish(t->id, fail(Error(error.code(), redact(error.message(), t->secrets), error.retryable())));
      }
    }
  }

  void enforce_timeouts() {
    const auto now = clock_->steady_now();
    std::vector<std::pair<uint64_t, Error>> expired;
    for (const auto& [id, t] : active_) {
      const HttpRequest& request = t->request;
      if (request.total_timeout && now - t->started >= *request.total_timeout) {
        expired.emplace_back(id, Error(codes::kHttpTimeout,
                                       "request to " + t->facts.host + " took longer than " +
                                           std::to_string(request.total_timeout->count()) + " ms",
                                       true));
      } else if (t->facts.connected && now - t->last_activity >= request.idle_timeout) {
        expired.emplace_back(id, Error(codes::kHttpIdleTimeout,
                                       "request to " + t->facts.host + ": no data for " +
                                           std::to_string(request.idle_timeout.count()) + " ms",
                                       true));
      }
    }
    for (auto& [id, error] : expired) finish(id, fail(std::move(error)));
  }

  // How long the worker may sleep: until curl's next timer or the nearest of our own deadlines.
  int poll_wait_ms() {
    auto wait = kMaxPollWait;
    long curl_wait = -1;
    curl_multi_timeout(multi_.get(), &curl_wait);
    if (curl_wait >= 0) wait = std::min(wait, std::chrono::milliseconds(curl_wait));
    const auto now = clock_->steady_now();
    for (const auto& [id, t] : active_) {
      const HttpRequest& request = t->request;
      if (request.total_timeout) wait = std::min(wait, remaining(t->started + *request.total_timeout, now));
      if (t->facts.connected) wait = std::min(wait, remaining(t->last_activity + request.idle_timeout, now));
    }
    return static_cast<int>(wait.count());
  }

  static std::chrono::milliseconds remaining(std::chrono::steady_clock::time_point deadline,
                                             std::chrono::steady_clock::time_point now) {
    if (deadline <= now) return std::chrono::milliseconds(0);
    // Rounded up, so the worker does not wake just before the deadline and spin.
    return std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
  }

  void finish(uint64_t id, Result<void> result) {
    auto it = active_.find(id);
    if (it == active_.end()) return;
    std::unique_ptr<Transfer> transfer = std::move(it->second);
    active_.erase(it);
    curl_multi_remove_handle(multi_.get(), transfer->easy.get());
    complete(std::move(transfer), std::move(result));
  }

  // Ends a transfer that is not (or no longer) in the multi handle.
  static void complete(std::unique_ptr<Transfer> transfer, Result<void> result) {
    transfer->registration = CancellationRegistration();  // no lock held: see the file comment
    std::shared_ptr<HttpStreamHandler> handler = std::move(transfer->handler);
    transfer.reset();
    handler->on_complete(std::move(result));
  }

  ProxySettings proxy_;
  SystemClock system_clock_;
  const Clock* clock_;
  std::string user_agent_;
  std::string ca_file_;
  MultiHandle multi_;
  std::atomic<uint64_t> next_id_{1};

  Mutex mu_;
  std::vector<std::unique_ptr<Transfer>> incoming_ GUARDED_BY(mu_);
  std::vector<uint64_t> cancelled_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;

  std::map<uint64_t, std::unique_ptr<Transfer>> active_;  // worker thread only
  std::thread thread_;
};

CurlHttpClient::CurlHttpClient(HttpClientOptions options)
    : worker_(std::make_unique<Worker>(std::move(options))) {}

CurlHttpClient::~CurlHttpClient() = default;

void CurlHttpClient::start(HttpRequest request, CancellationToken cancel,
                           std::shared_ptr<HttpStreamHandler> handler) {
  worker_->start(std::move(request), std::move(cancel), std::move(handler));
}

}  // namespace keel::providers
