"""The benchmark commands run end to end in their quick modes.

``python -m benchmarks speed --quick`` and ``quality --quick`` are run as
subprocesses from the repository root, writing to a temporary folder; the
tests check the exit status and that the markdown tables hold the expected
rows. They pass ``--peers none`` so that they take the same few seconds
whether or not the optional peers (netcal, torchmetrics, ...; their imports
alone take ~20 s) are installed; the skipping of a missing or broken peer is
tested directly on :func:`benchmarks._peers.load_peers`.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sklearn
from sklearn.utils.fixes import parse_version

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

pytestmark = pytest.mark.skipif(
    not (ROOT / "benchmarks" / "__main__.py").exists(),
    reason="benchmarks/ not in this checkout",
)


def _run(*args, out):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", *args, "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _mtimes():
    return {p.name: p.stat().st_mtime_ns for p in RESULTS.glob("*.md")}


def test_speed_quick(tmp_path):
    before = _mtimes()
    _run("speed", "--peers", "none", out=tmp_path)
    text = (tmp_path / "speed.md").read_text()
    assert text.startswith("# skcalib speed benchmark")
    for expected in (
        "- date: ",
        "- machine: ",
        "## Targets",
        "## Temperature scaling: fit",
        "## Platt scaling: fit",
        "## Isotonic regression: fit + predict",
        "## Histogram binning (15 uniform bins): fit + predict",
        "## Confidence ECE (15 uniform bins, L1)",
        "## Negative log-likelihood",
        "| 1e+04 | 2 | skcalib TemperatureCalibrator |",
        "| 1e+04 | 10 | skcalib TemperatureCalibrator(n_jobs=-1) |",
        "| 1e+04 | 10 | sklearn CalibratedClassifierCV(temperature) |",
        "| 1e+04 | 2 | sklearn IsotonicRegression alone |",
        "| 1e+04 | 10 | proba.max(axis=1) alone |",
        "| 1e+04 | 10 | skcalib expected_calibration_error |",
    ):
        assert expected in text, expected
    # sklearn's temperature scaling reaches skcalib's optimum.
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("| 1e+04 | 10 | sklearn CalibratedClassifierCV(temperature)")
    )
    if parse_version(sklearn.__version__) >= parse_version("1.8"):
        assert row.rstrip().endswith("| agrees |"), row
    else:  # method="temperature" arrived in scikit-learn 1.8: a noted failure
        assert "failed: InvalidParameterError" in row, row
    # A quick run never touches the committed full results.
    assert _mtimes() == before


def test_quality_quick(tmp_path):
    before = _mtimes()
    _run("quality", out=tmp_path)
    text = (tmp_path / "quality.md").read_text()
    assert text.startswith("# skcalib calibration quality on real predictions")
    data = ROOT.parent / "shared" / "data"
    if not data.is_dir():
        assert "No prediction sets found" in text
        return
    for expected in (
        "## Summary: best method per data set (by test NLL)",
        "## Mean rank by test NLL",
        "## Same method, same optimum?",
        "### splinecalib/mozilla4_1046_cb1",
        "### pycalib/mnist__AdaBoost",
        "| skcalib TemperatureCalibrator |",
        "| skcalib PlattCalibrator |",
        "| skcalib IsotonicCalibrator |",
        "| skcalib HistogramBinningCalibrator |",
        "| uncalibrated |",
    ):
        assert expected in text, expected
    assert "same optimum" in text
    assert _mtimes() == before


def test_missing_or_broken_peer_is_skipped(monkeypatch):
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import _peers
    finally:
        sys.path.remove(str(ROOT))
    monkeypatch.setitem(
        _peers.PEERS, "absent-peer", ("absent_peer_module", "absent-peer-dist")
    )
    # installed distribution, module that cannot be imported
    monkeypatch.setitem(_peers.PEERS, "broken-peer", ("no_such_module_xyz", "numpy"))
    status = _peers.load_peers(["sklearn", "absent-peer", "broken-peer"])
    assert status["sklearn"].ok
    assert not status["absent-peer"].ok
    assert "not installed" in status["absent-peer"].note
    assert not status["broken-peer"].ok
    assert "import failed" in status["broken-peer"].note
    notes = _peers.skip_notes(status)
    assert any(n.startswith("absent-peer: not installed") for n in notes)
    assert all("\n" not in n for n in notes)


@pytest.mark.parametrize(
    "command, title",
    [
        ("large", "# Calibration error of large data through Dask"),
        ("large-fit", "# Temperature scaling of large data through Dask"),
    ],
)
def test_large_data_quick(tmp_path, command, title):
    pytest.importorskip("dask")
    before = _mtimes()
    _run(command, out=tmp_path)
    name = "large.md" if command == "large" else "large_fit.md"
    text = (tmp_path / name).read_text()
    assert text.startswith(title)
    assert "ratio Dask / in memory" in text
    assert _mtimes() == before  # quick runs never touch the committed results
