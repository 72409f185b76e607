// PRISM_FUZZ_CHECK: an invariant a fuzz target asserts about the code under
// test. A failure prints the condition and aborts, which libFuzzer reports as
// a crash (saving the input) and the corpus replay test as a failure.
#ifndef PRISM_FUZZ_FUZZ_CHECK_H_
#define PRISM_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define PRISM_FUZZ_CHECK(condition)                                    \
  do {                                                                 \
    if (!(condition)) {                                                \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, \
                   __LINE__, #condition);                              \
      std::abort();                                                    \
    }                                                                  \
  } while (0)

#endif  // PRISM_FUZZ_FUZZ_CHECK_H_
