// tools/call_preview.h — the pieces a tool's CallPreview (keel/tool.h) is built from: excerpts and diffs
// bounded in size that never hide the end of a text, and the reasons a path deserves a second look.
//
// Why bounded both ways: an approval is shown on a terminal and stored with the approval, so its change
// must stay small; but a cut that kept only the start would let a long write hide its last line (a
// `curl … | sh` after 300 harmless bytes). So an excerpt keeps the start and the end and says, in the
// middle, how many lines and bytes it left out.
//
// Pure functions over strings; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace keel {

struct ExcerptLimits {
  size_t max_lines = 40;    // lines kept (half from the start, half from the end)
  size_t max_bytes = 4096;  // bytes kept, likewise; a single long line is cut in its middle too
};

// `text` as lines, each prefixed with `prefix` and ended by '\n'. When it is larger than `limits`, the start
// and the end are kept and one line in between says what was left out ("… 120 lines (4,000 bytes) not
// shown …"). Bytes that are not UTF-8 are replaced (U+FFFD); nothing else is changed (a renderer makes
// control characters visible).
std::string excerpt_lines(std::string_view text, std::string_view prefix, ExcerptLimits limits = {});

// A unified-style diff of `before` -> `after`: the lines both share at the start and at the end are
// skipped (one "@@ line N @@" header says where the change begins), the removed lines follow with '-',
// the added ones with '+', each side bounded as excerpt_lines() bounds it. "" when they are equal.
std::string bounded_diff(std::string_view before, std::string_view after, ExcerptLimits limits = {});

// Why a path deserves a second look before a write: "inside .git/ …", "a shell start-up file …", "outside
// the workspace". `path` is relative to the workspace ('/'-separated), or absolute; an absolute path, or a
// relative one that leaves the root through "..", is outside the workspace.
std::vector<std::string> sensitive_path_reasons(std::string_view path);

// Human-sized byte counts with thousands separators: "4,321 bytes".
std::string byte_count(size_t bytes);

}  // namespace keel
