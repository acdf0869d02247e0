#include "transport/static_files.h"

#include <algorithm>
#include <system_error>

namespace keel {

namespace fs = std::filesystem;

namespace {

constexpr char kIndex[] = "index.html";
constexpr char kNoCache[] = "no-cache";
// Files under assets/ carry a content hash in their name (esbuild's [name]-[hash]): a new build has new
// names.
constexpr char kLongCache[] = "public, max-age=31536000, immutable";

constexpr char kNotBuiltPage[] = R"(<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>keel: the web interface is not built</title></head>
<body>
<h1>The web interface is not built</h1>
<p>keel is running and its JSON-RPC WebSocket works, but the web app's files were not found.
Build them once, then reload this page:</p>
<pre>cd web &amp;&amp; npm ci &amp;&amp; npm run build</pre>
<p>or run <code>./scripts/setup.sh</code>. keel looks in <code>web/dist</code> beside its build directory, in
<code>&lt;prefix&gt;/share/keel/web</code> when installed, or where <code>--ui-dir</code> says.</p>
</body>
</html>
)";

StaticAnswer not_found() {
  return StaticAnswer{404, "text/plain; charset=utf-8", kNoCache, {}, "not found\n"};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path's segments, percent-decoded; empty when the path is not plain (see the header).
std::vector<std::string> plain_segments(std::string_view path, bool& ok) {
  ok = false;
  std::vector<std::string> segments;
  if (path.empty() || path.front() != '/') return segments;
  path.remove_prefix(1);
  while (true) {
    const size_t slash = path.find('/');
    const std::string_view raw = path.substr(0, slash);
    std::string segment;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '%') {
        segment.push_back(raw[i]);
        continue;
      }
      if (i + 2 >= raw.size()) return {};
      const int hi = hex_digit(raw[i + 1]);
      const int lo = hex_digit(raw[i + 2]);
      if (hi < 0 || lo < 0) return {};
      segment.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
    const bool bad_char = std::any_of(segment.begin(), segment.end(), [](char c) {
      return c == '/' || c == '\\' || c == '\0' || static_cast<unsigned char>(c) < 0x20;
    });
    if (segment.empty() || segment.front() == '.' || bad_char) return {};
    segments.push_back(std::move(segment));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  ok = true;
  return segments;
}

// Whether `inner` (canonical) lies inside `root` (canonical), component by component.
bool inside(const fs::path& root, const fs::path& inner) {
  auto r = root.begin();
  auto i = inner.begin();
  for (; r != root.end(); ++r, ++i) {
    if (i == inner.end() || *r != *i) return false;
  }
  return true;
}

}  // namespace

std::string content_type_for(const fs::path& file) {
  std::string ext = file.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
  };
  for (const auto& [extension, type] : kTypes) {
    if (ext == extension) return std::string(type);
  }
  return "application/octet-stream";
}

StaticAnswer resolve_static_file(const fs::path& ui_dir, std::string_view target) {
  const std::string_view path = target.substr(0, target.find_first_of("?#"));
  bool ok = false;
  std::vector<std::string> segments = plain_segments(path, ok);
  if (!ok && path != "/") return not_found();
  if (segments.empty()) segments.emplace_back(kIndex);
  std::error_code ec;
  const fs::path root = ui_dir.empty() ? fs::path() : fs::canonical(ui_dir, ec);
  if (ui_dir.empty() || ec || !fs::is_regular_file(root / kIndex, ec)) {
    if (segments.size() == 1 && segments.front() == kIndex) {
      return StaticAnswer{200, "text/html; charset=utf-8", kNoCache, {}, kNotBuiltPage};
    }
    return not_found();
  }
  fs::path candidate = root;
  for (const std::string& segment : segments) candidate /= segment;
  // The real path, symlinks resolved: a link inside the directory may point anywhere.
  const fs::path real = fs::canonical(candidate, ec);
  if (ec || !inside(root, real) || !fs::is_regular_file(real, ec)) return not_found();
  const bool hashed_asset = segments.size() > 1 && segments.front() == "assets";
  return StaticAnswer{200, content_type_for(real), hashed_asset ? kLongCache : kNoCache, real, {}};
}

std::vector<std::pair<std::string, std::string>> security_headers(std::string_view self_host) {
  std::string connect = "connect-src 'self'";
  if (!self_host.empty()) connect += " ws://" + std::string(self_host);
  return {
      {"Content-Security-Policy",
       "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: "
       "blob:; " +
           connect + "; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
  };
}

}  // namespace keel
