// providers/http/proxy_settings.cc — reading proxy variables and matching NO_PROXY entries.
#include "providers/http/proxy_settings.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>

namespace keel::providers {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string_view strip_brackets(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
  return host;
}

std::optional<uint32_t> parse_ipv4(std::string_view text) {
  std::string copy(text);
  in_addr addr{};
  if (inet_pton(AF_INET, copy.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

bool cidr_matches(std::string_view entry, std::string_view host) {
  const size_t slash = entry.find('/');
  const auto network = parse_ipv4(entry.substr(0, slash));
  const auto address = parse_ipv4(host);
  if (!network || !address) return false;
  const std::string bits_text(entry.substr(slash + 1));
  char* end = nullptr;
  const long bits = std::strtol(bits_text.c_str(), &end, 10);
  if (bits_text.empty() || *end != '\0' || bits < 0 || bits > 32) return false;
  const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  return (*network & mask) == (*address & mask);
}

bool entry_matches(std::string_view entry, const std::string& host) {
  if (entry == "*") return true;
  if (entry.find('/') != std::string_view::npos) return cidr_matches(entry, host);
  while (!entry.empty() && entry.front() == '.') entry.remove_prefix(1);
  const std::string name = lower(strip_brackets(entry));
  if (name.empty()) return false;
  if (host == name) return true;
  return host.size() > name.size() && host.ends_with(name) && host[host.size() - name.size() - 1] == '.';
}

std::string first_set(const ProxySettings::EnvLookup& lookup, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto value = lookup(name);
    if (value && !value->empty()) return *value;
  }
  return "";
}

}  // namespace

ProxySettings ProxySettings::from_environment(const EnvLookup& lookup) {
  ProxySettings settings;
  settings.https_proxy = first_set(lookup, {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"});
  settings.http_proxy = first_set(lookup, {"http_proxy", "all_proxy", "ALL_PROXY"});
  settings.no_proxy = first_set(lookup, {"no_proxy", "NO_PROXY"});
  return settings;
}

ProxySettings ProxySettings::from_environment() {
  return from_environment([](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

std::string ProxySettings::proxy_for(std::string_view scheme, std::string_view host) const {
  const std::string scheme_lower = lower(scheme);
  std::string_view proxy;
  if (scheme_lower == "https") proxy = https_proxy;
  if (scheme_lower == "http") proxy = http_proxy;
  if (proxy.empty() || no_proxy_matches(no_proxy, host)) return "";
  return std::string(proxy);
}

bool no_proxy_matches(std::string_view no_proxy, std::string_view host) {
  const std::string target = lower(strip_brackets(host));
  if (target.empty()) return false;
  while (!no_proxy.empty()) {
    const size_t comma = no_proxy.find(',');
    const std::string_view entry = trim(no_proxy.substr(0, comma));
    if (!entry.empty() && entry_matches(entry, target)) return true;
    if (comma == std::string_view::npos) break;
    no_proxy.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace keel::providers
