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

import numpy as np
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
        "## Family summary: our default against the best peer",
        # scikit-learn >= 1.8 is the temperature peer; older ones have none
        "| temperature | 2/2 | 2/2 (100%) | 1.000 | 0 | 0 | yes |"
        if _sklearn_has_temperature()
        else "| temperature | 2/2 | no peer | - | 0 | 0 | yes |",
        "## Family comparison per data set",
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


def _sklearn_has_temperature():
    from sklearn.calibration import CalibratedClassifierCV

    constraint = CalibratedClassifierCV._parameter_constraints["method"]
    return any("temperature" in str(c) for c in constraint)


def _import_benchmarks(name):
    import importlib

    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(f"benchmarks.{name}")
    finally:
        sys.path.remove(str(ROOT))


def test_missing_or_broken_peer_is_skipped(monkeypatch):
    _peers = _import_benchmarks("_peers")
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


def test_cluster_quick(tmp_path):
    """Spark, Dask and in memory agree on a 1e5-row Parquet file."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    pytest.importorskip("dask.dataframe")
    import shutil

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed (Spark needs a JVM)")
    before = _mtimes()
    _run("cluster", out=tmp_path)
    text = (tmp_path / "cluster.md").read_text()
    assert text.startswith("# ECE, a conformal threshold and temperature scaling")
    rows = [line.split("|") for line in text.splitlines() if line.startswith("| ")]
    for call in ("confidence ECE", "quantile-bin ECE"):
        ece = {r[2].strip(): float(r[5]) for r in rows if r[1].strip() == call}
        assert len(ece) == 3 and max(ece.values()) - min(ece.values()) < 1e-12
    # an exact order statistic: the same float32 score on every engine
    q = {r[2].strip(): r[5].strip() for r in rows if r[1] == " conformal threshold "}
    assert len(q) == 3 and len(set(q.values())) == 1
    assert _mtimes() == before


# --------------------------------------------- the per-family comparison maths
def _res(label, library, family, losses):
    q = _import_benchmarks("quality")
    return q.Result(
        label,
        library,
        family,
        {"NLL": float(np.mean(losses))},
        losses=np.asarray(losses, dtype=float),
    )


def test_pair_difference_and_standard_error_match_scipy():
    F = _import_benchmarks("quality_families")
    from scipy import stats

    rng = np.random.default_rng(0)
    ours = [rng.exponential(size=400), rng.exponential(size=400)]
    other = [a + rng.normal(0.01, 0.05, size=400) for a in ours]
    p = F.pair(ours, other)
    d = [a - b for a, b in zip(ours, other, strict=True)]
    assert p.seeds == 2
    assert p.diff == pytest.approx(np.mean([x.mean() for x in d]), rel=1e-12)
    # per-seed standard errors (ddof=1), averaged over the seeds
    assert p.se == pytest.approx(np.mean([stats.sem(x) for x in d]), rel=1e-12)
    assert p.diff < 0 and p.ok  # ours lower by 0.01 on average
    worse = F.pair(other, ours)
    assert worse.diff > 2 * worse.se and not worse.ok
    # a seed where one of the two did not run is left out of both
    assert F.pair([ours[0], None], [other[0], other[1]]).seeds == 1
    assert F.pair([None], [other[0]]) is None


def test_compare_picks_the_best_peer_and_the_binary_equivalences():
    F = _import_benchmarks("quality_families")
    q = _import_benchmarks("quality")
    n = 200
    rng = np.random.default_rng(1)
    base = rng.exponential(size=n)
    ds = q.Dataset(
        "toy",
        np.zeros(n, int),
        np.ones((n, 2)) / 2,
        np.zeros(n, int),
        np.ones((n, 2)) / 2,
        "own",
    )
    seed0 = [
        _res("uncalibrated", "-", "none", base + 0.5),
        _res("skcalib VectorScalingCalibrator", "skcalib", "vector_scaling", base),
        _res("skcalib BetaCalibrator", "skcalib", "beta", base + 0.2),
        _res("betacal abm", "betacal", "beta", base + 0.1),
        _res("netcal beta", "netcal", "beta", base + 0.05),
        _res("netcal temperature", "netcal", "temperature", base - 1.0),
    ]
    rows = {r.family: r for r in F.compare([(ds, [seed0])])}
    # on two classes, vector scaling of log p is the beta map: beta peers only
    assert rows["vector_scaling"].peer_label == "netcal beta"
    assert rows["vector_scaling"].vs_peer.diff == pytest.approx(-0.05)
    assert rows["vector_scaling"].vs_peer.ok
    beta = rows["beta"]
    assert beta.peer_label == "netcal beta" and not beta.vs_peer.ok
    assert beta.vs_peer.ratio == pytest.approx(
        np.mean(base + 0.2) / np.mean(base + 0.05)
    )
    assert beta.vs_uncal.ok  # 0.3 below the uncalibrated model
    assert rows["temperature"].vs_uncal is None  # no skcalib temperature here
    stats = {s["family"]: s for s in F.summary(list(rows.values()))}
    assert stats["beta"]["ok"] == 0 and stats["beta"]["with_peer"] == 1
    assert stats["vector_scaling"]["share"] == 1.0
    assert "temperature" not in stats  # families without ours are left out


def test_sample_nll_is_skcalib_nll_per_row():
    q = _import_benchmarks("quality")
    from skcalib.metrics import negative_log_likelihood

    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(4), size=300)
    p[0] = [1.0, 0.0, 0.0, 0.0]  # a zero true-class probability: floored
    y = rng.integers(0, 4, size=300)
    y[0] = 1
    assert q.sample_nll(y, p).mean() == pytest.approx(
        negative_log_likelihood(y, p, labels=np.arange(4)), rel=1e-12
    )


def test_before_summary_round_trips(tmp_path):
    F = _import_benchmarks("quality_families")
    q = _import_benchmarks("quality")
    n = 100
    base = np.linspace(0.1, 1.0, n)
    ds = q.Dataset(
        "toy",
        np.zeros(n, int),
        np.ones((n, 2)) / 2,
        np.zeros(n, int),
        np.ones((n, 2)) / 2,
        "own",
    )
    seed0 = [
        _res("uncalibrated", "-", "none", base + 0.5),
        _res("skcalib BetaCalibrator", "skcalib", "beta", base + 0.2),
        _res("netcal beta", "netcal", "beta", base),
    ]
    rows = F.compare([(ds, [seed0])])
    path = tmp_path / "quality.md"
    path.write_text("Command: `x`\n\n" + "\n".join(F.render_summary(rows, 1)))
    table, head = F.read_summary(path)
    assert table["beta"]["ours <= best peer (within noise)"] == "0/1 (0%)"
    assert head == ["Command: `x`"]
    text = "\n".join(F.render_before_after(rows, (table, head), "quality.md"))
    assert "| beta | 0/1 (0%) | 0/1 (0%) |" in text


def test_choosing_counts_lowest_and_within_noise():
    C = _import_benchmarks("quality_choosing")
    q = _import_benchmarks("quality")
    n = 500
    rng = np.random.default_rng(3)
    base = rng.exponential(size=n)

    def ds(name, k):
        p = np.ones((n, k)) / k
        return q.Dataset(name, np.zeros(n, int), p, np.zeros(n, int), p, "own")

    def results(shift_a, shift_b):
        out = [
            _res("uncalibrated", "-", "none", base + 1.0),
            _res("skcalib A", "skcalib", "a", base + shift_a),
            _res("skcalib B", "skcalib", "b", base + shift_b),
        ]
        for r, acc in zip(out, (0.5, 0.5, 0.4), strict=True):
            r.scores["acc"] = acc
        return out

    noise = rng.normal(0, 1.0, size=n)
    done = [
        (ds("pycalib/x", 2), [results(0.0, 0.5)]),  # A lowest, B far
        (ds("netcal/y", 10), [results(0.0, 0.001 * noise)]),  # B within noise
    ]
    table, n_sets, acc = C.counts(done)
    assert n_sets == {"binary": 1, "nn": 1, "classical": 0}
    assert table["skcalib A"]["binary"] == [1, 1, 1]
    assert table["skcalib B"]["binary"] == [0, 0, 1]
    assert sum(table["skcalib B"]["nn"][:2]) >= 1  # lowest or within noise
    assert table["skcalib A"]["nn"][1] == 1
    assert acc["skcalib B"] == pytest.approx([-0.1, -0.1])
    text = "\n".join(C.render(done))
    assert C.START in text and C.END in text
    assert "multiclass, other models" not in text  # no set of that kind
    # read() gives back what render() wrote (the guide's figure reads it).
    groups, cells, accuracy = C.read(text)
    assert groups == ["binary", "multiclass, neural networks"]
    assert cells["A"]["binary"] == (1, 1, 1)
    assert cells["B"]["binary"] == (0, 0, 1)
    assert accuracy["B"] == pytest.approx(-10.0)
    with pytest.raises(ValueError, match="section"):
        C.read("no table here")


#: rows of the decision table in doc/user_guide/choosing.rst -> the column of
#: the committed benchmarks/results/quality.md they cite
_GUIDE_COLUMNS = {
    "Multiclass, a neural network": "multiclass, neural networks",
    "Multiclass, another model": "multiclass, other models",
    "Binary": "binary",
}


def test_choosing_guide_follows_the_committed_figures():
    import re

    C = _import_benchmarks("quality_choosing")
    guide = (ROOT / "doc" / "user_guide" / "choosing.rst").read_text()
    results = RESULTS / "quality.md"
    if not results.is_file() or C.START not in results.read_text():
        pytest.skip("no committed quality.md with the choosing table")
    groups, cells, _ = C.read(results.read_text())
    assert set(_GUIDE_COLUMNS.values()) == set(groups)
    body = guide.split(".. MEASURED-START")[1].split(".. MEASURED-END")[0]
    picks = re.findall(r"\* - ([^\n]+)\n\s+- :class:`(\w+)`", body)
    assert len(picks) == len(_GUIDE_COLUMNS), picks
    for situation, method in picks:
        key = next(k for k in _GUIDE_COLUMNS if situation.startswith(k))
        group = _GUIDE_COLUMNS[key]
        near = {name: row[group][1] for name, row in cells.items() if row[group]}
        best = max(near.values())
        assert near[method] == best, (
            f"choosing.rst recommends {method} for {situation!r}, but in "
            f"quality.md it is within noise of the lowest NLL on "
            f"{near[method]} sets and the best has {best}: update the guide"
        )
    # The page's figure and table are built from the same section.
    assert "quality_choosing import read" in guide


def test_cold_start_calls_every_public_metric_as_it_runs():
    # The full run calls each public metric of skcalib.metrics on these
    # inputs; a call that raises shows an error in the table instead of a
    # time (ensemble_proba and uncertainty_decomposition did: a member stack
    # must name its member_axis).
    from _discovery import every_metric_function

    import skcalib.metrics
    from benchmarks.bench_cold_start import DATA, METRICS

    public = {f.__name__ for f in every_metric_function()}
    assert set(METRICS) == public
    data = {"n": 300, "k": 4, "dtype": "float64"}
    exec(DATA, data)
    for name, call in METRICS.items():
        f = getattr(skcalib.metrics, name)
        eval(call, {**data, "f": f})  # raises if the call is wrong


def test_cold_start_builds_every_public_calibrator():
    # The full run times fit + predict_proba of each name in CALIBRATORS on
    # probabilities P (CalibratedClassifier: a naive Bayes on logits Z).
    from _discovery import score_calibrator_classes

    import skcalib
    from benchmarks.bench_cold_start import CALIBRATORS, DATA

    public = {cls.__name__ for cls in score_calibrator_classes()}
    assert set(CALIBRATORS) == public | {"CalibratedClassifier"}
    data = {"n": 300, "k": 4, "dtype": "float64"}
    exec(DATA, data)
    for name in CALIBRATORS:
        if name == "CalibratedClassifier":
            continue
        shift = name.endswith("ShiftConformalClassifier")
        kw = {"X_target": data["P"]} if shift else {}
        proba = getattr(skcalib, name)().fit(data["P"], data["y"], **kw)
        np.testing.assert_allclose(proba.predict_proba(data["P"]).sum(axis=1), 1.0)


def test_cold_start_quick(tmp_path):
    # Fresh processes: the confidence ECE's first call with a cold and a warm
    # numba cache and without numba, import times, and the score-cache grid.
    before = _mtimes()
    _run("cold-start", out=tmp_path)
    text = (tmp_path / "cold_start.md").read_text()
    assert text.startswith("# Cold start")
    for expected in (
        "## First call, 10,000 x 10",
        "| expected_calibration_error |",
        "## `import skcalib` against `import sklearn`",
        "| import skcalib |",
        "| wrapper grid in `with ScoreCache():` |",
        "Same mean test scores in all three: yes.",
        "| model snapshot (per lookup) |",
    ):
        assert expected in text, expected
    # 1e5 entries, far below accel.MIN_SIZE: no process imported numba.
    row = next(r for r in text.splitlines() if r.startswith("| expected_calib"))
    assert row.rstrip().endswith("| no |"), row
    assert _mtimes() == before


def test_monitor_quick(tmp_path):
    from benchmarks.bench_monitor import main

    assert main(["--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "monitor.md").read_text()
    assert "repeated Hosmer-Lemeshow" in text and "flagged within 5 batches" in text


def test_multilabel_quick(tmp_path):
    before = _mtimes()
    _run("multilabel", out=tmp_path)
    text = (tmp_path / "multilabel.md").read_text()
    assert text.startswith("# Multi-label calibration")
    for expected in (
        "| RandomForestClassifier | uncalibrated |",
        "| RandomForestClassifier | per-label isotonic |",
        "| MultiOutputClassifier(GaussianNB) | shared temperature |",
        "| MultiOutputClassifier(GaussianNB) | sklearn sigmoid loop |",
        "| 10,000 x 20 |",
    ):
        assert expected in text, expected
    assert _mtimes() == before


def test_shift_conformal_quick(tmp_path):
    from benchmarks.bench_shift_conformal import main

    assert main(["--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "shift_conformal.md").read_text()
    for expected in ("weighted, true priors", "weighted, domain classifier", "ms)"):
        assert expected in text, expected


def test_risk_control_quick(tmp_path):
    from benchmarks.bench_risk_control import main

    assert main(["--quick", "--splits", "5", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "risk_control.md").read_text()
    assert "## Multi-label FNR (5 splits" in text
    assert "| one-vs-rest logistic | 0.1 |" in text and "| 1.0000 |" in text
