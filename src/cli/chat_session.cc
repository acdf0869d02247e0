#include "cli/chat_session.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <deque>
#include <ostream>
#include <sstream>

#include "cli/approval_view.h"
#include "cli/chat_keys.h"
#include "cli/chat_line_editor.h"
#include "cli/chat_screen.h"
#include "cli/commands.h"
#include "cli/event_renderer.h"
#include "cli/turn_follower.h"
#include "util/terminal_text.h"

namespace keel::cli {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr char kBrowser[] = "browser";  // the takeover target's name (keel/takeover.h)

// What replaces the input line until the person answers it.
struct Prompt {
  enum class Kind { kApproval, kQuestion, kContinue, kUncertain };
  Kind kind;
  json payload;  // the request's payload, or the unfinished run from initialize
  bool announced = false;
};

}  // namespace

class ChatSession::Impl {
 public:
  Impl(std::ostream& out, EngineClient& client, std::string thread_id, bool color)
      : out_(out),
        client_(client),
        thread_id_(std::move(thread_id)),
        screen_(color, terminal_columns(STDOUT_FILENO)),
        renderer_(rendered_, RenderStyle{.color = color}) {}

  void offer_takeover(const json& takeover) {
    if (!takeover.is_object()) return;
    for (const json& target : takeover.value("targets", json::array())) {
      if (target.is_object() && target.value("name", "") == kBrowser) browser_ = true;
    }
    for (const json& held : takeover.value("held", json::array())) {
      if (held.is_object() && held.value("threadId", "") == thread_id_ &&
          held.value("target", "") == kBrowser) {
        holding_browser_ = true;
      }
    }
  }

  void adopt_unfinished(const json& run) {
    const std::string state = run.value("state", "");
    if (run.value("canContinue", false)) {
      prompts_.push_back({Prompt::Kind::kContinue, run});
    } else if (state == "paused_uncertain") {
      prompts_.push_back({Prompt::Kind::kUncertain, run});
    } else {
      // Recovery started only after this client subscribed (EngineHost::start_recovery), so every event
      // of this turn from its turn.start on reaches the session.
      running_turn_ = run.value("turnId", "");
      note("· a turn of this thread is running (" + state + "); its events follow");
    }
  }

  int run(int input_fd, WakePipe& wake, EventPump& pump, SignalInbox& signals) {
    while (!leave_) {
      for (AgentEvent& event : pump.take()) {
        // Its strings come from the model, tools and files: their control sequences are made visible before
        // anything shows them (the renderer, the prompts), util/terminal_text.h.
        event.payload = terminal_safe_json(event.payload);
        handle_event(event);
      }
      for (int signal_number : signals.take()) take_signal(signal_number);
      announce_prompt();
      draw();
      if (leave_) break;

      pollfd fds[2] = {{input_fd, POLLIN, 0}, {wake.read_fd(), POLLIN, 0}};
      const int ready = ::poll(fds, 2, poll_timeout_ms());
      if (ready < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents & POLLIN) wake.drain();
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buffer[256];
        const ssize_t n = ::read(input_fd, buffer, sizeof buffer);
        if (n <= 0) {
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          leave_ = true;  // the terminal went away
          break;
        }
        const bool was_pending = decoder_.escape_pending();
        for (const Key& key : decoder_.feed(std::string_view(buffer, static_cast<size_t>(n)))) {
          handle_key(key);
        }
        if (decoder_.escape_pending() && !was_pending) escape_since_ = Clock::now();
      }
      // Measured from the ESC byte itself: events arriving meanwhile must not postpone the Esc key.
      if (decoder_.escape_pending() && Clock::now() - escape_since_ >= kEscapeWait) {
        for (const Key& key : decoder_.flush()) handle_key(key);
      }
    }
    if (!running_turn_.empty()) {
      note("· leaving: the running turn is interrupted; chat on this thread again to continue it");
    }
    return exit_status_;
  }

  std::string close() { return screen_.close(); }

 private:
  int poll_timeout_ms() const {
    if (decoder_.escape_pending()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(kEscapeWait - (Clock::now() - escape_since_));
      return std::max(1, static_cast<int>(left.count()) + 1);
    }
    // Now and then anyway: to notice a resized terminal.
    return 1000;
  }

  // ---- output ----

  void flush_rendered() {
    screen_.print(rendered_.str());
    rendered_.str("");
  }

  // A line of plain text: it may quote what did not come from keel (an error's message, the person's
  // pasted input), so its control characters are shown, never sent to the terminal.
  void note(const std::string& line) {
    renderer_.break_line();
    rendered_ << terminal_safe(line) << "\n";
    flush_rendered();
  }

  void draw() {
    screen_.set_width(terminal_columns(STDOUT_FILENO));
    screen_.set_status(status_line());
    if (prompts_.empty()) {
      screen_.set_input("> ", draft_.text(), draft_.cursor());
    } else {
      const Prompt& prompt = prompts_.front();
      if (prompt.kind == Prompt::Kind::kQuestion) {
        screen_.set_input("answer > ", answer_.text(), answer_.cursor());
      } else {
        screen_.set_input(prompt_text(prompt), "", 0);
      }
    }
    const std::string bytes = screen_.frame();
    if (!bytes.empty()) {
      out_ << bytes;
      out_.flush();
    }
  }

  std::string status_line() const {
    std::string status;
    if (holding_browser_) {
      // Above all else: while the person holds the browser, the agent's page tools refuse to act.
      status = "browser: you have it — Ctrl-T hands back · ";
    }
    if (!prompts_.empty() && (prompts_.front().kind == Prompt::Kind::kApproval ||
                              prompts_.front().kind == Prompt::Kind::kQuestion)) {
      status += "waiting for your answer · Esc interrupts the turn";
    } else if (!prompts_.empty()) {
      status += "answer to go on · Esc leaves it";
    } else if (interrupting_) {
      status += "interrupting…";
    } else if (!running_turn_.empty()) {
      status += "turn running · Enter steers · Tab queues · Esc interrupts";
    } else {
      status += "Enter sends · Tab queues · Ctrl-D leaves";
    }
    if (browser_ && !holding_browser_) status += " · Ctrl-T takes the browser";
    if (queue_length_ > 0) status += " · queue: " + std::to_string(queue_length_);
    return status;
  }

  static std::string prompt_text(const Prompt& prompt) {
    switch (prompt.kind) {
      case Prompt::Kind::kApproval:
        return approval_choice_lines(prompt.payload).back() + " > ";
      case Prompt::Kind::kContinue:
        return prompt.payload.value("state", "") == "budget_paused"
                   ? "paused: the token budget is spent — continue? [y/n] > "
                   : "interrupted — continue? [y/n] > ";
      case Prompt::Kind::kUncertain:
        return "[r] run it again  [d] it happened  [f] it did not > ";
      case Prompt::Kind::kQuestion:
        return "answer > ";
    }
    return "> ";
  }

  // Prints what the front prompt is about, once, above the input line.
  void announce_prompt() {
    if (prompts_.empty() || prompts_.front().announced) return;
    Prompt& prompt = prompts_.front();
    prompt.announced = true;
    const json& p = prompt.payload;
    switch (prompt.kind) {
      case Prompt::Kind::kApproval:
        announce_approval(p);
        break;
      case Prompt::Kind::kQuestion: {
        const json& asked = p.contains("request") ? p["request"] : json::object();
        std::string line = "? " + asked.value("question", "");
        if (asked.contains("choices") && asked["choices"].is_array() && !asked["choices"].empty()) {
          line += " " + asked["choices"].dump();
        }
        note(line);
        break;
      }
      case Prompt::Kind::kContinue:
        note("· the thread's last turn (" + p.value("turnId", "") + ") was " +
             (p.value("state", "") == "budget_paused" ? "paused: its token budget is spent" : "interrupted") +
             " and has not finished");
        break;
      case Prompt::Kind::kUncertain:
        note("! a write was running when keel stopped and may or may not have happened");
        break;
    }
  }

  // ---- events ----

  void handle_event(const AgentEvent& event) {
    if (event.type == "command.ack" || event.type == "command.rejected") return;
    if (event.thread_id != thread_id_) return;
    renderer_.render(event);
    flush_rendered();
    const json& p = event.payload;
    if (event.type == "turn.start") {
      running_turn_ = p.value("turnId", "");
      interrupting_ = false;
    } else if (event.type == "turn.complete") {
      running_turn_.clear();
      interrupting_ = false;
      // Its waits are withdrawn or settled: nothing of it is left to answer.
      std::erase_if(prompts_, [&](const Prompt& prompt) {
        return (prompt.kind == Prompt::Kind::kApproval || prompt.kind == Prompt::Kind::kQuestion) &&
               prompt.payload.value("turnId", "") == p.value("turnId", "");
      });
    } else if (event.type == "queue.updated" && p.contains("items") && p["items"].is_array()) {
      queue_length_ = p["items"].size();
    } else if (event.type == "approval.request") {
      add_prompt(Prompt::Kind::kApproval, "approvalId", p);
    } else if (event.type == "approval.resolved") {
      remove_prompt(Prompt::Kind::kApproval, "approvalId", p.value("approvalId", ""));
    } else if (event.type == "interaction.request") {
      if (p.value("kind", "") == "ask_user") {
        add_prompt(Prompt::Kind::kQuestion, "interactionId", p);
      } else if (p.value("kind", "") == "timer") {
        const json& request = p.contains("request") ? p["request"] : json::object();
        std::string line = "· waiting on a timer";
        if (request.contains("seconds")) line += " of " + request["seconds"].dump() + " s";
        if (request.contains("note") && request["note"].is_string())
          line += " (" + request["note"].get<std::string>() + ")";
        note(line);
      }
    } else if (event.type == "takeover.updated" && p.value("target", "") == kBrowser) {
      // Also what another client of the engine did.
      holding_browser_ = p.value("holder", "") == "person";
    } else if (event.type == "interaction.resolved") {
      remove_prompt(Prompt::Kind::kQuestion, "interactionId", p.value("interactionId", ""));
    }
  }

  void add_prompt(Prompt::Kind kind, const char* id_key, const json& payload) {
    const std::string id = payload.value(id_key, "");
    for (const Prompt& prompt : prompts_) {
      if (prompt.kind == kind && prompt.payload.value(id_key, "") == id) return;  // re-sent
    }
    prompts_.push_back({kind, payload});
  }

  void remove_prompt(Prompt::Kind kind, const char* id_key, const std::string& id) {
    std::erase_if(prompts_, [&](const Prompt& prompt) {
      return prompt.kind == kind && prompt.payload.value(id_key, "") == id;
    });
  }

  // ---- keys ----

  void take_signal(int signal_number) {
    if (signal_number == SIGINT) {
      handle_key(Key::control('c'));
      return;
    }
    exit_status_ = 128 + signal_number;
    leave_ = true;
  }

  void handle_key(const Key& key) {
    // Ctrl-T works whatever the input line shows: the person may need the page to answer a prompt.
    if (key.kind == Key::Kind::kCtrl && key.ctrl == 't') return toggle_browser();
    if (!prompts_.empty()) return handle_prompt_key(key);
    if (key.kind == Key::Kind::kEnter) return send_line();
    if (key.kind == Key::Kind::kTab) return enqueue_line();
    if (key.kind == Key::Kind::kEscape) return interrupt();
    if (key.kind == Key::Kind::kCtrl && key.ctrl == 'c') {
      // Idle, or already interrupting: Ctrl-C leaves.
      if (running_turn_.empty() || interrupting_) {
        leave_ = true;
      } else {
        interrupt();
      }
      return;
    }
    if (key.kind == Key::Kind::kCtrl && key.ctrl == 'd') {
      if (draft_.empty()) {
        leave_ = true;
      } else {
        draft_.erase_forward();
      }
      return;
    }
    draft_.apply(key);
  }

  void handle_prompt_key(const Key& key) {
    Prompt& prompt = prompts_.front();
    const bool about_turn = prompt.kind == Prompt::Kind::kApproval || prompt.kind == Prompt::Kind::kQuestion;
    if (key.kind == Key::Kind::kCtrl && key.ctrl == 'd' &&
        (prompt.kind != Prompt::Kind::kQuestion || answer_.empty())) {
      leave_ = true;
      return;
    }
    if (key.kind == Key::Kind::kEscape || (key.kind == Key::Kind::kCtrl && key.ctrl == 'c')) {
      if (about_turn) {
        interrupt();
      } else {
        note("· left as it is; what you type starts a new turn");
        prompts_.pop_front();
      }
      return;
    }
    const std::string letter = key.kind == Key::Kind::kText ? key.text : "";
    switch (prompt.kind) {
      case Prompt::Kind::kApproval:
        if (std::optional<json> answer = approval_answer(prompt.payload, letter)) {
          return answer_approval(std::move(*answer));
        }
        return;
      case Prompt::Kind::kQuestion:
        if (key.kind == Key::Kind::kEnter) return answer_question();
        answer_.apply(key);
        return;
      case Prompt::Kind::kContinue:
        if (letter == "y" || letter == "Y") return continue_run();
        if (letter == "n" || letter == "N") {
          note("· not continued; what you type starts a new turn");
          prompts_.pop_front();
        }
        return;
      case Prompt::Kind::kUncertain:
        if (letter == "r") return resolve_uncertain("retry");
        if (letter == "d") return resolve_uncertain("mark_done");
        if (letter == "f") return resolve_uncertain("fail");
        return;
    }
  }

  // ---- ops ----

  void send_line() {
    if (draft_.empty()) return;
    const std::string text = draft_.take();
    note("> " + text);
    json params = {{"threadId", thread_id_}, {"input", text}};
    auto sent = client_.call("turn.input", params);
    // It raced the turn's end: sent again (a new submission), it starts a turn or queues.
    if (!sent && sent.error().code() == "turn.ended") sent = client_.call("turn.input", params);
    if (!sent) {
      note("· not sent: " + sent.error().to_string());
      draft_.insert(text);  // kept, to try again
      return;
    }
    const std::string action = sent->value("action", "");
    if (action == "started") {
      running_turn_ = sent->value("turnId", running_turn_);
    } else if (action == "steered") {
      note("· steered: the running turn takes it at its next model request");
    } else if (action == "enqueued") {
      note("· queued: " + sent->value("reason", "the turn cannot take it now"));
    }
  }

  void enqueue_line() {
    if (draft_.empty()) return;
    const std::string text = draft_.take();
    note("> " + text);
    auto queued = client_.call("turn.enqueue", {{"threadId", thread_id_}, {"input", text}});
    if (!queued) {
      note("· not queued: " + queued.error().to_string());
      draft_.insert(text);
      return;
    }
    // `position` is only a sort key; the length is what the person wants to know.
    note("· queued (" + std::to_string(queued->value("queueLength", 0)) + " waiting)");
  }

  void interrupt() {
    if (running_turn_.empty()) {
      note("· nothing to interrupt");
      return;
    }
    auto interrupted = client_.call("turn.interrupt", {{"threadId", thread_id_}});
    if (!interrupted) {
      note("· interrupt failed: " + interrupted.error().to_string());
      return;
    }
    interrupting_ = true;
    note("· interrupting…");
  }

  // Takes the browser over for this thread (the engine interrupts a running turn) or hands it back (the
  // interrupted turn stays so: a new message, or continuing it, goes on).
  void toggle_browser() {
    if (!browser_) {
      note("· no browser here: start keel chat with --browser (or [browser] enabled = true)");
      return;
    }
    const bool take = !holding_browser_;
    auto answered = client_.call(take ? "takeover.start" : "takeover.end",
                                 {{"threadId", thread_id_}, {"target", kBrowser}});
    if (!answered) {
      note(std::string(take ? "· cannot take the browser: " : "· cannot hand the browser back: ") +
           answered.error().to_string());
      return;
    }
    holding_browser_ = take;
    if (take) {
      if (answered->value("interrupted", false)) interrupting_ = true;
      note("· you have the browser: the agent's page tools wait until Ctrl-T hands it back");
    } else {
      note("· the browser is the agent's again; send a message to go on");
    }
  }

  // The approval's description (cli/approval_view.h) above the input line: the target first, then the
  // change, why keel asks, and what a remembered decision would cover (the choices line is the prompt).
  void announce_approval(const json& request) {
    for (const std::string& line : approval_lines(request)) note(line);
    const std::vector<std::string> choices = approval_choice_lines(request);
    for (size_t i = 0; i + 1 < choices.size(); ++i) note("  " + choices[i]);
  }

  // `params` is approval_answer()'s {decision, remember?}.
  void answer_approval(json params) {
    const json request = prompts_.front().payload;
    prompts_.pop_front();
    params["threadId"] = thread_id_;
    params["approvalId"] = request.value("approvalId", "");
    auto answered = client_.call("approval.response", std::move(params));
    if (!answered && answered.error().code() != "approval.expired") {
      note("· answer not taken: " + answered.error().to_string());
    }
  }

  void answer_question() {
    const json request = prompts_.front().payload;
    prompts_.pop_front();
    const std::string answer = answer_.take();
    note("> " + answer);
    auto answered =
        client_.call("interaction.response", {{"threadId", thread_id_},
                                              {"interactionId", request.value("interactionId", "")},
                                              {"response", {{"answer", answer}}}});
    if (!answered && answered.error().code() != "interaction.expired") {
      note("· answer not taken: " + answered.error().to_string());
    }
  }

  void continue_run() {
    const json run = prompts_.front().payload;
    prompts_.pop_front();
    auto resumed = client_.call("run.resume", {{"threadId", thread_id_}, {"runId", run.value("runId", "")}});
    if (!resumed) {
      note("· cannot continue: " + resumed.error().to_string());
      return;
    }
    running_turn_ = resumed->value("turnId", run.value("turnId", ""));
    note("· continuing turn " + running_turn_);
  }

  void resolve_uncertain(const std::string& resolution) {
    const json run = prompts_.front().payload;
    prompts_.pop_front();
    auto resolved = client_.call(
        "run.resolveUncertain",
        {{"threadId", thread_id_}, {"runId", run.value("runId", "")}, {"resolution", resolution}});
    if (!resolved) {
      note("· not resolved: " + resolved.error().to_string());
      return;
    }
    running_turn_ = resolved->value("turnId", run.value("turnId", ""));
  }

  std::ostream& out_;
  EngineClient& client_;
  std::string thread_id_;
  ChatScreen screen_;
  std::ostringstream rendered_;  // the renderer writes here; flush_rendered() moves it to the screen
  TextRenderer renderer_;
  KeyDecoder decoder_;
  LineEditor draft_;   // what the person is typing to the agent
  LineEditor answer_;  // the answer to an ask_user question
  std::deque<Prompt> prompts_;
  std::string running_turn_;
  bool interrupting_ = false;
  size_t queue_length_ = 0;
  bool browser_ = false;            // the engine offers the browser to take over
  bool holding_browser_ = false;    // the person holds it for this thread
  Clock::time_point escape_since_;  // when the pending ESC byte came
  bool leave_ = false;
  int exit_status_ = kExitOk;
};

ChatSession::ChatSession(std::ostream& out, EngineClient& client, std::string thread_id, bool color)
    : impl_(std::make_unique<Impl>(out, client, std::move(thread_id), color)) {}

ChatSession::~ChatSession() = default;

void ChatSession::adopt_unfinished(const json& run) { impl_->adopt_unfinished(run); }

void ChatSession::offer_takeover(const json& takeover) { impl_->offer_takeover(takeover); }

int ChatSession::run(int input_fd, WakePipe& wake, EventPump& pump, SignalInbox& signals) {
  return impl_->run(input_fd, wake, pump, signals);
}

std::string ChatSession::close() { return impl_->close(); }

}  // namespace keel::cli
