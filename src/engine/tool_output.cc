#include "engine/tool_output.h"

#include <cmath>
#include <string>

#include "store/node_body.h"
#include "util/canonical_json.h"
#include "util/utf8.h"

namespace keel {

namespace {

nlohmann::json storable_at(nlohmann::json value, int depth) {
  using json = nlohmann::json;
  if (value.is_string()) return utf8_sanitized(value.get<std::string>());
  if (value.is_number_float()) return std::isfinite(value.get<double>()) ? value : json(nullptr);
  if (!value.is_structured()) return value;
  if (depth >= kMaxJsonDepth - 1) return "[keel: nested too deeply to keep]";
  if (value.is_array()) {
    for (json& item : value) item = storable_at(std::move(item), depth + 1);
    return value;
  }
  json out = json::object();
  for (auto& [key, item] : value.items()) out[utf8_sanitized(key)] = storable_at(std::move(item), depth + 1);
  return out;
}

size_t text_bytes(const std::vector<ContentBlock>& content) {
  size_t total = 0;
  for (const ContentBlock& block : content) total += block.text.size() + block.data_base64.size();
  return total;
}

// The encoded size of `value`, or a size over any limit when it cannot be encoded (it then gets dropped).
size_t encoded_size(const nlohmann::json& value) {
  auto encoded = canonical_json(value);
  return encoded ? encoded->size() : SIZE_MAX / 2;
}

}  // namespace

nlohmann::json storable_json(nlohmann::json value) { return storable_at(std::move(value), 0); }

BoundedToolOutput bound_tool_output(ToolResult result, size_t max_chars) {
  for (ContentBlock& block : result.content) {
    block.text = utf8_sanitized(std::move(block.text));
    block.media_type = utf8_sanitized(std::move(block.media_type));
    if (!block.provider_data.is_null()) block.provider_data = storable_json(std::move(block.provider_data));
  }
  result.details = storable_json(std::move(result.details));
  size_t total = 0;
  for (const ContentBlock& block : result.content) {
    if (block.kind == ContentBlock::Kind::kText) total += block.text.size();
  }
  BoundedToolOutput out;
  if (total <= max_chars) {
    out.content = std::move(result.content);
    out.details = std::move(result.details);
  } else {
    nlohmann::json full = content_to_json(result.content);
    const size_t full_bytes = encoded_size(full);
    const bool keep_full = full_bytes <= kMaxKeptFullOutputBytes;
    size_t budget = max_chars;
    for (ContentBlock& block : result.content) {
      if (block.kind != ContentBlock::Kind::kText) {
        out.content.push_back(std::move(block));
        continue;
      }
      if (budget == 0) continue;
      size_t keep = utf8_prefix_length(block.text, budget);
      block.text.resize(keep);
      budget -= keep;
      out.content.push_back(std::move(block));
    }
    ContentBlock notice;
    notice.text = "\n[keel: output truncated — showing the first " + std::to_string(max_chars - budget) +
                  " of " + std::to_string(total) + " characters. " +
                  (keep_full ? "The full output was kept for the user; ask"
                             : "The full output was too large to keep; ask") +
                  " the tool for a narrower range if you need the rest.]";
    out.content.push_back(std::move(notice));
    out.details = {{"truncated", true}, {"toolDetails", std::move(result.details)}};
    if (keep_full) {
      out.details["fullContent"] = std::move(full);
    } else {
      out.details["fullContentOmitted"] = {{"bytes", full_bytes}};
    }
    out.truncated = true;
  }
  // Content and details must fit one stored node: the details go first (they are for the UI), then images.
  if (text_bytes(out.content) + encoded_size(out.details) > kMaxStoredResultBytes && !out.details.is_null()) {
    out.details = {{"omitted", true},
                   {"bytes", encoded_size(out.details)},
                   {"reason", "the details were too large to store"}};
  }
  if (text_bytes(out.content) + encoded_size(out.details) > kMaxStoredResultBytes) {
    for (ContentBlock& block : out.content) {
      if (block.kind != ContentBlock::Kind::kImage) continue;
      const size_t bytes = block.data_base64.size();
      block = ContentBlock{};
      block.text = "[keel: an image of " + std::to_string(bytes) + " bytes (base64) was too large to store]";
    }
    out.truncated = true;
  }
  return out;
}

}  // namespace keel
