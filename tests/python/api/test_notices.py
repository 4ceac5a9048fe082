# prereg's notices reach Python as warnings (PreregNotice), and `run(ID)` takes the id's newest
# revision, saying which (issue 46; docs/python.md, "Notices"; docs/store.md).
import warnings

import pytest

import prereg_gpu

PROTOCOL = """prereg: 2
id: py_revisions
revision: {revision}
title: "Two revisions of one experiment"
hypothesis: "The fused LayerNorm is not ten times slower than the unfused one"
device: cpu
operation: layernorm
dtype: fp32
axes:
  rows: [16]
  cols: [64]
passes: [fwd]
arms:
  - id: unfused
    kernel: layernorm.unfused
  - id: fused
    kernel: layernorm.fused
measurement:
  repetitions: {repetitions}
  warmup: 1
analysis:
  bootstrap_resamples: 100
  unstable_iqr_ratio: 1000
predictions:
  - id: P1
    claim: "The fused forward takes less than ten times the unfused one"
    expect: "fused < 10 * unfused"
"""


def test_notices_are_warnings_and_run_by_id_takes_the_newest_revision(tmp_path):
    lab = {"store": tmp_path / "store", "key": tmp_path / "key" / "signing.key"}
    for revision, repetitions in ((1, 3), (2, 4)):
        (tmp_path / f"r{revision}.yaml").write_text(
            PROTOCOL.format(revision=revision, repetitions=repetitions))
    first = prereg_gpu.freeze(tmp_path / "r1.yaml", **lab)
    with pytest.warns(prereg_gpu.PreregNotice, match="runs this one, the newest revision") as seen:
        second = prereg_gpu.freeze(tmp_path / "r2.yaml", **lab)
    assert first != second
    assert any(str(w.message).startswith("prereg: notice: protocol py_revisions now has 2 frozen "
                                         "versions") for w in seen)
    with pytest.warns(prereg_gpu.PreregNotice,
                      match=rf"taking the newest revision, 2 \({second[:12]}, frozen "):
        report = prereg_gpu.run("py_revisions", out=tmp_path / "reports", progress=False, **lab)
    assert report.protocol_hash == second
    assert report.data["protocol"]["body"]["revision"] == 2


def test_notice_lines_become_warnings_one_each():
    from prereg_gpu.notices import warn_notices
    stderr = ("prereg: notice: one\r\n[timing] cells 1/2\x1b[K\rprereg: warning: two\n"
              "prereg: error: not a notice\nP1  confirmed  a claim\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warn_notices(stderr)
    assert [str(w.message) for w in seen] == ["prereg: notice: one", "prereg: warning: two"]
    assert all(w.category is prereg_gpu.PreregNotice for w in seen)
