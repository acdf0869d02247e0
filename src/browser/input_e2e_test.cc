// BrowserInput: the key table's Input.dispatchKeyEvent params and HeldInput's release events against a real
// headless Chromium — typed text, Shift, Control+A, Backspace, Enter submitting a form, Tab moving focus, and
// a held key and mouse button released after an "interrupt".
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "browser/browser_test_support.h"
#include "browser/cdp/event_waiter.h"
#include "browser/input.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using testing::TestBrowser;

constexpr std::chrono::seconds kStepTimeout{20};

// The page logs every key and mouse event it sees into window.log.
constexpr char kPage[] =
    "data:text/html,<form id=f><input id=a><input id=b><button>Go</button></form><script>"
    "window.log=[];"
    "document.addEventListener('keydown',e=>log.push('down:'+e.key+':'+e.code+':'+e.shiftKey+':'+e.ctrlKey));"
    "document.addEventListener('keyup',e=>log.push('up:'+e.key));"
    "document.addEventListener('mousedown',e=>log.push('mousedown:'+e.button));"
    "document.addEventListener('mouseup',e=>log.push('mouseup:'+e.button));"
    "f.addEventListener('submit',e=>{e.preventDefault();log.push('submit:'+a.value);});"
    "a.focus();</script>";

asio::awaitable<Result<json>> send(CdpClient* client, std::string method, json params, std::string session) {
  CallOptions options;
  options.timeout = kStepTimeout;
  co_return co_await client->call(std::move(method), std::move(params), std::move(session),
                                  std::move(options));
}

// A new page target with kPage loaded: its session id.
asio::awaitable<Result<std::string>> open_test_page(CdpClient* client) {
  json create = {{"url", "about:blank"}};
  Result<json> created = co_await send(client, "Target.createTarget", std::move(create), "");
  if (!created) co_return fail(created.error());
  json attach = {{"targetId", (*created)["targetId"]}, {"flatten", true}};
  Result<json> attached = co_await send(client, "Target.attachToTarget", std::move(attach), "");
  if (!attached) co_return fail(attached.error());
  const std::string sid = (*attached)["sessionId"].get<std::string>();
  json no_params = json::object();
  Result<json> enabled = co_await send(client, "Page.enable", std::move(no_params), sid);
  if (!enabled) co_return fail(enabled.error());
  EventWaiter loaded(
      *client, [sid](const CdpEvent& e) { return e.session_id == sid && e.method == "Page.loadEventFired"; });
  json navigate = {{"url", kPage}};
  Result<json> navigated = co_await send(client, "Page.navigate", std::move(navigate), sid);
  if (!navigated) co_return fail(navigated.error());
  CancellationToken never_cancelled;
  Result<CdpEvent> load = co_await loaded.wait(kStepTimeout, never_cancelled);
  if (!load) co_return fail(load.error());
  co_return sid;
}

asio::awaitable<Result<json>> evaluate(CdpClient* client, std::string session, std::string expression) {
  json params = {{"expression", std::move(expression)}, {"returnByValue", true}};
  Result<json> result = co_await send(client, "Runtime.evaluate", std::move(params), std::move(session));
  if (!result) co_return fail(result.error());
  co_return (*result)["result"].value("value", json());
}

// Presses each chord in turn, then evaluates `expression`.
asio::awaitable<Result<json>> press_then_evaluate(CdpClient* client, std::vector<std::string> chords,
                                                  std::string expression) {
  Result<std::string> session = co_await open_test_page(client);
  if (!session) co_return fail(session.error());
  for (const std::string& text : chords) {
    Result<KeyChord> chord = parse_key_chord(text);
    if (!chord) co_return fail(chord.error());
    std::vector<json> events = key_press_events(*chord);
    for (json& event : events) {
      Result<json> sent = co_await send(client, "Input.dispatchKeyEvent", std::move(event), *session);
      if (!sent) co_return fail(sent.error());
    }
  }
  co_return co_await evaluate(client, *session, std::move(expression));
}

// Holds Shift and the left mouse button on input b (as a call interrupted halfway would), then sends
// HeldInput's release events; returns the page's log.
asio::awaitable<Result<json>> hold_then_release(CdpClient* client) {
  Result<std::string> session = co_await open_test_page(client);
  if (!session) co_return fail(session.error());
  Result<json> box = co_await evaluate(client, *session,
                                       "(() => { const r = b.getBoundingClientRect(); "
                                       "return [r.x + r.width / 2, r.y + r.height / 2]; })()");
  if (!box) co_return fail(box.error());
  HeldInput held;
  std::vector<json> commands;
  Result<KeyChord> shift = parse_key_chord("Shift");
  if (!shift) co_return fail(shift.error());
  std::vector<json> shift_down = key_down_events(*shift);
  for (json& event : shift_down) {
    commands.push_back({{"method", "Input.dispatchKeyEvent"}, {"params", std::move(event)}});
  }
  commands.push_back({{"method", "Input.dispatchMouseEvent"},
                      {"params",
                       {{"type", "mousePressed"},
                        {"x", (*box)[0]},
                        {"y", (*box)[1]},
                        {"button", "left"},
                        {"buttons", 1},
                        {"clickCount", 1}}}});
  for (const json& command : commands) {
    const std::string method = command["method"].get<std::string>();
    held.note(method, command["params"]);
    Result<json> sent = co_await send(client, method, command["params"], *session);
    if (!sent) co_return fail(sent.error());
  }
  Result<json> pressed = co_await evaluate(client, *session, "log.slice()");
  if (!pressed) co_return fail(pressed.error());
  for (const json& command : held.release_events()) {
    Result<json> sent =
        co_await send(client, command["method"].get<std::string>(), command["params"], *session);
    if (!sent) co_return fail(sent.error());
  }
  held.clear();
  Result<json> released = co_await evaluate(client, *session, "log.slice()");
  if (!released) co_return fail(released.error());
  json out = {{"pressed", *pressed}, {"released", *released}};
  co_return out;
}

class BrowserInput : public testing::BrowserSuite<BrowserInput> {};

TEST_F(BrowserInput, KeysTypeTextWithShiftAndControlASelectsInsteadOfTyping) {
  // Each argument of a coroutine is built in its own statement (g++ 12, docs/architecture.md).
  std::vector<std::string> hi = {"Shift+h", "i", "!"};
  Result<json> typed = browser().run(press_then_evaluate(&browser().client(), std::move(hi), "a.value"));
  ASSERT_TRUE(typed) << typed.error().to_string();
  EXPECT_EQ(*typed, "Hi!");
  std::vector<std::string> select_and_delete = {"x", "y", "Control+A", "Backspace"};
  Result<json> cleared =
      browser().run(press_then_evaluate(&browser().client(), std::move(select_and_delete),
                                        "[a.value, log.includes('down:a:KeyA:false:true')]"));
  ASSERT_TRUE(cleared) << cleared.error().to_string();
  EXPECT_EQ(*cleared, json({"", true}));
}

TEST_F(BrowserInput, EnterSubmitsTheFormAndTabMovesTheFocus) {
  std::vector<std::string> submit_then_tab = {"o", "k", "Enter", "Tab"};
  Result<json> out = browser().run(press_then_evaluate(&browser().client(), std::move(submit_then_tab),
                                                       "[log, document.activeElement.id]"));
  ASSERT_TRUE(out) << out.error().to_string();
  const json& log = (*out)[0];
  EXPECT_NE(std::find(log.begin(), log.end(), "submit:ok"), log.end()) << log.dump();
  EXPECT_EQ((*out)[1], "b") << out->dump();
}

TEST_F(BrowserInput, ReleaseEventsLiftAHeldKeyAndMouseButton) {
  Result<json> out = browser().run(hold_then_release(&browser().client()));
  ASSERT_TRUE(out) << out.error().to_string();
  const json& pressed = (*out)["pressed"];
  EXPECT_NE(std::find(pressed.begin(), pressed.end(), "down:Shift:ShiftLeft:true:false"), pressed.end())
      << pressed.dump();
  EXPECT_NE(std::find(pressed.begin(), pressed.end(), "mousedown:0"), pressed.end()) << pressed.dump();
  const json& released = (*out)["released"];
  ASSERT_EQ(released.size(), pressed.size() + 2) << released.dump();
  EXPECT_EQ(released[pressed.size()], "mouseup:0") << released.dump();
  EXPECT_EQ(released[pressed.size() + 1], "up:Shift") << released.dump();
}

}  // namespace
}  // namespace keel::browser
