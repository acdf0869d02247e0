// mcp/auth/www_authenticate.cc — a small recursive-descent reader of RFC 9110's challenge grammar.
#include "mcp/auth/www_authenticate.h"

#include <cctype>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

constexpr size_t kMaxHeaderBytes = 8 * 1024;

bool is_tchar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u) != 0) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class ChallengeReader {
 public:
  explicit ChallengeReader(std::string_view text) : text_(text) {}

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
  }
  void skip_separators() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == ',')) ++pos_;
  }
  std::string_view token() {
    const size_t start = pos_;
    while (!at_end() && is_tchar(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  // A quoted string after its opening quote, unescaped; nullopt when it never closes.
  std::optional<std::string> quoted_rest() {
    std::string out;
    while (!at_end()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c == '\\') {
        if (at_end()) return std::nullopt;
        out.push_back(text_[pos_++]);
      } else {
        out.push_back(c);
      }
    }
    return std::nullopt;
  }
  // Whether the text from here is `token OWS "="` (an auth-param), without consuming it.
  bool param_follows() const {
    size_t p = pos_;
    const size_t start = p;
    while (p < text_.size() && is_tchar(text_[p])) ++p;
    if (p == start) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    // "abc==" is a token68 credential with padding, not a parameter named abc.
    return p < text_.size() && text_[p] == '=' && (p + 1 >= text_.size() || text_[p + 1] != '=');
  }
  size_t pos() const { return pos_; }
  void advance() { ++pos_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

Error bad_challenge(std::string_view why) {
  return Error(codes::kMcpAuthBadChallenge, "WWW-Authenticate header: " + std::string(why));
}

}  // namespace

std::optional<std::string> BearerChallenge::get(std::string_view name) const {
  const auto it = params.find(lower(name));
  if (it == params.end()) return std::nullopt;
  return it->second;
}

Result<std::optional<BearerChallenge>> parse_bearer_challenge(std::string_view header) {
  if (header.size() > kMaxHeaderBytes) return std::unexpected(bad_challenge("longer than 8 KiB"));
  ChallengeReader reader(header);
  std::optional<BearerChallenge> bearer;
  while (true) {
    reader.skip_separators();
    if (reader.at_end()) break;
    const std::string scheme = lower(reader.token());
    if (scheme.empty()) return std::unexpected(bad_challenge("expected an auth scheme"));
    const bool is_bearer = scheme == "bearer";
    BearerChallenge current;
    reader.skip_spaces();
    // A token68 credential ("Basic abc=="): letters and '=' padding up to the next challenge.
    if (!reader.at_end() && reader.peek() != ',' && !reader.param_follows()) {
      while (!reader.at_end() && reader.peek() != ',') reader.advance();
      continue;
    }
    while (reader.param_follows()) {
      const std::string name = lower(reader.token());
      reader.skip_spaces();
      reader.advance();  // '='
      reader.skip_spaces();
      std::string value;
      if (reader.peek() == '"') {
        reader.advance();
        auto quoted = reader.quoted_rest();
        if (!quoted) return std::unexpected(bad_challenge("a quoted value is not closed"));
        value = std::move(*quoted);
      } else {
        const std::string_view token = reader.token();
        if (token.empty()) return std::unexpected(bad_challenge("parameter '" + name + "' has no value"));
        value = std::string(token);
      }
      // The first occurrence wins: a repeated parameter must not override what a proxy cannot see.
      current.params.emplace(name, std::move(value));
      reader.skip_spaces();
      if (reader.peek() != ',') break;
      reader.skip_separators();
    }
    if (is_bearer && !bearer) bearer = std::move(current);
    reader.skip_spaces();
    if (!reader.at_end() && reader.peek() != ',' && !is_tchar(reader.peek())) {
      return std::unexpected(bad_challenge("unexpected character '" + std::string(1, reader.peek()) + "'"));
    }
  }
  return bearer;
}

}  // namespace keel::mcp
