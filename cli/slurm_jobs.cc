#include "cli/slurm_jobs.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/subprocess.h"

namespace prism::cli {
namespace {

namespace fs = std::filesystem;

// FirstLine returns the first non-empty line of a command's error output.
std::string FirstLine(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) return std::string(line);
  }
  return "";
}

class SlurmJobs final : public server::JobBackend {
 public:
  SlurmJobs(SlurmJobsOptions options, std::map<std::string, std::string> tools,
            std::string scratch)
      : options_(std::move(options)),
        tools_(std::move(tools)),
        scratch_(std::move(scratch)) {}
  ~SlurmJobs() override {
    std::error_code ignored;
    fs::remove_all(scratch_, ignored);
  }

  std::string name() const override { return "slurm"; }

  absl::StatusOr<std::string> Submit(const std::string& job_name,
                                     const std::string& coordinator) override {
    std::vector<std::string> argv = {tools_.at("sbatch"), "--parsable",
                                     absl::StrCat("--job-name=", job_name)};
    if (!options_.partition.empty()) {
      argv.push_back(absl::StrCat("--partition=", options_.partition));
    }
    if (!options_.account.empty()) {
      argv.push_back(absl::StrCat("--account=", options_.account));
    }
    argv.insert(argv.end(), options_.sbatch_args.begin(),
                options_.sbatch_args.end());
    argv.push_back(options_.template_path);
    CommandOutput r =
        Run(argv, {absl::StrCat("PRISM_COORDINATOR=", coordinator)});
    // --parsable prints "ID" or "ID;CLUSTER".
    const std::string id(absl::StripAsciiWhitespace(
        std::vector<std::string>(absl::StrSplit(r.out, ';'))[0]));
    if (r.status != 0 || id.empty()) return Failed("sbatch", r);
    return id;
  }

  absl::StatusOr<std::vector<server::BatchJob>> List(
      const std::string& job_name) override {
    CommandOutput r = Run({tools_.at("squeue"), "-h",
                           absl::StrCat("--name=", job_name), "-o", "%i %t"},
                          {});
    if (r.status != 0) return Failed("squeue", r);
    std::vector<server::BatchJob> jobs;
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      std::vector<std::string> fields =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() != 2) continue;
      server::BatchJob job;
      job.id = fields[0];
      // PD pending, CF configuring (nodes booting): not yet running.
      if (fields[1] == "PD" || fields[1] == "CF") {
        job.state = server::JobState::kPending;
      } else if (fields[1] == "R") {
        job.state = server::JobState::kRunning;
      } else {
        job.state = server::JobState::kEnding;
      }
      jobs.push_back(std::move(job));
    }
    return jobs;
  }

  absl::Status Cancel(const std::string& id) override {
    CommandOutput r = Run({tools_.at("scancel"), id}, {});
    if (r.status != 0) return Failed("scancel", r);
    return absl::OkStatus();
  }

 private:
  CommandOutput Run(const std::vector<std::string>& argv,
                    const std::vector<std::string>& env) {
    SpawnOptions spawn;
    spawn.argv = argv;
    spawn.env = env;
    spawn.stdout_path = scratch_ + "/out";
    spawn.stderr_path = scratch_ + "/err";
    return RunToCompletion(spawn, options_.command_timeout);
  }

  static absl::Status Failed(const char* tool, const CommandOutput& r) {
    return absl::UnavailableError(
        absl::StrCat(tool, " exited ", r.status, ": ", FirstLine(r.err)));
  }

  const SlurmJobsOptions options_;
  const std::map<std::string, std::string> tools_;
  const std::string scratch_;
};

}  // namespace

std::string DefaultSlurmTemplate() {
  std::error_code ec;
  std::vector<fs::path> candidates;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "prism" /
                         "slurm" / "prism-workers.sbatch");
  }
#ifdef PRISM_DEPLOY_SOURCE_DIR
  candidates.push_back(fs::path(PRISM_DEPLOY_SOURCE_DIR) / "slurm" /
                       "prism-workers.sbatch");
#endif
  for (const fs::path& path : candidates) {
    if (fs::exists(path, ec)) return path.string();
  }
  return "";
}

absl::StatusOr<std::unique_ptr<server::JobBackend>> NewSlurmJobs(
    const SlurmJobsOptions& options) {
  std::map<std::string, std::string> tools;
  for (const char* tool : {"sbatch", "squeue", "scancel"}) {
    tools[tool] = FindProgram(tool);
    if (tools[tool].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--scale slurm: ", tool,
          " not found on PATH (install Slurm's clients, e.g. Debian's "
          "slurm-client)"));
    }
  }
  if (options.template_path.empty() ||
      access(options.template_path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--slurm-template: cannot read '", options.template_path, "'"));
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string scratch = absl::StrCat(
      tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/prism-slurm-XXXXXX");
  if (mkdtemp(scratch.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a temp dir like ", scratch));
  }
  return std::make_unique<SlurmJobs>(options, std::move(tools),
                                     std::move(scratch));
}

}  // namespace prism::cli
