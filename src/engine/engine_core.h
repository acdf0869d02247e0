// engine/engine_core.h — the engine is public now (keel/engine.h); this path stays for the engine's own
// files, with what it used to bring along.
#pragma once

#include "engine/context_window.h"
#include "keel/engine.h"
#include "providers/model_capabilities.h"
