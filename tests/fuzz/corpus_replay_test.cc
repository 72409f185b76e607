// Replays one fuzz target's committed corpus (fuzz/corpus/<name>/, the
// directory in PRISM_FUZZ_CORPUS) through its LLVMFuzzerTestOneInput, linked
// in from fuzz/<name>_fuzzer.cc, without libFuzzer or clang. The suite is
// named per target (PRISM_FUZZ_SUITE, e.g. SpecFuzzCorpusTest) so ctest
// tells the five apart. A target that
// finds a broken invariant aborts, so a crashing input that was added to the
// corpus fails this test until its bug is fixed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(PRISM_FUZZ_SUITE, EveryCorpusInputRunsCleanly) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(PRISM_FUZZ_CORPUS)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no corpus in " << PRISM_FUZZ_CORPUS;
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << file;
    const std::string bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    // Named first: an abort in the target ends the process.
    std::cout << "replaying " << file.filename().string() << " ("
              << bytes.size() << " bytes)" << std::endl;
    EXPECT_EQ(LLVMFuzzerTestOneInput(
                  reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              0)
        << file;
  }
}

}  // namespace
