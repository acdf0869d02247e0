// examples/embed/main.cc — the smallest program that embeds keel: an engine on a SQLite store, with a
// model written here (a provider that always answers the same sentence), runs one turn and prints what
// came back. docs/embedding.md walks through it.
//
//   keel_embed_example <store.db>
#include <keel/clock.h>
#include <keel/engine.h>
#include <keel/gatekeeper.h>
#include <keel/ids.h>
#include <keel/sqlite_store.h>
#include <keel/tool_registry.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

// A model that answers every request with one sentence. A Provider reports on its own thread, after
// stream() returned (keel/provider.h).
class OneSentenceModel final : public keel::Provider {
 public:
  ~OneSentenceModel() override {
    for (std::thread& reply : replies_) reply.join();
  }
  std::string name() const override { return "one-sentence"; }
  void stream(keel::ProviderRequest, keel::CancellationToken,
              std::shared_ptr<keel::ProviderSink> sink) override {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.emplace_back([sink] {
      sink->on_event(keel::provider_event::TextDelta{"Hello from an embedded keel."});
      sink->on_event(keel::provider_event::Usage{keel::TokenUsage{.input_tokens = 12, .output_tokens = 6}});
      sink->on_event(keel::provider_event::Finish{keel::StopReason::kEnd, "stop"});
      sink->on_done({});
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> replies_;
};

// Keeps the engine's events and lets the program wait for one.
class Events {
 public:
  void add(const keel::AgentEvent& event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(event);
    }
    cv_.notify_all();
  }
  // The first event `match` accepts; waits for it (at most a minute: a hang guard).
  std::optional<keel::AgentEvent> wait_for(const std::function<bool(const keel::AgentEvent&)>& match) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<keel::AgentEvent> found;
    cv_.wait_for(lock, std::chrono::minutes(1), [&] {
      for (const keel::AgentEvent& event : events_) {
        if (match(event)) {
          found = event;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<keel::AgentEvent> all() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<keel::AgentEvent> events_;
};

// Submits an op and waits for its answer (command.ack or command.rejected, docs/protocol.md).
std::optional<keel::AgentEvent> request(keel::EngineCore& engine, Events& events, std::string method,
                                        nlohmann::json params, std::string submission_id) {
  engine.submit(keel::Op{std::move(method), "embed-example", submission_id, std::move(params)});
  return events.wait_for([&](const keel::AgentEvent& event) {
    return (event.type == "command.ack" || event.type == "command.rejected") &&
           event.payload.value("submissionId", "") == submission_id;
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <store.db>\n", argv[0]);
    return 2;
  }
  keel::SystemClock clock;
  keel::UuidV7Source ids(clock);
  auto store = keel::open_sqlite_store({.path = argv[1]});
  if (!store) {
    std::fprintf(stderr, "cannot open the store: %s\n", store.error().to_string().c_str());
    return 1;
  }
  keel::ToolRegistry tools;  // no tools: the model only talks
  keel::AllowAllGatekeeper gatekeeper;
  OneSentenceModel model;

  keel::EngineDeps deps;
  deps.store = store->get();
  deps.provider = &model;
  deps.tools = &tools;
  deps.gatekeeper = &gatekeeper;
  deps.clock = &clock;
  deps.ids = &ids;
  keel::EngineOptions options;
  options.model.model = "one-sentence";

  Events events;
  int status = 1;
  {
    keel::EngineCore engine(deps, options);
    auto subscription = engine.subscribe([&](const keel::AgentEvent& event) { events.add(event); });

    auto created = request(engine, events, "thread.create", {{"title", "embedded"}}, "create-1");
    if (!created || created->type != "command.ack") {
      std::fprintf(stderr, "thread.create failed: %s\n",
                   created ? created->payload.dump().c_str() : "no answer");
      return 1;
    }
    const std::string thread_id = created->payload["result"].value("threadId", "");
    auto submitted = request(engine, events, "turn.submit",
                             {{"threadId", thread_id}, {"input", "Say hello."}}, "submit-1");
    if (!submitted || submitted->type != "command.ack") {
      std::fprintf(stderr, "turn.submit failed: %s\n",
                   submitted ? submitted->payload.dump().c_str() : "no answer");
      return 1;
    }
    auto complete = events.wait_for([&](const keel::AgentEvent& event) {
      return event.type == "turn.complete" && event.thread_id == thread_id;
    });
    if (!complete) {
      std::fprintf(stderr, "the turn did not complete\n");
      return 1;
    }
    std::string reply;
    for (const keel::AgentEvent& event : events.all()) {
      if (event.type == "item.delta" && event.thread_id == thread_id)
        reply += event.payload.value("text", "");
    }
    std::printf("assistant: %s\n", reply.c_str());
    std::printf("turn.complete: %s\n", complete->payload.value("stopReason", "").c_str());
    status = complete->payload.value("stopReason", "") == "end" ? 0 : 1;
  }  // the engine stops before the store and the model it uses
  return status;
}
