#include "engine/tool_output.h"

#include <string>

#include "store/node_body.h"
#include "util/utf8.h"

namespace keel {

BoundedToolOutput bound_tool_output(ToolResult result, size_t max_chars) {
  size_t total = 0;
  for (const ContentBlock& block : result.content) {
    if (block.kind == ContentBlock::Kind::kText) total += block.text.size();
  }
  BoundedToolOutput out;
  if (total <= max_chars) {
    out.content = std::move(result.content);
    out.details = std::move(result.details);
    return out;
  }
  nlohmann::json full = content_to_json(result.content);
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
                " of " + std::to_string(total) +
                " characters. The full output was kept for the user; ask the tool for a narrower range "
                "if you need the rest.]";
  out.content.push_back(std::move(notice));
  out.details = {
      {"truncated", true}, {"fullContent", std::move(full)}, {"toolDetails", std::move(result.details)}};
  out.truncated = true;
  return out;
}

}  // namespace keel
