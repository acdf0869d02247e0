// mcp/testing/fake_mcp_session.h — an McpSession a test drives by hand (mcp/host's tests).
//
// It holds a tool list (list_tools answers with it, or with a set error) and keeps every call_tool request
// pending until the test completes it (complete_call / fail_call) or a handler set beforehand answers it.
// A cancelled request completes with `cancelled` as a real session does. The test can also act as the
// server: report progress on a pending call, announce tools/list_changed, or end the session (on_closed).
// Thread-safe; callbacks run on the thread of the test's call, never under the fake's lock.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "mcp/client/mcp_session.h"

namespace keel::mcp::testing {

class FakeMcpSession final : public McpSession {
 public:
  using CallHandler = std::function<void(McpCallRequest&, std::function<void(Result<McpCallResult>)>&)>;

  explicit FakeMcpSession(std::vector<McpToolInfo> tools = {}, McpSessionEvents events = {})
      : tools_(std::move(tools)), events_(std::move(events)) {
    info_.protocol_version = "2025-11-25";
    info_.name = "fake";
  }

  // --- McpSession ---
  const McpServerInfo& server_info() const override { return info_; }

  void list_tools(std::function<void(Result<std::vector<McpToolInfo>>)> done) override {
    Result<std::vector<McpToolInfo>> answer;
    {
      std::lock_guard lock(mu_);
      ++list_calls_;
      if (closed_) {
        answer = fail("mcp.transport_closed", "closed");
      } else if (list_error_) {
        answer = fail(*list_error_);
      } else {
        answer = tools_;
      }
    }
    done(std::move(answer));
  }

  void call_tool(McpCallRequest request, std::function<void(Result<McpCallResult>)> done) override {
    CallHandler handler;
    {
      std::lock_guard lock(mu_);
      if (closed_) {
        done(fail("mcp.transport_closed", "closed"));
        return;
      }
      handler = handler_;
    }
    if (handler) {
      handler(request, done);
      return;
    }
    auto pending = std::make_shared<Pending>();
    pending->request = std::move(request);
    pending->done = std::move(done);
    // Cancellation ends the call as a real session does (it would also send notifications/cancelled).
    std::weak_ptr<Pending> weak = pending;
    auto registration = pending->request.cancel.on_cancel([this, weak] {
      if (auto p = weak.lock()) finish(p, fail(codes::kCancelled, "the call was cancelled"));
    });
    {
      std::lock_guard lock(mu_);
      pending->registration = std::move(registration);
      if (!pending->finished) pending_.push_back(pending);
      requests_.push_back(pending->request);
    }
    changed_.notify_all();
  }

  void close() override {
    std::vector<std::shared_ptr<Pending>> pending;
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      pending.swap(pending_);
    }
    for (auto& p : pending) finish(p, fail("mcp.transport_closed", "the session was closed"));
  }

  // --- the test's side ---
  void set_tools(std::vector<McpToolInfo> tools) {
    std::lock_guard lock(mu_);
    tools_ = std::move(tools);
  }
  void set_list_error(std::optional<Error> error) {
    std::lock_guard lock(mu_);
    list_error_ = std::move(error);
  }
  // Every later call is answered by `handler` instead of staying pending.
  void set_call_handler(CallHandler handler) {
    std::lock_guard lock(mu_);
    handler_ = std::move(handler);
  }
  // Waits until `count` calls arrived (a hang guard: false after 30 s).
  bool wait_calls(size_t count) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return requests_.size() >= count; });
  }
  std::vector<McpCallRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // The oldest pending call: report progress on it, or complete it.
  void progress(McpProgress progress) {
    std::function<void(McpProgress)> report;
    {
      std::lock_guard lock(mu_);
      if (!pending_.empty()) report = pending_.front()->request.on_progress;
    }
    if (report) report(std::move(progress));
  }
  void complete_call(Result<McpCallResult> result) {
    std::shared_ptr<Pending> first;
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) return;
      first = pending_.front();
    }
    finish(first, std::move(result));
  }
  size_t pending_calls() const {
    std::lock_guard lock(mu_);
    return pending_.size();
  }
  int list_calls() const {
    std::lock_guard lock(mu_);
    return list_calls_;
  }
  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  // The server announces notifications/tools/list_changed.
  void announce_tools_changed() {
    if (events_.on_tools_changed) events_.on_tools_changed();
  }
  // The server goes away: pending calls fail, on_closed runs.
  void server_exits(const Error& reason) {
    close();
    if (events_.on_closed) events_.on_closed(reason);
  }

 private:
  struct Pending {
    McpCallRequest request;
    std::function<void(Result<McpCallResult>)> done;
    CancellationRegistration registration;
    bool finished = false;
  };

  void finish(const std::shared_ptr<Pending>& pending, Result<McpCallResult> result) {
    std::function<void(Result<McpCallResult>)> done;
    {
      std::lock_guard lock(mu_);
      if (pending->finished) return;
      pending->finished = true;
      done = std::move(pending->done);
      std::erase(pending_, pending);
    }
    done(std::move(result));
  }

  McpServerInfo info_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<McpToolInfo> tools_;
  McpSessionEvents events_;
  std::optional<Error> list_error_;
  CallHandler handler_;
  std::vector<std::shared_ptr<Pending>> pending_;
  std::vector<McpCallRequest> requests_;
  int list_calls_ = 0;
  bool closed_ = false;
};

}  // namespace keel::mcp::testing
