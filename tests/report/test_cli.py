"""``skcalib report`` run as a user runs it: a subprocess."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
from _cli_helpers import run_cli
from _data import SHARED_DATA

from skcalib._report.cli import format_table
from skcalib._report.io import ReadOptions, read_csv


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "skcalib", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def run_here(capsys, *args):
    """The command in this process (faster than a subprocess)."""
    return run_cli(capsys, *args)


def test_builtin_report_text_and_outputs(tmp_path):
    res = run(
        "report",
        "--methods",
        "temperature,histogram_binning",
        "--out",
        str(tmp_path),
        "--quiet",
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "built-in:cifar10_wideresnet: 10000 rows, 10 classes" in out
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("method")) + 2
    rows = [line.split()[0] for line in lines[top : top + 3]]
    assert rows[0] == "uncalibrated"
    assert set(rows[1:]) == {"temperature", "histogram_binning"}
    # the uncalibrated row reproduces the reference ECE of the data README
    assert lines[top].split()[1] == "0.0537"
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["n_samples"] == 10000 and len(data["rows"]) == 3
    nll = [r["nll"] for r in data["rows"][1:]]
    assert nll == sorted(nll)
    best = [r for r in data["rows"] if r["best"]]
    assert len(best) == 1 and best[0]["nll"] == min(r["nll"] for r in data["rows"])
    assert (tmp_path / "reliability.png").stat().st_size > 10_000
    with open(tmp_path / "best_calibrator.pkl", "rb") as f:
        cal = pickle.load(f)
    assert cal.predict_proba(np.full((1, 10), 0.1)).shape == (1, 10)


def test_python_m_skcalib_without_arguments_runs_the_report():
    res = run("--methods", "temperature", "--cv", "2")
    assert res.returncode == 0, res.stderr
    assert "temperature" in res.stdout and "uncalibrated" in res.stdout


@pytest.mark.parametrize(
    "relpath", ["pycalib/kitti__random_forest.npz", "netcal/lenet-5-cifar-10.npz"]
)
def test_report_on_shared_npz_files(relpath):
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"{path} missing")
    res = run(
        "report",
        str(path),
        "--methods",
        "platt,isotonic",
        "--format",
        "json",
        "--cv",
        "3",
    )
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["rows"]  # the shape of report.json
    assert [r["method"] for r in rows][0] == "uncalibrated"
    assert all(0 <= r["ece"] <= 1 and r["nll"] > 0 for r in rows)


def test_csv_with_header_string_labels_and_markdown(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    p = np.clip(0.5 + 0.45 * (2 * y - 1) * rng.uniform(size=400), 0.01, 0.99)
    path = tmp_path / "preds.csv"
    lines = ["id,outcome,p_yes"] + [
        f"{i},{'yes' if t else 'no'},{q:.6f}"
        for i, (t, q) in enumerate(zip(y, p, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    res = run(
        "report",
        str(path),
        "--label-col",
        "outcome",
        "--score-cols",
        "p_yes",
        "--format",
        "markdown",
        "--methods",
        "platt",
        "--cv",
        "3",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].startswith("| method | ECE |")
    pred = read_csv(path, ReadOptions(label_col="outcome", score_cols="p_yes"))
    assert pred.labels[0] in ("yes", "no") and pred.scores.shape == (400,)
    assert pred.positive == "yes"  # the column's name says which class


@pytest.mark.parametrize(
    "content, message",
    [
        (
            "label,p0,p1\n0,0.2,0.8\n1,abc,0.5\n",
            "line 3, column 'p0': non-numeric score 'abc'",
        ),
        ("label,p0,p1\n0,0.2,0.8\n1,nan,0.5\n", "line 3, column 'p0': score is nan"),
        ("label,p0,p1\n0,0.2,0.8\n0,0.4,0.6\n", "only one class"),
        ("label,p0,p1\n0,0.2,0.8\n1,0.4\n", "line 3: 2 fields, expected 3"),
        (
            "label,a,b,c\n0,0.2,0.7,0.1\n1,0.4,0.5,0.1\n",
            "3 score columns but 2 classes",
        ),
    ],
)
def test_broken_csv_gives_one_line_and_exit_1(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    code, _, err = run_here(capsys, "report", str(path), "--cv", "2", "--quiet")
    assert code == 1
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_broken_csv_in_a_subprocess_has_no_traceback(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("label,p0,p1\n0,0.2,0.8\n1,abc,0.5\n")
    res = run("report", str(path), "--cv", "2")
    assert res.returncode == 1
    assert res.stderr.startswith("skcalib report: error: ")
    assert "Traceback" not in res.stderr


def test_broken_npz_and_too_few_rows(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    np.savez(bad, foo=np.zeros(3))
    code, _, err = run_here(capsys, "report", str(bad))
    assert code == 1 and "needs a label array" in err
    few = tmp_path / "few.npz"
    np.savez(few, labels=np.array([0, 0, 0, 1, 1]), probs=np.full((5, 2), 0.5))
    code, _, err = run_here(capsys, "report", str(few), "--cv", "5")
    assert code == 1 and "fewer than the 5 folds" in err
    code, _, err = run_here(capsys, "report", str(tmp_path / "missing.csv"))
    assert code == 1 and "no such file" in err


def test_usage_errors_exit_2(capsys):
    assert run_here(capsys, "report", "--methods", "magic")[0] == 2
    assert run_here(capsys, "report", "--cv", "1")[0] == 2
    assert run_here(capsys, "report", "--format", "xml")[0] == 2
    assert run("report", "--cv", "1").returncode == 2


def test_format_table_marks_best():
    row = dict(
        method="m",
        ece=0.1,
        ece_low=0.05,
        ece_high=0.15,
        mce=0.2,
        classwise_ece=0.1,
        brier=0.2,
        nll=0.3,
        accuracy=0.9,
        fit_seconds=0.0,
        best=True,
    )
    text = format_table([row], "text")
    assert "m *" in text and "[0.0500, 0.1500]" in text


def test_version_in_report_is_the_package_version(capsys):
    # the report reads the version from skcalib._version (it may not import
    # the facade, tests/test_layers.py): one version string
    import skcalib
    from skcalib._version import __version__

    assert __version__ == skcalib.__version__
    code, out, _ = run_here(
        capsys, "report", "--methods", "temperature", "--cv", "2", "--format", "json"
    )
    assert code == 0
    assert json.loads(out)["skcalib_version"] == skcalib.__version__


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_uncalibrated_row_is_the_softmax_of_the_logits(dtype):
    # the model's own probabilities (IdentityCalibrator's): scipy's softmax
    # of the float64 logits, also for float32 input
    from scipy.special import softmax

    from skcalib._report.run import available_methods, uncalibrated_proba

    rng = np.random.default_rng(0)
    z = (rng.normal(size=(50, 3)) * 3).astype(dtype)
    proba = uncalibrated_proba(z, rng.integers(0, 3, 50), "logit")
    assert proba.dtype == np.float64
    np.testing.assert_allclose(proba, softmax(z.astype(np.float64), axis=1), rtol=1e-13)
    p = softmax(z.astype(np.float64), axis=1)[:, 1]  # binary, 1-D
    both = uncalibrated_proba(p, (p > 0.5).astype(int), "probability")
    np.testing.assert_array_equal(both, np.column_stack([1 - p, p]))
    # float32 probabilities stay float32 (bin edges compared in float32)
    p32 = np.array([[0.1, 0.9], [0.3, 0.7], [0.5, 0.5]], dtype=np.float32)
    same = uncalibrated_proba(p32, [0, 1, 1], "probability")
    assert same.dtype == np.float32
    np.testing.assert_array_equal(same, p32)
    methods = available_methods()
    assert "identity" not in methods and "conformal_classifier" not in methods
    assert {"auto", "temperature", "platt", "isotonic"} <= set(methods)
