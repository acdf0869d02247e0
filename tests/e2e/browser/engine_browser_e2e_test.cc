// The browser tools in keel's engine, end to end (issue 17 points 6 and 7): `keel serve --stdio --browser`
// with the scripted model driving browser_* tools on the test pages, served by a static site in this
// process. A click the policy asks about runs once approved and its result is page content; a page that
// tries to instruct the model cannot get a write past the approval; a click dispatched when keel was
// killed is never clicked again (the run is paused_uncertain); taking the browser over interrupts the turn,
// the model's page tools are refused until it is handed back, and then a new message goes on; without
// --browser there is no browser tool, no takeover target and no browser process.
//
// Every wait is for an event, a request reaching the site, or a process's end, each with a deadline;
// nothing sleeps. Refs in the scripted calls are what a first snapshot of the page numbers its elements,
// which is deterministic for a page.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model_server/static_site.h"
#include "serve_fixture.h"

namespace keel::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const json kHang = {{"type", "hang"}};

json call_step(const std::string& id, const std::string& name, const json& arguments) {
  return {{"type", "tool_calls"},
          {"calls", json::array({{{"id", id}, {"name", name}, {"arguments", arguments}}})}};
}

// Every process below `root` (children, their children...), from /proc. Chromium's processes are keel's
// descendants: a test that kills keel with SIGKILL ends them too.
std::vector<pid_t> descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parents;  // (pid, ppid)
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    parents.emplace_back(std::stoi(name), ppid);
  }
  std::vector<pid_t> out;
  std::set<pid_t> frontier = {root};
  while (!frontier.empty()) {
    std::set<pid_t> next;
    for (const auto& [pid, ppid] : parents) {
      if (frontier.contains(ppid)) {
        out.push_back(pid);
        next.insert(pid);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

class EngineBrowserTest : public ServeFixture {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/chromium") && std::getenv("KEEL_REQUIRE_CHROMIUM") == nullptr) {
      GTEST_SKIP() << "no Chromium at /usr/bin/chromium";
    }
    model_server::StaticSiteOptions options;
    options.root = KEEL_BROWSER_PAGES;
    auto site = model_server::StaticSite::start(std::move(options));
    ASSERT_TRUE(site) << site.error().to_string();
    site_ = std::move(*site);
  }

  void TearDown() override {
    // keel closes its Chromium when it stops (the serve fixture would SIGKILL it, leaving Chromium behind).
    for (ServeProcess* process : started_) {
      if (!process->running()) continue;
      process->signal(SIGTERM);
      EXPECT_TRUE(process->wait_exit().has_value()) << "keel serve did not stop on SIGTERM";
    }
    ServeFixture::TearDown();
    if (site_) site_->stop();
  }

  std::string page(const std::string& path) const { return site_->origin() + "/" + path; }

  Stdio serve_browser() {
    Stdio serve = serve_stdio({"--browser"});
    if (serve.process != nullptr) started_.push_back(serve.process);
    if (serve.client != nullptr) {
      auto init = serve.client->request("initialize", {{"subscribe", true}});
      EXPECT_TRUE(init.contains("result")) << init.dump();
      if (init.contains("result")) init_ = init["result"];
    }
    return serve;
  }

  // Waits for the `nth` approval.request of the thread, checks it is about `tool`, and answers it.
  json answer(testing::RpcTestClient& client, const std::string& thread, size_t nth, const std::string& tool,
              const std::string& decision) {
    const json asked = client.wait_event(thread, "approval.request", nth)["payload"];
    EXPECT_EQ(asked["tool"]["name"], tool) << asked.dump();
    auto answered =
        client.command("approval.response",
                       {{"threadId", thread}, {"approvalId", asked["approvalId"]}, {"decision", decision}});
    EXPECT_TRUE(answered.contains("result")) << answered.dump();
    return asked;
  }

  // The body of the tool_result node for `call_id` from the thread's item.complete events (null if none).
  static json tool_result(testing::RpcTestClient& client, const std::string& thread,
                          const std::string& call_id) {
    for (const json& event : client.events(thread)) {
      if (event.value("type", "") != "item.complete") continue;
      const json& node = event["payload"]["node"];
      if (node.value("kind", "") == "tool_result" && node["body"].value("toolCallId", "") == call_id)
        return node["body"];
    }
    return nullptr;
  }

  static std::string text_of(const json& body) {
    std::string text;
    if (body.is_object() && body.contains("content")) {
      for (const json& block : body["content"]) text += block.value("text", "");
    }
    return text;
  }

  size_t site_requests(const std::string& path) const {
    size_t n = 0;
    for (const std::string& target : site_->requests()) n += target.substr(0, target.find('?')) == path;
    return n;
  }

  std::unique_ptr<model_server::StaticSite> site_;
  std::vector<ServeProcess*> started_;
  json init_;
};

TEST_F(EngineBrowserTest, AClickThePolicyAsksAboutRunsOnceApprovedAndItsResultIsPageContent) {
  start_model(
      {{"responses",
        json::array({
            response("[click]",
                     json::array({call_step("c_nav", "browser_navigate", {{"url", page("rerender.html")}})})),
            response(std::nullopt, json::array({call_step("c_snap", "browser_snapshot", json::object())})),
            response(std::nullopt, json::array({call_step("c_click", "browser_click", {{"ref", "e1"}})})),
            response(std::nullopt, json::array({text_step("refreshed")})),
        })}});
  auto [process, client] = serve_browser();
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(init_.contains("takeover")) << init_.dump();
  EXPECT_EQ(init_["takeover"]["targets"][0]["name"], "browser");
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[click] refresh the list").empty());

  const json navigate = answer(*client, thread, 1, "browser_navigate", "accept");
  EXPECT_EQ(navigate["target"]["origin"], site_->origin()) << navigate.dump();
  const json click = answer(*client, thread, 2, "browser_click", "accept");
  EXPECT_EQ(click["target"]["origin"], site_->origin()) << click.dump();
  const json done = client->wait_event(thread, "turn.complete");
  EXPECT_EQ(done["payload"]["stopReason"], "end") << done.dump();

  const json snapshot = tool_result(*client, thread, "c_snap");
  ASSERT_TRUE(snapshot.is_object());
  EXPECT_NE(text_of(snapshot).find("e1 button \"Refresh list\""), std::string::npos) << text_of(snapshot);
  const json clicked = tool_result(*client, thread, "c_click");
  ASSERT_TRUE(clicked.is_object());
  EXPECT_FALSE(clicked.value("isError", false)) << clicked.dump();
  // The report names what the click changed: the list's three buttons are new nodes.
  EXPECT_NE(text_of(clicked).find("Clicked e1 (button \"Refresh list\")"), std::string::npos)
      << text_of(clicked);
  EXPECT_NE(text_of(clicked).find("Changes: +3"), std::string::npos) << text_of(clicked);
  EXPECT_EQ(clicked["untrusted"]["provenance"], "page") << clicked.dump();
  EXPECT_EQ(clicked["untrusted"]["tool"], "browser_click") << clicked.dump();
}

TEST_F(EngineBrowserTest, APageThatInstructsTheModelCannotGetAWritePastTheApproval) {
  start_model(
      {{"responses",
        json::array({
            response("[invoice]", json::array({call_step("c_nav", "browser_navigate",
                                                         {{"url", page("injection.html")}})})),
            response(std::nullopt, json::array({call_step("c_read", "browser_snapshot", json::object())})),
            // What the page told the model to do.
            response(std::nullopt, json::array({write_file_call("c_write", "pwned.txt", "injected")})),
            response(std::nullopt, json::array({text_step("the write was declined")})),
        })}});
  auto [process, client] = serve_browser();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[invoice] how much is due?").empty());

  answer(*client, thread, 1, "browser_navigate", "accept");
  const json write = answer(*client, thread, 2, "write_file", "decline");
  EXPECT_EQ(write["arguments"]["path"], "pwned.txt");
  client->wait_event(thread, "turn.complete");

  const json read = tool_result(*client, thread, "c_read");
  ASSERT_TRUE(read.is_object());
  EXPECT_NE(text_of(read).find("IMPORTANT INSTRUCTIONS FOR THE AI ASSISTANT"), std::string::npos)
      << text_of(read);
  EXPECT_EQ(read["untrusted"]["provenance"], "page") << read.dump();
  const json refused = tool_result(*client, thread, "c_write");
  ASSERT_TRUE(refused.is_object());
  EXPECT_FALSE(refused.contains("untrusted")) << "keel's own refusal is not page content";
  EXPECT_FALSE(fs::exists(workspace_ / "pwned.txt"));
}

TEST_F(EngineBrowserTest, AClickDispatchedWhenKeelWasKilledIsNeverClickedAgain) {
  start_model(
      {{"responses",
        json::array({
            response("[order]", json::array({call_step("c_nav", "browser_navigate",
                                                       {{"url", page("click-hangs.html")}})})),
            response(std::nullopt, json::array({call_step("c_snap", "browser_snapshot", json::object())})),
            response(std::nullopt, json::array({call_step("c_click", "browser_click", {{"ref", "e1"}})})),
            response(std::nullopt, json::array({text_step("ordered")})),
        })}});
  std::string thread;
  {
    auto [process, client] = serve_browser();
    ASSERT_NE(client, nullptr);
    thread = create_thread(*client);
    ASSERT_FALSE(submit(*client, thread, "[order] place the order").empty());
    answer(*client, thread, 1, "browser_navigate", "accept");
    answer(*client, thread, 2, "browser_click", "accept");
    // The click reached the server: the call was dispatched, and its report waits for that request.
    ASSERT_TRUE(site_->wait_for_request("/hang", std::chrono::seconds(60))) << "the click never happened";
    // Chromium outlives a keel killed so (nothing closes it): its processes are ended here, at once.
    const std::vector<pid_t> chromium = descendants(process->pid());
    process->signal(SIGKILL);
    ASSERT_EQ(process->wait_exit(), 128 + SIGKILL);
    for (pid_t orphan : chromium) ::kill(orphan, SIGKILL);
    EXPECT_TRUE(tool_result(*client, thread, "c_click").is_null())
        << "the click's result came before the kill";
  }

  auto [process, client] = serve_browser();
  ASSERT_NE(client, nullptr);
  const json uncertain = client->wait_event(thread, "run.uncertain")["payload"];
  EXPECT_EQ(uncertain["toolCallId"], "c_click") << uncertain.dump();
  EXPECT_EQ(uncertain["name"], "browser_click") << uncertain.dump();
  auto read = client->request("thread.read", {{"threadId", thread}});
  ASSERT_TRUE(read.contains("result")) << read.dump();
  EXPECT_EQ(read["result"]["latestRun"]["state"], "paused_uncertain") << read["result"]["latestRun"].dump();
  EXPECT_EQ(site_requests("/hang"), 1u) << "clicked again after the restart";
  EXPECT_EQ(site_requests("/click-hangs.html"), 1u) << "navigated again after the restart";
}

TEST_F(EngineBrowserTest, TakingTheBrowserOverInterruptsTheTurnRefusesPageToolsAndHandingBackGoesOn) {
  start_model(
      {{"responses",
        json::array({
            response("[slow]", json::array({text_step("working "), kHang})),
            response("[while]", json::array({call_step("c_taken", "browser_snapshot", json::object())})),
            response("[after]", json::array({call_step("c_tabs", "browser_list_tabs", json::object())})),
            response(std::nullopt, json::array({text_step("noted")})),
            response(std::nullopt, json::array({text_step("noted again")})),
        })}});
  auto [process, client] = serve_browser();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[slow] take your time").empty());
  client->wait_event(thread, "item.delta");

  auto taken = client->request("takeover.start", {{"threadId", thread}, {"target", "browser"}});
  ASSERT_TRUE(taken.contains("result")) << taken.dump();
  EXPECT_EQ(taken["result"]["interrupted"], true) << taken.dump();
  EXPECT_EQ(taken["result"]["holder"], "person");
  EXPECT_EQ(client->wait_event(thread, "turn.complete")["payload"]["stopReason"], "interrupted");
  EXPECT_EQ(client->wait_event(thread, "takeover.updated")["payload"]["holder"], "person");

  ASSERT_FALSE(submit(*client, thread, "[while] look at the page").empty());
  client->wait_event(thread, "turn.complete", 2);
  const json refused = tool_result(*client, thread, "c_taken");
  ASSERT_TRUE(refused.is_object());
  EXPECT_TRUE(refused.value("isError", false)) << refused.dump();
  EXPECT_EQ(refused["details"].value("code", ""), "browser.taken_over") << refused.dump();

  auto handed = client->request("takeover.end", {{"threadId", thread}, {"target", "browser"}});
  ASSERT_TRUE(handed.contains("result")) << handed.dump();
  EXPECT_EQ(handed["result"]["handedBack"], true) << handed.dump();
  ASSERT_FALSE(submit(*client, thread, "[after] which tabs are open?").empty());
  EXPECT_EQ(client->wait_event(thread, "turn.complete", 3)["payload"]["stopReason"], "end");
  const json tabs = tool_result(*client, thread, "c_tabs");
  ASSERT_TRUE(tabs.is_object());
  EXPECT_FALSE(tabs.value("isError", false)) << tabs.dump();
}

TEST_F(EngineBrowserTest, WithoutTheFlagKeelOffersNoBrowserAndStartsNone) {
  start_model(
      {{"responses",
        json::array({
            response("[look]", json::array({call_step("c_snap", "browser_snapshot", json::object())})),
            response(std::nullopt, json::array({text_step("no browser")})),
        })}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  started_.push_back(process);
  auto init = client->request("initialize", {{"subscribe", true}});
  ASSERT_TRUE(init.contains("result")) << init.dump();
  EXPECT_FALSE(init["result"].contains("takeover")) << init.dump();
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[look] what is on the page?").empty());
  client->wait_event(thread, "turn.complete");
  const json result = tool_result(*client, thread, "c_snap");
  ASSERT_TRUE(result.is_object());
  EXPECT_NE(text_of(result).find("There is no tool named 'browser_snapshot'"), std::string::npos)
      << text_of(result);
  EXPECT_EQ(text_of(result).find("browser_"), text_of(result).find("browser_snapshot"))
      << "a browser tool is offered: " << text_of(result);
  auto taken = client->request("takeover.start", {{"threadId", thread}, {"target", "browser"}});
  ASSERT_TRUE(taken.contains("error")) << taken.dump();
  EXPECT_EQ(taken["error"]["data"].value("code", ""), "takeover.unknown_target") << taken.dump();
  EXPECT_TRUE(descendants(process->pid()).empty()) << "keel started a process (a browser?)";
}

}  // namespace
}  // namespace keel::e2e
