#include "engine/turn_admission.h"

#include "engine/engine_errors.h"
#include "engine/run_environment.h"
#include "store/node_body.h"
#include "util/utf8.h"

namespace keel {

using nlohmann::json;

namespace {

// A turn's input: a string, an array of content blocks, or {content: [...]}.
Result<std::vector<ContentBlock>> parse_input(const json& input) {
  if (input.is_string()) {
    if (input.get_ref<const std::string&>().empty()) return fail(codes::kInputInvalid, "the input is empty");
    ContentBlock block;
    block.text = input.get<std::string>();
    return std::vector<ContentBlock>{std::move(block)};
  }
  const json* blocks = &input;
  if (input.is_object() && input.contains("content")) blocks = &input["content"];
  auto content = content_from_json(*blocks);
  if (!content)
    return fail(codes::kInputInvalid,
                "the input is not text or content blocks: " + content.error().message());
  if (content->empty()) return fail(codes::kInputInvalid, "the input is empty");
  return content;
}

std::string first_line(const std::vector<ContentBlock>& content) {
  for (const ContentBlock& block : content) {
    if (block.kind != ContentBlock::Kind::kText) continue;
    std::string line = block.text.substr(0, block.text.find('\n'));
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos) continue;
    line = line.substr(start);
    if (line.size() > 80) line = line.substr(0, utf8_prefix_length(line, 77)) + "...";
    return line;
  }
  return "New thread";
}

bool has_image(const std::vector<ContentBlock>& content) {
  for (const ContentBlock& block : content) {
    if (block.kind == ContentBlock::Kind::kImage) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<ContentBlock>> TurnAdmission::input(const json& input) const {
  auto content = KEEL_TRY(parse_input(input));
  if (!c_.models.any_vision() && has_image(content)) {
    const CatalogModel* model = c_.models.default_model();
    return fail(codes::kImageUnsupported,
                "the model '" + (model ? model->name : std::string()) + "' does not accept images");
  }
  return content;
}

Result<void> TurnAdmission::check_branch_point(Transaction& tx, const ThreadRecord& thread,
                                               const std::string& node_id) {
  KEEL_TRY(c_.threads.get_node(tx, node_id));  // node.not_found
  if (!KEEL_TRY(c_.threads.contains(tx, thread, node_id))) {
    return fail(codes::kNodeNotInThread, "node " + node_id + " is not in thread " + thread.id);
  }
  // Under a node inside a turn (a tool call without its result, a user message) the history would not be
  // one a model can continue: a turn starts where one ended, or at the end of a branch.
  if (KEEL_TRY(c_.threads.has_child_of_kind(tx, node_id, NodeKind::kTurnContext))) return {};
  if (KEEL_TRY(c_.threads.is_leaf(tx, thread, node_id))) return {};
  return fail(codes::kInvalidArgument,
              "node " + node_id +
                  " is inside a turn; 'parentNodeId' must be where a turn ended (a node an earlier turn "
                  "follows), a leaf of the thread, or \"\" for an empty history");
}

Result<AdmittedTurn> TurnAdmission::admit(Transaction& tx, const std::string& thread_id,
                                          const std::vector<ContentBlock>& content,
                                          std::optional<int64_t> budget,
                                          std::optional<std::string> branch_from) {
  AdmittedTurn a;
  ThreadRecord thread = KEEL_TRY(c_.threads.get_live(tx, thread_id));
  // A call whose outcome is unknown has no result yet: no turn may build on that history until the person
  // resolved it (run.resolveUncertain).
  if (auto latest = KEEL_TRY(c_.runs.latest_for_thread(tx, thread_id));
      latest && latest->state == RunState::kPausedUncertain) {
    return fail(codes::kRunUncertain, "run " + latest->id +
                                          " stopped in a write whose outcome is unknown; resolve it first "
                                          "(run.resolveUncertain: retry, mark_done or fail)");
  }
  if (branch_from && !branch_from->empty()) KEEL_TRY(check_branch_point(tx, thread, *branch_from));
  const CatalogModel* model = c_.models.resolve(thread.model);
  if (model == nullptr) {
    return fail(codes::kModelUnknown, "the thread's model '" + thread.model.value_or("") +
                                          "' is not configured; choose another one (thread.setModel)");
  }
  if (!model->settings.vision && has_image(content)) {
    return fail(codes::kImageUnsupported, "the model '" + model->name + "' does not accept images");
  }
  // A title a person gave at thread.create stays: no fallback title, no title task.
  a.first_turn = !thread.leaf_node_id.has_value() && !thread.title_given;
  a.first_line = first_line(content);
  RunRecord run;
  run.id = c_.ids.next_id();
  run.thread_id = thread_id;
  run.turn_id = c_.ids.next_id();
  run.turn_kind = TurnKind::kUser;
  run.state = RunState::kStreamingModel;
  run.budget_tokens = budget;
  run.usage = json::object();
  // The environment the run starts with, frozen with it (spec §5).
  EnvironmentSnapshotRecord environment =
      KEEL_TRY(capture_environment(c_.ids.next_id(), model->settings, model->transport,
                                   *tools_of_thread(c_.tools.snapshot(), thread.mcp_servers),
                                   EnvironmentLimits{}, model->name, c_.skills));
  run.snapshot_id = KEEL_TRY(c_.snapshots.put(tx, std::move(environment))).id;
  a.run = KEEL_TRY(c_.runs.create(tx, std::move(run)));
  NewNode turn_context;
  turn_context.id = c_.ids.next_id();
  turn_context.thread_id = thread_id;
  turn_context.kind = NodeKind::kTurnContext;
  turn_context.run_id = a.run.id;
  turn_context.body = {{"turnId", a.run.turn_id}, {"runId", a.run.id}, {"model", model->settings.model}};
  if (branch_from && branch_from->empty()) turn_context.at_root = true;
  if (branch_from && !branch_from->empty()) turn_context.parent_id = std::move(branch_from);
  KEEL_TRY(c_.threads.append(tx, std::move(turn_context)));
  NewNode user;
  user.id = c_.ids.next_id();
  user.thread_id = thread_id;
  user.kind = NodeKind::kUserMessage;
  user.run_id = a.run.id;
  user.body = KEEL_TRY(encode_user_message(UserMessageBody{.content = content}));
  a.user = KEEL_TRY(c_.threads.append(tx, std::move(user)));
  if (a.first_turn) a.titled = KEEL_TRY(c_.threads.set_title(tx, thread_id, a.first_line));
  return a;
}

}  // namespace keel
