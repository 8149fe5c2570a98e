// FUZZ_ASSERT: an invariant the fuzz targets check; a failure stops libFuzzer with a crash
// input, like a sanitizer report does (assert() is compiled out in release builds).
#pragma once

#include <cstdio>

#define FUZZ_ASSERT(cond)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_ASSERT failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      __builtin_trap();                                                                    \
    }                                                                                      \
  } while (false)
