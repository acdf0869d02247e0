// transport/http_test_client.h — a blocking HTTP/1.1 client (Beast) for the tests of the web interface keel
// serves on its WebSocket port: one request per connection, as keel answers them.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace keel::testing {

struct HttpAnswer {
  unsigned status = 0;                         // 0: no answer (connection failed or closed)
  std::map<std::string, std::string> headers;  // names lower-cased; a repeated field keeps the last
  std::string body;
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// `method target` to 127.0.0.1:port with Host `host` (empty: 127.0.0.1:port) and `headers`.
inline HttpAnswer http_request(uint16_t port, const std::string& method, const std::string& target,
                               const std::vector<std::pair<std::string, std::string>>& headers = {},
                               std::string host = {}) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  boost::asio::ip::tcp::resolver resolver(io);
  beast::error_code error;
  boost::asio::connect(socket, resolver.resolve("127.0.0.1", std::to_string(port)), error);
  if (error) return {};
  http::request<http::empty_body> request(http::string_to_verb(method), target, 11);
  if (request.method() == http::verb::unknown) request.method_string(method);
  request.set(http::field::host, host.empty() ? "127.0.0.1:" + std::to_string(port) : host);
  for (const auto& [name, value] : headers) request.set(name, value);
  http::write(socket, request, error);
  if (error) return {};
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  if (method == "HEAD") parser.skip(true);
  http::read(socket, buffer, parser, error);
  if (error && error != http::error::end_of_stream) return {};
  HttpAnswer answer;
  answer.status = parser.get().result_int();
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    answer.headers[name] = std::string(field.value());
  }
  answer.body = parser.get().body();
  return answer;
}

}  // namespace keel::testing
