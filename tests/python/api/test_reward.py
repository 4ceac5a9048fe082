# The reward from Python (docs/grading.md, "The reward"): an honest numpy file scores above 0, a
# NaN-writing one 0 with its reason; the second call reuses the baseline the first measured.
import pathlib

import prereg_gpu

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent.parent / "data" / "grading" / "submissions"


def test_reward_scores_honest_above_zero_and_a_cheat_zero(lab):
    task = prereg_gpu.freeze(HERE / "task.yaml", store=lab["store"], key=lab["key"])
    honest = prereg_gpu.reward(task, DATA / "honest_numpy.py", store=lab["store"],
                               key=lab["key"], out=lab["reports"])
    assert honest.score > 0 and not honest.excluded, honest.raw
    assert honest.score_lo <= honest.score <= honest.score_hi
    assert (honest.report / "report.json").is_file()
    assert prereg_gpu.audit(honest.report, store=lab["store"]).passed
    assert honest.retime["confirmed"] is True, honest.retime  # its second process agreed
    assert prereg_gpu.audit(honest.retime["report"], store=lab["store"]).passed
    cheat = prereg_gpu.reward(task, DATA / "nan_output.py", store=lab["store"], key=lab["key"],
                              out=lab["reports"])
    assert cheat.score == 0 and cheat.excluded
    assert cheat.exclusions[0].code == "correctness"
    assert cheat.retime is None  # excluded by its first process: not re-timed
    assert cheat.baseline == honest.baseline  # measured once, then reused
