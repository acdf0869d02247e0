// keel/error.h — the one error type of keel, and Result<T>.
//
// Expected failures (bad input, policy refusals, conflicts, store and provider failures) are values:
// functions return Result<T> (a std::expected<T, Error>). Exceptions are reserved for bugs and for
// library boundaries that throw (those are caught at the boundary and turned into an Error).
//
// An Error carries:
//   - code: a stable, dotted, lower-case identifier ("store.busy", "command.submission_conflict").
//     Codes are part of keel's public contract: clients and tests match on them, never on messages.
//     Every code keel emits is listed in keel/error_codes.h.
//   - message: for people; may change between versions.
//   - retryable: whether repeating the same call later can succeed (Abseil's kUnavailable vs
//     kFailedPrecondition). A rejected command is not retryable; a busy database is.
//
// Discarding a failure must be visible: Result, Error and fail() are [[nodiscard]], so the compiler
// (-Wunused-result, an error under KEEL_WERROR) rejects a call whose Result nobody looks at. Where ignoring
// one is genuinely right, the call is cast to void with a comment saying why: explicit and greppable.
// (g++ 12 does not warn when `co_await` yields a Result nobody looks at; clang 16 does. No awaitable in keel
// yields a Result today; one that does should be checked with clang.)
//
// Result<T> is a class deriving from std::expected<T, Error>, not an alias of it, because an alias cannot
// carry [[nodiscard]] and libstdc++ 12 does not declare std::expected [[nodiscard]]. It adds no state and no
// behaviour: it inherits every constructor and assignment of std::expected and converts from a plain
// std::expected<T, Error>, so a Result is used exactly like the std::expected it is. Should keel's library
// gain the C++23 monadic members (libstdc++ 13): they return std::expected, which converts back to Result,
// but and_then's callback must itself return a std::expected (the standard requires a specialization of
// std::expected, which Result<U> is not).
// (tests/nodiscard/ checks that ignoring a Result, an Error or fail() stays a compile error.)
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace keel {

class [[nodiscard]] Error {
 public:
  Error(std::string code, std::string message, bool retryable = false)
      : code_(std::move(code)), message_(std::move(message)), retryable_(retryable) {}

  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  bool retryable() const { return retryable_; }

  // "code: message", for logs and terminal output.
  std::string to_string() const { return code_ + ": " + message_; }

  // Returns a copy whose message is prefixed with `context` ("opening /x.db: ...").
  Error with_context(std::string_view context) const {
    return Error(code_, std::string(context) + ": " + message_, retryable_);
  }

  friend bool operator==(const Error& a, const Error& b) = default;

 private:
  std::string code_;
  std::string message_;
  bool retryable_;
};

template <typename T>
class [[nodiscard]] Result : public std::expected<T, Error> {
 public:
  using expected_type = std::expected<T, Error>;

  using expected_type::expected_type;
  using expected_type::operator=;

  Result() = default;  // a value-initialized T, or success for Result<void>, as std::expected
  // A std::expected<T, Error> is a Result: values of code written against std::expected convert implicitly
  // (on purpose: these constructors are not explicit).
  Result(const expected_type& other) noexcept(std::is_nothrow_copy_constructible_v<expected_type>)
      : expected_type(other) {}
  Result(expected_type&& other) noexcept(std::is_nothrow_move_constructible_v<expected_type>)
      : expected_type(std::move(other)) {}
};

// Shorthand for returning an error: `return fail(codes::kStoreBusy, "...")`.
[[nodiscard]] inline std::unexpected<Error> fail(std::string code, std::string message,
                                                 bool retryable = false) {
  return std::unexpected<Error>(Error(std::move(code), std::move(message), retryable));
}
[[nodiscard]] inline std::unexpected<Error> fail(Error error) {
  return std::unexpected<Error>(std::move(error));
}

}  // namespace keel

// Propagates an error from an expression returning Result<T>; yields the value otherwise.
// Usage: auto v = KEEL_TRY(compute());   KEEL_TRY(void_result());   (nesting is fine)
// (A GNU statement expression: g++ is keel's compiler. __COUNTER__ keeps nested uses from shadowing.)
#define KEEL_TRY(expr) KEEL_TRY_IMPL_(expr, KEEL_TRY_CONCAT_(keel_try_result_, __COUNTER__))
#define KEEL_TRY_CONCAT_(a, b) KEEL_TRY_CONCAT2_(a, b)
#define KEEL_TRY_CONCAT2_(a, b) a##b
#define KEEL_TRY_IMPL_(expr, var)                               \
  __extension__({                                               \
    auto var = (expr);                                          \
    if (!var) return ::std::unexpected(std::move(var).error()); \
    std::move(var).value();                                     \
  })
