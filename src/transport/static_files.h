// transport/static_files.h — the files of the web interface keel serves on its WebSocket port (docs/web.md):
// which file a request path names, with which type and caching, and the headers every answer carries.
//
// resolve_static_file maps `GET /` to index.html and `GET /<path>` to the file under the UI directory,
// and answers 404 for anything else: a path that is not plain (percent-encoded slashes or backslashes, a
// NUL, empty, `.` or `..` segments, a hidden `.name` segment), a directory (no listings), a missing file, or
// a file whose real path (symlinks resolved) leaves the UI directory. When the directory holds no
// index.html the web interface is not built: `/` and `/index.html` get a small page without scripts that
// says how to build it, everything else 404.
//
// Files are not read here: the answer names the resolved path and the server streams it, so a request
// costs no more memory than its connection. No state, no threads; callable from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

struct StaticAnswer {
  unsigned status = 404;
  std::string content_type;
  std::string cache_control;
  std::filesystem::path file;  // the file to send (status 200 from the UI directory); else body is sent
  std::string body;
};

// `ui_dir` empty: no web interface built. `target` is the request target (a query is ignored).
StaticAnswer resolve_static_file(const std::filesystem::path& ui_dir, std::string_view target);

// The Content-Type for a file name's extension (application/octet-stream for unknown ones).
std::string content_type_for(const std::filesystem::path& file);

// The headers every answer of keel's port carries (name, value): a strict Content-Security-Policy that
// lets the page connect only to its own origin and `ws://<self_host>` (empty: no WebSocket named), nosniff,
// no referrer, no framing.
std::vector<std::pair<std::string, std::string>> security_headers(std::string_view self_host);

}  // namespace keel
