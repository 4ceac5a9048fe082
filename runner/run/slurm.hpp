// `prereg slurm` (docs/scale-out.md, "Slurm"): a submit script for a job array of shards and a
// dependent merge job.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace prereg {

struct slurm_options {
  std::filesystem::path prereg; ///< the prereg binary the jobs run (absolute)
  std::string hash;             ///< the full protocol hash
  std::string protocol_id;
  std::int64_t shards = 1;        ///< N: tasks 1..N run --shard K/N
  std::string partition;          ///< empty: the cluster's default
  std::int64_t gpus_per_task = 0; ///< 0: no --gpus-per-task line (a cpu protocol)
  std::filesystem::path store;    ///< absolute
  std::filesystem::path key;      ///< absolute
  std::filesystem::path out;      ///< reports root, absolute
  std::filesystem::path work;     ///< logs and the shard/merge result files, absolute
};

/// The script: run with `bash FILE` on a submit host, it submits the array with
/// `sbatch --parsable --array=1-N`, then the merge job with `--dependency=afterok:<array>`;
/// task K writes its report folder to WORK/shard-K.path, the merge job to WORK/merged.path.
[[nodiscard]] std::string slurm_script(const slurm_options &o);

/// Throws invalid_input unless `gpus_per_task` is 0 to 64 and `partition` is empty or a
/// partition name (letters, digits, `_ - , .`): what every written script checks first.
void check_slurm_resources(std::int64_t gpus_per_task, const std::string &partition);

/// `s` single-quoted for a POSIX shell.
[[nodiscard]] std::string shell_quote(const std::string &s);

} // namespace prereg
