#include "browser/page_scripts.h"

#include "browser/page_scripts_data.h"

namespace keel::browser {

std::string_view page_script_bundle() { return scripts::kBundle; }

std::span<const PageScriptFile> page_script_files() { return scripts::kFiles; }

}  // namespace keel::browser
