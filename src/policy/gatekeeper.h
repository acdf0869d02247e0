// policy/gatekeeper.h — moved to the public keel/gatekeeper.h; this path stays for code that includes it.
#pragma once

#include "keel/gatekeeper.h"
