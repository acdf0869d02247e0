// util/terminal_text.h — text that did not come from keel, made safe to print on a terminal.
//
// Model text, tool results (a workspace file's contents), ask_user questions, thread titles and error
// messages quoting any of them may hold control sequences that a terminal obeys: an OSC that sets the window
// title or writes the clipboard, a clear-screen, cursor movement that overwrites what keel printed (a faked
// "approval: accepted"), text hidden by a carriage return or backspaces, and bidirectional overrides that
// show characters in another order than they are stored. terminal_safe() makes every such character
// visible as plain text instead of removing it, so the person sees that the text tried something:
//   - C0 controls and DEL in caret notation: ESC as "^[", BEL as "^G", BS as "^H", DEL as "^?";
//   - a carriage return as "^M", unless it is the CR of a CRLF (then it is dropped and the LF stays);
//   - C1 controls (U+0080..U+009F) and the bidi embeddings, overrides and isolates (U+202A..U+202E,
//     U+2066..U+2069) as "<U+XXXX>";
//   - bytes that are not valid UTF-8 as U+FFFD (a raw 0x9B is an 8-bit CSI to some terminals);
//   - tab is kept; newline is kept (LineBreaks::kKeep) or shown as "^J" (LineBreaks::kShow, for one-line
//     contexts such as a log line, which must not fake the next one).
// Every character is mapped on its own, so text cut between characters (streamed deltas) maps to the same
// output as the whole (but for a CRLF cut between its CR and LF, whose CR is then shown); the result is
// idempotent (safe text maps to itself) and holds no byte below 0x20 but newline and tab. Pure functions, any
// thread.
#pragma once

#include <mutex>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <string>
#include <string_view>

#include "util/thread_annotations.h"

namespace keel {

enum class LineBreaks { kKeep, kShow };

std::string terminal_safe(std::string_view text, LineBreaks breaks = LineBreaks::kKeep);

// `value` with terminal_safe() applied to every string in it, object keys included (an event payload that a
// renderer prints piecemeal, or dumps as JSON: JSON escapes C0 controls but not C1 nor bidi characters).
nlohmann::json terminal_safe_json(const nlohmann::json& value);

// A stream buffer that passes what is written through terminal_safe() to `target`: for a stream that only
// ever carries plain text for a person (keel's stderr: error messages, prompts, notes), so that no message
// quoting outside text can reach the terminal raw. A multi-byte character cut between two writes is held
// until it is whole. `target` must outlive this buffer; the destructor writes what is held. Writes from
// several threads are serialized (std::cerr may be written by a signal watcher and the main thread).
class TerminalSafeStreambuf final : public std::streambuf {
 public:
  explicit TerminalSafeStreambuf(std::streambuf* target) : target_(target) {}
  ~TerminalSafeStreambuf() override;
  TerminalSafeStreambuf(const TerminalSafeStreambuf&) = delete;
  TerminalSafeStreambuf& operator=(const TerminalSafeStreambuf&) = delete;

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* text, std::streamsize count) override;
  int sync() override;

 private:
  // Writes what is pending up to its last whole character (everything when `all`).
  void emit(bool all) REQUIRES(mu_);

  Mutex mu_;
  std::streambuf* target_;
  std::string pending_ GUARDED_BY(mu_);
};

}  // namespace keel
