# The Python API over the binary (docs/python.md): typed results, one exception type, progress.
import json
import linecache
import os
import pathlib
import shutil

import pytest

import prereg_gpu
from prereg_gpu import PreregError

HERE = pathlib.Path(__file__).resolve().parent


def test_freeze_returns_the_hash_check_predicts(lab):
    assert len(lab["hash"]) == 64
    assert prereg_gpu.check(HERE / "small.yaml") == lab["hash"]
    # freezing again writes nothing and gives the same hash
    assert prereg_gpu.freeze(HERE / "small.yaml", store=lab["store"], key=lab["key"]) == lab["hash"]


def test_invalid_input_is_one_error_with_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("prereg: 1\nid: x\nid: y\n")
    with pytest.raises(PreregError) as e:
        prereg_gpu.check(bad)
    assert e.value.exit_code == 2
    assert e.value.message.startswith("prereg: error: ")
    assert "\n" not in e.value.message
    assert str(bad) in e.value.where
    assert "exit 2" in str(e.value)


def test_an_unfrozen_file_is_refused_with_exit_3(lab, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text((HERE / "small.yaml").read_text().replace("repetitions: 9", "repetitions: 10"))
    with pytest.raises(PreregError) as e:
        prereg_gpu.run(other, store=lab["store"], key=lab["key"], out=lab["reports"],
                       progress=False)
    assert e.value.exit_code == 3
    assert e.value.meaning == "refused on integrity"


def test_run_returns_a_typed_report_and_shows_progress(lab, report):
    assert report.protocol_hash == lab["hash"]
    assert report.protocol_id == "py_api_small"
    assert not report.exploratory
    assert report.verdict("P1") == "confirmed"
    assert {c.arm for c in report.cells} == {"fused", "unfused"}
    cell = report.cells[0]
    assert cell.shape == {"rows": 64, "cols": 256}
    assert cell.n == 9 and len(cell.samples_ms) == 9 and cell.median_ms > 0
    assert cell.label.endswith("fwd 64x256")
    with pytest.raises(KeyError):
        report.verdict("P9")
    progress = lab["progress"]
    assert progress, "no progress line was read from the pseudo-terminal"
    assert all(p.elapsed_s >= 0 and p.phase for p in progress)


def test_audit_passes_then_fails_on_a_changed_report(lab, report, tmp_path):
    result = prereg_gpu.audit(report.dir, store=lab["store"])
    assert result.passed and result.exit_code == 0
    assert "envelope" in [c.name for c in result.checks]
    changed = tmp_path / report.dir.name
    shutil.copytree(report.dir, changed)
    data = json.loads((changed / "report.json").read_text())
    data["cells"][0]["median_ms"] *= 2
    (changed / "report.json").write_text(json.dumps(data))
    bad = prereg_gpu.audit(changed, store=lab["store"])
    assert not bad.passed and bad.exit_code == 4 and bad.failed


def test_verdict_gates_on_an_audited_report(lab, report):
    assert prereg_gpu.verdict("P1", "py_api_small", reports=lab["reports"],
                              store=lab["store"]) == "confirmed"
    assert prereg_gpu.latest_report("py_api_small", lab["reports"]) == report.dir
    with pytest.raises(PreregError) as e:
        prereg_gpu.verdict("P1", "no_such_protocol", reports=lab["reports"], store=lab["store"])
    assert e.value.exit_code == 2


def test_try_is_exploratory(lab, tmp_path):
    r = prereg_gpu.try_(HERE / "small.yaml", out=tmp_path / "exploratory", progress=False)
    assert r.exploratory and r.dir.name.startswith("EXPLORATORY-")
    assert r.verdict("P1") in ("confirmed", "refuted", "inconclusive")


def fields(arms, other="numpy"):
    return dict(prereg=2, id="py_api_arm", title="A decorated arm", hypothesis="numpy is slower",
                device="cpu", operation="layernorm", dtype="fp32",
                axes={"rows": [64], "cols": [256]}, passes=["fwd"], arms=arms,
                measurement={"repetitions": 5, "warmup": 1},
                predictions=[{"id": "A1", "claim": "fused is faster", "at": {"pass": "fwd"},
                              "expect": f"fused < {other}"}])


@prereg_gpu.arm("numpy")
def layernorm_numpy(t):
    import numpy as np

    def step():
        mean = t.x.mean(axis=1)
        xc = t.x - mean[:, None]
        rstd = (1 / np.sqrt(np.mean(xc * xc, axis=1) + np.float32(t.eps))).astype(np.float32)
        return {"y": xc * rstd[:, None] * t.gamma + t.beta}

    return step


def test_a_decorated_function_is_an_arm_pinned_by_its_file(tmp_path):
    ref = layernorm_numpy.prereg_arm
    assert ref.id == "numpy" and ref.function == "layernorm_numpy"
    assert ref.file == pathlib.Path(__file__).resolve()
    path = prereg_gpu.write_protocol(
        tmp_path / "p" / "arm.yaml",
        **fields([prereg_gpu.kernel("fused", "layernorm.fused"), layernorm_numpy]))
    text = path.read_text()
    assert "function: \"layernorm_numpy\"" in text and "kernel: \"layernorm.fused\"" in text
    # valid (an arm this machine cannot load is a notice, not an error)
    assert len(prereg_gpu.check(path)) == 64
    # the file is pinned: freezing hashes this test file, named relative to the protocol
    expected = os.path.relpath(pathlib.Path(__file__).resolve(), path.parent.resolve())
    assert f'python: "{expected}"' in text


def test_a_notebook_cell_function_is_written_to_a_file_and_pinned(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cell = "@prereg_gpu.arm('nb', imports='import numpy as np')\ndef nb_arm(t):\n" \
           "    return lambda: None\n"
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
    scope = {"prereg_gpu": prereg_gpu}
    exec(compile(cell, name, "exec"), scope)
    ref = scope["nb_arm"].prereg_arm
    assert ref.file == (tmp_path / "prereg_arms" / "nb_arm.py").resolve()
    written = ref.file.read_text()
    assert "import numpy as np" in written and "def nb_arm(t):" in written
    assert "@prereg_gpu" not in written
    path = prereg_gpu.write_protocol(tmp_path / "nb.yaml", **fields([
        prereg_gpu.kernel("fused", "layernorm.fused"), scope["nb_arm"]], other="nb"))
    assert "python: \"prereg_arms/nb_arm.py\"" in path.read_text()
    # The cell's arm writes nothing: the dry run refuses it; without the dry run it checks.
    with pytest.raises(prereg_gpu.PreregError, match="dry run: arm nb .* unwritten"):
        prereg_gpu.check(path)
    assert len(prereg_gpu.check(path, dry_run=False)) == 64


def test_progress_lines_parse():
    from prereg_gpu.progress import parse_progress
    text = "\r\x1b[K[instrument]  elapsed 1s\r\x1b[K[timing]  cells 3/8  ETA 4s  elapsed 2s"
    got = parse_progress(text)
    assert [p.phase for p in got] == ["instrument", "timing"]
    assert (got[1].done, got[1].total, got[1].eta_s, got[1].elapsed_s) == (3, 8, 4, 2)
    assert got[0].total is None and got[1].text() == "[timing]  cells 3/8  ETA 4s  elapsed 2s"
