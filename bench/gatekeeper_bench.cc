// gatekeeper_bench — the cost of one PolicyGatekeeper::check() with 1,000 site rules: 900 spread over 300
// origins (3 each), 80 over 20 MCP servers, 20 local. check() runs on a thread's actor before every tool
// call, so it must stay cheap however many rules other sites have: rules are indexed by scope.
//
// Cases: a write on an origin with rules (allowed by one of them); a write on an origin without rules (the
// mode asks); an MCP and a local call; and the same origin hit with a host-permission list of 100 patterns
// (50 exact origins, 40 subdomain patterns, 10 *:// patterns), matched by its last pattern (the list is
// walked in order) or by none (refused). Every check parses the target origin, as the engine hands it over
// as text.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "policy/policy_gatekeeper.h"
#include "testing/manual_clock.h"
#include "testing/sequential_ids.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;

constexpr int kOrigins = 300;
constexpr int kMcpServers = 20;
constexpr int kLocalRules = 20;
constexpr int kHostPatterns = 100;

std::string site(int i) { return "https://site" + std::to_string(i) + ".example"; }

struct Fixture {
  testing::TempDir dir;
  testing::ManualClock clock;
  testing::SequentialIdSource ids{"rule"};
  std::unique_ptr<Store> store;
  std::unique_ptr<PolicyGatekeeper> gate;
  json arguments = json::object();
  int rules = 0;
};

Result<void> change(Fixture& f, std::string_view method, const json& params) {
  auto tx = KEEL_TRY(f.store->begin(TxMode::kWrite));
  const json written = KEEL_TRY(f.gate->write_change(*tx, method, params));
  KEEL_TRY(tx->commit());
  f.gate->install(written);
  return {};
}

// 1,000 rules; with `host_patterns`, a host-permission list whose last pattern is site(150)'s origin.
Result<std::unique_ptr<Fixture>> make_fixture(bool host_patterns) {
  auto f = std::make_unique<Fixture>();
  f->store = KEEL_TRY(open_sqlite_store({.path = f->dir.file("bench.db"), .synchronous = Synchronous::kOff}));
  f->gate = KEEL_TRY(PolicyGatekeeper::open(*f->store, f->clock, f->ids, PolicyMode::kAskWrites));
  const auto add = [&](const std::string& scope, const char* tool, json effects, const char* decision) {
    ++f->rules;
    return change(*f, "policy.addRule",
                  {{"scope", scope}, {"tool", tool}, {"effects", effects}, {"decision", decision}});
  };
  for (int i = 0; i < kOrigins; ++i) {
    KEEL_TRY(add(site(i), "browser_type", nullptr, "ask"));
    KEEL_TRY(add(site(i), "browser_upload", "write", "deny"));
    KEEL_TRY(add(site(i), "browser_click", "write", "allow"));
  }
  for (int i = 0; i < kMcpServers; ++i) {
    const std::string server = "mcp:server" + std::to_string(i);
    KEEL_TRY(add(server, "fs_read", "read", "deny"));
    KEEL_TRY(add(server, "fs_delete", "write", "ask"));
    KEEL_TRY(add(server, "fs_move", "write", "deny"));
    KEEL_TRY(add(server, "fs_write", "write", "allow"));
  }
  for (int i = 0; i < kLocalRules; ++i) {
    KEEL_TRY(add("local:", ("tool_" + std::to_string(i)).c_str(), "write",
                 i == kLocalRules - 1 ? "allow" : "ask"));
  }
  if (host_patterns) {
    json patterns = json::array();
    for (int i = 0; i < 50; ++i) patterns.push_back("https://other" + std::to_string(i) + ".example");
    for (int i = 0; i < 40; ++i) patterns.push_back("https://*.domain" + std::to_string(i) + ".example");
    for (int i = 0; i < 9; ++i) patterns.push_back("*://host" + std::to_string(i) + ".example");
    patterns.push_back(site(150));
    KEEL_TRY(change(*f, "policy.setHostPermissions", {{"patterns", patterns}}));
  }
  return f;
}

void run_checks(benchmark::State& state, bool host_patterns, const ToolDescriptor& tool, ToolTarget target,
                GateVerdict::Kind expected) {
  auto fixture = make_fixture(host_patterns);
  if (!fixture) {
    state.SkipWithError(fixture.error().to_string().c_str());
    return;
  }
  Fixture& f = **fixture;
  const GateRequest request{"thread-1", "call-1", &tool, &f.arguments, std::move(target)};
  if (f.gate->check(request).kind != expected) {
    state.SkipWithError(("unexpected verdict: " + f.gate->check(request).reason).c_str());
    return;
  }
  for (auto _ : state) {
    GateVerdict verdict = f.gate->check(request);
    benchmark::DoNotOptimize(verdict);
  }
  state.counters["rules"] = f.rules;
  state.SetItemsProcessed(state.iterations());
}

ToolDescriptor tool(std::string name, ToolEffects effects, ToolLevel level = ToolLevel::kL1,
                    std::string server = "") {
  ToolDescriptor d;
  d.name = std::move(name);
  d.effects = effects;
  d.level = level;
  if (!server.empty()) d.binding = {ToolBinding::Kind::kMcp, std::move(server), "mcp --stdio", ""};
  return d;
}

void BM_CheckOriginWithRules(benchmark::State& state) {
  run_checks(state, false, tool("browser_click", ToolEffects::kWrite), {.origin = site(150) + "/form?id=7"},
             GateVerdict::Kind::kAllow);
}
BENCHMARK(BM_CheckOriginWithRules);

void BM_CheckOriginWithoutRules(benchmark::State& state) {
  run_checks(state, false, tool("browser_click", ToolEffects::kWrite), {.origin = "https://nobody.example/x"},
             GateVerdict::Kind::kAsk);
}
BENCHMARK(BM_CheckOriginWithoutRules);

void BM_CheckMcpServer(benchmark::State& state) {
  run_checks(state, false, tool("fs_write", ToolEffects::kWrite, ToolLevel::kMcp, "server7"), {},
             GateVerdict::Kind::kAllow);
}
BENCHMARK(BM_CheckMcpServer);

void BM_CheckLocal(benchmark::State& state) {
  run_checks(state, false, tool("tool_19", ToolEffects::kWrite, ToolLevel::kBuiltin), {.path = "notes.md"},
             GateVerdict::Kind::kAllow);
}
BENCHMARK(BM_CheckLocal);

void BM_CheckWith100HostPatternsLastMatches(benchmark::State& state) {
  run_checks(state, true, tool("browser_click", ToolEffects::kWrite), {.origin = site(150) + "/form?id=7"},
             GateVerdict::Kind::kAllow);
}
BENCHMARK(BM_CheckWith100HostPatternsLastMatches);

void BM_CheckWith100HostPatternsNoneMatches(benchmark::State& state) {
  run_checks(state, true, tool("browser_click", ToolEffects::kWrite), {.origin = site(151) + "/form?id=7"},
             GateVerdict::Kind::kDeny);
}
BENCHMARK(BM_CheckWith100HostPatternsNoneMatches);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
