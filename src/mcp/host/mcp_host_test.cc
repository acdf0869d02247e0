#include "mcp/host/mcp_host.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "mcp/host/mcp_host_errors.h"
#include "mcp/testing/fake_mcp_session.h"
#include "testing/simulated_time.h"

namespace keel::mcp {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeMcpSession;

constexpr milliseconds kBound = seconds(30);  // hang guard only

McpToolInfo tool(std::string name, json properties = json::object()) {
  McpToolInfo info;
  info.name = std::move(name);
  info.description = "A tool.";
  info.input_schema = {{"type", "object"}, {"properties", std::move(properties)}};
  return info;
}

McpServerSettings server(std::string name, McpStart start = McpStart::kStartup) {
  McpServerSettings s;
  s.name = std::move(name);
  s.command = "srv";
  s.args = {"--stdio"};
  s.start = start;
  s.connect_timeout = seconds(10);
  return s;
}

// The servers as a test sees them: what each one lists, how often it fails to open, whether it hangs.
class FakeServers {
 public:
  void set_tools(const std::string& name, std::vector<McpToolInfo> tools) {
    std::lock_guard lock(mu_);
    tools_[name] = std::move(tools);
  }
  void fail_next(const std::string& name, int times) {
    std::lock_guard lock(mu_);
    failures_[name] = times;
  }
  // Opening `name` blocks until release_hang().
  void hang(const std::string& name) {
    std::lock_guard lock(mu_);
    hanging_.insert(name);
  }
  void release_hang() { release_.set_value(); }
  int opened(const std::string& name) {
    std::lock_guard lock(mu_);
    return attempts_[name];
  }
  std::shared_ptr<FakeMcpSession> session(const std::string& name) {
    std::lock_guard lock(mu_);
    return sessions_[name];
  }

  McpSessionFactory factory() {
    return [this](const McpServerSettings& settings,
                  McpSessionEvents events) -> Result<std::shared_ptr<McpSession>> {
      bool hangs = false;
      {
        std::lock_guard lock(mu_);
        ++attempts_[settings.name];
        hangs = hanging_.contains(settings.name);
        if (failures_[settings.name] > 0) {
          --failures_[settings.name];
          return fail("mcp.server_exited", "the server exited at start-up");
        }
      }
      if (hangs) released_.wait();
      std::lock_guard lock(mu_);
      auto session = std::make_shared<FakeMcpSession>(tools_[settings.name], std::move(events));
      sessions_[settings.name] = session;
      return std::shared_ptr<McpSession>(session);
    };
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<McpToolInfo>> tools_;
  std::map<std::string, int> failures_;
  std::map<std::string, int> attempts_;
  std::set<std::string> hanging_;
  std::map<std::string, std::shared_ptr<FakeMcpSession>> sessions_;
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

McpServerStatus status_of(McpHost& host, const std::string& name) {
  for (McpServerStatus& s : host.status()) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no server " << name;
  return {};
}

bool wait_state(McpHost& host, const std::string& name, McpServerState state, int failures = -1) {
  return host.wait_until(
      [&](const std::vector<McpServerStatus>& all) {
        for (const McpServerStatus& s : all) {
          if (s.name == name) return s.state == state && (failures < 0 || s.failures == failures);
        }
        return false;
      },
      kBound);
}

class McpHostTest : public ::testing::Test {
 protected:
  std::unique_ptr<McpHost> make(std::vector<McpServerSettings> settings) {
    return std::make_unique<McpHost>(std::move(settings), servers_.factory(), registry_, time_, time_);
  }

  ToolRegistry registry_;
  keel::testing::SimulatedTime time_;
  FakeServers servers_;
};

TEST_F(McpHostTest, AStartupServerRegistersItsToolsAtTheMcpLevel) {
  servers_.set_tools("docs", {tool("search"), tool("fetch")});
  auto host = make({server("docs")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  const auto generation = registry_.snapshot();
  const RegisteredTool* search = generation->find("docs__search");
  ASSERT_NE(search, nullptr);
  EXPECT_EQ(search->descriptor->level, ToolLevel::kMcp);
  EXPECT_EQ(search->descriptor->binding.server, "docs");
  EXPECT_EQ(search->descriptor->binding.endpoint, "srv --stdio");
  EXPECT_EQ(search->descriptor->effects, ToolEffects::kWrite);
  EXPECT_EQ(search->descriptor->recovery, ToolRecovery::kNeverRetry);
  EXPECT_NE(generation->find("docs__fetch"), nullptr);
  const McpServerStatus status = status_of(*host, "docs");
  ASSERT_EQ(status.tools.size(), 2u);
  EXPECT_EQ(status.tools[0].keel_name, "docs__search");
  EXPECT_EQ(status.tools[0].server_name, "search");
  EXPECT_FALSE(status.last_error.has_value());
}

TEST_F(McpHostTest, ALazyServerConnectsOnlyWhenActivated) {
  servers_.set_tools("docs", {tool("search")});
  auto host = make({server("docs", McpStart::kLazy)});
  host->start();
  EXPECT_EQ(status_of(*host, "docs").state, McpServerState::kIdle);
  EXPECT_EQ(servers_.opened("docs"), 0);
  EXPECT_EQ(registry_.snapshot()->find("docs__search"), nullptr);
  host->activate();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  EXPECT_EQ(servers_.opened("docs"), 1);
  EXPECT_NE(registry_.snapshot()->find("docs__search"), nullptr);
  host->activate();  // once connected, activating again does nothing
  EXPECT_EQ(servers_.opened("docs"), 1);
}

TEST_F(McpHostTest, ADisabledServerIsNeverConnected) {
  McpServerSettings off = server("off");
  off.enabled = false;
  auto host = make({off});
  host->start();
  host->activate();
  EXPECT_EQ(status_of(*host, "off").state, McpServerState::kDisabled);
  EXPECT_EQ(servers_.opened("off"), 0);
}

TEST_F(McpHostTest, AFailingServerDoesNotStopTheOthers) {
  servers_.set_tools("good", {tool("search")});
  servers_.fail_next("bad", 1);
  auto host = make({server("bad"), server("good")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "good", McpServerState::kReady));
  ASSERT_TRUE(wait_state(*host, "bad", McpServerState::kFailed));
  const McpServerStatus bad = status_of(*host, "bad");
  ASSERT_TRUE(bad.last_error.has_value());
  EXPECT_EQ(bad.last_error->code(), "mcp.server_exited");
  ASSERT_TRUE(bad.retry_at.has_value());
  EXPECT_EQ(*bad.retry_at - time_.steady_now(), seconds(1));
  EXPECT_NE(registry_.snapshot()->find("good__search"), nullptr);
}

TEST_F(McpHostTest, AHangingServerTimesOutWithoutBlockingTheOthers) {
  servers_.set_tools("good", {tool("search")});
  servers_.hang("slow");
  auto host = make({server("slow"), server("good")});
  host->start();  // returns although "slow" hangs
  ASSERT_TRUE(wait_state(*host, "good", McpServerState::kReady));
  EXPECT_EQ(status_of(*host, "slow").state, McpServerState::kConnecting);
  EXPECT_NE(registry_.snapshot()->find("good__search"), nullptr);
  time_.advance(seconds(10));
  ASSERT_TRUE(wait_state(*host, "slow", McpServerState::kFailed));
  EXPECT_EQ(status_of(*host, "slow").last_error->code(), codes::kMcpConnectTimedOut);
  EXPECT_EQ(status_of(*host, "good").state, McpServerState::kReady);
  // The late session of the abandoned attempt is closed, not used.
  servers_.release_hang();
  host->shutdown();
  ASSERT_NE(servers_.session("slow"), nullptr);
  EXPECT_TRUE(servers_.session("slow")->closed());
}

TEST_F(McpHostTest, ReconnectsBackOffExponentiallyAndResetOnceReady) {
  servers_.set_tools("docs", {tool("search")});
  servers_.fail_next("docs", 3);
  auto host = make({server("docs")});
  host->start();
  for (int failure = 1; failure <= 3; ++failure) {
    ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kFailed, failure));
    const milliseconds delay = seconds(1 << (failure - 1));  // 1 s, 2 s, 4 s
    EXPECT_EQ(*status_of(*host, "docs").retry_at - time_.steady_now(), delay);
    time_.advance(delay - milliseconds(1));
    EXPECT_EQ(servers_.opened("docs"), failure);  // not before its time
    time_.advance(milliseconds(1));
    EXPECT_EQ(servers_.opened("docs") >= failure, true);
  }
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady, 0));
  EXPECT_EQ(servers_.opened("docs"), 4);
  EXPECT_NE(registry_.snapshot()->find("docs__search"), nullptr);
}

TEST_F(McpHostTest, TheBackoffIsCapped) {
  McpHostOptions options;
  options.backoff_initial = seconds(1);
  options.backoff_max = seconds(3);
  servers_.fail_next("docs", 10);
  auto host = std::make_unique<McpHost>(std::vector{server("docs")}, servers_.factory(), registry_, time_,
                                        time_, options);
  host->start();
  for (int failure = 1; failure <= 4; ++failure) {
    ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kFailed, failure));
    const milliseconds delay = std::min<milliseconds>(seconds(1 << (failure - 1)), seconds(3));
    EXPECT_EQ(*status_of(*host, "docs").retry_at - time_.steady_now(), delay);
    time_.advance(delay);
  }
}

TEST_F(McpHostTest, ASessionThatEndsTakesItsToolsOutUntilItReconnects) {
  servers_.set_tools("docs", {tool("search")});
  auto host = make({server("docs")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  servers_.session("docs")->server_exits(Error("mcp.server_exited", "gone"));
  EXPECT_EQ(status_of(*host, "docs").state, McpServerState::kFailed);
  EXPECT_EQ(registry_.snapshot()->find("docs__search"), nullptr);
  time_.advance(seconds(1));
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  EXPECT_NE(registry_.snapshot()->find("docs__search"), nullptr);
  EXPECT_EQ(servers_.opened("docs"), 2);
}

TEST_F(McpHostTest, ListChangedReregistersChangedToolsAndARunningGenerationKeepsItsOwn) {
  servers_.set_tools("docs", {tool("search", {{"q", {{"type", "string"}}}}), tool("fetch"), tool("gone")});
  auto host = make({server("docs")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  const auto running = registry_.snapshot();  // what a running turn bound
  const std::string old_digest = running->find("docs__search")->descriptor->digest;
  const auto fetch_before = running->find("docs__fetch")->descriptor;

  auto session = servers_.session("docs");
  session->set_tools({tool("search", {{"q", {{"type", "integer"}}}}), tool("fetch"), tool("added")});
  session->announce_tools_changed();
  ASSERT_EQ(session->list_calls(), 2);

  const auto now = registry_.snapshot();
  EXPECT_EQ(now->number(), running->number() + 1);  // the whole change in one generation
  EXPECT_NE(now->find("docs__search")->descriptor->digest, old_digest);
  EXPECT_EQ(now->find("docs__fetch")->descriptor, fetch_before);  // unchanged: not registered again
  EXPECT_NE(now->find("docs__added"), nullptr);
  EXPECT_EQ(now->find("docs__gone"), nullptr);
  // The running generation is exactly what it was.
  EXPECT_EQ(running->find("docs__search")->descriptor->digest, old_digest);
  EXPECT_NE(running->find("docs__gone"), nullptr);
  EXPECT_EQ(running->find("docs__added"), nullptr);
}

TEST_F(McpHostTest, AToolWithAnUnusableSchemaIsSkippedAndTheOthersRegister) {
  McpToolInfo remote = tool("remote");
  remote.input_schema["properties"]["x"] = {{"$ref", "https://example.com/x.json"}};
  servers_.set_tools("docs", {remote, tool("search")});
  auto host = make({server("docs")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  const McpServerStatus status = status_of(*host, "docs");
  ASSERT_EQ(status.skipped.size(), 1u);
  EXPECT_EQ(status.skipped[0].server_name, "remote");
  EXPECT_EQ(status.skipped[0].error.code(), codes::kMcpSchemaRemoteRef);
  EXPECT_NE(registry_.snapshot()->find("docs__search"), nullptr);
}

TEST_F(McpHostTest, AToolCallsTheCurrentSessionAndFailsWhileTheServerIsDown) {
  servers_.set_tools("docs", {tool("search")});
  auto host = make({server("docs")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  const auto generation = registry_.snapshot();
  auto implementation = generation->find("docs__search")->implementation;
  auto session = servers_.session("docs");
  session->set_call_handler([](McpCallRequest& request, std::function<void(Result<McpCallResult>)>& done) {
    McpCallResult result;
    result.content = json::array({{{"type", "text"}, {"text", "called " + request.tool}}});
    done(result);
  });
  const auto call = [&] {
    std::promise<Result<ToolResult>> promise;
    ToolCallContext context;
    context.progress = [](ToolProgress) {};
    implementation->execute(context, json::object(),
                            [&](Result<ToolResult> r) { promise.set_value(std::move(r)); });
    return promise.get_future().get();
  };
  auto ok = call();
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  EXPECT_EQ(ok->content.at(0).text, "called search");
  session->server_exits(Error("mcp.server_exited", "gone"));
  auto down = call();
  ASSERT_FALSE(down.has_value());
  EXPECT_EQ(down.error().code(), codes::kMcpServerUnavailable);
}

TEST_F(McpHostTest, ShutdownUnregistersEveryToolAndStopsReconnecting) {
  servers_.set_tools("docs", {tool("search")});
  servers_.fail_next("other", 5);
  auto host = make({server("docs"), server("other")});
  host->start();
  ASSERT_TRUE(wait_state(*host, "docs", McpServerState::kReady));
  ASSERT_TRUE(wait_state(*host, "other", McpServerState::kFailed));
  host->shutdown();
  EXPECT_TRUE(registry_.snapshot()->tools().empty());
  EXPECT_TRUE(servers_.session("docs")->closed());
  time_.advance(seconds(60));
  EXPECT_EQ(servers_.opened("other"), 1);
  EXPECT_EQ(status_of(*host, "docs").state, McpServerState::kStopped);
}

}  // namespace
}  // namespace keel::mcp
