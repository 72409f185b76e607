#include "base/failpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace prism {
namespace {

// Every failpoint the code reaches, so that arming a misspelt one is loud.
constexpr const char* kFailpointNames[] = {
    "checkpoint.temp_written",  // model: temp file synced, not yet renamed
    "worker.report_sent",       // worker: Report answered, not acknowledged
    "submit.committed",         // coordinator: experiment stored, no answer
    "lease.committed",          // coordinator: lease stored, task not sent
    "ingest.committed",         // coordinator: reports stored, not acked
    "complete.committed",       // coordinator: completion stored, no answer
    "ladder.rung_done",         // coordinator: next rung decided, not stored
    "ladder.submitted",         // coordinator: next rung stored, not noted
};

struct Armed {
  std::string name;
  int64_t hit = 1;  // kill on this hit (1-based)
  std::atomic<int64_t> hits{0};
};

struct Registry {
  std::vector<Armed> armed;
};

Registry* Load() {
  auto* registry = new Registry();
  const char* env = std::getenv("PRISM_FAILPOINTS");
  if (env == nullptr || *env == '\0') return registry;
  std::vector<std::string> specs =
      absl::StrSplit(env, ',', absl::SkipWhitespace());
  registry->armed = std::vector<Armed>(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<std::string> parts = absl::StrSplit(specs[i], '@');
    Armed& a = registry->armed[i];
    a.name = parts[0];
    if (parts.size() > 1 &&
        (!absl::SimpleAtoi(parts[1], &a.hit) || a.hit < 1)) {
      std::fprintf(stderr, "PRISM_FAILPOINTS: bad hit count in '%s'\n",
                   specs[i].c_str());
      a.hit = 1;
    }
    if (std::find_if(std::begin(kFailpointNames), std::end(kFailpointNames),
                     [&](const char* n) { return a.name == n; }) ==
        std::end(kFailpointNames)) {
      std::fprintf(stderr, "PRISM_FAILPOINTS: no failpoint named '%s'\n",
                   a.name.c_str());
    }
  }
  return registry;
}

// The stall points the code reaches.
constexpr const char* kStallNames[] = {
    "storage.commit",  // storage: before a write transaction's COMMIT
};

// The fault points the code reaches.
constexpr const char* kFaultNames[] = {
    "storage.write",  // storage: a write transaction's BEGIN
};

// LoadFileArmed maps each point armed in `variable` ("NAME=FILE,...") to
// its file; a spec naming none of `names` is reported once on stderr.
template <size_t N>
std::vector<std::pair<std::string, std::string>>* LoadFileArmed(
    const char* variable, const char* const (&names)[N]) {
  auto* armed = new std::vector<std::pair<std::string, std::string>>();
  const char* env = std::getenv(variable);
  if (env == nullptr || *env == '\0') return armed;
  for (absl::string_view spec : absl::StrSplit(env, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> point =
        absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (point.second.empty() ||
        std::find_if(std::begin(names), std::end(names), [&](const char* n) {
          return point.first == n;
        }) == std::end(names)) {
      std::fprintf(stderr, "%s: '%s' is not NAME=FILE of a known point\n",
                   variable, std::string(spec).c_str());
      continue;
    }
    armed->push_back(std::move(point));
  }
  return armed;
}

}  // namespace

void StallPoint(absl::string_view name) {
  static const auto* const stalls = LoadFileArmed("PRISM_STALLS", kStallNames);
  if (stalls->empty()) return;
  for (const auto& [stall, file] : *stalls) {
    if (stall != name) continue;
    std::ifstream in(file);
    int64_t ms = 0;
    if (in >> ms && ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
  }
}

std::string FaultPoint(absl::string_view name) {
  static const auto* const faults = LoadFileArmed("PRISM_FAULTS", kFaultNames);
  if (faults->empty()) return "";
  for (const auto& [fault, file] : *faults) {
    if (fault != name) continue;
    std::ifstream in(file);
    std::string word;
    if (in >> word) return word;
  }
  return "";
}

void Failpoint(absl::string_view name) {
  static Registry* const registry = Load();
  if (registry->armed.empty()) return;
  for (Armed& a : registry->armed) {
    if (a.name != name) continue;
    if (a.hits.fetch_add(1) + 1 == a.hit) {
      std::fprintf(stderr, "failpoint %s: SIGKILL after %lld hit(s)\n",
                   a.name.c_str(), static_cast<long long>(a.hit));
      std::fflush(stderr);
      kill(getpid(), SIGKILL);
    }
  }
}

}  // namespace prism
