#include "engine/model_step.h"

#include <algorithm>

#include "engine/context_window.h"
#include "engine/engine_errors.h"
#include "engine/model_stream.h"
#include "engine/tool_output.h"
#include "store/data_envelope.h"
#include "store/node_body.h"
#include "util/canonical_json.h"
#include "util/utf8.h"

namespace keel {

namespace asio = boost::asio;

namespace {

size_t reply_bytes(const AssembledResponse& response) {
  size_t bytes = 0;
  for (const ContentBlock& block : response.content) bytes += block.text.size() + block.data_base64.size();
  return bytes;
}

// Makes a reply storable (issue 14): text that is not valid UTF-8 gets U+FFFD, provider extras lose what
// canonical JSON cannot encode. A reply larger than kMaxReplyBytes is refused: the result is the body to keep
// for the record (its beginning, marked), nullopt when the reply may be written as it is.
std::optional<AssistantMessageBody> bound_reply(AssembledResponse& response) {
  for (ContentBlock& block : response.content) {
    block.text = utf8_sanitized(std::move(block.text));
    if (!block.provider_data.is_null()) block.provider_data = storable_json(std::move(block.provider_data));
  }
  response.provider_stop_reason = utf8_sanitized(std::move(response.provider_stop_reason));
  if (reply_bytes(response) <= kMaxReplyBytes) return std::nullopt;
  AssistantMessageBody kept{
      .content = {}, .stop_reason = AssistantStopReason::kError, .provider_stop_reason = "reply_too_large"};
  size_t budget = kKeptPrefixBytes;
  for (const ContentBlock& block : response.content) {
    if (block.kind != ContentBlock::Kind::kText || budget == 0) continue;
    ContentBlock part;
    part.text = block.text.substr(0, utf8_prefix_length(block.text, budget));
    budget -= part.text.size();
    kept.content.push_back(std::move(part));
  }
  ContentBlock marker;
  marker.text = "\n[keel: the reply was too large to keep; only its beginning is shown]";
  kept.content.push_back(std::move(marker));
  return kept;
}

}  // namespace

ModelStream ModelStep::model_stream(ProviderRequest request,
                                    std::function<Result<void>(const ProviderEvent&)> collect,
                                    std::function<void(bool input_queued)> before_wait) const {
  return ModelStream{.provider = turn_.provider,
                     .request = std::move(request),
                     .strand = turn_.actor->strand,
                     .io_lifetime = turn_.engine.io_lifetime(),
                     .cancel = turn_.cancel,
                     .collect = std::move(collect),
                     .before_wait = std::move(before_wait)};
}

Result<ProviderRequest> ModelStep::build_request() {
  const ModelSettings& model = turn_.model;
  ProviderRequest request;
  if (turn_.context_current) {
    request.messages = turn_.actor->context().messages();
  } else {
    auto tx = KEEL_TRY(turn_.engine.store().begin(TxMode::kRead));
    ThreadRecord thread = KEEL_TRY(turn_.engine.threads().get(*tx, turn_.thread_id()));
    if (thread.leaf_node_id)
      request.messages = KEEL_TRY(turn_.actor->context().build(*tx, *thread.leaf_node_id));
    KEEL_TRY(tx->commit());
    turn_.context_current = thread.leaf_node_id.has_value();
  }
  if (!model.vision && turn_.actor->context().image_blocks() > 0) {
    return fail(codes::kImageUnsupported,
                "the conversation holds an image but the model '" + model.model + "' does not accept images");
  }
  request.model = model.model;
  // A fixed suffix explaining the data envelopes, in every request of a run that binds tools (the way
  // untrusted content enters; the set is fixed for the run, so the prompt's cached prefix stays stable even
  // when the failure breaker turns tools off). Without tools the prompt is the configured one.
  request.system_prompt = model.system_prompt;
  if (turn_.tools != nullptr && !turn_.tools->tools().empty()) {
    if (!request.system_prompt.empty()) request.system_prompt += "\n\n";
    request.system_prompt += kEnvelopeExplanation;
  }
  request.max_output_tokens = model.max_output_tokens;
  request.parameters = model.parameters;
  if (!turn_.tools_off) {
    for (const auto& [name, tool] : turn_.tools->tools())
      request.tools.push_back(tool.descriptor->provider_tool());
  }
  return request;
}

asio::awaitable<std::optional<ProviderRequest>> ModelStep::prepare_request() {
  auto request = build_request();
  if (!request) {
    co_await ending_.end_turn(Ending::failed(request.error()));
    co_return std::nullopt;
  }
  const CompactionSettings& compaction = turn_.engine.options().compaction;
  const int64_t window = turn_.model.context_window_tokens;
  const int64_t reserved = turn_.model.max_output_tokens.value_or(0);
  if (!needs_compaction(*request, reserved, window, compaction.threshold)) co_return std::move(*request);
  const int64_t before = estimate_request_tokens(*request);
  if (!compaction.enabled) {
    co_await ending_.end_turn(Ending::failed(Error(
        codes::kContextWindowExceeded, "the next request (about " + std::to_string(before) + " tokens and " +
                                           std::to_string(reserved) + " for the reply) would not fit the " +
                                           std::to_string(window) + "-token window of '" + turn_.model.model +
                                           "', and compaction is off")));
    co_return std::nullopt;
  }
  const bool compacted = co_await compact(before);
  if (!compacted) co_return std::nullopt;
  request = build_request();
  if (!request) {
    co_await ending_.end_turn(Ending::failed(request.error()));
    co_return std::nullopt;
  }
  // The window itself, not the threshold: a compacted request that fits is sent.
  if (needs_compaction(*request, reserved, window, 1.0)) {
    co_await ending_.end_turn(Ending::failed(
        Error(codes::kContextWindowExceeded, "even compacted, the next request (about " +
                                                 std::to_string(estimate_request_tokens(*request)) +
                                                 " tokens) would not fit the " + std::to_string(window) +
                                                 "-token window of '" + turn_.model.model + "'")));
    co_return std::nullopt;
  }
  co_return std::move(*request);
}

asio::awaitable<std::optional<AssembledResponse>> ModelStep::stream_reply(ProviderRequest request,
                                                                          std::string assistant_id) {
  turn_.publish(events::reply_started(assistant_id, turn_.run.turn_id));
  auto assembler = std::make_shared<ResponseAssembler>();
  turn_.engine.crash_point("model.request.before");
  Turn* turn = &turn_;  // the runner owns it and outlives the stream
  ModelStream stream = model_stream(
      std::move(request),
      [turn, assembler, assistant_id](const ProviderEvent& event) -> Result<void> {
        KEEL_TRY(assembler->add(event));
        if (auto* text = std::get_if<provider_event::TextDelta>(&event)) {
          turn->publish(events::text_delta(assistant_id, text->text));
        } else if (auto* reasoning = std::get_if<provider_event::ReasoningDelta>(&event)) {
          turn->publish(events::reasoning_delta(assistant_id, reasoning->text));
        }
        return {};
      },
      [turn](bool input_queued) { turn->flush_before_waiting(input_queued); });
  // A named argument: g++ 12 destroys a braced temporary passed to a coroutine twice.
  StreamOutcome streamed = co_await stream_model(std::move(stream));
  if (streamed.interrupted) {
    co_await ending_.end_turn(Ending::interrupted(assembler->partial_text()));
    co_return std::nullopt;
  }
  if (streamed.error) {
    const Error failed = *streamed.error;
    if (failed.code() == codes::kCancelled && turn_.cancel.is_cancelled()) {
      co_await ending_.end_turn(Ending::interrupted(assembler->partial_text()));
      co_return std::nullopt;
    }
    Error error = failed.code().starts_with("provider.") || failed.code() == codes::kCancelled
                      ? failed
                      : Error(codes::kProviderFailed, failed.to_string(), failed.retryable());
    co_await ending_.end_turn(Ending::failed(std::move(error)));
    co_return std::nullopt;
  }
  auto response = assembler->finish();
  if (!response) {
    // Fail closed: keep what the model said for the record, run no tool.
    AssistantMessageBody body{
        .content = {}, .stop_reason = AssistantStopReason::kError, .provider_stop_reason = "protocol_error"};
    ContentBlock said;
    said.text = utf8_sanitized(assembler->partial_text());
    said.text.resize(utf8_prefix_length(said.text, kMaxReplyBytes));
    if (!said.text.empty()) body.content.push_back(std::move(said));
    std::optional<NewNode> node;
    if (auto encoded = encode_assistant_message(body)) {
      (*encoded)["protocolError"] = response.error().message();
      node = make_node(assistant_id, turn_.thread_id(), turn_.run.id, NodeKind::kAssistantMessage,
                       std::move(*encoded));
    }
    co_await ending_.end_turn(Ending::failed(response.error(), std::move(node)));
    co_return std::nullopt;
  }
  if (std::optional<AssistantMessageBody> refused = bound_reply(*response)) {
    // Fail closed, as for a protocol error: the reply's beginning stays for the record, no call runs.
    const size_t bytes = reply_bytes(*response);
    std::optional<NewNode> node;
    if (auto encoded = encode_assistant_message(*refused)) {
      node = make_node(assistant_id, turn_.thread_id(), turn_.run.id, NodeKind::kAssistantMessage,
                       std::move(*encoded));
    }
    co_await ending_.end_turn(Ending::failed(
        Error(codes::kProviderReplyTooLarge, "the model's reply takes " + std::to_string(bytes) +
                                                 " bytes, more than the " + std::to_string(kMaxReplyBytes) +
                                                 " keel keeps of one reply"),
        std::move(node)));
    co_return std::nullopt;
  }
  co_return std::move(*response);
}

asio::awaitable<bool> ModelStep::compact(int64_t tokens_before) {
  const CompactionSettings& settings = turn_.engine.options().compaction;
  const int64_t window = turn_.model.context_window_tokens;
  const std::span<const Message> messages = turn_.actor->context().messages();
  const auto tail_budget = static_cast<int64_t>(settings.tail_fraction * static_cast<double>(window));
  const std::optional<size_t> kept_from = choose_kept_tail(messages, tail_budget);
  if (!kept_from) {
    co_await ending_.end_turn(Ending::failed(
        Error(codes::kContextWindowExceeded,
              "the next request (about " + std::to_string(tokens_before) + " tokens) would not fit the " +
                  std::to_string(window) + "-token window of '" + turn_.model.model +
                  "', and its most recent message alone is too large to compact around")));
    co_return false;
  }
  // Copied before the model is asked: nothing here may point into the context across the wait.
  CompactionBody body;
  body.replaced_to_node_id = messages[*kept_from - 1].source_node_id;
  body.tail.assign(messages.begin() + static_cast<std::ptrdiff_t>(*kept_from), messages.end());
  if (!body.tail.empty()) body.kept_from_node_id = body.tail.front().source_node_id;
  body.tokens_before = tokens_before;
  const auto transcript_bytes = static_cast<size_t>(
      std::max<int64_t>(4'096, (window - settings.summary_max_tokens) * 3 * 7 / 10));  // ~70% of the rest
  std::vector<Message> transcript;
  ProviderRequest request = summary_request(messages.first(*kept_from), turn_.model.model,
                                            settings.summary_max_tokens, transcript_bytes, transcript);
  auto summary = std::make_shared<std::string>();
  ModelStream stream =
      model_stream(std::move(request), [summary](const ProviderEvent& event) -> Result<void> {
        if (auto* text = std::get_if<provider_event::TextDelta>(&event)) *summary += text->text;
        return {};
      });
  // A named argument: g++ 12 destroys a braced temporary passed to a coroutine twice.
  StreamOutcome streamed = co_await stream_model(std::move(stream));
  if (streamed.interrupted) {
    co_await ending_.end_turn(Ending::interrupted());
    co_return false;
  }
  std::optional<Error> failure = streamed.error;
  if (!failure && summary->find_first_not_of(" \t\r\n") == std::string::npos) {
    failure = Error(codes::kProviderProtocol, "the model returned an empty summary");
  }
  if (failure) {
    co_await ending_.end_turn(
        Ending::failed(Error(codes::kContextCompactionFailed,
                             "the history had to be compacted to fit the context window, "
                             "and its summary failed: " +
                                 failure->to_string())));
    co_return false;
  }
  body.summary = std::move(*summary);
  body.tokens_after =
      kTokensPerMessage + static_cast<int64_t>(body.summary.size() / 4) + estimate_tokens(body.tail);
  Result<Events> written = journal_.append_compaction(body);
  co_return turn_.publish_committed(std::move(written));
}

}  // namespace keel
