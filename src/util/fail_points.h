// util/fail_points.h — moved to the public keel/fail_points.h; this path stays for code that includes it.
#pragma once

#include "keel/fail_points.h"
