#include "browser/snapshot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "browser/browser_errors.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

using nlohmann::json;

std::unexpected<Error> malformed(const std::string& what) {
  return fail(codes::kBrowserBadScriptResult, "the page script's snapshot result is malformed: " + what);
}

// An integer-valued JSON number (JavaScript sends every number as a double), else nullopt.
std::optional<int64_t> integer(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const double d = value.get<double>();
    constexpr double kLimit = 9.0e15;  // well inside int64 and exact in a double
    if (std::isfinite(d) && std::fabs(d) < kLimit) return static_cast<int64_t>(std::llround(d));
  }
  return std::nullopt;
}

std::optional<int64_t> integer_field(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  return integer(*it);
}

std::string string_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The line's indent split from its text: columns of spaces, then an optional "- " list marker.
OutlineLine split_line(const std::string& raw) {
  OutlineLine line;
  size_t spaces = raw.find_first_not_of(' ');
  if (spaces == std::string::npos) spaces = raw.size();
  line.columns = spaces;
  if (raw.compare(spaces, 2, "- ") == 0) {
    line.list_item = true;
    line.columns += 2;
    line.text = raw.substr(spaces + 2);
  } else {
    line.text = raw.substr(spaces);
  }
  return line;
}

// For each line, the index of the line it is nested under (the nearest earlier line with fewer columns).
std::vector<std::optional<size_t>> parents(const std::vector<OutlineLine>& lines) {
  std::vector<std::optional<size_t>> result(lines.size());
  std::vector<size_t> stack;
  for (size_t i = 0; i < lines.size(); ++i) {
    while (!stack.empty() && lines[stack.back()].columns >= lines[i].columns) stack.pop_back();
    if (!stack.empty()) result[i] = stack.back();
    stack.push_back(i);
  }
  return result;
}

void append_frame(const FrameTree& tree, size_t base_columns, int base_level, bool parent_in_view,
                  Outline& out) {
  const FrameOutline& frame = tree.outline;
  std::map<size_t, std::vector<const ChildFrame*>> children_at;  // iframe line -> frames under it
  for (const ChildFrame& child : tree.children) {
    const auto iframe = std::find_if(frame.iframes.begin(), frame.iframes.end(),
                                     [&](const FrameIframe& f) { return f.index == child.iframe_index; });
    if (iframe == frame.iframes.end()) {
      out.notes.push_back("a frame (" + child.tree.outline.url +
                          ") is not shown: its iframe is not in the outline");
      continue;
    }
    children_at[iframe->line].push_back(&child);
  }
  std::vector<bool> is_ref(frame.lines.size(), false);
  for (const FrameRef& ref : frame.refs) is_ref[ref.line] = true;
  out.ref_count += frame.refs.size();
  if (frame.truncated) {
    out.notes.push_back(
        (base_columns == 0 ? std::string("the page walk ") : "the walk of frame " + frame.url + " ") +
        frame.truncated_reason + "; browser_find_text searches the whole page");
  }

  std::vector<size_t> stack;  // columns of the open ancestors in this frame
  for (size_t i = 0; i < frame.lines.size(); ++i) {
    OutlineLine line = split_line(frame.lines[i]);
    while (!stack.empty() && stack.back() >= line.columns) stack.pop_back();
    line.level = base_level + static_cast<int>(stack.size());
    stack.push_back(line.columns);
    line.columns += base_columns;
    line.in_view = parent_in_view && frame.in_view[i];
    line.is_ref = is_ref[i];
    const size_t columns = line.columns;
    const int level = line.level;
    const bool in_view = line.in_view;
    out.lines.push_back(std::move(line));
    if (const auto it = children_at.find(i); it != children_at.end()) {
      for (const ChildFrame* child : it->second)
        append_frame(child->tree, columns + 1, level + 1, in_view, out);
    }
  }
}

bool contains_folded(std::string_view haystack, std::string_view needle) {
  const auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                              [&](char a, char b) { return fold(a) == fold(b); });
  return it != haystack.end();
}

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string OutlineLine::indent() const {
  if (!list_item) return std::string(columns, ' ');
  return std::string(columns >= 2 ? columns - 2 : 0, ' ') + "- ";
}

std::string thousands(size_t value) {
  std::string digits = std::to_string(value);
  for (size_t at = digits.size(); at > 3; at -= 3) digits.insert(at - 3, ",");
  return digits;
}

Result<FrameOutline> parse_frame_outline(const json& result) {
  if (!result.is_object()) return malformed("not an object");
  FrameOutline frame;
  frame.url = string_field(result, "url");
  frame.title = string_field(result, "title");

  const auto lines = result.find("lines");
  if (lines == result.end() || !lines->is_array()) return malformed("no lines");
  if (lines->size() > kMaxOutlineLines) return malformed(thousands(lines->size()) + " lines");
  frame.lines.reserve(lines->size());
  for (const json& line : *lines) {
    if (!line.is_string()) return malformed("a line is not a string");
    frame.lines.push_back(line.get<std::string>());
  }

  const std::string in_view = string_field(result, "inView");
  if (in_view.size() != frame.lines.size()) return malformed("inView does not have one flag per line");
  frame.in_view.reserve(in_view.size());
  for (const char flag : in_view) {
    if (flag != '0' && flag != '1') return malformed("inView holds something else than 0 and 1");
    frame.in_view.push_back(flag == '1');
  }

  const auto line_index = [&](const json& item) -> std::optional<size_t> {
    const auto line = integer_field(item, "line");
    if (!line || *line < 0 || static_cast<size_t>(*line) >= frame.lines.size()) return std::nullopt;
    return static_cast<size_t>(*line);
  };

  const auto refs = result.find("refs");
  if (refs == result.end() || !refs->is_array()) return malformed("no refs");
  for (const json& item : *refs) {
    if (!item.is_object()) return malformed("a ref is not an object");
    FrameRef ref;
    const auto index = integer_field(item, "index");
    const auto line = line_index(item);
    const auto role = item.find("role");
    const auto name = item.find("name");
    if (!index || *index <= 0 || !line || role == item.end() || !role->is_string() || name == item.end() ||
        !name->is_string()) {
      return malformed("a ref lacks index, line, role or name");
    }
    ref.index = *index;
    ref.line = *line;
    ref.role = role->get<std::string>();
    ref.name = name->get<std::string>();
    if (const auto rect = item.find("rect"); rect != item.end()) {
      if (!rect->is_array() || rect->size() != 4)
        return malformed("a ref's rect is not [x, y, width, height]");
      for (size_t k = 0; k < 4; ++k) {
        const auto value = integer((*rect)[k]);
        if (!value) return malformed("a ref's rect holds a non-number");
        ref.rect[k] = *value;
      }
    }
    const auto in_viewport = item.find("inViewport");
    ref.in_viewport = in_viewport != item.end() && in_viewport->is_boolean() && in_viewport->get<bool>();
    frame.refs.push_back(std::move(ref));
  }

  if (const auto iframes = result.find("iframes"); iframes != result.end()) {
    if (!iframes->is_array()) return malformed("iframes is not an array");
    for (const json& item : *iframes) {
      const auto index = item.is_object() ? integer_field(item, "index") : std::nullopt;
      const auto line = item.is_object() ? line_index(item) : std::nullopt;
      if (!index || *index <= 0 || !line) return malformed("an iframe lacks index or line");
      frame.iframes.push_back({*index, *line});
    }
  }

  if (const auto truncated = result.find("truncated"); truncated != result.end() && truncated->is_boolean()) {
    frame.truncated = truncated->get<bool>();
  }
  frame.truncated_reason = string_field(result, "truncatedReason");
  if (frame.truncated && frame.truncated_reason.empty()) frame.truncated_reason = "stopped early";
  if (const auto next = integer_field(result, "nextIndex")) {
    if (*next < 1) return malformed("nextIndex below 1");
    frame.next_index = *next;
  }
  if (const auto stats = result.find("stats"); stats != result.end() && stats->is_object()) {
    frame.elements = integer_field(*stats, "elements").value_or(0);
    frame.elapsed_ms = integer_field(*stats, "ms").value_or(0);
  }
  return frame;
}

Outline merge_frames(const FrameTree& tree) {
  Outline out;
  append_frame(tree, 0, 0, true, out);
  return out;
}

Result<void> issue_refs(RefTable& table, const FrameOutline& outline, const RefKey& base) {
  for (const FrameRef& ref : outline.refs) {
    RefKey key = base;
    key.js_index = ref.index;
    auto issued = table.issue(std::move(key), ref.role, ref.name);
    if (!issued) return fail(std::move(issued).error());
  }
  return {};
}

Result<Outline> scope_outline(const Outline& outline, const OutlineScope& scope) {
  Outline out;
  out.notes = outline.notes;
  std::vector<OutlineLine> lines;
  if (scope.ref) {
    const std::string& ref = *scope.ref;
    const auto root = std::find_if(outline.lines.begin(), outline.lines.end(), [&](const OutlineLine& line) {
      return line.is_ref && line.text.starts_with(ref) &&
             (line.text.size() == ref.size() || line.text[ref.size()] == ' ');
    });
    if (root == outline.lines.end()) {
      return fail(
          codes::kBrowserUnknownRef,
          "Ref " + ref +
              " is not in this tab's snapshot. Take a new snapshot (browser_snapshot) and use its refs.");
    }
    const size_t base_columns = root->columns;
    const int base_level = root->level;
    for (auto it = root; it != outline.lines.end() && (it == root || it->columns > base_columns); ++it) {
      OutlineLine line = *it;
      line.columns -= base_columns;
      line.level -= base_level;
      if (it == root) line.list_item = false;
      lines.push_back(std::move(line));
    }
  } else {
    lines = outline.lines;
  }
  if (scope.depth) {
    std::erase_if(lines, [&](const OutlineLine& line) { return line.level > *scope.depth; });
  }
  if (scope.find && !scope.find->empty()) {
    const auto parent = parents(lines);
    std::vector<bool> keep(lines.size(), false);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!contains_folded(lines[i].text, *scope.find)) continue;
      for (std::optional<size_t> at = i; at && !keep[*at]; at = parent[*at]) keep[*at] = true;
    }
    std::vector<OutlineLine> found;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (keep[i]) found.push_back(std::move(lines[i]));
    }
    lines = std::move(found);
  }
  for (const OutlineLine& line : lines) out.ref_count += line.is_ref ? 1 : 0;
  out.lines = std::move(lines);
  return out;
}

RenderedSnapshot render_outline(const Outline& outline, const RenderOptions& options) {
  // Room kept for the header and the notices: the header's title and URL are capped below.
  constexpr size_t kTitleCap = 80;
  constexpr size_t kUrlCap = 200;
  constexpr size_t kReserve = kTitleCap + kUrlCap + 320;
  const size_t budget = options.max_chars > kReserve ? options.max_chars - kReserve : 0;

  const std::vector<OutlineLine>& lines = outline.lines;
  const auto parent = parents(lines);
  std::vector<bool> selected(lines.size(), false);
  size_t used = 0;
  // Selects line i and its unselected ancestors if they fit; false when they do not.
  const auto select = [&](size_t i) {
    size_t cost = 0;
    std::vector<size_t> chain;
    for (std::optional<size_t> at = i; at && !selected[*at]; at = parent[*at]) {
      chain.push_back(*at);
      cost += lines[*at].columns + lines[*at].text.size() + 1;
    }
    if (used + cost > budget) return false;
    used += cost;
    for (const size_t at : chain) selected[at] = true;
    return true;
  };
  bool full = true;
  if (options.viewport_first) {
    for (size_t i = 0; i < lines.size() && full; ++i) {
      if (lines[i].in_view && !selected[i]) full = select(i);
    }
  }
  for (size_t i = 0; i < lines.size() && full; ++i) {
    if (!selected[i]) full = select(i);
  }

  RenderedSnapshot rendered;
  rendered.total_refs = outline.ref_count;
  std::optional<size_t> first_in_view;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].in_view && !first_in_view) first_in_view = i;
  }
  size_t omitted_above = 0;
  size_t omitted_below = 0;
  std::string body;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (selected[i]) {
      body += lines[i].indent();
      body += lines[i].text;
      body += '\n';
      rendered.shown_refs += lines[i].is_ref ? 1 : 0;
      continue;
    }
    ++rendered.omitted_lines;
    if (!lines[i].is_ref) continue;
    if (first_in_view && i < *first_in_view) {
      ++omitted_above;
    } else {
      ++omitted_below;
    }
  }

  const auto capped = [](const std::string& text, size_t cap) {
    return text.size() > cap ? text.substr(0, utf8_prefix_length(text, cap)) + "…" : text;
  };
  const std::string title = capped(options.title, kTitleCap);
  const std::string url = capped(options.url, kUrlCap);
  rendered.text = "page " + quote(title) + " " + url + " · tab " + std::to_string(options.tab_id) + " · " +
                  (options.viewport_first ? "viewport" : "full") + " (" + thousands(rendered.shown_refs) +
                  " of " + thousands(rendered.total_refs) + " refs)\n" + body;
  const size_t omitted_refs = omitted_above + omitted_below;
  if (omitted_refs > 0) {
    std::string where;
    if (omitted_above == 0) {
      where = first_in_view ? " below the viewport" : "";
    } else if (omitted_below == 0) {
      where = " above the viewport";
    } else {
      where =
          " (" + thousands(omitted_above) + " above the viewport, " + thousands(omitted_below) + " below)";
    }
    rendered.text += "… " + thousands(omitted_refs) + " more ref" + (omitted_refs == 1 ? "" : "s") + where +
                     ": scroll, browser_snapshot{mode:\"full\"}, browser_snapshot{ref:…} for a part, or "
                     "browser_find_text\n";
  } else if (rendered.omitted_lines > 0) {
    rendered.text += "… " + thousands(rendered.omitted_lines) + " more lines of text: browser_read_text\n";
  }
  for (const std::string& note : outline.notes) rendered.text += "Note: " + note + "\n";
  return rendered;
}

namespace {

void append_boxes(const FrameTree& tree, int64_t dx, int64_t dy, std::vector<RefBox>& out) {
  const FrameOutline& frame = tree.outline;
  for (const FrameRef& ref : frame.refs) {
    out.push_back({tree.ref_prefix + std::to_string(ref.index), ref.rect[0] + dx, ref.rect[1] + dy,
                   ref.rect[2], ref.rect[3]});
  }
  for (const ChildFrame& child : tree.children) {
    const auto owner = std::find_if(frame.refs.begin(), frame.refs.end(),
                                    [&](const FrameRef& ref) { return ref.index == child.iframe_index; });
    if (owner == frame.refs.end()) continue;
    const std::array<int64_t, 2> origin =
        child.content_origin.value_or(std::array{owner->rect[0], owner->rect[1]});
    append_boxes(child.tree, dx + origin[0], dy + origin[1], out);
  }
}

}  // namespace

std::vector<RefBox> ref_boxes(const FrameTree& tree) {
  std::vector<RefBox> boxes;
  append_boxes(tree, 0, 0, boxes);
  return boxes;
}

std::string outline_text(const Outline& outline, size_t max_bytes) {
  std::string text;
  for (const OutlineLine& line : outline.lines) {
    const std::string indent = line.indent();
    if (text.size() + indent.size() + line.text.size() + 1 + 4 > max_bytes) {
      text += "…\n";
      break;
    }
    text += indent;
    text += line.text;
    text += '\n';
  }
  return text;
}

std::string diff_outlines(const std::vector<std::string>& before, const std::vector<std::string>& after,
                          size_t max_lines) {
  size_t prefix = 0;
  while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < before.size() - prefix && suffix < after.size() - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  const size_t n = before.size() - prefix - suffix;
  const size_t m = after.size() - prefix - suffix;
  std::vector<std::string> changes;
  // An LCS table when the changed middle is small; beyond that, lines are matched as a multiset (moves are
  // not shown, every removal and addition is).
  constexpr size_t kMaxCells = 4'000'000;
  if (n > 0 && m > 0 && (n + 1) * (m + 1) <= kMaxCells) {
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    const auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        at(i, j) = before[prefix + i] == after[prefix + j] ? at(i + 1, j + 1) + 1
                                                           : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    size_t i = 0;
    size_t j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && before[prefix + i] == after[prefix + j]) {
        ++i;
        ++j;
      } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
        changes.push_back("- " + before[prefix + i++]);  // removals before additions, as diff(1) prints them
      } else {
        changes.push_back("+ " + after[prefix + j++]);
      }
    }
  } else {
    std::map<std::string_view, int64_t> balance;
    for (size_t i = 0; i < n; ++i) ++balance[before[prefix + i]];
    for (size_t j = 0; j < m; ++j) --balance[after[prefix + j]];
    std::map<std::string_view, int64_t> removed = balance;
    for (size_t i = 0; i < n; ++i) {
      int64_t& left = removed[before[prefix + i]];
      if (left > 0) {
        --left;
        changes.push_back("- " + before[prefix + i]);
      }
    }
    for (size_t j = 0; j < m; ++j) {
      int64_t& left = balance[after[prefix + j]];
      if (left < 0) {
        ++left;
        changes.push_back("+ " + after[prefix + j]);
      }
    }
  }
  std::string text;
  const size_t shown = std::min(changes.size(), max_lines);
  for (size_t k = 0; k < shown; ++k) text += changes[k] + "\n";
  if (changes.size() > shown) text += "… " + thousands(changes.size() - shown) + " more changes\n";
  return text;
}

}  // namespace keel::browser
