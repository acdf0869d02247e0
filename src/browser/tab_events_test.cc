// TabState keeps what a tab's events tell a person debugging the page: the open dialog or file chooser, the
// console, the requests that matter, downloads, guard refusals, title, URL and status — bounded, with page
// text made well-formed and cut, and malformed events ignored.
#include <gtest/gtest.h>

#include <string>

#include "browser/tab.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

using nlohmann::json;

CdpEvent tab_event(std::string method, json params, std::string session = "S") {
  return CdpEvent{std::move(method), std::move(params), std::move(session)};
}

TabState tab_at(std::string url) {
  TabState tab;
  tab.tab_id = 1;
  tab.target_id = "T";
  tab.session_id = "S";
  json tree = {
      {"frame", {{"id", "T"}, {"loaderId", "L0"}, {"url", url}}},
      {"childFrames", json::array({{{"frame", {{"id", "C"}, {"parentId", "T"}, {"loaderId", "L1"}}}}})}};
  EXPECT_TRUE(tab.seed_frames(tree, "S", false));
  return tab;
}

json dialog(std::string type, std::string message) {
  return {{"url", "http://127.0.0.1:1/d.html"}, {"frameId", "T"},
          {"message", std::move(message)},      {"type", std::move(type)},
          {"hasBrowserHandler", true},          {"defaultPrompt", "Ada"}};
}

json main_commit(std::string loader, std::string url) {
  return {{"frame", {{"id", "T"}, {"loaderId", std::move(loader)}, {"url", std::move(url)}}},
          {"type", "Navigation"}};
}

TEST(TabEvents, EachDialogTypeSetsTheModalStateAndItsCloseClearsIt) {
  for (const char* type : {"alert", "confirm", "prompt", "beforeunload"}) {
    TabState tab = tab_at("http://127.0.0.1:1/d.html");
    ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogOpening", dialog(type, "Sure?"))));
    ASSERT_TRUE(tab.modal.has_value()) << type;
    EXPECT_EQ(tab.modal->kind, ModalState::Kind::kDialog);
    EXPECT_EQ(tab.modal->dialog_type, type);
    EXPECT_EQ(tab.modal->message, "Sure?");
    EXPECT_EQ(tab.modal->default_prompt, "Ada");
    EXPECT_EQ(tab.modal->url, "http://127.0.0.1:1/d.html");
    EXPECT_EQ(tab.modal->session_id, "S");
    EXPECT_EQ(tab.modal->frame_id, "T");
    ASSERT_TRUE(
        tab.apply(tab_event("Page.javascriptDialogClosed", json{{"result", true}, {"userInput", ""}})));
    EXPECT_FALSE(tab.modal.has_value()) << type;
  }
}

TEST(TabEvents, ACloseReportedAfterTheNextOpeningClosesOnlyItsOwnDialog) {
  TabState tab = tab_at("http://127.0.0.1:1/d.html");
  ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogOpening", dialog("alert", "one"))));
  ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogOpening", dialog("alert", "two"))));
  EXPECT_FALSE(tab.apply(tab_event("Page.javascriptDialogClosed", json{{"result", true}})));
  ASSERT_TRUE(tab.modal.has_value());
  EXPECT_EQ(tab.modal->message, "two");
  ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogClosed", json{{"result", true}})));
  EXPECT_FALSE(tab.modal.has_value());
  // One keel dismissed itself never was the modal state: its close leaves the next one open.
  tab.note_dismissed_dialog("S");
  ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogOpening", dialog("alert", "three"))));
  EXPECT_FALSE(tab.apply(tab_event("Page.javascriptDialogClosed", json{{"result", false}})));
  EXPECT_TRUE(tab.modal.has_value());
  EXPECT_EQ(tab.auto_dismissed_dialogs, 1);
}

TEST(TabEvents, ADialogMessageIsMadeWellFormedAndCut) {
  TabState tab = tab_at("http://127.0.0.1:1/");
  // Bytes no UTF-8 text has (nlohmann keeps them in a string as they are), then a long tail of "é".
  std::string message = "bad \xff\xfe end ";
  for (int i = 0; i < 1000; ++i) message += "\xc3\xa9";
  ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogOpening", dialog("alert", message))));
  ASSERT_TRUE(tab.modal.has_value());
  EXPECT_LE(tab.modal->message.size(), kMaxDialogMessageBytes);
  EXPECT_TRUE(utf8_valid(tab.modal->message));
  EXPECT_TRUE(tab.modal->message.starts_with("bad \xef\xbf\xbd\xef\xbf\xbd end \xc3\xa9"))
      << tab.modal->message;
  EXPECT_TRUE(tab.modal->message.ends_with("\xe2\x80\xa6")) << "the cut is marked";
}

TEST(TabEvents, AFileChooserSetsTheModalStateWithItsInputAndMode) {
  TabState tab = tab_at("http://127.0.0.1:1/f.html");
  json chooser = {{"frameId", "T"}, {"mode", "selectMultiple"}, {"backendNodeId", 42}};
  ASSERT_TRUE(tab.apply(tab_event("Page.fileChooserOpened", chooser)));
  ASSERT_TRUE(tab.modal.has_value());
  EXPECT_EQ(tab.modal->kind, ModalState::Kind::kFileChooser);
  EXPECT_EQ(tab.modal->backend_node_id, 42);
  EXPECT_TRUE(tab.modal->multiple);
  EXPECT_EQ(tab.modal->url, "http://127.0.0.1:1/f.html");
  // A dialog's close event does not end a chooser.
  EXPECT_FALSE(tab.apply(tab_event("Page.javascriptDialogClosed", json{{"result", true}})));
  EXPECT_TRUE(tab.modal.has_value());
}

TEST(TabEvents, AMainFrameCommitClearsTheModalStateAndCountsTheNavigationASubframeCommitDoesNot) {
  TabState tab = tab_at("about:blank");
  ASSERT_TRUE(tab.apply(tab_event("Page.javascriptDialogOpening", dialog("beforeunload", ""))));
  json child = {{"frame", {{"id", "C"}, {"parentId", "T"}, {"loaderId", "L9"}, {"url", "http://b/"}}}};
  ASSERT_TRUE(tab.apply(tab_event("Page.frameNavigated", child)));
  EXPECT_TRUE(tab.modal.has_value());
  EXPECT_EQ(tab.navigations, 0);
  ASSERT_TRUE(tab.apply(tab_event("Page.frameNavigated", main_commit("L2", "http://a/next"))));
  EXPECT_FALSE(tab.modal.has_value());
  EXPECT_EQ(tab.navigations, 1);
  EXPECT_EQ(tab.url, "http://a/next");
  ASSERT_TRUE(tab.apply(
      tab_event("Page.navigatedWithinDocument", json{{"frameId", "T"}, {"url", "http://a/next#x"}})));
  EXPECT_EQ(tab.url, "http://a/next#x");
}

TEST(TabEvents, ConsoleCallsAndExceptionsAreLoggedWithTheirLevels) {
  TabState tab = tab_at("http://a/");
  json call = {{"type", "warning"},
               {"args", json::array({{{"type", "string"}, {"value", "low disk"}},
                                     {{"type", "number"}, {"value", 3}},
                                     {{"type", "object"}, {"description", "Object"}}})},
               {"executionContextId", 1},
               {"stackTrace", {{"callFrames", json::array({{{"url", "http://a/app.js"}}})}}}};
  ASSERT_TRUE(tab.apply(tab_event("Runtime.consoleAPICalled", call)));
  json error_call = {{"type", "error"}, {"args", json::array({{{"type", "string"}, {"value", "x failed"}}})}};
  ASSERT_TRUE(tab.apply(tab_event("Runtime.consoleAPICalled", error_call)));
  json thrown = {{"timestamp", 1},
                 {"exceptionDetails",
                  {{"text", "Uncaught"},
                   {"url", "http://a/app.js"},
                   {"exception", {{"type", "object"}, {"description", "TypeError: x is undefined"}}}}}};
  ASSERT_TRUE(tab.apply(tab_event("Runtime.exceptionThrown", thrown)));
  ASSERT_EQ(tab.console.size(), 3u);
  EXPECT_EQ(tab.console[0].level, "warning");
  EXPECT_EQ(tab.console[0].text, "low disk 3 Object");
  EXPECT_EQ(tab.console[0].url, "http://a/app.js");
  EXPECT_EQ(tab.console[1].level, "error");
  EXPECT_EQ(tab.console[2].level, "error");
  EXPECT_EQ(tab.console[2].text, "TypeError: x is undefined");
  EXPECT_EQ(tab.console[2].seq, 3);
  EXPECT_EQ(tab.console_seq, 3);
}

TEST(TabEvents, TheConsoleKeepsTheLast500EntriesAndCountsAll) {
  TabState tab = tab_at("http://a/");
  for (int i = 1; i <= 520; ++i) {
    json call = {{"type", "log"}, {"args", json::array({{{"type", "number"}, {"value", i}}})}};
    ASSERT_TRUE(tab.apply(tab_event("Runtime.consoleAPICalled", call)));
  }
  ASSERT_EQ(tab.console.size(), kMaxConsoleEntries);
  EXPECT_EQ(tab.console.front().seq, 21);
  EXPECT_EQ(tab.console.front().text, "21");
  EXPECT_EQ(tab.console.back().seq, 520);
  EXPECT_EQ(tab.console_seq, 520);
}

json request(std::string id, std::string type, std::string url) {
  return {{"requestId", std::move(id)},
          {"loaderId", "L5"},
          {"request", {{"url", std::move(url)}, {"method", "GET"}}},
          {"type", std::move(type)},
          {"frameId", "T"}};
}

TEST(TabEvents, TheNetworkLogKeepsDocumentsXhrFetchAndFailuresOfAnyType) {
  TabState tab = tab_at("http://a/");
  ASSERT_TRUE(tab.apply(tab_event("Network.requestWillBeSent", request("R1", "Document", "http://a/p"))));
  ASSERT_TRUE(tab.apply(
      tab_event("Network.responseReceived", json{{"requestId", "R1"},
                                                 {"loaderId", "L5"},
                                                 {"type", "Document"},
                                                 {"frameId", "T"},
                                                 {"response", {{"status", 404}, {"url", "http://a/p"}}}})));
  ASSERT_TRUE(tab.apply(tab_event("Network.loadingFinished", json{{"requestId", "R1"}})));
  EXPECT_FALSE(tab.apply(tab_event("Network.requestWillBeSent", request("R2", "Image", "http://a/ok.png"))));
  EXPECT_FALSE(tab.apply(tab_event("Network.loadingFinished", json{{"requestId", "R2"}})));
  EXPECT_FALSE(
      tab.apply(tab_event("Network.requestWillBeSent", request("R3", "Image", "http://a/gone.png"))));
  ASSERT_TRUE(tab.apply(
      tab_event("Network.loadingFailed",
                json{{"requestId", "R3"}, {"type", "Image"}, {"errorText", "net::ERR_CONNECTION_REFUSED"}})));
  ASSERT_TRUE(tab.apply(tab_event("Network.requestWillBeSent", request("R4", "Fetch", "http://a/api"))));
  ASSERT_EQ(tab.network.size(), 3u);
  EXPECT_EQ(tab.network[0].url, "http://a/p");
  EXPECT_EQ(tab.network[0].status, 404);
  EXPECT_TRUE(tab.network[0].finished);
  EXPECT_EQ(tab.http_status, 404);
  EXPECT_EQ(tab.network[1].url, "http://a/gone.png");
  EXPECT_EQ(tab.network[1].resource_type, "Image");
  EXPECT_EQ(tab.network[1].failure, "net::ERR_CONNECTION_REFUSED");
  EXPECT_EQ(tab.network[2].resource_type, "Fetch");
  EXPECT_FALSE(tab.network[2].finished);
  EXPECT_EQ(tab.network_seq, 3);
  // A commit of the document that answered keeps its status; one without a response (about:blank) clears it.
  ASSERT_TRUE(tab.apply(tab_event("Page.frameNavigated", main_commit("L5", "http://a/p"))));
  EXPECT_EQ(tab.http_status, 404);
  ASSERT_TRUE(tab.apply(tab_event("Page.frameNavigated", main_commit("L6", "about:blank"))));
  EXPECT_EQ(tab.http_status, 0);
}

TEST(TabEvents, ARedirectEndsItsHopWithTheRedirectStatus) {
  TabState tab = tab_at("http://a/");
  ASSERT_TRUE(
      tab.apply(tab_event("Network.requestWillBeSent", request("R1", "Document", "http://a/redirect"))));
  json hop = request("R1", "Document", "http://b/");
  hop["redirectResponse"] = {{"status", 302}, {"url", "http://a/redirect"}};
  ASSERT_TRUE(tab.apply(tab_event("Network.requestWillBeSent", hop)));
  ASSERT_EQ(tab.network.size(), 2u);
  EXPECT_EQ(tab.network[0].status, 302);
  EXPECT_TRUE(tab.network[0].finished);
  EXPECT_EQ(tab.network[1].url, "http://b/");
  ASSERT_TRUE(tab.apply(
      tab_event("Network.loadingFailed", json{{"requestId", "R1"}, {"errorText", "net::ERR_FAILED"}})));
  EXPECT_EQ(tab.network[1].failure, "net::ERR_FAILED");
  EXPECT_EQ(tab.network[0].failure, "");
}

TEST(TabEvents, AGuardRefusalMarksItsRequestAndIsListed) {
  TabState tab = tab_at("http://a/");
  ASSERT_TRUE(tab.apply(tab_event("Network.requestWillBeSent", request("R1", "Document", "http://evil/"))));
  tab.record_blocked("http://evil/", "no host permission", "T", "R1");
  ASSERT_TRUE(tab.apply(tab_event("Network.loadingFailed",
                                  json{{"requestId", "R1"}, {"errorText", "net::ERR_BLOCKED_BY_CLIENT"}})));
  ASSERT_EQ(tab.network.size(), 1u);
  EXPECT_EQ(tab.network[0].failure, "blocked by keel: no host permission");
  ASSERT_EQ(tab.blocked.size(), 1u);
  EXPECT_EQ(tab.blocked[0].url, "http://evil/");
  EXPECT_EQ(tab.blocked[0].frame_id, "T");
  tab.record_blocked("data:text/html,x", "scheme", "C");
  EXPECT_EQ(tab.network.size(), 2u);
  EXPECT_EQ(tab.blocked.size(), 2u);
  for (int i = 0; i < 60; ++i) tab.record_blocked("http://evil/" + std::to_string(i), "r", "T");
  EXPECT_EQ(tab.blocked.size(), kMaxBlocked);
  EXPECT_EQ(tab.blocked.back().url, "http://evil/59");
}

TEST(TabEvents, TargetInfoGivesTitleAndUrlOfThisTabOnly) {
  TabState tab = tab_at("about:blank");
  const int64_t before = tab.change_seq;
  EXPECT_FALSE(tab.apply_target_info(json{{"targetId", "OTHER"}, {"title", "X"}, {"url", "http://x/"}}));
  ASSERT_TRUE(tab.apply_target_info(json{{"targetId", "T"}, {"title", "Cart"}, {"url", "http://a/cart"}}));
  EXPECT_EQ(tab.title, "Cart");
  EXPECT_EQ(tab.url, "http://a/cart");
  EXPECT_GT(tab.change_seq, before);
}

TEST(TabEvents, DownloadsAreRecordedAndFollowTheirProgress) {
  TabState tab = tab_at("http://a/");
  json begin = {{"frameId", "T"}, {"guid", "G1"}, {"url", "http://a/r.csv"}, {"suggestedFilename", "r.csv"}};
  ASSERT_TRUE(tab.apply_download(tab_event("Browser.downloadWillBegin", begin, "")));
  EXPECT_FALSE(tab.apply_download(tab_event(
      "Browser.downloadProgress", json{{"guid", "G2"}, {"state", "completed"}, {"receivedBytes", 1}}, "")));
  ASSERT_TRUE(tab.apply_download(tab_event(
      "Browser.downloadProgress",
      json{{"guid", "G1"}, {"state", "completed"}, {"receivedBytes", 12.0}, {"totalBytes", 12}}, "")));
  ASSERT_EQ(tab.downloads.size(), 1u);
  EXPECT_EQ(tab.downloads[0].suggested_filename, "r.csv");
  EXPECT_EQ(tab.downloads[0].state, "completed");
  EXPECT_EQ(tab.downloads[0].received_bytes, 12);
  EXPECT_EQ(tab.downloads[0].total_bytes, 12);
}

TEST(TabEvents, MalformedEventsChangeNothing) {
  TabState tab = tab_at("http://a/");
  const int64_t before = tab.change_seq;
  const std::vector<CdpEvent> malformed = {
      tab_event("Page.javascriptDialogOpening", json::array()),
      tab_event("Page.javascriptDialogOpening", json{{"type", 3}, {"message", "m"}}),
      tab_event("Page.javascriptDialogOpening", json{{"type", "popup"}, {"message", "m"}}),
      tab_event("Page.javascriptDialogClosed", json{{"result", true}}),
      tab_event("Page.fileChooserOpened", json{{"mode", 1}, {"backendNodeId", 4}}),
      tab_event("Page.fileChooserOpened", "text"),
      tab_event("Runtime.consoleAPICalled", json{{"type", "log"}, {"args", "not a list"}}),
      tab_event("Runtime.consoleAPICalled", json{{"args", json::array()}}),
      tab_event("Runtime.exceptionThrown", json{{"exceptionDetails", 5}}),
      tab_event("Network.requestWillBeSent", json{{"requestId", 5}, {"request", {{"url", "http://a/"}}}}),
      tab_event("Network.requestWillBeSent",
                json{{"requestId", "R"}, {"type", "Document"}, {"request", "x"}}),
      tab_event("Network.responseReceived", json{{"requestId", "R"}, {"response", {{"status", "200"}}}}),
      tab_event("Network.loadingFinished", json{{"requestId", json::object()}}),
      tab_event("Network.loadingFailed", json{{"errorText", "net::ERR_FAILED"}}),
      tab_event("Page.frameNavigated", json{{"frame", {{"id", 7}}}}),
  };
  for (const CdpEvent& each : malformed) {
    EXPECT_FALSE(tab.apply(each)) << each.method << " " << each.params.dump();
    EXPECT_FALSE(tab.apply_download(each));
  }
  EXPECT_FALSE(tab.apply_download(tab_event("Browser.downloadWillBegin", json{{"guid", 1}}, "")));
  EXPECT_FALSE(
      tab.apply_download(tab_event("Browser.downloadProgress", json{{"guid", "G"}, {"state", "x"}}, "")));
  EXPECT_FALSE(tab.apply_target_info(json("T")));
  EXPECT_EQ(tab.change_seq, before);
  EXPECT_FALSE(tab.modal.has_value());
  EXPECT_TRUE(tab.console.empty());
  EXPECT_TRUE(tab.network.empty());
  EXPECT_TRUE(tab.downloads.empty());
  EXPECT_EQ(tab.http_status, 0);
  EXPECT_EQ(tab.url, "http://a/");
}

}  // namespace
}  // namespace keel::browser
