// keel chat end to end (issue 8 point 4): the real binary in a pseudo-terminal against an in-process
// scripted model server, its screen read back through a terminal emulator. Enter while a turn streams
// steers; Enter while the turn cannot be steered queues and says so; Tab queues and the queue shows; Esc
// interrupts; an approval is asked inline; a reply cut by the output limit is flagged; a restarted chat
// offers to continue an interrupted turn; the terminal is restored when chat is terminated; with --browser,
// Ctrl-T takes the browser over (interrupting the turn) and hands it back.
//
// Every wait is for text on the screen (or the process's end), bounded by a generous timeout; the scripted
// model's delays only make a turn slow enough to type into, they synchronize nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cli/chat_virtual_terminal.h"
#include "model_server/model_server.h"
#include "testing/child_process.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr int kColumns = 100;
constexpr int kRows = 40;
constexpr auto kScreenWait = seconds(20);

// `keel chat` in a pseudo-terminal: keystrokes in, the emulated screen out.
class ChatTerminal {
 public:
  ChatTerminal(const std::vector<std::string>& args, const std::filesystem::path& home) {
    std::vector<std::string> argv_storage = {KEEL_BINARY};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    // The test's own settings, not the developer's: no user config file, no KEEL_* variables, no proxy.
    std::vector<std::string> env_storage;
    for (std::string& var : testing::isolated_environment(home)) {
      if (!var.starts_with("TERM=")) env_storage.push_back(std::move(var));
    }
    env_storage.push_back("TERM=xterm-256color");
    // Built before fork: the child may only call async-signal-safe functions until exec.
    std::vector<char*> argv;
    for (std::string& arg : argv_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& var : env_storage) envp.push_back(var.data());
    envp.push_back(nullptr);

    winsize size{};
    size.ws_col = kColumns;
    size.ws_row = kRows;
    pid_ = ::forkpty(&master_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      // Only the terminal: Asio's sockets (the model server's listener) are not close-on-exec.
      ::close_range(3, ~0U, 0);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    if (pid_ < 0) {
      ADD_FAILURE() << "forkpty: " << std::strerror(errno);
      return;
    }
    reader_ = std::thread([this] { read_loop(); });
  }

  ~ChatTerminal() {
    // KEEL_CHAT_E2E_SHOW=1 prints every final screen (for looking at chat, not for checking it).
    if (std::getenv("KEEL_CHAT_E2E_SHOW") != nullptr) std::cerr << "--- screen ---\n" << screen();
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (reader_.joinable()) reader_.join();
    if (master_ >= 0) ::close(master_);
  }

  ChatTerminal(const ChatTerminal&) = delete;
  ChatTerminal& operator=(const ChatTerminal&) = delete;

  pid_t pid() const { return pid_; }
  int master() const { return master_; }

  void type(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(master_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      ASSERT_GT(n, 0) << std::strerror(errno);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  // True once `pattern` (a regular expression) matches the screen's text, scrollback included.
  bool wait_for(const std::string& pattern, std::chrono::milliseconds timeout = kScreenWait) {
    const std::regex re(pattern);
    std::unique_lock<std::mutex> lock(mu_);
    const bool seen = changed_.wait_for(lock, timeout, [&] {
      return std::regex_search(terminal_.text(), re) || eof_;
    }) && std::regex_search(terminal_.text(), re);
    if (!seen)
      ADD_FAILURE() << "not on the screen: /" << pattern << "/\n--- screen ---\n" << terminal_.text();
    return seen;
  }

  // True once the row the cursor is on (the input line) matches `pattern`.
  bool wait_for_input_line(const std::string& pattern) {
    const std::regex re(pattern);
    std::unique_lock<std::mutex> lock(mu_);
    const auto input_line = [&] { return terminal_.row(terminal_.cursor_row()); };
    const bool seen =
        changed_.wait_for(lock, kScreenWait, [&] { return std::regex_search(input_line(), re); });
    if (!seen)
      ADD_FAILURE() << "input line is '" << input_line() << "', not /" << pattern << "/\n"
                    << terminal_.text();
    return seen;
  }

  std::string screen() {
    std::lock_guard<std::mutex> guard(mu_);
    return terminal_.text();
  }

  // Every byte the program wrote to the terminal so far.
  std::string raw() {
    std::lock_guard<std::mutex> guard(mu_);
    return raw_;
  }

  // The thread id chat printed on its first line.
  std::string thread_id() {
    if (!wait_for("thread (\\S+) · model")) return "";
    std::smatch match;
    const std::string text = screen();
    std::regex_search(text, match, std::regex("thread (\\S+) · model"));
    return match[1];
  }

  // The exit status once the process has ended (nullopt after `timeout`); a signal's death is 128 + signal.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout = kScreenWait) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!changed_.wait_for(lock, timeout, [&] { return eof_; })) {
        ADD_FAILURE() << "keel chat did not end\n--- screen ---\n" << terminal_.text();
        return std::nullopt;
      }
    }
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return std::nullopt;
    reaped_ = true;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return std::nullopt;
  }

 private:
  void read_loop() {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(master_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      std::lock_guard<std::mutex> guard(mu_);
      if (n <= 0) {  // EIO once the child's side is closed
        eof_ = true;
        changed_.notify_all();
        return;
      }
      terminal_.feed(std::string_view(buffer, static_cast<size_t>(n)));
      raw_.append(buffer, static_cast<size_t>(n));
      changed_.notify_all();
    }
  }

  pid_t pid_ = -1;
  int master_ = -1;
  bool reaped_ = false;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable changed_;
  cli::VirtualTerminal terminal_{kColumns, kRows};
  std::string raw_;
  bool eof_ = false;
};

json text_step(const std::string& text) { return {{"type", "text"}, {"text", text}}; }
json delay_step(int ms) { return {{"type", "delay"}, {"ms", ms}}; }
json tool_call_step(const std::string& id, const std::string& name, const json& arguments) {
  return {{"type", "tool_calls"}, {"calls", {{{"id", id}, {"name", name}, {"arguments", arguments}}}}};
}

class ChatTest : public ::testing::Test {
 protected:
  // Starts the scripted model and writes a configuration that uses it (openai-chat) with its store in the
  // temporary directory.
  void start_model(json responses) {
    auto script = model_server::parse_script({{"responses", std::move(responses)}});
    ASSERT_TRUE(script) << script.error().to_string();
    model_server::ServerOptions options;
    options.script = std::move(*script);
    options.max_duration = std::chrono::minutes(5);
    auto server = model_server::ModelServer::start(std::move(options));
    ASSERT_TRUE(server) << server.error().to_string();
    server_ = std::move(*server);
    std::filesystem::create_directories(workspace());
    std::ofstream config(config_path());
    config << "data_dir = \"" << (dir_.path() / "data").string() << "\"\n"
           << "default_model = \"scripted\"\n"
           << "[providers.local]\nkind = \"openai-chat\"\nbase_url = \"" << server_->base_url() << "/v1\"\n"
           << "max_retries = 0\n"
           << "[models.scripted]\nprovider = \"local\"\n";
  }

  std::filesystem::path workspace() const { return dir_.path() / "workspace"; }
  std::string config_path() const { return dir_.file("config.toml"); }

  std::unique_ptr<ChatTerminal> start_chat(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--config", config_path(), "chat", "--workspace", workspace().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto chat = std::make_unique<ChatTerminal>(args, dir_.path());
    // The status line is drawn once the terminal is in raw mode and keys are read.
    chat->wait_for(
        "\\n(Enter sends · Tab queues · Ctrl-D leaves|answer to go on · Esc leaves it)( · Ctrl-T takes the "
        "browser)?\\n");
    return chat;
  }

  // The body of the model request number `index` (0-based) as text, "" when there is none.
  std::string request_body(size_t index) const {
    const auto requests = server_->requests();
    return index < requests.size() ? requests[index]["body"].dump() : "";
  }

  // Leaves with Ctrl-D on an empty input line; chat's exit status.
  static std::optional<int> leave(ChatTerminal& chat) {
    chat.type("\x04");
    return chat.wait_exit();
  }

  testing::TempDir dir_;
  std::unique_ptr<model_server::ModelServer> server_;
};

TEST_F(ChatTest, EnterWhileATurnStreamsSteersItAndTheSteerReachesTheNextModelRequest) {
  start_model(json::array({
      {{"match", "count slowly"}, {"steps", {text_step("one two "), delay_step(5000), text_step("three.")}}},
      {{"match", "in French"}, {"steps", {text_step("un deux trois.")}}},
  }));
  auto chat = start_chat();
  chat->type("count slowly\r");
  ASSERT_TRUE(chat->wait_for("one two"));
  // The input line stays usable while the reply streams.
  chat->type("now in French");
  ASSERT_TRUE(chat->wait_for_input_line("^> now in French$"));
  chat->type("\r");
  EXPECT_TRUE(chat->wait_for("· steered"));
  EXPECT_TRUE(chat->wait_for("↳ steer: now in French"));
  EXPECT_TRUE(chat->wait_for("un deux trois\\.\\n— completed"));
  ASSERT_EQ(server_->requests().size(), 2u);
  EXPECT_NE(request_body(1).find("now in French"), std::string::npos) << request_body(1);
  EXPECT_EQ(request_body(0).find("now in French"), std::string::npos);
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, EnterWhileTheTurnWaitsOnATimerSteersItAndTheSteerIsReadAfterTheTimer) {
  start_model(json::array({
      {{"match", "set a timer"},
       {"steps", {tool_call_step("call_timer", "set_timer", {{"seconds", 5}, {"note", "tea"}})}}},
      {{"match", "afterwards"}, {"steps", {text_step("the steer was read after the timer.")}}},
      {{"steps", {text_step("the timer fired.")}}},
  }));
  auto chat = start_chat();
  chat->type("set a timer\r");
  ASSERT_TRUE(chat->wait_for("waiting on a timer of 5 s \\(tea\\)"));
  // A run that waits (here on its timer) still takes a steer (spec §3 refuses steers only on a mismatch, an
  // interrupt or the turn's end); it enters the first model request after the wait, after the call's result.
  chat->type("afterwards\r");
  EXPECT_TRUE(chat->wait_for("· steered: the running turn takes it at its next model request"));
  EXPECT_TRUE(
      chat->wait_for("← set_timer\\n(.*\\n)*↳ steer: afterwards\\n(.*\\n)*the steer was read after the "
                     "timer\\.\\n— completed"));
  ASSERT_EQ(server_->requests().size(), 2u);
  EXPECT_NE(request_body(1).find("afterwards"), std::string::npos) << request_body(1);
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, TabQueuesTheInputShowsTheQueueAndTheInputRunsAfterTheTurn) {
  start_model(json::array({
      {{"match", "first task"},
       {"steps", {text_step("working on it "), delay_step(5000), text_step("done.")}}},
      {{"match", "second task"}, {"steps", {text_step("second done.")}}},
  }));
  auto chat = start_chat();
  chat->type("first task\r");
  ASSERT_TRUE(chat->wait_for("working on it"));
  chat->type("second task\t");
  EXPECT_TRUE(chat->wait_for("· queued \\(1 waiting\\)"));
  EXPECT_TRUE(chat->wait_for("queue: 1 waiting"));
  EXPECT_TRUE(chat->wait_for("turn running · Enter steers · Tab queues · Esc interrupts · queue: 1"));
  // (The note about the queue ended the streamed line; the rest of the reply continues below it.)
  EXPECT_TRUE(chat->wait_for("\\ndone\\.\\n— completed[^\\n]*\\n(.*\\n)*second done\\.\\n— completed"));
  ASSERT_EQ(server_->requests().size(), 2u);
  EXPECT_NE(request_body(1).find("second task"), std::string::npos);
  EXPECT_EQ(request_body(0).find("second task"), std::string::npos) << "queued, not steered";
  EXPECT_EQ(leave(*chat), 0);
}

// Runs a turn that streams "working" and then hangs, and interrupts it with Esc; returns the thread id.
std::string interrupt_a_hanging_turn(ChatTerminal& chat) {
  const std::string thread = chat.thread_id();
  chat.type("long job\r");
  if (!chat.wait_for("working")) return thread;
  chat.type("\x1b");
  chat.wait_for("· interrupting…");
  chat.wait_for("— interrupted");
  chat.wait_for("Enter sends · Tab queues · Ctrl-D leaves");
  return thread;
}

TEST_F(ChatTest, EscInterruptsTheRunningTurn) {
  start_model(json::array({{{"steps", {text_step("working"), {{"type", "hang"}}}}}}));
  auto chat = start_chat();
  interrupt_a_hanging_turn(*chat);
  EXPECT_TRUE(chat->wait_for("working\\n(.*\\n)*— interrupted"));
  // Idle now: Esc has nothing left to interrupt.
  chat->type("\x1b");
  EXPECT_TRUE(chat->wait_for("· nothing to interrupt"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, ARestartedChatOffersToContinueAnInterruptedTurnAndContinuesIt) {
  start_model(json::array({
      {{"steps", {text_step("working"), {{"type", "hang"}}}}},
      {{"steps", {text_step("finished after the restart.")}}},
  }));
  std::string thread;
  {
    auto chat = start_chat();
    thread = interrupt_a_hanging_turn(*chat);
    ASSERT_EQ(leave(*chat), 0);
  }
  ASSERT_FALSE(thread.empty());
  auto chat = start_chat({"--thread", thread});
  EXPECT_TRUE(chat->wait_for("thread " + thread + " · model"));
  ASSERT_TRUE(chat->wait_for_input_line("^interrupted — continue\\? \\[y/n\\] >$"));
  chat->type("y");
  EXPECT_TRUE(chat->wait_for("· continuing turn"));
  EXPECT_TRUE(chat->wait_for("finished after the restart\\.\\n— completed"));
  EXPECT_EQ(server_->requests().size(), 2u);
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, LeavingWhileATurnRunsInterruptsItAndTheNextChatOffersToContinueIt) {
  start_model(json::array({
      {{"steps", {text_step("working"), {{"type", "hang"}}}}},
      {{"steps", {text_step("finished later.")}}},
  }));
  std::string thread;
  {
    auto chat = start_chat();
    thread = chat->thread_id();
    chat->type("long job\r");
    ASSERT_TRUE(chat->wait_for("working"));
    EXPECT_EQ(leave(*chat), 0);
    EXPECT_TRUE(chat->wait_for("· leaving: the running turn is interrupted"));
  }
  auto chat = start_chat({"--thread", thread});
  ASSERT_TRUE(chat->wait_for_input_line("^interrupted — continue\\? \\[y/n\\] >$"));
  chat->type("y");
  EXPECT_TRUE(chat->wait_for("finished later\\.\\n— completed"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, ARestartedChatFollowsATurnThatRecoveryPickedUpAfterAKill) {
  start_model(json::array({
      {{"match", "slow job"}, {"steps", {text_step("part one "), delay_step(3000), text_step("end.")}}},
  }));
  std::string thread;
  {
    auto chat = start_chat();
    thread = chat->thread_id();
    chat->type("slow job\r");
    ASSERT_TRUE(chat->wait_for("part one"));
    ::kill(chat->pid(), SIGKILL);
    ASSERT_EQ(chat->wait_exit(), 128 + SIGKILL);
  }
  auto chat = start_chat({"--thread", thread});
  EXPECT_TRUE(chat->wait_for("· a turn of this thread is running"));
  EXPECT_TRUE(chat->wait_for("end\\.\\n— completed"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, AWriteAsksForApprovalInlineAndYesLetsItRun) {
  start_model(json::array({
      {{"match", "write the note"},
       {"steps",
        {tool_call_step("call_write", "write_file",
                        {{"path", "note.txt"}, {"content", "hello from chat"}})}}},
      {{"steps", {text_step("the note is written.")}}},
  }));
  auto chat = start_chat();
  chat->type("write the note\r");
  EXPECT_TRUE(
      chat->wait_for("\\? approve write_file \\(write\\): create file\\n  target  /.*/note\\.txt\\n"));
  EXPECT_TRUE(chat->wait_for("or remember: write_file \\(write\\) on this machine, in this thread"));
  ASSERT_TRUE(chat->wait_for_input_line("\\[y\\] once.*\\[n\\] decline >$"));
  EXPECT_FALSE(std::filesystem::exists(workspace() / "note.txt")) << "written before the approval";
  chat->type("y");
  EXPECT_TRUE(chat->wait_for("the note is written\\.\\n— completed"));
  std::ifstream note(workspace() / "note.txt");
  std::string content((std::istreambuf_iterator<char>(note)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "hello from chat");
  EXPECT_TRUE(chat->wait_for_input_line("^>$"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, AQuestionFromTheAgentIsAnsweredOnTheInputLine) {
  start_model(json::array({
      {{"match", "pick a colour"},
       {"steps",
        {tool_call_step("call_ask", "ask_user",
                        {{"question", "Which colour?"}, {"choices", {"red", "blue"}}})}}},
      {{"match", "blue"}, {"steps", {text_step("blue it is.")}}},
  }));
  auto chat = start_chat();
  chat->type("half-typed");
  chat->type("\x15");  // Ctrl-U: the draft line is cleared again
  chat->type("pick a colour\r");
  EXPECT_TRUE(chat->wait_for("\\? Which colour\\? \\[\"red\",\"blue\"\\]"));
  ASSERT_TRUE(chat->wait_for_input_line("^answer >$"));
  chat->type("blue\r");
  EXPECT_TRUE(chat->wait_for("blue it is\\.\\n— completed"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, CtrlTTakesTheBrowserOverInterruptingTheTurnAndHandsItBack) {
  start_model(json::array({
      {{"match", "long job"}, {"steps", {text_step("working"), {{"type", "hang"}}}}},
      {{"match", "go on"}, {"steps", {text_step("going on.")}}},
  }));
  auto chat = start_chat({"--browser"});
  ASSERT_TRUE(chat->wait_for("Enter sends · Tab queues · Ctrl-D leaves · Ctrl-T takes the browser"));
  chat->type("long job\r");
  ASSERT_TRUE(chat->wait_for("working"));
  chat->type("\x14");  // Ctrl-T
  EXPECT_TRUE(
      chat->wait_for("· you have the browser: the agent's page tools wait until Ctrl-T hands it back"));
  EXPECT_TRUE(chat->wait_for("— interrupted"));
  EXPECT_TRUE(chat->wait_for(
      "\\nbrowser: you have it — Ctrl-T hands back · Enter sends · Tab queues · Ctrl-D leaves\\n"));
  chat->type("\x14");
  EXPECT_TRUE(chat->wait_for("· the browser is the agent's again; send a message to go on"));
  EXPECT_TRUE(chat->wait_for("\\nEnter sends · Tab queues · Ctrl-D leaves · Ctrl-T takes the browser\\n"));
  chat->type("go on\r");
  EXPECT_TRUE(chat->wait_for("going on\\.\\n— completed"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, CtrlTWithoutTheBrowserSaysHowToGetIt) {
  start_model(json::array({{{"steps", {text_step("unused")}}}}));
  auto chat = start_chat();
  chat->type("\x14");
  EXPECT_TRUE(chat->wait_for("· no browser here: start keel chat with --browser"));
  EXPECT_EQ(chat->screen().find("browser: you have it"), std::string::npos);
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, AReplyCutByTheOutputLimitIsFlaggedAsMaybeIncomplete) {
  start_model(json::array({{{"stop_reason", "length"}, {"steps", {text_step("The answer is")}}}}));
  auto chat = start_chat();
  chat->type("explain everything\r");
  EXPECT_TRUE(
      chat->wait_for("The answer is\\n— stopped at the model's output limit — the reply may be incomplete"));
  EXPECT_EQ(leave(*chat), 0);
}

TEST_F(ChatTest, CtrlCInterruptsARunningTurnAndLeavesWhenIdle) {
  start_model(json::array({{{"steps", {text_step("working"), {{"type", "hang"}}}}}}));
  auto chat = start_chat();
  chat->type("long job\r");
  ASSERT_TRUE(chat->wait_for("working"));
  chat->type("\x03");
  EXPECT_TRUE(chat->wait_for("— interrupted"));
  ASSERT_TRUE(chat->wait_for("Enter sends · Tab queues · Ctrl-D leaves"));
  chat->type("\x03");
  EXPECT_EQ(chat->wait_exit(), 0);
  EXPECT_TRUE(chat->wait_for("keel chat --thread \\S+ continues this conversation"));
}

TEST_F(ChatTest, TheTerminalIsRestoredWhenChatIsTerminated) {
  start_model(json::array({{{"steps", {text_step("unused")}}}}));
  auto chat = start_chat();
  termios during{};
  ASSERT_EQ(::tcgetattr(chat->master(), &during), 0);
  EXPECT_EQ(during.c_lflag & (ECHO | ICANON), 0u) << "raw mode while chat runs";
  ::kill(chat->pid(), SIGTERM);
  EXPECT_EQ(chat->wait_exit(), 128 + SIGTERM);
  termios after{};
  ASSERT_EQ(::tcgetattr(chat->master(), &after), 0);
  EXPECT_EQ(after.c_lflag & (ECHO | ICANON), static_cast<tcflag_t>(ECHO | ICANON)) << "restored on SIGTERM";
}

// Issue 15, point 6: a workspace file, a question and the model's own text carry an OSC title, an OSC 52
// clipboard write, a clear-screen, cursor movement before a fake "approval: accepted", concealed text,
// backspaces and a bidi override. The terminal must get none of them raw: each is shown as visible text.
constexpr char kHostileText[] =
    "plain start\n\x1b]0;pwned-title\x07\x1b]52;c;Y3VybCB8IHNo\x07\x1b[2J\x1b[5;1H\x1b[1A\r"
    "approval: accepted\n\x1b[8mhidden\x1b[0m rm\b\b \xe2\x80\xaetxt.exe\n";

json hostile_script() {
  return json::array({
      {{"steps", {tool_call_step("call_read", "read_file", {{"path", "evil.txt"}})}}},
      {{"steps",
        {tool_call_step("call_ask", "ask_user",
                        {{"question", std::string("\x1b[2J\x1b]0;q\x07Proceed?")}})}}},
      {{"steps",
        {text_step(std::string("model says \x1b]0;model-title\x07\x1b[2J\x1b[5;1Happroval: accepted ")),
         text_step("the end.")}}},
  });
}

// What no terminal may receive from keel when the hostile text above was shown (keel's own drawing uses
// none of these: SGR colours, \x1b[J and cursor-up/forward only).
void expect_no_raw_control_sequences(const std::string& raw) {
  for (const std::string& bad :
       {std::string("\x1b]"), std::string("\x1b[2J"), std::string("\x1b[5;1H"), std::string("\x1b[8m"),
        std::string("\x07"), std::string("\b"), std::string("\xe2\x80\xae")}) {
    EXPECT_EQ(raw.find(bad), std::string::npos) << "raw on the terminal: " << ::testing::PrintToString(bad);
  }
}

TEST_F(ChatTest, ControlSequencesFromAFileAQuestionAndTheModelAreShownNotObeyed) {
  start_model(hostile_script());
  std::ofstream(workspace() / "evil.txt") << kHostileText;
  auto chat = start_chat();
  chat->type("read evil.txt\r");
  ASSERT_TRUE(chat->wait_for_input_line("^answer >$"));
  EXPECT_TRUE(chat->wait_for("\\? \\^\\[\\[2J\\^\\[\\]0;q\\^GProceed\\?"));
  chat->type("yes\r");
  EXPECT_TRUE(chat->wait_for("the end\\.\\n— completed"));
  const std::string screen = chat->screen();
  EXPECT_NE(screen.find("^[]0;pwned-title^G^[]52;c;Y3VybCB8IHNo^G^[[2J^[[5;1H^[[1A^Mapproval: accepted"),
            std::string::npos)
      << screen;
  EXPECT_NE(screen.find("<U+202E>txt.exe"), std::string::npos) << screen;
  EXPECT_NE(screen.find("model says ^[]0;model-title^G^[[2J^[[5;1Happroval: accepted the end."),
            std::string::npos)
      << screen;
  EXPECT_EQ(leave(*chat), 0);
  expect_no_raw_control_sequences(chat->raw());
}

TEST_F(ChatTest, KeelRunOnATerminalShowsControlSequencesNotObeysThem) {
  start_model(hostile_script());
  std::ofstream(workspace() / "evil.txt") << kHostileText;
  ChatTerminal run({"--config", config_path(), "run", "--workspace", workspace().string(), "read evil.txt"},
                   dir_.path());
  ASSERT_TRUE(run.wait_for("\\? \\^\\[\\[2J\\^\\[\\]0;q\\^GProceed\\? >"));
  run.type("yes\r");
  EXPECT_EQ(run.wait_exit(), 0);
  const std::string screen = run.screen();
  EXPECT_NE(screen.find("^[]0;pwned-title^G^[]52;c;Y3VybCB8IHNo^G^[[2J^[[5;1H^[[1A^Mapproval: accepted"),
            std::string::npos)
      << screen;
  EXPECT_NE(screen.find("model says ^[]0;model-title^G"), std::string::npos) << screen;
  expect_no_raw_control_sequences(run.raw());
}

}  // namespace
}  // namespace keel
