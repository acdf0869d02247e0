// keel's browser layer in-process, over a real headless Chromium launched by keel's own code
// (BrowserProcess + CdpClient + BrowserConnection) and the test pages (tests/e2e/browser/pages) served by
// model_server/static_site. Each benchmark starts its own browser (1-2 s, outside the measured time); when
// Chromium cannot start it reports the reason with SkipWithError. Times are manual (steady clock around the
// measured steps, on the browser's own thread), in milliseconds; counters p50_ms/p95_ms over the iterations.
//
// BM_Snapshot5000/cold|warm: big5000.html (1,000 list items of a link, a button, a text box and a text run)
//   through the snapshot pipeline: __keel.snapshot in keel's world of the main frame (call_script) →
//   parse_frame_outline → merge_frames → refs issued in a RefTable → render_outline (default bounds).
//   cold: a fresh document each iteration (its first layout is in the time); warm: the same document again.
//   Counters: bytes_default (the bounded text the model gets by default), bytes_full (mode "full", nothing
//   cut), refs and elements (visited by the walk) of the last iteration, script_p50_ms (the page script's
//   call alone), truncated_walks (iterations whose walk hit its 2 s budget: on a loaded machine a cold walk
//   can, and then shows fewer refs). The page has one frame, so one call_script.
// BM_ClickRoundTrip: rerender.html's "Pick Apple" button, a page that settles at once, at the CDP level:
//   __keel.observeStart → __keel.click{index} (user gesture) → __keel.barrier → __keel.observeTake. The
//   click must succeed and the take must report the text it changed, else the benchmark fails.
// BM_Screenshot/small|big5000: Page.captureScreenshot{format: png} of the 1280x800 viewport. Counter
//   png_bytes.
// bench/browser/compare.mjs measures the same through MCP, side by side with Playwright MCP
// (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench_support.h"
#include "browser/browser_connection.h"
#include "browser/browser_errors.h"
#include "browser/browser_process.h"
#include "browser/call_script.h"
#include "browser/cdp/cdp_client.h"
#include "browser/ref_table.h"
#include "browser/snapshot.h"
#include "model_server/static_site.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr std::chrono::seconds kStepTimeout{30};
constexpr std::chrono::seconds kFirstReplyTimeout{20};
constexpr size_t kStderrTail = 2000;

double ms_since(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

// A Chromium, its connection and the test site, all driven from one io thread (like the browser test
// suites' TestBrowser, which needs GoogleTest; this one does not).
class BenchBrowser {
 public:
  BenchBrowser() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~BenchBrowser() {
    (void)run(stop(this));  // always true: it only sequences the teardown on the io thread
    work_.reset();
    io_.stop();
    thread_.join();
  }
  BenchBrowser(const BenchBrowser&) = delete;
  BenchBrowser& operator=(const BenchBrowser&) = delete;

  // Starts the site and the browser and connects to it; the error says why not.
  Result<void> start() {
    model_server::StaticSiteOptions site_options;
    site_options.root = KEEL_BROWSER_PAGES;
    auto site = model_server::StaticSite::start(site_options);
    if (!site) return fail(site.error());
    site_ = std::move(*site);
    return run(launch(this));
  }

  template <typename T>
  T run(asio::awaitable<T> work) {
    std::future<T> done = asio::co_spawn(io_, std::move(work), asio::use_future);
    return done.get();
  }

  std::string url(const std::string& page) const { return site_->origin(0) + "/" + page; }
  const std::shared_ptr<BrowserConnection>& connection() const { return connection_; }

 private:
  static asio::awaitable<Result<void>> launch(BenchBrowser* self) {
    LaunchSpec spec;
    if (const char* executable = std::getenv("KEEL_CHROMIUM"); executable != nullptr && *executable != '\0') {
      spec.executable = executable;
    }
    auto process = BrowserProcess::launch(self->io_.get_executor(), std::move(spec));
    if (!process) co_return fail(process.error());
    self->process_ = std::move(*process);
    self->client_ = CdpClient::create(self->io_.get_executor(), self->process_->take_transport());
    self->client_->start();
    CallOptions options;
    options.timeout = kFirstReplyTimeout;
    json no_params = json::object();
    Result<json> version =
        co_await self->client_->call("Browser.getVersion", std::move(no_params), "", std::move(options));
    if (!version) {
      co_return fail(version.error().with_context(
          "Chromium did not answer (stderr: " + self->process_->stderr_tail(kStderrTail) + ")"));
    }
    ConnectionOptions connection_options;
    Result<std::shared_ptr<BrowserConnection>> connection =
        co_await BrowserConnection::start(self->client_, connection_options);
    if (!connection) co_return fail(connection.error());
    self->connection_ = std::move(*connection);
    co_return Result<void>{};
  }

  static asio::awaitable<bool> stop(BenchBrowser* self) {
    self->connection_.reset();
    if (self->client_) self->client_->close(Error(codes::kBrowserDisconnected, "the benchmark ended"));
    self->client_.reset();
    self->process_.reset();  // kills the group if it still runs, reaps it, removes its profile
    co_return true;
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::unique_ptr<model_server::StaticSite> site_;
  std::unique_ptr<BrowserProcess> process_;
  std::shared_ptr<CdpClient> client_;
  std::shared_ptr<BrowserConnection> connection_;
};

// Starts a browser for one benchmark, or reports why it cannot (the benchmark then does not run).
std::unique_ptr<BenchBrowser> start_or_skip(benchmark::State& state) {
  auto browser = std::make_unique<BenchBrowser>();
  Result<void> started = browser->start();
  if (!started) {
    const std::string why = "Chromium cannot start: " + started.error().to_string();
    state.SkipWithError(why.c_str());
    return nullptr;
  }
  return browser;
}

asio::awaitable<Result<int64_t>> open_tab(std::shared_ptr<BrowserConnection> connection) {
  co_return co_await connection->create_tab(kStepTimeout);
}

asio::awaitable<Result<void>> navigate(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                       std::string url) {
  CancellationToken never_cancelled;
  co_return co_await connection->navigate(tab, std::move(url), kStepTimeout, never_cancelled);
}

asio::awaitable<Result<json>> script(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                     std::string frame_id, std::string fn, json args, bool user_gesture) {
  ScriptOptions options;
  options.timeout = kStepTimeout;
  options.user_gesture = user_gesture;
  co_return co_await call_script(std::move(connection), tab, std::move(frame_id), std::move(fn),
                                 std::move(args), std::move(options));
}

struct SnapshotFigures {
  double ms = 0;
  double script_ms = 0;  // the __keel.snapshot call alone
  size_t bytes_default = 0;
  size_t bytes_full = 0;
  size_t refs = 0;
  int64_t elements = 0;
  bool truncated = false;  // the page walk stopped early (its node or time budget)
  std::vector<FrameRef> frame_refs;
};

// The snapshot pipeline on the tab's main frame; `ms` covers the script call to the rendered default text.
asio::awaitable<Result<SnapshotFigures>> snapshot(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                                  std::shared_ptr<RefTable> refs) {
  const TabState* state = connection->tab(tab);
  if (state == nullptr || state->main_frame() == nullptr)
    co_return fail(codes::kInternal, "the tab has no frame");
  const FrameState frame = *state->main_frame();
  const std::string target_id = state->target_id;
  const auto started = SteadyClock::now();
  const int64_t ordinal = refs->frame_ordinal(tab, frame.frame_id, true);
  json args = {{"nextIndex", refs->next_index(ordinal)}};
  Result<json> result = co_await script(connection, tab, frame.frame_id, "snapshot", std::move(args), false);
  if (!result) co_return fail(result.error());
  const double script_ms = ms_since(started);
  Result<FrameOutline> outline = parse_frame_outline(*result);
  if (!outline) co_return fail(outline.error());
  FrameTree tree;
  tree.outline = std::move(*outline);
  const Outline merged = merge_frames(tree);
  refs->begin_snapshot();
  RefKey base;
  base.tab_id = tab;
  base.target_id = target_id;
  base.session_id = frame.session_id;
  base.frame_id = frame.frame_id;
  base.loader_id = frame.loader_id;
  base.frame_ordinal = ordinal;
  base.world_generation = frame.world_generation;
  Result<void> issued = issue_refs(*refs, tree.outline, base);
  if (!issued) co_return fail(issued.error());
  RenderOptions render;
  render.title = tree.outline.title;
  render.url = tree.outline.url;
  render.tab_id = tab;
  const RenderedSnapshot bounded = render_outline(merged, render);
  SnapshotFigures figures;
  figures.ms = ms_since(started);
  figures.script_ms = script_ms;
  render.viewport_first = false;
  render.max_chars = std::numeric_limits<size_t>::max();
  figures.bytes_default = bounded.text.size();
  figures.bytes_full = render_outline(merged, render).text.size();
  figures.refs = merged.ref_count;
  figures.elements = tree.outline.elements;
  figures.truncated = tree.outline.truncated;
  figures.frame_refs = tree.outline.refs;
  co_return figures;
}

void report_times(benchmark::State& state, const std::vector<double>& times) {
  state.counters["p50_ms"] = bench::percentile(times, 0.50);
  state.counters["p95_ms"] = bench::percentile(times, 0.95);
}

void BM_Snapshot5000(benchmark::State& state, bool cold) {
  std::unique_ptr<BenchBrowser> browser = start_or_skip(state);
  if (!browser) return;
  const std::shared_ptr<BrowserConnection>& connection = browser->connection();
  Result<int64_t> tab = browser->run(open_tab(connection));
  Result<void> loaded = tab ? browser->run(navigate(connection, *tab, browser->url("big5000.html")))
                            : Result<void>(fail(tab.error()));
  if (!loaded) {
    state.SkipWithError(loaded.error().to_string().c_str());
    return;
  }
  // Cold: each iteration is a first visit with a fresh RefTable (a new thread), so refs start at e1 as on the
  // first snapshot of a page; one table across navigations would number them on (e3001, e6001, …).
  auto refs = std::make_shared<RefTable>();
  if (!cold) {
    Result<SnapshotFigures> first =
        browser->run(snapshot(connection, *tab, refs));  // the page's first layout
    if (!first) {
      state.SkipWithError(first.error().to_string().c_str());
      return;
    }
  }
  std::vector<double> times;
  std::vector<double> script_times;
  int truncated = 0;
  SnapshotFigures last;
  for (auto _ : state) {
    if (cold && !times.empty()) {
      Result<void> again = browser->run(navigate(connection, *tab, browser->url("big5000.html")));
      if (!again) {
        state.SkipWithError(again.error().to_string().c_str());
        break;
      }
      refs = std::make_shared<RefTable>();
    }
    Result<SnapshotFigures> figures = browser->run(snapshot(connection, *tab, refs));
    if (!figures) {
      state.SkipWithError(figures.error().to_string().c_str());
      break;
    }
    state.SetIterationTime(figures->ms / 1000);
    times.push_back(figures->ms);
    script_times.push_back(figures->script_ms);
    if (figures->truncated) ++truncated;
    last = std::move(*figures);
  }
  report_times(state, times);
  state.counters["script_p50_ms"] = bench::percentile(script_times, 0.50);
  state.counters["bytes_default"] = static_cast<double>(last.bytes_default);
  state.counters["bytes_full"] = static_cast<double>(last.bytes_full);
  state.counters["refs"] = static_cast<double>(last.refs);
  state.counters["elements"] = static_cast<double>(last.elements);
  state.counters["truncated_walks"] = truncated;
}
BENCHMARK_CAPTURE(BM_Snapshot5000, cold, true)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Snapshot5000, warm, false)
    ->Iterations(10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

struct ClickFigures {
  double ms = 0;
  int64_t changes = 0;  // text, state and structure changes the take reported
};

// One click round trip on element `index` of the tab's main frame.
asio::awaitable<Result<ClickFigures>> click(std::shared_ptr<BrowserConnection> connection, int64_t tab,
                                            std::string frame_id, int64_t index) {
  const auto started = SteadyClock::now();
  json start_args = json::object();
  Result<json> observing =
      co_await script(connection, tab, frame_id, "observeStart", std::move(start_args), false);
  if (!observing) co_return fail(observing.error());
  json target = {{"index", index}};
  Result<json> clicked = co_await script(connection, tab, frame_id, "click", std::move(target), true);
  if (!clicked) co_return fail(clicked.error());
  if (!clicked->value("ok", false)) co_return fail(codes::kInternal, "the click failed: " + clicked->dump());
  json barrier_args = json::object();
  Result<json> settled =
      co_await script(connection, tab, frame_id, "barrier", std::move(barrier_args), false);
  if (!settled) co_return fail(settled.error());
  json take_args = json::object();
  Result<json> taken = co_await script(connection, tab, frame_id, "observeTake", std::move(take_args), false);
  if (!taken) co_return fail(taken.error());
  ClickFigures figures;
  figures.ms = ms_since(started);
  figures.changes = taken->value("textChanges", int64_t{0}) + taken->value("stateChanges", int64_t{0}) +
                    taken->value("removed", int64_t{0});
  co_return figures;
}

void BM_ClickRoundTrip(benchmark::State& state) {
  std::unique_ptr<BenchBrowser> browser = start_or_skip(state);
  if (!browser) return;
  const std::shared_ptr<BrowserConnection>& connection = browser->connection();
  Result<int64_t> tab = browser->run(open_tab(connection));
  Result<void> loaded = tab ? browser->run(navigate(connection, *tab, browser->url("rerender.html")))
                            : Result<void>(fail(tab.error()));
  if (!loaded) {
    state.SkipWithError(loaded.error().to_string().c_str());
    return;
  }
  Result<SnapshotFigures> figures = browser->run(snapshot(connection, *tab, std::make_shared<RefTable>()));
  if (!figures) {
    state.SkipWithError(figures.error().to_string().c_str());
    return;
  }
  int64_t index = 0;
  for (const FrameRef& ref : figures->frame_refs) {
    if (ref.role == "button" && ref.name == "Pick Apple") index = ref.index;
  }
  if (index == 0) {
    state.SkipWithError("rerender.html's snapshot has no button \"Pick Apple\"");
    return;
  }
  const std::string frame_id = connection->tab(*tab)->main_frame()->frame_id;
  std::vector<double> times;
  for (auto _ : state) {
    Result<ClickFigures> clicked = browser->run(click(connection, *tab, frame_id, index));
    if (!clicked) {
      state.SkipWithError(clicked.error().to_string().c_str());
      break;
    }
    if (clicked->changes == 0) {
      state.SkipWithError("the click round trip reported no change on the page");
      break;
    }
    state.SetIterationTime(clicked->ms / 1000);
    times.push_back(clicked->ms);
  }
  report_times(state, times);
}
BENCHMARK(BM_ClickRoundTrip)->Iterations(20)->UseManualTime()->Unit(benchmark::kMillisecond);

struct ShotFigures {
  double ms = 0;
  size_t png_bytes = 0;
};

asio::awaitable<Result<ShotFigures>> screenshot(std::shared_ptr<BrowserConnection> connection, int64_t tab) {
  const TabState* state = connection->tab(tab);
  if (state == nullptr) co_return fail(codes::kInternal, "no such tab");
  const std::string session = state->session_id;
  const auto started = SteadyClock::now();
  json params = {{"format", "png"}};
  CallOptions options;
  options.timeout = kStepTimeout;
  Result<json> shot =
      co_await connection->call("Page.captureScreenshot", std::move(params), session, std::move(options));
  if (!shot) co_return fail(shot.error());
  ShotFigures figures;
  figures.ms = ms_since(started);
  const std::string data = shot->value("data", "");
  figures.png_bytes = data.size() / 4 * 3;  // base64, padding aside
  co_return figures;
}

void BM_Screenshot(benchmark::State& state, const char* page) {
  std::unique_ptr<BenchBrowser> browser = start_or_skip(state);
  if (!browser) return;
  const std::shared_ptr<BrowserConnection>& connection = browser->connection();
  Result<int64_t> tab = browser->run(open_tab(connection));
  Result<void> loaded =
      tab ? browser->run(navigate(connection, *tab, browser->url(page))) : Result<void>(fail(tab.error()));
  Result<ShotFigures> warm = loaded ? browser->run(screenshot(connection, *tab))  // the first paint
                                    : Result<ShotFigures>(fail(loaded.error()));
  if (!warm) {
    state.SkipWithError(warm.error().to_string().c_str());
    return;
  }
  std::vector<double> times;
  size_t png_bytes = 0;
  for (auto _ : state) {
    Result<ShotFigures> shot = browser->run(screenshot(connection, *tab));
    if (!shot) {
      state.SkipWithError(shot.error().to_string().c_str());
      break;
    }
    state.SetIterationTime(shot->ms / 1000);
    times.push_back(shot->ms);
    png_bytes = shot->png_bytes;
  }
  report_times(state, times);
  state.counters["png_bytes"] = static_cast<double>(png_bytes);
}
BENCHMARK_CAPTURE(BM_Screenshot, small, "rerender.html")
    ->Iterations(10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Screenshot, big5000, "big5000.html")
    ->Iterations(10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace keel::browser

BENCHMARK_MAIN();
