#include "browser/tab.h"

#include <vector>

namespace keel::browser {
namespace {

using nlohmann::json;

// A string field of an object, or "" when the object or the field is missing or not a string.
std::string text_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

int64_t integer_of(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return 0;
  return it->get<int64_t>();
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

}  // namespace

const FrameState* TabState::frame(const std::string& frame_id) const {
  auto it = frames.find(frame_id);
  return it == frames.end() ? nullptr : &it->second;
}

const FrameState* TabState::main_frame() const {
  // Chromium gives a page target's main frame the target's id.
  if (const FrameState* by_target = frame(target_id)) return by_target;
  for (const auto& [id, state] : frames) {
    if (state.parent_frame_id.empty() && state.session_id == session_id) return &state;
  }
  return nullptr;
}

bool TabState::apply(const CdpEvent& event) {
  const json& params = event.params;
  const std::string& session = event.session_id;
  if (event.method == "Page.frameAttached") {
    const std::string id = text_of(params, "frameId");
    if (id.empty() || frames.contains(id)) return false;
    FrameState state;
    state.frame_id = id;
    state.parent_frame_id = text_of(params, "parentFrameId");
    state.session_id = session;
    state.oopif = session != session_id;
    frames.emplace(id, std::move(state));
    return true;
  }
  if (event.method == "Page.frameNavigated") {
    const json& described = member(params, "frame");
    const std::string id = text_of(described, "id");
    if (id.empty()) return false;
    FrameState& state = frames[id];
    state.frame_id = id;
    const std::string parent = text_of(described, "parentId");
    if (!parent.empty()) state.parent_frame_id = parent;
    state.session_id = session;
    state.oopif = session != session_id;
    state.url = text_of(described, "url") + text_of(described, "urlFragment");
    state.origin = text_of(described, "securityOrigin");
    state.loader_id = text_of(described, "loaderId");
    return true;
  }
  if (event.method == "Page.navigatedWithinDocument") {
    auto it = frames.find(text_of(params, "frameId"));
    if (it == frames.end()) return false;
    it->second.url = text_of(params, "url");
    return true;
  }
  if (event.method == "Page.frameDetached") {
    const std::string id = text_of(params, "frameId");
    // "swap": the frame lives on in another process, and its own target's session describes it from now on.
    if (text_of(params, "reason") == "swap" || !frames.contains(id)) return false;
    std::vector<std::string> gone{id};
    for (size_t i = 0; i < gone.size(); ++i) {
      for (const auto& [child_id, child] : frames) {
        if (child.parent_frame_id == gone[i]) gone.push_back(child_id);
      }
    }
    for (const std::string& frame_id : gone) frames.erase(frame_id);
    return true;
  }
  if (event.method == "Runtime.executionContextCreated") {
    const json& context = member(params, "context");
    if (text_of(context, "name") != kWorldName) return false;
    const std::string id = text_of(member(context, "auxData"), "frameId");
    const int64_t context_id = integer_of(context, "id");
    if (id.empty() || context_id == 0) return false;
    FrameState& state = frames[id];
    state.frame_id = id;
    state.session_id = session;
    state.oopif = session != session_id;
    state.world_context_id = context_id;
    ++state.world_generation;
    return true;
  }
  if (event.method == "Runtime.executionContextDestroyed") {
    const int64_t context_id = integer_of(params, "executionContextId");
    bool changed = false;
    for (auto& [id, state] : frames) {
      if (state.session_id == session && state.world_context_id == context_id && context_id != 0) {
        state.world_context_id = 0;
        changed = true;
      }
    }
    return changed;
  }
  if (event.method == "Runtime.executionContextsCleared") {
    bool changed = false;
    for (auto& [id, state] : frames) {
      if (state.session_id == session && state.world_context_id != 0) {
        state.world_context_id = 0;
        changed = true;
      }
    }
    return changed;
  }
  return false;
}

bool TabState::seed_frames(const json& frame_tree, const std::string& session, bool oopif_root) {
  const json& described = member(frame_tree, "frame");
  const std::string id = text_of(described, "id");
  if (id.empty()) return false;
  FrameState& state = frames[id];
  state.frame_id = id;
  const std::string parent = text_of(described, "parentId");
  if (!parent.empty()) state.parent_frame_id = parent;
  state.session_id = session;
  state.oopif = oopif_root || session != session_id;
  // A navigation event that came first is newer than this answer.
  if (state.loader_id.empty()) {
    state.url = text_of(described, "url") + text_of(described, "urlFragment");
    state.origin = text_of(described, "securityOrigin");
    state.loader_id = text_of(described, "loaderId");
  }
  const json& children = member(frame_tree, "childFrames");
  if (children.is_array()) {
    for (const json& child : children) seed_frames(child, session, false);
  }
  return true;
}

void TabState::adopt_oopif(const std::string& frame_id, const std::string& session) {
  FrameState& state = frames[frame_id];
  state.frame_id = frame_id;
  state.session_id = session;
  state.oopif = true;
  state.world_context_id = 0;  // the world of the in-process document is gone with it
}

bool TabState::drop_session(const std::string& session) {
  return std::erase_if(frames, [&](const auto& entry) { return entry.second.session_id == session; }) > 0;
}

}  // namespace keel::browser
