// engine/model_step.h — one model request of a turn streamed into an outcome (spec §1, §2).
//
// prepare_request() builds the session context (compacting the history first when the request would not
// fit the model's window); stream_reply() streams it (item.start, item.delta) and returns the reply, made
// storable. When the turn ends instead (interrupted, the provider failed, the reply is malformed or too
// large, the context cannot be made to fit) they end it through TurnEnding and return nothing. On the
// turn's strand only; coroutines take their parameters by value.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <optional>
#include <string>

#include "engine/model_stream.h"
#include "engine/response_assembler.h"
#include "engine/turn.h"
#include "engine/turn_ending.h"
#include "engine/turn_journal.h"

namespace keel {

class ModelStep {
 public:
  // All three must outlive this (they belong to one TurnRunner).
  ModelStep(Turn& turn, TurnJournal& journal, TurnEnding& ending)
      : turn_(turn), journal_(journal), ending_(ending) {}

  // The request of the next step. Nothing when the turn ended.
  boost::asio::awaitable<std::optional<ProviderRequest>> prepare_request();
  // The model's reply to `request`, streamed as the item `assistant_id`. Nothing when the turn ended.
  boost::asio::awaitable<std::optional<AssembledResponse>> stream_reply(ProviderRequest request,
                                                                        std::string assistant_id);

 private:
  Result<ProviderRequest> build_request();
  // A request of this turn streamed on its strand, cancelled by its interrupt: the reply and the
  // compaction summary differ only in what they collect and whether events wait for a batch.
  ModelStream model_stream(ProviderRequest request, std::function<Result<void>(const ProviderEvent&)> collect,
                           std::function<void(bool input_queued)> before_wait = nullptr) const;
  // Spec §1, the context window (engine/context_window.h): summarizes the oldest messages and commits a
  // compaction node the next request starts from. False when the turn ended instead (failed: no room could
  // be made or the summary failed; interrupted).
  boost::asio::awaitable<bool> compact(int64_t tokens_before);

  Turn& turn_;
  TurnJournal& journal_;
  TurnEnding& ending_;
};

}  // namespace keel
