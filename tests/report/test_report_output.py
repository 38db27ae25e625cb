"""``skcalib report``: safe outputs, one-line errors with documented exit
codes, reproducible runs and what a user reads (issue 15)."""

import hashlib
import json
import os
import pickle
import stat
import subprocess
import sys

import numpy as np
import pytest
from _cli_helpers import run_cli

from skcalib._report.cli import EXIT_DATA, EXIT_OUTPUT, EXIT_USAGE
from skcalib._report.out import OutputError, write_run


def run_here(capsys, *args):
    """``skcalib report ARGS`` in this process."""
    return run_cli(capsys, "report", *args)


FAST = ("--methods", "temperature", "--cv", "2", "--quiet")


# ------------------------------------------------------------ safe outputs
def test_second_run_needs_force_and_names_the_files(tmp_path, capsys, npz):
    out = tmp_path / "out"
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == 0, err
    before = (out / "report.json").read_bytes()
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == EXIT_OUTPUT
    assert "would overwrite" in err and "report.json" in err and "--force" in err
    assert (out / "report.json").read_bytes() == before
    code, _, err = run_here(capsys, npz, *FAST, "--out", out, "--force")
    assert code == 0, err


def test_manifest_lists_this_runs_files_with_hashes(tmp_path, capsys, npz):
    out = tmp_path / "out"
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    names = set(manifest["files"])
    assert names == {"report.json", "reliability.png", "best_calibrator.pkl"}
    for name, info in manifest["files"].items():
        data = (out / name).read_bytes()
        assert info["sha256"] == hashlib.sha256(data).hexdigest()
    assert sorted(os.listdir(out)) == sorted([*names, "manifest.json"])  # no temp


def test_symlinked_output_is_never_followed(tmp_path, capsys, npz):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "report.json").symlink_to(victim)
    for extra in ([], ["--force"]):
        code, _, err = run_here(capsys, npz, *FAST, "--out", out, *extra)
        assert code == EXIT_OUTPUT
        assert "symbolic link" in err
        assert victim.read_text() == "precious"
    html_link = tmp_path / "r.html"
    html_link.symlink_to(victim)
    code, _, err = run_here(capsys, npz, *FAST, "--html", html_link, "--force")
    assert code == EXIT_OUTPUT and victim.read_text() == "precious"


def test_stale_best_calibrator_is_refused_or_removed(tmp_path, capsys, npz):
    out = tmp_path / "out"
    out.mkdir()
    (out / "best_calibrator.pkl").write_bytes(b"from another file")
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == EXIT_OUTPUT and "best_calibrator.pkl" in err
    # this run's best is uncalibrated: with force the stale pickle goes
    files = {"report.json": b"{}"}
    write_run(out, files, True, {})
    assert not (out / "best_calibrator.pkl").exists()
    assert set(json.loads((out / "manifest.json").read_text())["files"]) == {
        "report.json"
    }


def test_force_removes_files_of_the_previous_manifest(tmp_path):
    out = tmp_path / "o"
    write_run(out, {"report.json": b"1", "reliability.png": b"2"}, False, {})
    with pytest.raises(OutputError, match="would overwrite"):
        write_run(out, {"report.json": b"3"}, False, {})
    write_run(out, {"report.json": b"3"}, True, {})
    assert sorted(os.listdir(out)) == ["manifest.json", "report.json"]


@pytest.mark.parametrize("case", ["file", "below_file"])
def test_out_that_is_not_a_folder(tmp_path, capsys, npz, case):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = blocker if case == "file" else blocker / "sub"
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == EXIT_OUTPUT
    assert str(out) in err and len(err.strip().splitlines()) == 1
    assert "not a folder" in err or "a parent is a file" in err


def test_out_not_writable(tmp_path, capsys, npz, monkeypatch):
    out = tmp_path / "ro"
    out.mkdir()
    if os.geteuid() != 0:  # root writes anyway: then simulate it
        out.chmod(0o500)
    else:
        monkeypatch.setattr(os, "access", lambda *a, **k: False)
    try:
        code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    finally:
        out.chmod(0o700)
    assert code == EXIT_OUTPUT and "not writable" in err and str(out) in err


# ---------------------------------------------------------- no tracebacks
def _pickled_npz(path):
    np.savez(path, labels=np.array([0, 1], dtype=object), probs=np.zeros((2, 2)))


def _cases(tmp):
    (tmp / "dir_input").mkdir()
    np.save(tmp / "a.npy", np.zeros((4, 2)))
    (tmp / "bin.csv").write_bytes(bytes(range(256)) * 4)
    (tmp / "l1.csv").write_bytes("label,p_é\n0,0.5\n".encode("latin-1"))
    np.savez(tmp / "empty.npz")
    np.savez(tmp / "zero_d.npz", labels=np.array(1), probs=np.array(0.5))
    _pickled_npz(tmp / "pickled.npz")
    return {
        "pickled NPZ": ([tmp / "pickled.npz"], "pickled Python objects"),
        ".npy file": ([tmp / "a.npy"], ".npy files hold one array"),
        "binary CSV": ([tmp / "bin.csv"], "a binary file"),
        "latin-1 CSV": ([tmp / "l1.csv"], "not utf-8 text"),
        "empty NPZ": ([tmp / "empty.npz"], "an empty NPZ archive"),
        "unknown dataset": (["--dataset", "nope"], "unknown built-in data set 'nope'"),
        "0-d NPZ": ([tmp / "zero_d.npz"], "is a single value (0-d)"),
        "folder as input": ([tmp / "dir_input"], "a folder, not a predictions file"),
    }


CASES = [
    "pickled NPZ",
    ".npy file",
    "binary CSV",
    "latin-1 CSV",
    "empty NPZ",
    "unknown dataset",
    "0-d NPZ",
    "folder as input",
]


@pytest.mark.parametrize("case", CASES)
def test_user_errors_are_one_line(tmp_path, capsys, case):
    args, message = _cases(tmp_path)[case]
    code, _, err = run_here(capsys, *args, *FAST)
    assert code == EXIT_DATA
    assert err.startswith("skcalib report: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    if case != "unknown dataset":
        assert str(args[0]) in err


def test_no_traceback_in_a_subprocess_and_debug_shows_one(tmp_path):
    args, _ = _cases(tmp_path)["pickled NPZ"]
    cmd = [sys.executable, "-m", "skcalib", "report", *map(str, args), *FAST]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == EXIT_DATA and "Traceback" not in res.stderr
    res = subprocess.run([*cmd, "--debug"], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_usage_errors(capsys):
    code, _, err = run_here(capsys, "--methods", "identity")
    assert code == EXIT_USAGE and "'uncalibrated' row" in err


# --------------------------------------------------------- reproducibility
def test_random_state_makes_runs_identical(capsys):
    # before: scaling_binning's own split ignored --random-state (ECE
    # 0.0056 / 0.0051 / 0.0056 over three runs)
    reports = []
    for _ in range(2):
        code, out, err = run_here(
            capsys,
            "--methods",
            "scaling_binning,venn_abers",
            "--cv",
            "2",
            "--random-state",
            "3",
            "--format",
            "json",
            "--quiet",
        )
        assert code == 0, err
        rows = json.loads(out)["rows"]
        reports.append(
            [{k: v for k, v in r.items() if k != "fit_seconds"} for r in rows]
        )
    assert reports[0] == reports[1]


# ------------------------------------------------------ what a user reads
def test_json_on_stdout_is_report_json(tmp_path, capsys, npz):
    out = tmp_path / "o"
    code, stdout, err = run_here(
        capsys,
        npz,
        *FAST,
        "--methods",
        "auto,temperature",
        "--format",
        "json",
        "--out",
        out,
    )
    assert code == 0, err
    printed = json.loads(stdout)
    assert printed == json.loads((out / "report.json").read_text())
    auto = next(r for r in printed["rows"] if r["method"] == "auto")
    assert len(auto["chosen"]) == 2  # one choice per fold
    assert "interval" in printed["ece_interval"] and printed["legend"]
    assert all(r["method"] != "identity" for r in printed["rows"])
    with open(out / "best_calibrator.pkl", "rb") as f:
        assert pickle.load(f).predict_proba(np.zeros((1, 3))).shape == (1, 3)


def test_text_says_what_auto_chose_and_has_a_legend(capsys, npz):
    code, out, err = run_here(capsys, npz, *FAST, "--methods", "auto")
    assert code == 0, err
    assert "auto: " in out and "/2 folds)" in out
    assert "ECE 95% boot. CI" in out and "inversion of a bootstrap test" in out
    assert "recommendation: " in out
    assert "score type: logit (the NPZ array is named 'logits'" in out


def test_html_target_is_checked_before_the_work(tmp_path, capsys, npz):
    missing = tmp_path / "nope" / "r.html"
    code, _, err = run_here(capsys, npz, *FAST, "--html", missing)
    assert code == EXIT_OUTPUT and "does not exist" in err
    existing = tmp_path / "r.html"
    existing.write_text("old")
    code, _, err = run_here(capsys, npz, *FAST, "--html", existing)
    assert code == EXIT_OUTPUT and "would overwrite" in err
    assert existing.read_text() == "old"
    code, _, err = run_here(capsys, npz, *FAST, "--html", existing, "--force")
    assert code == 0, err
    assert existing.read_text().startswith("<!DOCTYPE html>")


# ------------------------------------------- every output checked first
@pytest.fixture
def fits(monkeypatch):
    """Records every calibrator the run fits (each fit the real one)."""
    import skcalib._report.run as report_mod

    calls, real = [], report_mod.cross_fit

    def recording(method_cls, *args, **kwargs):
        calls.append(method_cls.__name__)
        return real(method_cls, *args, **kwargs)

    monkeypatch.setattr(report_mod, "cross_fit", recording)
    return calls


def test_earlier_run_in_out_is_refused_before_any_fit(tmp_path, capsys, npz, fits):
    # before: the clash was found after every calibrator had been fitted
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("{}")
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == EXIT_OUTPUT and fits == []
    assert "--out: would overwrite" in err and "choose another --out" in err
    assert (out / "report.json").read_text() == "{}"
    # a file that an earlier run's manifest lists, too
    (out / "report.json").unlink()
    (out / "old.txt").write_text("x")
    (out / "manifest.json").write_text(json.dumps({"files": {"old.txt": {}}}))
    code, _, err = run_here(capsys, npz, *FAST, "--out", out)
    assert code == EXIT_OUTPUT and fits == [] and "old.txt" in err


def test_html_clash_names_html_not_out(tmp_path, capsys, npz, fits):
    # before: "... or choose another --out" for an existing --html file
    existing = tmp_path / "r.html"
    existing.write_text("old")
    code, _, err = run_here(capsys, npz, *FAST, "--html", existing)
    assert code == EXIT_OUTPUT and fits == []
    assert "choose another --html" in err and "--out" not in err
    link = tmp_path / "l.html"
    link.symlink_to(existing)
    code, _, err = run_here(capsys, npz, *FAST, "--html", link, "--force")
    assert code == EXIT_OUTPUT and "choose another --html" in err


def test_html_that_is_an_out_file_is_refused_first(tmp_path, capsys, npz, fits):
    out = tmp_path / "out"
    code, _, err = run_here(
        capsys, npz, *FAST, "--out", out, "--html", out / "report.json"
    )
    assert code == EXIT_OUTPUT and fits == []
    assert "writes a file of that name; choose another --html" in err


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_outputs_follow_the_umask(tmp_path, capsys, npz, umask, mode):
    # before: every output 0600 (tempfile.mkstemp), whatever the umask
    out = tmp_path / "out"
    old = os.umask(umask)
    try:
        code, _, err = run_here(
            capsys, npz, *FAST, "--out", out, "--html", tmp_path / "r.html"
        )
    finally:
        os.umask(old)
    assert code == 0, err
    written = [*out.iterdir(), tmp_path / "r.html"]
    assert len(written) == 5  # report, png, pickle, manifest, html
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == mode, path
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask


def test_html_in_a_new_out_folder(tmp_path, capsys, npz):
    out = tmp_path / "new"
    code, _, err = run_here(capsys, npz, *FAST, "--out", out, "--html", out / "r.html")
    assert code == 0, err
    assert (out / "r.html").read_text().startswith("<!DOCTYPE html>")
