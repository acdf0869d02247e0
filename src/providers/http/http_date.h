// providers/http/http_date.h — parsing an HTTP-date (RFC 9110 §5.6.7), for Retry-After.
//
// Accepts the three forms a recipient must: IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the obsolete
// RFC 850 form ("Sunday, 06-Nov-94 08:49:37 GMT"; a two-digit year is taken as 19xx from 70, else 20xx),
// and asctime ("Sun Nov  6 08:49:37 1994"). The weekday is not checked against the date. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace keel::providers {

// Milliseconds since the Unix epoch, or nullopt when `text` is not an HTTP-date.
std::optional<int64_t> parse_http_date(std::string_view text);

}  // namespace keel::providers
