// cli/chat_session.h — one `keel chat` session on a thread: keys in, the conversation out, ops to the engine.
//
// The conversation is drawn by a ChatScreen (cli/chat_screen.h): events rendered by the TextRenderer scroll
// above, and the input line below stays usable while a turn runs. Enter sends the line through turn.input —
// a new turn when the thread is idle, else a steer, or a queued input when the turn cannot take a steer —
// and says which ("· steered", "· queued: <reason>"); Tab queues it (turn.enqueue); Esc interrupts
// (turn.interrupt); Ctrl-C interrupts a running turn and leaves an idle session; Ctrl-D on an empty line
// leaves. Approval requests, ask_user questions, the offer to continue an interrupted or budget-paused turn,
// and the choice for a paused_uncertain write replace the input line, one at a time in arrival order, until
// answered; what the person was typing is kept for afterwards. With the browser (keel chat --browser),
// Ctrl-T takes it over for the thread (takeover.start: a running turn is interrupted, the agent's page tools
// refuse until then) and hands it back (takeover.end); the status line starts with "browser: you have it"
// while the person holds it.
//
// Threads: everything runs on the caller's thread inside run(); the EventPump and the SignalInbox are how
// other threads hand over events and signals (cli/chat_io.h). SIGINT acts as Ctrl-C; SIGTERM and SIGHUP
// leave with status 128 + the signal. The caller puts the terminal in raw mode and restores it.
#pragma once

#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/chat_io.h"
#include "cli/engine_client.h"

namespace keel::cli {

class ChatSession {
 public:
  // `out` is the terminal; `client` must outlive the session. `color`: ANSI colours and dim status line.
  ChatSession(std::ostream& out, EngineClient& client, std::string thread_id, bool color);
  ~ChatSession();
  ChatSession(const ChatSession&) = delete;
  ChatSession& operator=(const ChatSession&) = delete;

  // Takes a run of this thread that initialize listed as unfinished: offers to continue it (canContinue),
  // asks how to resolve it (paused_uncertain), or follows it as the running turn (anything else).
  void adopt_unfinished(const nlohmann::json& run);

  // initialize's `takeover` member (absent or null: nothing to take over): whether Ctrl-T may take the
  // browser, and whether the person already holds it for this thread.
  void offer_takeover(const nlohmann::json& takeover);

  // Reads keys from `input_fd` (a terminal in raw mode) and events from `pump` until the person leaves or
  // a signal ends the session; returns the exit status (0 when the person left).
  int run(int input_fd, WakePipe& wake, EventPump& pump, SignalInbox& signals);

  // The bytes that leave the terminal tidy: the bottom area erased, the cursor at the start of a fresh line.
  std::string close();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::cli
