"""Realised risk, set size and fit time of ConformalRiskController.

Run from the repository root::

    python -m benchmarks risk-control [--quick] [--out DIR] [--splits N]

**Multi-label false negative rate.** ``make_multilabel_classification(
n_samples=6000, n_features=20, n_classes=10, n_labels=3, random_state=0)``:
two models trained on the first 2000 rows (a one-vs-rest logistic
regression, whose ``predict_proba`` is an ``(n, L)`` matrix, and a random
forest of 100 trees, a list of per-label arrays with many tied
probabilities); the other 4000 rows are split ``--splits`` times (default
200) at random into 2000 calibration and 2000 test rows. On each split and
at each ``alpha``: the realised test FNR (mean over test rows; a row without
a true label has FNR 0) and the mean set size of

* ``ConformalRiskController(loss="fnr")`` (CRC), whose expected FNR is
  ``<= alpha`` (and ``>= alpha - 2 / (n + 1)`` without ties);
* ``p_j >= 0.5`` (the model's own prediction);
* a per-label threshold at each label's own ``alpha``-quantile of the
  calibration probabilities of its positives (``numpy.quantile``, linear),
  so that each label's calibration recall is about ``1 - alpha``.

Reported: the mean over splits and its standard error (standard deviation
over splits / sqrt(splits)). The forest's probabilities are multiples of
1/100 with many ties, so its risk steps are coarse and its realised FNR
sits below ``alpha`` (the upper bound holds, the lower one needs no ties).

**Multiclass miscoverage.** ``make_classification(n_samples=6000,
n_features=20, n_informative=8, n_classes=6, random_state=0)``, a logistic
regression on 2000 rows, the other 4000 split into 1000 calibration and
3000 test rows: CRC with ``loss="miscoverage"`` against
``ConformalClassifier(method="lac")`` (the same method: the share of
identical test sets is shown).

**Fit time.** ``fit`` on generated per-label probabilities (n rows, 100
labels, about 5 true labels a row) and multiclass probabilities (n rows, 10
classes); median of 3 after a warm-up.

Writes ``risk_control.md`` (a ``--quick`` run: a temporary folder unless
``--out`` is given; quick: 20 splits, smaller fit-time sizes). A full run
takes under a minute.
"""

import argparse
import time

import numpy as np
from sklearn.datasets import make_classification, make_multilabel_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier

from benchmarks import environment, markdown_table, output_dir, write_report
from skcalib._core.multilabel import positive_proba
from skcalib.conformal import ConformalClassifier, ConformalRiskController

ALPHAS = (0.05, 0.1, 0.2)


def fnr(sets, Y):
    """Per-row false negative rate (0 for rows without a true label)."""
    n_true = Y.sum(axis=1)
    hit = (sets & (Y == 1)).sum(axis=1)
    return np.where(n_true > 0, 1 - hit / np.maximum(n_true, 1), 0.0)


def per_label_sets(P_cal, Y_cal, P_test, alpha):
    """Each label's own threshold: the alpha-quantile of its positives."""
    thr = np.array(
        [
            np.quantile(P_cal[Y_cal[:, j] == 1, j], alpha)
            if (Y_cal[:, j] == 1).any()
            else 0.0
            for j in range(P_cal.shape[1])
        ]
    )
    return P_test >= thr


def multilabel_models():
    X, Y = make_multilabel_classification(
        n_samples=6000, n_features=20, n_classes=10, n_labels=3, random_state=0
    )
    models = {
        "one-vs-rest logistic": OneVsRestClassifier(LogisticRegression(max_iter=1000)),
        "random forest": RandomForestClassifier(n_estimators=100, random_state=0),
    }
    out = {}
    for name, model in models.items():
        model.fit(X[:2000], Y[:2000])
        out[name] = positive_proba(model.predict_proba(X[2000:]), model)
    return out, Y[2000:]


def _mean_se(values):
    values = np.asarray(values)
    return values.mean(0), values.std(0, ddof=1) / np.sqrt(len(values))


def multilabel_rows(n_splits):
    probas, Y = multilabel_models()
    rows = []
    for name, P in probas.items():
        for alpha in ALPHAS:
            res = []
            for seed in range(n_splits):
                perm = np.random.default_rng(seed).permutation(len(P))
                cal, test = perm[:2000], perm[2000:]
                crc = ConformalRiskController(alpha=alpha).fit(P[cal], Y[cal])
                rules = (
                    crc.predict_set(P[test]),
                    P[test] >= 0.5,
                    per_label_sets(P[cal], Y[cal], P[test], alpha),
                )
                res.append(
                    [
                        v
                        for s in rules
                        for v in (fnr(s, Y[test]).mean(), s.sum(1).mean())
                    ]
                )
            mean, se = _mean_se(res)
            cells = [
                f"{m:.4f} ± {e:.4f}" if i % 2 == 0 else f"{m:.2f}"
                for i, (m, e) in enumerate(zip(mean, se, strict=True))
            ]
            rows.append([name, alpha, *cells])
    return rows


def multiclass_rows(n_splits):
    X, y = make_classification(
        n_samples=6000, n_features=20, n_informative=8, n_classes=6, random_state=0
    )
    clf = LogisticRegression(max_iter=1000).fit(X[:2000], y[:2000])
    P, y = clf.predict_proba(X[2000:]), y[2000:]
    rows = []
    for alpha in ALPHAS:
        res = []
        for seed in range(n_splits):
            perm = np.random.default_rng(seed).permutation(len(P))
            cal, test = perm[:1000], perm[1000:]
            crc = ConformalRiskController(alpha=alpha).fit(P[cal], y[cal])
            lac = ConformalClassifier(alpha=alpha).fit(P[cal], y[cal])
            s, t = crc.predict_set(P[test]), lac.predict_set(P[test])
            miss = 1 - s[np.arange(test.size), y[test]].mean()
            res.append([miss, s.sum(1).mean(), (s == t).all(axis=1).mean()])
        mean, se = _mean_se(res)
        rows.append(
            [alpha, f"{mean[0]:.4f} ± {se[0]:.4f}", f"{mean[1]:.2f}", f"{mean[2]:.4f}"]
        )
    return rows


def _median_time(fn, repeat=3):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _fitter(P, y):
    return lambda: ConformalRiskController(alpha=0.1).fit(P, y)


def fit_time_rows(sizes):
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        P = rng.uniform(size=(n, 100))
        Y = (rng.uniform(size=(n, 100)) < 0.05).astype(np.int8)
        t = _median_time(_fitter(P, Y))
        rows.append([f"fnr, {n} x 100", f"{int(Y.sum())}", f"{t * 1e3:.1f}"])
        Q = rng.dirichlet(np.ones(10), size=n)
        y = rng.integers(0, 10, size=n)
        t = _median_time(_fitter(Q, y))
        rows.append([f"miscoverage, {n} x 10", f"{n}", f"{t * 1e3:.1f}"])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    parser.add_argument("--splits", type=int, default=None)
    args = parser.parse_args(argv)
    n_splits = args.splits or (20 if args.quick else 200)
    sizes = (10_000,) if args.quick else (10_000, 100_000)
    ml = multilabel_rows(n_splits)
    mc = multiclass_rows(n_splits)
    ft = fit_time_rows(sizes)
    text = "\n\n".join(
        [
            "# Conformal risk control",
            "\n".join(environment()),
            f"## Multi-label FNR ({n_splits} splits, 2000 calibration / 2000 test)",
            "FNR: mean over splits ± its standard error; size: mean labels per set.",
            markdown_table(
                [
                    "model",
                    "alpha",
                    "CRC FNR",
                    "CRC size",
                    "p >= 0.5 FNR",
                    "p >= 0.5 size",
                    "per-label FNR",
                    "per-label size",
                ],
                ml,
            ),
            f"## Multiclass miscoverage ({n_splits} splits, 1000 / 3000)",
            markdown_table(
                ["alpha", "CRC miscoverage", "CRC size", "sets equal to LAC"], mc
            ),
            "## Fit time (median of 3)",
            markdown_table(["fit", "true labels", "ms"], ft),
        ]
    )
    path = write_report(output_dir(args.out, args.quick) / "risk_control.md", text)
    print(text)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
