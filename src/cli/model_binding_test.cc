// bind_model: a configured model becomes an HttpProvider, engine settings and the transport a snapshot
// records (the credential's reference and shape, never the secret); the key is read per request, so a key
// rotated behind the same reference is used without rebinding.
#include "cli/model_binding.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "config/config_errors.h"
#include "keel/sqlite_store.h"
#include "model_server/model_server.h"
#include "providers/provider_errors.h"
#include "testing/temp_dir.h"
#include "util/thread_scheduler.h"

namespace keel::cli {
namespace {

using nlohmann::json;

class DoneSink final : public ProviderSink {
 public:
  void on_event(ProviderEvent event) override {
    if (auto* text = std::get_if<provider_event::TextDelta>(&event)) {
      std::lock_guard<std::mutex> guard(mu_);
      text_ += text->text;
    }
  }
  void on_done(Result<void> result) override {
    std::lock_guard<std::mutex> guard(mu_);
    result_ = std::move(result);
    cv_.notify_all();
  }
  Result<void> wait() {
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(30), [&] { return result_.has_value(); }));
    return result_.value_or(fail("test.hang", "no end"));
  }
  std::string text() {
    std::lock_guard<std::mutex> guard(mu_);
    return text_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;
  std::optional<Result<void>> result_;
};

class ModelBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = open_sqlite_store({.path = dir_.file("keel.db")});
    ASSERT_TRUE(opened) << opened.error().to_string();
    store_ = std::move(*opened);
    resolver_ = std::make_unique<config::CredentialResolver>(
        *store_, nullptr, [vars = vars_](std::string_view name) -> std::optional<std::string> {
          std::lock_guard<std::mutex> guard(vars->mu);
          auto it = vars->values.find(std::string(name));
          if (it == vars->values.end()) return std::nullopt;
          return it->second;
        });
    auto script = model_server::parse_script(
        {{"api_key", "sk-new-key"},
         {"responses", {{{"match", ""}, {"steps", {{{"type", "text"}, {"text", "hello"}}}}}}}});
    ASSERT_TRUE(script);
    model_server::ServerOptions options;
    options.script = std::move(*script);
    auto server = model_server::ModelServer::start(std::move(options));
    ASSERT_TRUE(server);
    server_ = std::move(*server);

    config::ProviderConfig provider;
    provider.kind = config::ProviderKind::kAnthropic;
    provider.base_url = server_->base_url();
    provider.credential = {config::CredentialRef::Source::kEnvironment, "TEST_ANTHROPIC_KEY"};
    provider.max_retries = 0;
    config_.providers["local"] = provider;
    config::ModelConfig model;
    model.provider = "local";
    model.model_id = "claude-test";
    model.capabilities.vision = true;
    model.capabilities.context_window_tokens = 200'000;
    model.capabilities.max_output_tokens = 8'000;
    model.price.input_per_million = 3;
    config_.models["claude"] = model;
    config_.default_model = "claude";
  }

  void set_key(std::string value) {
    std::lock_guard<std::mutex> guard(vars_->mu);
    vars_->values["TEST_ANTHROPIC_KEY"] = std::move(value);
  }

  Result<void> ask(Provider& provider, std::shared_ptr<DoneSink> sink) {
    std::vector<Message> messages(1);
    messages[0].content.push_back(ContentBlock{.text = "hi"});
    ProviderRequest request;
    request.model = "claude-test";
    request.messages = messages;
    provider.stream(std::move(request), CancellationToken(), sink);
    return sink->wait();
  }

  struct Vars {
    std::mutex mu;
    std::map<std::string, std::string> values;
  };
  std::shared_ptr<Vars> vars_ = std::make_shared<Vars>();
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<config::CredentialResolver> resolver_;
  std::unique_ptr<model_server::ModelServer> server_;
  config::Config config_;
  SystemClock clock_;
  ThreadScheduler scheduler_;
  providers::CurlHttpClient client_;
  ModelBindingDeps deps() { return {resolver_.get(), &client_, &scheduler_, &clock_}; }
};

TEST_F(ModelBindingTest, SettingsAndTransportComeFromTheConfigAndHoldNoSecret) {
  set_key("sk-new-key");
  auto binding = bind_model(config_, "", deps());
  ASSERT_TRUE(binding) << binding.error().to_string();
  EXPECT_EQ(binding->settings.model, "claude-test");
  EXPECT_EQ(binding->settings.context_window_tokens, 200'000);
  EXPECT_EQ(binding->settings.max_output_tokens, 8'000);
  EXPECT_TRUE(binding->settings.vision);
  EXPECT_EQ(binding->transport.kind, "anthropic");
  EXPECT_EQ(binding->transport.wire_format, "anthropic-messages");
  EXPECT_EQ(binding->transport.base_url, server_->base_url());
  EXPECT_EQ(binding->transport.credential_id, "env:TEST_ANTHROPIC_KEY");
  EXPECT_FALSE(binding->transport.credential_shape.empty());
  EXPECT_EQ(binding->transport.credential_shape.find("sk-new-key"), std::string::npos);
  EXPECT_EQ(binding->price.input_per_million, 3);
}

TEST_F(ModelBindingTest, AKeyRotatedBehindTheSameReferenceIsUsedByTheNextRequest) {
  set_key("sk-old-key");
  auto binding = bind_model(config_, "claude", deps());
  ASSERT_TRUE(binding) << binding.error().to_string();
  auto refused = ask(*binding->provider, std::make_shared<DoneSink>());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), codes::kProviderUnauthorized);
  EXPECT_EQ(refused.error().message().find("sk-old-key"), std::string::npos);
  set_key("sk-new-key");
  auto sink = std::make_shared<DoneSink>();
  ASSERT_TRUE(ask(*binding->provider, sink));
  EXPECT_EQ(sink->text(), "hello");
}

TEST_F(ModelBindingTest, AMissingModelOrKeyIsACodedErrorNamingTheReference) {
  auto missing = bind_model(config_, "gpt-9", deps());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), codes::kConfigMissingReference);
  EXPECT_NE(missing.error().message().find("gpt-9"), std::string::npos);
  auto binding = bind_model(config_, "claude", deps());
  ASSERT_TRUE(binding);
  auto no_key = ask(*binding->provider, std::make_shared<DoneSink>());
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().message().find("TEST_ANTHROPIC_KEY"), std::string::npos)
      << no_key.error().to_string();
  EXPECT_TRUE(server_->requests().empty());  // nothing was sent without a key
}

TEST_F(ModelBindingTest, EveryConfiguredModelIsBoundAndOneThatCannotBeIsLeftOut) {
  config::ModelConfig second = config_.models["claude"];
  second.model_id = "claude-second";
  second.capabilities.reasoning = true;
  config_.models["second"] = second;
  config::ModelConfig broken = second;
  broken.provider = "nowhere";
  config_.models["broken"] = broken;
  auto bound = bind_models(config_, "claude", deps());
  ASSERT_TRUE(bound) << bound.error().to_string();
  ASSERT_EQ(bound->skipped.size(), 1u);
  EXPECT_NE(bound->skipped[0].message().find("nowhere"), std::string::npos);
  const ModelCatalog catalog = catalog_of(*bound, "claude");
  ASSERT_EQ(catalog.models().size(), 2u);
  ASSERT_NE(catalog.default_model(), nullptr);
  EXPECT_EQ(catalog.default_model()->name, "claude");
  const CatalogModel* found = catalog.find("second");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->settings.model, "claude-second");
  EXPECT_EQ(found->provider_name, "local");
  EXPECT_TRUE(found->reasoning);
  EXPECT_NE(found->provider, catalog.default_model()->provider);
  EXPECT_EQ(catalog.find("broken"), nullptr);
  // Without its key a model is still bound: its requests fail, the others work.
  auto sink = std::make_shared<DoneSink>();
  EXPECT_FALSE(ask(*found->provider, sink));

  // The default model must bind.
  auto no_default = bind_models(config_, "broken", deps());
  ASSERT_FALSE(no_default);
  EXPECT_EQ(no_default.error().code(), codes::kConfigMissingReference);
}

}  // namespace
}  // namespace keel::cli
