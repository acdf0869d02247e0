#include "policy/host_pattern.h"

#include "keel/error_codes.h"

namespace keel {
namespace {

constexpr std::string_view kAllUrls = "<all_urls>";
constexpr std::string_view kAnyWebScheme = "*://";
constexpr size_t kMaxQuotedBytes = 80;

std::unexpected<Error> bad_pattern(std::string_view text, std::string_view problem) {
  std::string quoted(text.substr(0, kMaxQuotedBytes));
  if (text.size() > kMaxQuotedBytes) quoted += "...";
  return fail(codes::kPolicyBadOrigin, "host permission '" + quoted + "': " + std::string(problem));
}

}  // namespace

Result<HostPattern> HostPattern::parse(std::string_view text) {
  HostPattern pattern;
  if (text == kAllUrls) return pattern;

  std::string_view scheme;
  std::string_view rest;
  if (text.starts_with(kAnyWebScheme)) {
    pattern.schemes_ = Schemes::kHttpAndHttps;
    rest = text.substr(kAnyWebScheme.size());
  } else {
    const size_t separator = text.find("://");
    if (separator == std::string_view::npos) {
      return bad_pattern(text, "expected <all_urls>, scheme://host, scheme://*.domain or *://host");
    }
    pattern.schemes_ = Schemes::kOne;
    scheme = text.substr(0, separator);
    rest = text.substr(separator + 3);
  }

  const size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  if (authority_end != std::string_view::npos) {
    const std::string_view tail = rest.substr(authority_end);
    if (tail != "/" && tail != "/*") return bad_pattern(text, "a host permission names origins, not paths");
  }
  if (authority == "*" || authority.starts_with("*:")) {
    return bad_pattern(text, "a '*' host would cover every site; say <all_urls> if that is meant");
  }
  if (authority.starts_with("*.")) {
    pattern.subdomains_ = true;
    authority.remove_prefix(2);
  }

  // The host and port are checked by the origin parser, once per scheme the pattern covers.
  const auto origin_of = [&](std::string_view for_scheme) -> Result<Origin> {
    Result<Origin> origin =
        parse_origin(std::string(for_scheme) + "://" + std::string(authority), OriginSyntax::kOriginOnly);
    if (!origin) return bad_pattern(text, origin.error().message());
    return origin;
  };
  Origin origin;
  if (pattern.schemes_ == Schemes::kOne) {
    origin = KEEL_TRY(origin_of(scheme));
    if (origin.scheme.size() != scheme.size()) {
      // "blob:https://..." parses as the inner URL's origin; a permission must say what it covers.
      return bad_pattern(text, "expected scheme://host");
    }
    pattern.scheme_ = origin.scheme;
    if (origin.port != default_port(origin.scheme)) pattern.port_ = origin.port;
  } else {
    // Parsed under both schemes, a pattern without a port gets each scheme's own default; one that names
    // a port gets that port under both.
    origin = KEEL_TRY(origin_of("http"));
    const Origin secure = KEEL_TRY(origin_of("https"));
    if (origin.port != 80 || secure.port != 443) pattern.port_ = origin.port;
  }
  if (pattern.subdomains_ && origin.host_is_ip_address()) {
    return bad_pattern(text, "an IP address has no subdomains");
  }
  pattern.host_ = origin.host;
  return pattern;
}

bool HostPattern::matches(const Origin& origin) const {
  if (schemes_ == Schemes::kAny) return true;
  // The host first: it is what tells most patterns of a list apart.
  const bool host_matches =
      origin.host == host_ ||
      // A subdomain: the host ends with "." + host_, so the match falls on a label boundary.
      (subdomains_ && origin.host.size() > host_.size() && origin.host.ends_with(host_) &&
       origin.host[origin.host.size() - host_.size() - 1] == '.');
  if (!host_matches) return false;
  const bool scheme_matches = schemes_ == Schemes::kOne ? origin.scheme == scheme_
                                                        : origin.scheme == "http" || origin.scheme == "https";
  return scheme_matches && (port_ ? origin.port == *port_ : origin.port == default_port(origin.scheme));
}

std::string HostPattern::to_string() const {
  if (schemes_ == Schemes::kAny) return std::string(kAllUrls);
  std::string text = schemes_ == Schemes::kOne ? scheme_ + "://" : std::string(kAnyWebScheme);
  if (subdomains_) text += "*.";
  text += host_;
  if (port_) text += ":" + std::to_string(*port_);
  return text;
}

}  // namespace keel
