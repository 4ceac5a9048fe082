// The Slurm submit script: a job array (one shard per task) and a merge job after it.
#include "run/slurm.hpp"

#include "prereg/error.hpp"

#include <fmt/format.h>

#include <cctype>

namespace prereg {

std::string shell_quote(const std::string &s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

void check_slurm_resources(std::int64_t gpus_per_task, const std::string &partition) {
  if (gpus_per_task < 0 || gpus_per_task > 64)
    throw invalid_input(fmt::format("--gpus-per-task must be 0 to 64, got {}", gpus_per_task));
  for (const char c : partition)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ',' ||
          c == '.'))
      throw invalid_input(
          fmt::format("--partition '{}' is not a partition name", message_excerpt(partition)));
}

std::string slurm_script(const slurm_options &o) {
  if (o.shards < 1 || o.shards > 10000)
    throw invalid_input(fmt::format("--shards must be 1 to 10000, got {}", o.shards));
  check_slurm_resources(o.gpus_per_task, o.partition);
  const std::string n = std::to_string(o.shards);
  std::string common;
  if (!o.partition.empty())
    common += " --partition=" + o.partition;
  const std::string job = "prereg-" + o.protocol_id;
  std::string s;
  s += "#!/bin/bash\n";
  s += fmt::format("# Written by `prereg slurm` (docs/scale-out.md) for protocol {} ({}).\n",
                   o.protocol_id, o.hash);
  s += fmt::format("# Run it with `bash` on a submit host: it submits a job array of {} task(s), "
                   "task K running\n# `prereg run --shard K/{}`, then a merge job that starts only "
                   "when every task succeeded\n# (--dependency=afterok). A failed task leaves the "
                   "merge job never started: rerun that\n# shard, then merge the folders listed in "
                   "the shard-*.path files by hand.\n",
                   n, n);
  s += "set -euo pipefail\n";
  s += "PREREG=" + shell_quote(o.prereg.string()) + "\n";
  s += "HASH=" + shell_quote(o.hash) + "\n";
  s += "STORE=" + shell_quote(o.store.string()) + "\n";
  s += "KEY=" + shell_quote(o.key.string()) + "\n";
  s += "OUT=" + shell_quote(o.out.string()) + "\n";
  s += "WORK=" + shell_quote(o.work.string()) + "\n";
  s += "N=" + n + "\n";
  s += "mkdir -p \"$WORK\"\n";
  s += "rm -f \"$WORK\"/shard-*.path \"$WORK\"/merged.path\n";
  s += "export PREREG HASH STORE KEY OUT WORK N\n";
  s += fmt::format("array=$(sbatch --parsable --job-name={}{} --array=1-$N --ntasks=1{} "
                   "--output=\"$WORK/shard-%a.log\" --chdir=\"$WORK\" --export=ALL <<'TASK'\n",
                   job, common,
                   o.gpus_per_task > 0 ? fmt::format(" --gpus-per-task={}", o.gpus_per_task) : "");
  s += "#!/bin/bash\n"
       "set -euo pipefail\n"
       "k=$SLURM_ARRAY_TASK_ID\n"
       "# the task's GPU is device 0 of the ones Slurm makes visible\n"
       "\"$PREREG\" run \"$HASH\" --shard \"$k/$N\" --device 0 --store \"$STORE\" --key \"$KEY\" "
       "--out \"$OUT\" --quiet > \"$WORK/shard-$k.out\"\n"
       "tail -n 1 \"$WORK/shard-$k.out\" > \"$WORK/shard-$k.path.tmp\"\n"
       "mv \"$WORK/shard-$k.path.tmp\" \"$WORK/shard-$k.path\"\n"
       "TASK\n"
       ")\n"
       "array=${array%%;*}\n";
  s += fmt::format(
      "merge=$(sbatch --parsable --job-name={}-merge{} --ntasks=1 --dependency=afterok:$array "
      "--kill-on-invalid-dep=yes --output=\"$WORK/merge.log\" --chdir=\"$WORK\" --export=ALL "
      "<<'MERGE'\n",
      job, common);
  s += "#!/bin/bash\n"
       "set -euo pipefail\n"
       "parts=()\n"
       "for k in $(seq 1 \"$N\"); do parts+=(\"$(cat \"$WORK/shard-$k.path\")\"); done\n"
       "\"$PREREG\" merge \"${parts[@]}\" --store \"$STORE\" --key \"$KEY\" --out \"$OUT\" > "
       "\"$WORK/merge.out\"\n"
       "tail -n 1 \"$WORK/merge.out\" > \"$WORK/merged.path.tmp\"\n"
       "mv \"$WORK/merged.path.tmp\" \"$WORK/merged.path\"\n"
       "MERGE\n"
       ")\n"
       "merge=${merge%%;*}\n"
       "echo \"submitted job array $array ($N shard(s)) and merge job $merge; the merged "
       "report's folder will be written to $WORK/merged.path\"\n"
       "echo \"$array $merge\" > \"$WORK/jobs\"\n";
  return s;
}

} // namespace prereg
