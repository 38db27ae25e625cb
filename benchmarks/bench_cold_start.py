"""Cold start: first calls in fresh processes, ``import skcalib``, and the
score cache in a wrapper-mode grid search (issue 31).

Every figure is a median over fresh Python processes (``--repeat``, at
least 3 in a full run), each started with ``python -c`` and importing
skcalib from ``--src`` (default: this checkout), so that it can be run
against an older checkout for a before/after:

* **first call**: for every public metric and every calibrator's ``fit`` +
  ``predict_proba``, on ``--n`` x ``--k`` probabilities (default 2e5 x 10),
  the seconds of the first call in a fresh process, in three settings: the
  ``fast`` extra with a cold numba cache (a new, empty ``NUMBA_CACHE_DIR``
  per process), with a warm one (a ``NUMBA_CACHE_DIR`` filled by one
  untimed process first), and numba absent (``SKCALIB_DISABLE_NUMBA=1``).
  The ratios to numba absent come from the same run; ``numba`` says
  whether the process imported numba;
* **large input**: confidence ECE on 1e7 x 10 float32 (full run only), the
  first call in the three settings and the median of 3 warm calls after
  it: the kernel still runs there;
* **import**: ``import skcalib`` against ``import sklearn`` (at least 9
  fresh processes of each, alternating, numpy imported first), as Python
  runs here (with ``PYTHONDONTWRITEBYTECODE`` set, every process compiles
  skcalib from source) and with bytecode cached in a temporary
  ``PYTHONPYCACHEPREFIX`` (primed by one untimed process, as after ``pip
  install``); the difference is the median of the per-round differences;
* **score cache**: :class:`~sklearn.model_selection.GridSearchCV` (5 folds,
  the ECE scorer) over 16 values of ``n_bins`` of
  :class:`~skcalib.HistogramBinningCalibrator` wrapping a prefit
  ``HistGradientBoostingClassifier(max_iter=200)`` on 6000 calibration rows,
  with one thread: the raw-score grid on precomputed scores, the wrapper
  grid without a cache and inside ``with ScoreCache():``, the ratios to the
  raw grid, and the cost of the cache's key (one snapshot of the model, its
  pickle hash, one SHA-256 of a fold of ``X``).

Run ``python -m benchmarks cold-start [--quick] [--repeat R] [--n N]
[--src DIR] [--out DIR]``. ``--quick``: 1e4 x 10, the confidence ECE only, one
repeat, no large input, a 2-candidate grid on 1000 rows (seconds).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks import environment, markdown_table, output_dir, write_report

ROOT = Path(__file__).resolve().parents[1]

#: Metric name -> how it is called (``P``: probabilities, ``y``: labels,
#: ``S``: prediction sets, ``M``: 3 ensemble members, members first).
METRICS = {
    "aurc": "f(y, P)",
    "brier_score": "f(y, P)",
    "calibration_error_interval": "f(y, P, random_state=0)",
    "calibration_refinement_decomposition": "f(y, P)",
    "classwise_calibration_error": "f(y, P)",
    "classwise_set_coverage": "f(y, S)",
    "corp_decomposition": "f(y, P)",
    "correctness_auroc": "f(y, P)",
    "cumulative_calibration_test": "f(y, P)",
    "ensemble_proba": "f(M, member_axis=0)",
    "augrc": "f(y, P)",
    "excess_aurc": "f(y, P)",
    "expected_calibration_error": "f(y, P)",
    "hosmer_lemeshow_test": "f(y, P)",
    "kernel_calibration_error": "f(y, P)",
    "kernel_calibration_test": "f(y, P)",
    "ks_calibration_error": "f(y, P)",
    "maximum_calibration_error": "f(y, P)",
    "maximum_mean_calibration_error": "f(y, P)",
    "mean_set_size": "f(S)",
    "multilabel_brier_score": "f(Y, P)",
    "multilabel_calibration_error": "f(Y, P)",
    "multilabel_log_loss": "f(Y, P)",
    "multilabel_reliability_curve": "f(Y, P)",
    "negative_log_likelihood": "f(y, P)",
    "reliability_curve": "f(y, P)",
    "risk_coverage_curve": "f(y, P)",
    "selective_risk_at_coverage": "f(y, P, coverage=0.8)",
    "set_coverage_score": "f(y, S)",
    "size_stratified_coverage": "f(y, S)",
    "size_stratified_coverage_score": "f(y, S)",
    "smooth_calibration_error": "f(y, P)",
    "smooth_reliability_curve": "f(y, P)",
    "spiegelhalter_test": "f(y, P)",
    "uncertainty_decomposition": "f(M, member_axis=0)",
}

#: Calibrators built with their defaults (``CalibratedClassifier`` wraps a
#: Gaussian naive Bayes on the logits, with cv=3; the shift conformal
#: classifiers get ``X_target=P`` at fit): every public calibrator
#: of ``skcalib`` (``tests/test_benchmarks_quick.py`` checks the list).
#: ``BayesDecisionClassifier`` (needs a cost matrix) and
#: ``CrossConformalClassifier`` (fits an unfitted classifier per fold) are
#: decision and set makers on top of a model, not calibrators of scores.
CALIBRATORS = [
    "AutoCalibrator",
    "BetaCalibrator",
    "BiasCorrectedTemperatureCalibrator",
    "CalibratedClassifier",
    "ConformalClassifier",
    "ConformalRiskController",
    "CovariateShiftConformalClassifier",
    "DirichletCalibrator",
    "DirichletCalibratorCV",
    "EnsembleTemperatureCalibrator",
    "HistogramBinningCalibrator",
    "IdentityCalibrator",
    "IsotonicCalibrator",
    "LabelShiftConformalClassifier",
    "MatrixScalingCalibrator",
    "MatrixScalingCalibratorCV",
    "PlattCalibrator",
    "PriorShiftAdapter",
    "ScalingBinningCalibrator",
    "SplineCalibrator",
    "StructuredMatrixScalingCalibrator",
    "StructuredVectorScalingCalibrator",
    "TemperatureCalibrator",
    "VectorScalingCalibrator",
    "VennAbersCalibrator",
]

QUICK_TARGETS = ["metric:expected_calibration_error"]

#: The inputs of the calls in METRICS, from ``n``, ``k`` and ``dtype``
#: (``tests/test_benchmarks_quick.py`` runs every call on them).
DATA = textwrap.dedent(
    """
    import numpy as np
    rng = np.random.default_rng(0)
    Z = (rng.standard_normal((n, k)) * 2).astype(dtype)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = (rng.uniform(size=(n, 1)) > P.cumsum(axis=1)).sum(axis=1).clip(0, k - 1)
    S = P >= 0.1
    S[np.arange(n), P.argmax(axis=1)] = True
    M = np.stack([P, P[::-1], P[:, ::-1]])
    Y = (rng.uniform(size=(n, k)) < P).astype(np.int8)  # labels of P as multi-label
    """
)

CHILD = (
    textwrap.dedent(
        """
    import json, sys, time, warnings
    target, dtype = sys.argv[1], sys.argv[4]
    n, k, warm = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
    {DATA}
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    kind, name = target.split(":")
    if kind == "import":
        __import__(name)
        took = time.perf_counter() - t0
        print(json.dumps({"first": took, "numba": "numba" in sys.modules}))
        sys.exit()
    import skcalib
    if kind == "metric":
        import skcalib.metrics
        f = getattr(skcalib.metrics, name)
        call = {CALLS}[name]
        run = lambda: eval(call)
    else:
        cls = getattr(skcalib, name)
        if name == "CalibratedClassifier":
            from sklearn.naive_bayes import GaussianNB
            run = lambda: cls(GaussianNB(), cv=3).fit(Z, y).predict_proba(Z)
        else:
            # the shift conformal classifiers estimate from target rows
            shift = name.endswith("ShiftConformalClassifier")
            kw = {"X_target": P} if shift else {}
            run = lambda: cls().fit(P, y, **kw).predict_proba(P)
    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    run()
    first = time.perf_counter() - t1
    again = []
    for _ in range(warm):
        t1 = time.perf_counter()
        run()
        again.append(time.perf_counter() - t1)
    print(json.dumps({"import": t_import, "first": first, "again": again,
                      "numba": "numba" in sys.modules}))
    """
    )
    .replace("{CALLS}", repr(METRICS))
    .replace("{DATA}", DATA)
)


def child(
    target, n, k, *, mode, src, cache_dir=None, dtype="float64", warm=0, pyc=None
):
    """One fresh process: ``{"first": s, "numba": bool, ...}``; ``pyc``: a
    folder to read and write bytecode in (``PYTHONPYCACHEPREFIX``)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    if pyc is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pyc)
    env.pop("SKCALIB_DISABLE_NUMBA", None)
    env.pop("NUMBA_CACHE_DIR", None)
    if mode == "absent":
        env["SKCALIB_DISABLE_NUMBA"] = "1"
    elif cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, target, str(n), str(k), dtype, str(warm)],
        cwd=tempfile.gettempdir(),  # not the checkout: PYTHONPATH decides
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_calls(target, n, k, repeat, src, dtype="float64", warm=0):
    """Median first-call seconds per mode, and whether numba was imported."""
    out = {}
    with tempfile.TemporaryDirectory() as warm_dir:
        primed = child(target, n, k, mode="warm", src=src, cache_dir=warm_dir)
        for mode in ("cold", "warm", "absent"):
            runs = []
            for _ in range(repeat):
                if mode == "cold":
                    with tempfile.TemporaryDirectory() as cold_dir:
                        r = child(
                            target,
                            n,
                            k,
                            mode=mode,
                            src=src,
                            cache_dir=cold_dir,
                            dtype=dtype,
                            warm=warm,
                        )
                else:
                    r = child(
                        target,
                        n,
                        k,
                        mode=mode,
                        src=src,
                        cache_dir=warm_dir,
                        dtype=dtype,
                        warm=warm,
                    )
                if "error" in r:
                    out[mode] = r
                    break
                runs.append(r)
            else:
                out[mode] = {
                    "first": statistics.median(r["first"] for r in runs),
                    "again": statistics.median(
                        [statistics.median(r["again"]) for r in runs if r["again"]]
                        or [float("nan")]
                    ),
                    "numba": any(r["numba"] for r in runs),
                }
        if "error" in primed and "error" not in out.get("warm", {}):
            out["warm"] = primed
    return out


def _version(name):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "(not installed)"


def _cell(m, key="first"):
    return m["error"] if "error" in m else f"{m[key]:.3f}"


def _ratio(m, ref):
    if "error" in m or "error" in ref:
        return "-"
    return f"{m['first'] / ref['first']:.2f}"


def first_call_table(targets, n, k, repeat, src):
    rows, worst = [], 0.0
    for target in targets:
        got = first_calls(target, n, k, repeat, src)
        cold, warm, absent = got["cold"], got["warm"], got["absent"]
        rows.append(
            [
                target.split(":")[1],
                _cell(cold),
                _cell(warm),
                _cell(absent),
                _ratio(cold, absent),
                _ratio(warm, absent),
                "yes" if any(m.get("numba") for m in (cold, warm)) else "no",
            ]
        )
        for r in rows[-1][4:6]:
            if r != "-":
                worst = max(worst, float(r))
        print(" | ".join(rows[-1]), flush=True)
    headers = [
        "first call",
        "cold cache s",
        "warm cache s",
        "numba absent s",
        "cold / absent",
        "warm / absent",
        "numba imported",
    ]
    return markdown_table(headers, rows, "lrrrrrl"), worst


def import_table(repeat, src):
    """``import sklearn`` and ``import skcalib`` in alternating fresh
    processes, from source and with bytecode cached: medians and the median
    of the per-round differences."""
    got = {}
    with tempfile.TemporaryDirectory() as pyc:
        for name in ("sklearn", "skcalib"):  # prime the bytecode folder
            child(f"import:{name}", 1, 2, mode="warm", src=src, pyc=pyc)
        for setting, folder in (("source", None), ("bytecode", pyc)):
            runs = {"sklearn": [], "skcalib": []}
            for _ in range(repeat):
                for name in runs:
                    r = child(f"import:{name}", 1, 2, mode="warm", src=src, pyc=folder)
                    runs[name].append(r["first"])
            diffs = [
                b - a for a, b in zip(runs["sklearn"], runs["skcalib"], strict=True)
            ]
            got[setting] = {name: statistics.median(v) for name, v in runs.items()}
            got[setting]["difference"] = statistics.median(diffs)
    rows = [
        [
            name if name == "difference" else f"import {name}",
            f"{got['source'][name]:.3f}",
            f"{got['bytecode'][name]:.3f}",
            str(repeat),
        ]
        for name in ("sklearn", "skcalib", "difference")
    ]
    rows[-1][-1] = ""
    print(rows, flush=True)
    headers = ["", "from source, median s", "bytecode cached, median s", "processes"]
    return markdown_table(headers, rows, "lrrr"), got


GRID = textwrap.dedent(
    """
    import json, sys, time, warnings
    import numpy as np
    from threadpoolctl import threadpool_limits
    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import GridSearchCV
    from skcalib import HistogramBinningCalibrator, ScoreCache
    from skcalib._core import score_cache
    from skcalib.metrics import ece_scorer
    n, n_grid = int(sys.argv[1]), int(sys.argv[2])
    warnings.simplefilter("ignore")
    grid = {"n_bins": list(range(5, 5 + 5 * n_grid, 5))}
    with threadpool_limits(1):
        X, y = make_classification(
            5000 + n, n_features=20, n_informative=10, random_state=0
        )
        clf = HistGradientBoostingClassifier(
            max_iter=200, early_stopping=False, random_state=0
        )
        clf.fit(X[:5000], y[:5000])
        X, y = X[5000:], y[5000:]
        S = clf.decision_function(X)
        def search(est, data):
            return GridSearchCV(est, grid, scoring=ece_scorer, cv=5).fit(data, y)
        def timed(f):
            t = time.perf_counter(); r = f(); return time.perf_counter() - t, r
        def cached():
            with ScoreCache() as cache:
                return search(HistogramBinningCalibrator(estimator=clf), X)
        out = {}
        out["raw"], a = timed(lambda: search(HistogramBinningCalibrator(), S))
        wrapped = HistogramBinningCalibrator(estimator=clf)
        out["wrapper"], b = timed(lambda: search(wrapped, X))
        out["cached"], c = timed(cached)
        ref = a.cv_results_["mean_test_score"]
        same = all(
            np.array_equal(ref, r.cv_results_["mean_test_score"]) for r in (b, c)
        )
        fold = X[: n * 4 // 5].copy()
        def per(f, r=20):
            t = time.perf_counter()
            for _ in range(r):
                f()
            return (time.perf_counter() - t) / r
        snap = getattr(score_cache, "state_snapshot", None)
        out["snapshot"] = per(lambda: snap(clf)) if snap else float("nan")
        out["pickle_hash"] = per(lambda: score_cache.pickle_hash(clf))
        out["content_hash"] = per(lambda: score_cache.content_hash(fold))
        out["predict_fold"] = per(lambda: clf.decision_function(fold), 5)
        out["same"] = bool(same)
    print(json.dumps(out))
    """
)


def grid_table(n, n_grid, repeat, src):
    runs = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-c", GRID, str(n), str(n_grid)],
            cwd=tempfile.gettempdir(),
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            return f"grid failed: {proc.stderr.strip().splitlines()[-1:]}", {}
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    # Ratios per process (the same run), then their medians.
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "same"}
    ratio_w = statistics.median(r["wrapper"] / r["raw"] for r in runs)
    ratio_c = statistics.median(r["cached"] / r["raw"] for r in runs)
    same = all(r["same"] for r in runs)
    rows = [
        ["raw-score grid (precomputed scores)", f"{med['raw']:.3f}", "1.00"],
        ["wrapper grid, no cache", f"{med['wrapper']:.3f}", f"{ratio_w:.2f}"],
        [
            "wrapper grid in `with ScoreCache():`",
            f"{med['cached']:.3f}",
            f"{ratio_c:.2f}",
        ],
    ]
    keys = [
        ["model snapshot (per lookup)", f"{med['snapshot'] * 1e3:.3f}"],
        [
            "pickle_hash(model) (once per model state)",
            f"{med['pickle_hash'] * 1e3:.3f}",
        ],
        [
            f"content_hash(X fold, {n * 4 // 5} x 20)",
            f"{med['content_hash'] * 1e3:.3f}",
        ],
        [
            f"model.decision_function(X fold, {n * 4 // 5} x 20)",
            f"{med['predict_fold'] * 1e3:.3f}",
        ],
    ]
    text = "\n\n".join(
        [
            markdown_table(["grid", "median s", "/ raw grid"], rows, "lrr"),
            f"Same mean test scores in all three: {'yes' if same else 'NO'}. "
            f"Medians of {repeat} processes; ratios per process, then medians.",
            markdown_table(["key cost", "median ms"], keys, "lr"),
        ]
    )
    print(rows, keys, flush=True)
    return text, {"wrapper": ratio_w, "cached": ratio_c}


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks cold-start", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--src", default=str(ROOT), help="checkout to import skcalib from"
    )
    parser.add_argument("--only", default=None, help="comma list of target names")
    parser.add_argument(
        "--skip", default="", help="parts to skip: first,large,import,grid"
    )
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    loads = [os.getloadavg()[0]]
    load_start = os.getloadavg()
    skip = set(filter(None, args.skip.split(",")))
    if args.quick:
        n, repeat, targets = 10_000, 1, QUICK_TARGETS
        grid_n, n_grid = 1000, 2
        skip.add("large")
    else:
        n, repeat = args.n, max(args.repeat, 1)
        targets = [f"metric:{m}" for m in METRICS]
        targets += [f"calibrator:{c}" for c in CALIBRATORS]
        grid_n, n_grid = 6000, 16
    if args.only:
        wanted = set(args.only.split(","))
        targets = [t for t in targets if t.split(":")[1] in wanted]
    parts = [
        "# Cold start",
        __doc__.split("\n\n", 1)[1].rsplit("\n\nRun", 1)[0],
        f"skcalib imported from `{args.src}`.",
    ]
    if "first" not in skip:
        table, worst = first_call_table(targets, n, args.k, repeat, args.src)
        parts += [
            f"## First call, {n:,} x {args.k}, medians of {repeat} processes",
            table,
            f"Largest ratio to numba absent: {worst:.2f}.",
        ]
        loads.append(os.getloadavg()[0])
    if "large" not in skip:
        got = first_calls(
            "metric:expected_calibration_error",
            10_000_000,
            10,
            repeat,
            args.src,
            dtype="float32",
            warm=3,
        )
        rows = [
            [mode, _cell(m), _cell(m, "again"), "yes" if m.get("numba") else "no"]
            for mode, m in got.items()
        ]
        print(rows, flush=True)
        loads.append(os.getloadavg()[0])
        parts += [
            "## Confidence ECE, 1e7 x 10 float32: first call and warm calls",
            markdown_table(
                [
                    "numba",
                    "first call s",
                    "later calls s (median of 3)",
                    "numba imported",
                ],
                rows,
                "lrrl",
            ),
        ]
    if "import" not in skip:
        table, _ = import_table(max(3 * repeat, 9) if not args.quick else 1, args.src)
        loads.append(os.getloadavg()[0])
        parts += [
            "## `import skcalib` against `import sklearn`",
            table,
            "`difference`: the median of the per-round differences (skcalib "
            "minus sklearn in the same round), not the difference of the "
            "medians. `import sklearn` already imports `sklearn.base`, "
            "`sklearn.utils.validation`, SciPy's `stats`, `sparse`, `optimize` "
            "and pandas; skcalib adds `sklearn.metrics` (its scorers subclass "
            "scikit-learn's), `sklearn.isotonic` and its own modules.",
        ]
    if "grid" not in skip:
        table, _ = grid_table(grid_n, n_grid, repeat, args.src)
        parts += [
            f"## Wrapper-mode grid ({n_grid} candidates x 5 folds, {grid_n} rows)",
            table,
        ]
    loads.append(os.getloadavg()[0])
    options = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m benchmarks cold-start", *options])
    load_end = os.getloadavg()
    parts += [
        f"Elapsed {time.perf_counter() - t0:.0f} s.",
        "\n".join(
            [
                f"- command: `{command}`",
                *environment(),
                f"- numba {_version('numba')}, threadpoolctl "
                f"{_version('threadpoolctl')}",
                "- load average (1, 5, 15 min) at the start "
                + ", ".join(f"{x:.2f}" for x in load_start)
                + ", at the end "
                + ", ".join(f"{x:.2f}" for x in load_end)
                + "; 1-min load after each part: "
                + ", ".join(f"{x:.2f}" for x in loads),
                f"- PYTHONDONTWRITEBYTECODE="
                f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}",
            ]
        ),
    ]
    path = write_report(
        output_dir(args.out, args.quick) / "cold_start.md", "\n\n".join(parts)
    )
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
