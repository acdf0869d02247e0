// cli/demo.h — `keel demo`: the main job. Prints to `out`; returns the process exit code.
#pragma once

#include <ostream>
#include <string>

namespace keel::cli {

int run_store_demo(const std::string& db_path, bool keep_existing, std::ostream& out);

}  // namespace keel::cli
