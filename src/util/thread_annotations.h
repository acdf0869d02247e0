// util/thread_annotations.h — the short names keel's own sources use for the thread-safety annotations of
// keel/thread_annotations.h (GUARDED_BY for KEEL_GUARDED_BY, and so on), and its Mutex, MutexLock,
// SharedMutex, ReaderLock and WriterLock.
//
// The short names live here, not in the public header, so that an embedder's own GUARDED_BY cannot collide
// with them; public headers (include/keel/) use the KEEL_-prefixed spelling. See keel/thread_annotations.h
// for what the annotations mean and how to wait on a condition variable under them.
#pragma once

#include "keel/thread_annotations.h"

#define CAPABILITY(x) KEEL_CAPABILITY(x)
#define SCOPED_CAPABILITY KEEL_SCOPED_CAPABILITY
#define GUARDED_BY(x) KEEL_GUARDED_BY(x)
#define PT_GUARDED_BY(x) KEEL_PT_GUARDED_BY(x)
#define REQUIRES(...) KEEL_REQUIRES(__VA_ARGS__)
#define REQUIRES_SHARED(...) KEEL_REQUIRES_SHARED(__VA_ARGS__)
#define EXCLUDES(...) KEEL_EXCLUDES(__VA_ARGS__)
#define ACQUIRE(...) KEEL_ACQUIRE(__VA_ARGS__)
#define ACQUIRE_SHARED(...) KEEL_ACQUIRE_SHARED(__VA_ARGS__)
#define RELEASE(...) KEEL_RELEASE(__VA_ARGS__)
#define RELEASE_SHARED(...) KEEL_RELEASE_SHARED(__VA_ARGS__)
#define TRY_ACQUIRE(...) KEEL_TRY_ACQUIRE(__VA_ARGS__)
#define NO_THREAD_SAFETY_ANALYSIS KEEL_NO_THREAD_SAFETY_ANALYSIS
