// The Slurm script of a grading (grade_slurm.hpp): open on the submit host, the baseline as one
// job, the submissions as a job array after it, the leaderboard after the array.
#include "grade/grade_slurm.hpp"

#include "prereg/error.hpp"
#include "run/slurm.hpp"

#include <fmt/format.h>

namespace prereg::grade {

std::string grade_slurm_script(const grade_slurm_options &o) {
  check_slurm_resources(o.gpus_per_task, o.partition);
  const std::string job = "prereg-grade-" + o.task_id;
  std::string common = o.partition.empty() ? "" : " --partition=" + o.partition;
  const std::string gpus =
      o.gpus_per_task > 0 ? fmt::format(" --gpus-per-task={}", o.gpus_per_task) : "";
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# Written by `prereg slurm --grade` (docs/grading.md) for task {} ({}).\n",
                   o.task_id, o.task_hash);
  s += "# Run it with `bash` on a submit host: it opens the grading here (pending submissions,\n"
       "# C sources built, protocols frozen), then submits the baseline as one job, the\n"
       "# submissions as a job array after it (task K grades submission K in its own confined\n"
       "# process) and the leaderboard's job after the array (--dependency=afterok). A\n"
       "# submission whose run fails is an excluded entry, not a failed task.\n";
  s += "set -euo pipefail\n";
  s += "PREREG=" + shell_quote(o.prereg.string()) + "\n";
  s += "TASK=" + shell_quote(o.task_hash) + "\n";
  s += "STORE=" + shell_quote(o.store.string()) + "\n";
  s += "KEY=" + shell_quote(o.key.string()) + "\n";
  s += "OUT=" + shell_quote(o.out.string()) + "\n";
  s += "WORK=" + shell_quote(o.work.string()) + "\n";
  s += "export PREREG TASK STORE KEY OUT WORK\n";
  std::string open = "\"$PREREG\" grade \"$TASK\" --open --work \"$WORK\" --store \"$STORE\" "
                     "--key \"$KEY\" --out \"$OUT\"";
  if (!o.heldout.empty())
    open += " --heldout " + shell_quote(o.heldout.string());
  if (o.all)
    open += " --all";
  s += "N=$(" + open + ")\n";
  s += "if [ \"$N\" = 0 ]; then echo \"no pending submission: nothing to grade\"; exit 0; fi\n";
  s += fmt::format("base=$(sbatch --parsable --job-name={}-baseline{} --ntasks=1{} "
                   "--output=\"$WORK/part-0.log\" --chdir=\"$WORK\" --export=ALL <<'BASE'\n",
                   job, common, gpus);
  s += "#!/bin/bash\nset -euo pipefail\n"
       "\"$PREREG\" grade --work \"$WORK\" --part 0 --device 0 --store \"$STORE\" --key \"$KEY\"\n"
       "BASE\n)\nbase=${base%%;*}\n";
  s += fmt::format("array=$(sbatch --parsable --job-name={}{} --array=1-$N --ntasks=1{} "
                   "--dependency=afterok:$base --kill-on-invalid-dep=yes "
                   "--output=\"$WORK/part-%a.log\" --chdir=\"$WORK\" --export=ALL <<'PART'\n",
                   job, common, gpus);
  s += "#!/bin/bash\nset -euo pipefail\n"
       "# the task's GPU is device 0 of the ones Slurm makes visible\n"
       "\"$PREREG\" grade --work \"$WORK\" --part \"$SLURM_ARRAY_TASK_ID\" --device 0 "
       "--store \"$STORE\" --key \"$KEY\"\n"
       "PART\n)\narray=${array%%;*}\n";
  s += fmt::format("close=$(sbatch --parsable --job-name={}-leaderboard{} --ntasks=1 "
                   "--dependency=afterok:$array --kill-on-invalid-dep=yes "
                   "--output=\"$WORK/close.log\" --chdir=\"$WORK\" --export=ALL <<'CLOSE'\n",
                   job, common);
  s += "#!/bin/bash\nset -euo pipefail\n"
       "\"$PREREG\" grade --work \"$WORK\" --close --store \"$STORE\" --key \"$KEY\" > "
       "\"$WORK/close.out\"\n"
       "tail -n 1 \"$WORK/close.out\" > \"$WORK/leaderboard.path.tmp\"\n"
       "mv \"$WORK/leaderboard.path.tmp\" \"$WORK/leaderboard.path\"\n"
       "CLOSE\n)\nclose=${close%%;*}\n"
       "echo \"submitted the baseline job $base, a job array $array ($N submission(s)) and the "
       "leaderboard job $close; the leaderboard's folder will be written to "
       "$WORK/leaderboard.path\"\n"
       "echo \"$base $array $close\" > \"$WORK/jobs\"\n";
  return s;
}

} // namespace prereg::grade
