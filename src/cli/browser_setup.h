// cli/browser_setup.h — the browser runtime a keel command runs with, from the [browser] configuration.
//
// browser_runtime_options() is the one mapping from config::BrowserConfig to browser::RuntimeOptions (every
// command that offers the browser tools uses it: run, chat, serve, mcp-server, demo). Pure.
// With `attach` set the runtime attaches to that running browser (RuntimeOptions::attach) and launches none.
#pragma once

#include <filesystem>
#include <memory>

#include "browser/browser_runtime.h"
#include "config/config.h"
#include "keel/error.h"

namespace keel::cli {

Result<browser::RuntimeOptions> browser_runtime_options(const config::BrowserConfig& config,
                                                        const std::filesystem::path& data_dir);

}  // namespace keel::cli
