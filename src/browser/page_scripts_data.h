// browser/page_scripts_data.h — what the build generates from src/browser/scripts/ (cmake/KeelEmbed.cmake):
// the declarations the generated page_scripts_data.cc defines. Only page_scripts.cc reads them; everything
// else goes through browser/page_scripts.h.
#pragma once

#include <span>
#include <string_view>

#include "browser/page_scripts.h"

namespace keel::browser::scripts {

using EmbeddedFile = PageScriptFile;  // the name cmake/KeelEmbed.cmake's generated code uses

extern const std::string_view kBundle;              // bundle.head + the files of bundle.order + bundle.tail
extern const std::span<const EmbeddedFile> kFiles;  // in bundle.order's order

}  // namespace keel::browser::scripts
