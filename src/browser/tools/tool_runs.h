// browser/tools/tool_runs.h — the op of each browser_* tool (what runs on the browser's thread). Specs,
// levels and targets are in register.cc; what each op guarantees is in docs/browser.md, "Tools".
// Every op: parameters by value (coroutines), validated params (the engine checked them against the
// tool's schema), runtime thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "browser/browser_runtime.h"
#include "keel/tool.h"

namespace keel::browser::runs {

// observe_tools.cc (L0)
boost::asio::awaitable<Result<ToolResult>> snapshot(std::shared_ptr<BrowserThread> thread,
                                                    nlohmann::json params, ToolTarget decided,
                                                    CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> find_text(std::shared_ptr<BrowserThread> thread,
                                                     nlohmann::json params, ToolTarget decided,
                                                     CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> read_text(std::shared_ptr<BrowserThread> thread,
                                                     nlohmann::json params, ToolTarget decided,
                                                     CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> list_tabs(std::shared_ptr<BrowserThread> thread,
                                                     nlohmann::json params, ToolTarget decided,
                                                     CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> console(std::shared_ptr<BrowserThread> thread,
                                                   nlohmann::json params, ToolTarget decided,
                                                   CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> network(std::shared_ptr<BrowserThread> thread,
                                                   nlohmann::json params, ToolTarget decided,
                                                   CancellationToken cancel);
// navigation_tools.cc (L1)
boost::asio::awaitable<Result<ToolResult>> navigate(std::shared_ptr<BrowserThread> thread,
                                                    nlohmann::json params, ToolTarget decided,
                                                    CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> back(std::shared_ptr<BrowserThread> thread, nlohmann::json params,
                                                ToolTarget decided, CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> forward(std::shared_ptr<BrowserThread> thread,
                                                   nlohmann::json params, ToolTarget decided,
                                                   CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> reload(std::shared_ptr<BrowserThread> thread,
                                                  nlohmann::json params, ToolTarget decided,
                                                  CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> wait_for(std::shared_ptr<BrowserThread> thread,
                                                    nlohmann::json params, ToolTarget decided,
                                                    CancellationToken cancel);
// dom_tools.cc (L1)
boost::asio::awaitable<Result<ToolResult>> click(std::shared_ptr<BrowserThread> thread, nlohmann::json params,
                                                 ToolTarget decided, CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> type(std::shared_ptr<BrowserThread> thread, nlohmann::json params,
                                                ToolTarget decided, CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> fill_form(std::shared_ptr<BrowserThread> thread,
                                                     nlohmann::json params, ToolTarget decided,
                                                     CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> select_option(std::shared_ptr<BrowserThread> thread,
                                                         nlohmann::json params, ToolTarget decided,
                                                         CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> set_checked(std::shared_ptr<BrowserThread> thread,
                                                       nlohmann::json params, ToolTarget decided,
                                                       CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> hover(std::shared_ptr<BrowserThread> thread, nlohmann::json params,
                                                 ToolTarget decided, CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> scroll(std::shared_ptr<BrowserThread> thread,
                                                  nlohmann::json params, ToolTarget decided,
                                                  CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> press_key(std::shared_ptr<BrowserThread> thread,
                                                     nlohmann::json params, ToolTarget decided,
                                                     CancellationToken cancel);
// tab_tools.cc (L1)
boost::asio::awaitable<Result<ToolResult>> new_tab(std::shared_ptr<BrowserThread> thread,
                                                   nlohmann::json params, ToolTarget decided,
                                                   CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> switch_tab(std::shared_ptr<BrowserThread> thread,
                                                      nlohmann::json params, ToolTarget decided,
                                                      CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> close_tab(std::shared_ptr<BrowserThread> thread,
                                                     nlohmann::json params, ToolTarget decided,
                                                     CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> handle_dialog(std::shared_ptr<BrowserThread> thread,
                                                         nlohmann::json params, ToolTarget decided,
                                                         CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> upload_file(std::shared_ptr<BrowserThread> thread,
                                                       nlohmann::json params, ToolTarget decided,
                                                       CancellationToken cancel);

// pixel_tools.cc (L2)
boost::asio::awaitable<Result<ToolResult>> screenshot(std::shared_ptr<BrowserThread> thread,
                                                      nlohmann::json params, ToolTarget decided,
                                                      CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> mouse(std::shared_ptr<BrowserThread> thread, nlohmann::json params,
                                                 ToolTarget decided, CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> keyboard(std::shared_ptr<BrowserThread> thread,
                                                    nlohmann::json params, ToolTarget decided,
                                                    CancellationToken cancel);
boost::asio::awaitable<Result<ToolResult>> drag(std::shared_ptr<BrowserThread> thread, nlohmann::json params,
                                                ToolTarget decided, CancellationToken cancel);

}  // namespace keel::browser::runs
