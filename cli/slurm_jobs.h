// SlurmJobs: the scaler's job backend on Slurm (server/core/queue/scaler.h),
// through Slurm's own clients: `sbatch --parsable --job-name=NAME` with the
// partition, account and extra options, then the batch template (by default
// deploy/slurm/prism-workers.sbatch); `squeue -h --name=NAME -o "%i %t"`;
// `scancel ID`. Each runs as a child process (cli/subprocess.h) with a
// timeout, its output in a private temp dir. The job gets the coordinator's
// environment (sbatch's default) with PRISM_COORDINATOR set to the address
// its worker dials.
//
// Thread-safety: one call at a time (the scaler's thread).
#ifndef PRISM_CLI_SLURM_JOBS_H_
#define PRISM_CLI_SLURM_JOBS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/queue/scaler.h"

namespace prism::cli {

struct SlurmJobsOptions {
  std::string template_path;             // the batch script
  std::string partition;                 // "": the cluster's default
  std::string account;                   // "": the user's default
  std::vector<std::string> sbatch_args;  // e.g. --gres=none, --mem=8G
  absl::Duration command_timeout = absl::Seconds(60);
};

// DefaultSlurmTemplate returns deploy/slurm/prism-workers.sbatch where it
// is found: under share/prism/slurm beside the binary's folder (an install)
// or in the source tree (a build); "" when neither exists.
std::string DefaultSlurmTemplate();

// NewSlurmJobs checks that sbatch, squeue and scancel are on PATH and the
// template is readable. Returns the backend, or InvalidArgument naming what
// is missing.
absl::StatusOr<std::unique_ptr<server::JobBackend>> NewSlurmJobs(
    const SlurmJobsOptions& options);

}  // namespace prism::cli

#endif  // PRISM_CLI_SLURM_JOBS_H_
