// Failpoints: named places where a crash test can make this process die at
// the exact moment state is in flight (a report stored but not yet
// acknowledged, a checkpoint written but not yet renamed, a lease committed
// but not yet sent), instead of killing it from outside at a moment that
// happens to be quiet. Modelled on the fail points of FoundationDB and TiKV,
// without their runtime control: they are read once from the environment.
//
//   PRISM_FAILPOINTS="ingest.committed@3,checkpoint.temp_written"
//
// arms `ingest.committed` to SIGKILL the process the third time it is
// reached and `checkpoint.temp_written` the first time. Unset (every real
// deployment), Failpoint costs one load of a flag.
//
//   Failpoint("ingest.committed");  // after the commit, before the acks
//
// The names in use are listed in kFailpointNames (failpoint.cc); an unknown
// name in the variable is reported once on stderr, so a typo in a test does
// not silently arm nothing.
//
// Stall points are their slow cousins, for a slow disk rather than a crash:
//
//   PRISM_STALLS="storage.commit=/tmp/t/slow-commit"
//
// makes StallPoint("storage.commit") sleep, each time it is reached while the
// file /tmp/t/slow-commit exists, for the number of milliseconds the file
// holds (a test writes the file to start the stall and removes it to end
// it). Unset, StallPoint costs one load of a flag.
//
// Fault points make a call fail as the environment would, for faults a test
// cannot make real (a filesystem cannot be remounted read-only while the
// database is open for writing: the kernel answers EBUSY):
//
//   PRISM_FAULTS="storage.write=/tmp/t/write-fault"
//
// makes FaultPoint("storage.write") return the first word of the file (e.g.
// "read_only") each time it is reached while the file exists; the caller
// fails the way that word names. Unset, FaultPoint costs one load of a flag.
//
// Thread-safety: Failpoint, StallPoint and FaultPoint may be called from any
// thread.
#ifndef PRISM_BASE_FAILPOINT_H_
#define PRISM_BASE_FAILPOINT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace prism {

// Failpoint SIGKILLs the process when `name` is armed and this is the armed
// hit; otherwise it returns at once.
void Failpoint(absl::string_view name);

// StallPoint sleeps while `name` is armed in PRISM_STALLS and its file
// exists (for the milliseconds the file holds); otherwise returns at once.
void StallPoint(absl::string_view name);

// FaultPoint returns the first word of the file armed for `name` in
// PRISM_FAULTS while that file exists; "" otherwise (and always when unset).
std::string FaultPoint(absl::string_view name);

}  // namespace prism

#endif  // PRISM_BASE_FAILPOINT_H_
