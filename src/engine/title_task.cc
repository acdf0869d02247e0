// A thread's title from the task model (spec §2): best effort, on the thread's strand, after its first turn
// started; the fallback title written at admission stays when anything fails.
#include <boost/asio/co_spawn.hpp>

#include "engine/engine_impl.h"
#include "engine/model_stream.h"
#include "protocol/events.h"
#include "util/canonical_json.h"

namespace keel {

namespace asio = boost::asio;

namespace {

class TitleTask {
 public:
  TitleTask(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, std::string input)
      : engine_(engine), actor_(std::move(actor)), input_(std::move(input)) {}

  asio::awaitable<void> run() {
    ProviderRequest request;
    request.model = *engine_.options().task_model;
    request.system_prompt =
        "Write a title of at most 8 words for a conversation that starts with the user's message below. "
        "Reply with the title only, no quotes.";
    Message message;
    ContentBlock block;
    block.text = input_;
    message.content.push_back(std::move(block));
    std::vector<Message> messages{std::move(message)};
    request.messages = messages;
    request.max_output_tokens = 32;
    auto title = std::make_shared<std::string>();
    ModelStream stream{.provider = engine_.deps().task_provider,
                       .request = std::move(request),
                       .strand = actor_->strand,
                       .io_lifetime = engine_.io_lifetime(),
                       .cancel = engine_.shutdown_token(),
                       .collect = [title](const ProviderEvent& event) -> Result<void> {
                         if (auto* text = std::get_if<provider_event::TextDelta>(&event))
                           *title += text->text;
                         return {};
                       },
                       .before_wait = nullptr};
    // A named argument: g++ 12 destroys a braced temporary passed to a coroutine twice.
    StreamOutcome streamed = co_await stream_model(std::move(stream));
    if (streamed.interrupted || streamed.error) co_return;  // best effort: the fallback title stays
    const size_t start = title->find_first_not_of(" \t\r\n\"'");
    const size_t end = title->find_last_not_of(" \t\r\n\"'");
    if (start == std::string::npos) co_return;
    std::string text = title->substr(start, end - start + 1);
    if (text.size() > 120) text.resize(120);
    if (!canonical_json(nlohmann::json(text)) || text.find('\n') != std::string::npos)
      co_return;  // invalid UTF-8
    auto updated = engine_.write(
        [&](Transaction& tx) { return engine_.threads().set_title(tx, actor_->thread_id, text); });
    if (!updated) co_return;
    engine_.publish_event(actor_->thread_id, events::thread_titled(*updated));
  }

 private:
  EngineCore::Impl& engine_;
  std::shared_ptr<ThreadActor> actor_;
  std::string input_;
};

asio::awaitable<void> drive_title(std::shared_ptr<TitleTask> task) { co_await task->run(); }

}  // namespace

void spawn_title_task(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, std::string first_input) {
  auto task = std::make_shared<TitleTask>(engine, actor, std::move(first_input));
  asio::co_spawn(actor->strand, drive_title(task),
                 [&engine, task](std::exception_ptr) { engine.leave_running(); });
}

}  // namespace keel
