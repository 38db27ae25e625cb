"""``python -m skcalib``: the default method set, readable method names, a
first screen a newcomer reads, progress lines and the command line's own
spelling in messages (issue 31)."""

import io
import json
import re
import sys

import numpy as np
import pytest
from _cli_helpers import run_cli

import skcalib._report.cli as cli
import skcalib._report.run as report_mod
from skcalib._report.cli import EXIT_DATA, EXIT_USAGE, main
from skcalib._report.run import (
    SLOW_METHODS,
    available_methods,
    default_methods,
    uncalibrated_proba,
)


def run_here(capsys, *args):
    """``skcalib report ARGS`` in this process."""
    return run_cli(capsys, "report", *args)


@pytest.fixture
def no_fit(monkeypatch):
    """``cross_fit`` replaced by the model's own probabilities: the methods a
    run fits, in order, without fitting any (the report's plumbing only)."""
    fitted = []

    def fake(method_cls, scores, y, score_type, cv, random_state):
        fitted.append(method_cls)
        return uncalibrated_proba(scores, y, score_type), 0.0, []

    monkeypatch.setattr(report_mod, "cross_fit", fake)
    return fitted


# ------------------------------------------------------------ the methods
def test_method_names_are_readable():
    methods = available_methods()
    # before: dirichlet_calibrator_c_v, matrix_scaling_calibrator_c_v
    expected = {
        "dirichlet_cv": "DirichletCalibratorCV",
        "matrix_scaling_cv": "MatrixScalingCalibratorCV",
        "bias_corrected_temperature": "BiasCorrectedTemperatureCalibrator",
        "histogram_binning": "HistogramBinningCalibrator",
        "auto": "AutoCalibrator",
    }
    for name, cls_name in expected.items():
        assert methods[name].__name__ == cls_name
    for name in methods:
        assert re.fullmatch(r"[a-z]{2,}(_[a-z]{2,})*", name), name
        assert "calibrator" not in name


def test_prior_shift_is_not_in_the_calibrator_table(capsys):
    # before: a prior_shift_adapter row, identical to the uncalibrated one
    assert "prior_shift_adapter" not in available_methods()
    code, _, err = run_here(capsys, "--methods", "prior_shift_adapter")
    assert code == EXIT_USAGE and "target" in err and "not reported" in err


def test_default_set_leaves_out_the_slow_methods_only():
    every = set(available_methods())
    slow = {"auto", "dirichlet_cv", "matrix_scaling_cv"}
    assert set(SLOW_METHODS) == slow and slow <= every
    assert set(default_methods()) == every - slow


def test_default_run_fits_the_default_set_and_all_fits_every_method(
    capsys, npz, no_fit
):
    code, out, err = run_here(capsys, npz, "--quiet", "--format", "json")
    assert code == 0, err
    rep = json.loads(out)
    assert [c.__name__ for c in no_fit] == [
        c.__name__ for c in default_methods().values()
    ]
    assert {r["method"] for r in rep["rows"][1:]} == set(default_methods())
    assert rep["slow_methods_not_run"] == list(SLOW_METHODS)
    no_fit.clear()
    code, out, err = run_here(
        capsys, npz, "--quiet", "--format", "json", "--methods", "all"
    )
    assert code == 0, err
    assert len(no_fit) == len(available_methods()) == 18
    rows = json.loads(out)["rows"]
    assert {r["method"] for r in rows[1:]} == set(available_methods())
    assert {r["calibrator"] for r in rows[1:]} == {
        c.__name__ for c in available_methods().values()
    }
    assert json.loads(out)["slow_methods_not_run"] == []


def test_old_method_name_says_the_new_one(capsys):
    code, _, err = run_here(capsys, "--methods", "dirichlet_calibrator_c_v")
    assert code == EXIT_USAGE and "now called 'dirichlet_cv'" in err


def test_cv_method_name_in_the_table(capsys, npz):
    code, out, err = run_here(
        capsys, npz, "--methods", "matrix_scaling_cv", "--cv", "2", "--quiet"
    )
    assert code == 0, err
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("method")) + 2
    # the uncalibrated row first, then the method (sorted by NLL)
    assert [line.split()[0] for line in lines[top : top + 2]] == [
        "uncalibrated",
        "matrix_scaling_cv",
    ]
    assert "c_v" not in out


# ------------------------------------------------------- the first screen
def test_first_screen_says_what_was_fitted_which_is_best_and_the_columns(
    capsys, npz, no_fit
):
    code, out, err = run_here(capsys, npz, "--quiet", "--cv", "3")
    assert code == 0, err
    lines = out.splitlines()
    n = len(default_methods())
    fitted = next(line for line in lines if line.startswith("fitted: "))
    assert fitted.startswith(f"fitted: {n} calibrators, cross-fitted in 3 folds")
    assert (
        "not run (slower; --methods all runs them): auto, dirichlet_cv, "
        "matrix_scaling_cv" in lines
    )
    # the recommendation right below the table, then what the columns mean
    head = next(i for i, line in enumerate(lines) if line.startswith("method "))
    assert lines.index(fitted) < head
    table_end = lines.index("", head)
    assert table_end == head + 2 + 1 + n  # header, rule, uncalibrated, n rows
    assert lines[table_end + 1].startswith("recommendation: ")
    assert lines[table_end + 3] == "columns:"
    assert lines[table_end + 4].startswith("  method: a skcalib calibrator")
    # a chosen subset: nothing about the methods not asked for
    code, out, _ = run_here(capsys, npz, "--quiet", "--methods", "temperature")
    assert code == 0 and "not run" not in out and "fitted: 1 calibrator," in out


# ---------------------------------------------------------------- progress
class _Stream(io.StringIO):
    """stderr that is a file (not a terminal) and records what each flush
    delivered."""

    def __init__(self):
        super().__init__()
        self.flushed = []

    def isatty(self):
        return False

    def flush(self):
        self.flushed.append(self.getvalue())


def test_progress_lines_on_stderr_per_method_flushed(monkeypatch, capsys, npz, no_fit):
    # before: a bar drawn only on a terminal, nothing when redirected
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    stream = _Stream()
    monkeypatch.setattr(sys, "stderr", stream)
    code = main(["report", str(npz), "--methods", "temperature,platt", "--cv", "2"])
    assert code == 0
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.match(r"skcalib report: 1/2 temperature +2 folds fitted in ", lines[0])
    assert re.match(r"skcalib report: 2/2 platt +2 folds fitted in ", lines[1])
    # each line was delivered by a flush of its own, before the next
    assert [s.count("\n") for s in stream.flushed[:2]] == [1, 2]
    assert "skcalib report:" not in capsys.readouterr().out


def test_quiet_and_short_runs_print_no_progress(monkeypatch, npz, no_fit):
    stream = _Stream()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    assert main(["report", str(npz), "--methods", "temperature", "--quiet"]) == 0
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", float("inf"))  # a short run
    assert main(["report", str(npz), "--methods", "temperature"]) == 0
    assert stream.getvalue() == ""


# -------------------------------------------------------------- messages
def test_help_prints_95_percent(capsys):
    code, out, _ = run_here(capsys, "--help")
    assert code == 0
    assert "bootstrap 95% interval" in " ".join(out.split())
    assert "%%" not in out


def test_score_type_hint_in_the_cli_spelling(tmp_path, capsys):
    # rows in [0, 1] that do not sum to 1: neither logits nor probabilities
    rng = np.random.default_rng(1)
    p = rng.uniform(0.05, 0.3, size=(40, 3))
    y = np.arange(40) % 3
    path = tmp_path / "ovr.csv"
    rows = [f"{t},{a:.4f},{b:.4f},{c:.4f}" for t, (a, b, c) in zip(y, p, strict=True)]
    path.write_text("label,p_0,p_1,p_2\n" + "\n".join(rows) + "\n")
    code, _, err = run_here(capsys, path, "--cv", "2", "--quiet")
    assert code == EXIT_DATA
    assert "pass --score-type logit if these are logits" in err
    assert "--score-type auto does not read it" in err
    assert "score_type=" not in err
    # the library's own message keeps the Python spelling
    from skcalib import TemperatureCalibrator

    with pytest.raises(ValueError, match="pass score_type='logit' if these"):
        TemperatureCalibrator().fit(p, y)
