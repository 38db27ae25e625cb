"""Conformal prediction sets under label and covariate shift: coverage, set
size and speed of plain and weighted split conformal.

Run from the repository root::

    python -m benchmarks shift-conformal [--quick] [--splits N] [--out DIR]

Label shift (:class:`LabelShiftConformalClassifier`): the CIFAR-10
WideResNet probabilities shipped in ``skcalib.datasets``; per split, a
random half (natural, balanced priors) is the calibration set, and 2000
rows are drawn by class from the other half with priors where class 5
(dog, the class plain LAC covers least) is 10 times as frequent as each
other class: 1000 unlabelled target rows (for the prior estimates) and
1000 test rows. Resampling by class is a pure label shift.

Covariate shift (:class:`CovariateShiftConformalClassifier`): ``x ~
N(0, 1)`` and ``z ~ N(0, 1)`` on the source, ``P(y = 1 | x, z) =
sigmoid(4 exp(-x) z)`` (labels noisier for larger ``x``); the target is the
source tilted by ``exp(beta x)``, i.e. ``x ~ N(beta, 1)`` with the
likelihood ratio ``exp(beta x - beta^2 / 2)``, ``beta = 1``. A logistic
regression fitted on 5000 source rows is the prefit model; per split, 1000
calibration rows, 1000 unlabelled target rows (for the domain classifier)
and 1000 test rows.

Both at ``alpha = 0.1`` with LAC scores; the table gives the mean coverage
(with its standard error over the splits) and mean set size; the speed
table, the median time of ``predict_set`` on 10000 rows.

Writes ``shift_conformal.md`` into ``--out`` (a full run without
``--out``: ``benchmarks/results/``). A full run (200 splits) takes about
20 s.
"""

import argparse
import sys
import time

import numpy as np
from sklearn.linear_model import LogisticRegression

from benchmarks import environment, fmt, markdown_table, output_dir
from benchmarks import write_report as _write
from skcalib import (
    ConformalClassifier,
    CovariateShiftConformalClassifier,
    LabelShiftConformalClassifier,
)
from skcalib.datasets import load_predictions

ALPHA = 0.1
HARD_CLASS = 5


def _coverage(sets, y):
    return sets[np.arange(y.size), y].mean(), sets.sum(axis=1).mean()


def _cifar():
    data = load_predictions("cifar10_wideresnet")
    P = data.probs.astype(np.float64)
    return P / P.sum(axis=1, keepdims=True), data.labels


def _shifted_priors():
    q = np.ones(10)
    q[HARD_CLASS] = 10.0
    return q / q.sum()


def label_shift(n_splits, seed=0):
    """Coverage and size per split and method under the 10x label shift."""
    P, Y = _cifar()
    q = _shifted_priors()
    rng = np.random.default_rng(seed)
    out = {}
    for _ in range(n_splits):
        idx = rng.permutation(Y.size)
        cal, pool = idx[:5000], idx[5000:]
        counts = rng.multinomial(2000, q)
        rows = [rng.choice(pool[Y[pool] == k], counts[k]) for k in range(10)]
        drawn = rng.permutation(np.concatenate(rows))
        target, test = drawn[:1000], drawn[1000:]
        models = {
            "plain split conformal": ConformalClassifier(alpha=ALPHA),
            "weighted, true priors": LabelShiftConformalClassifier(
                target_priors=q, alpha=ALPHA
            ),
            "weighted, EM priors": LabelShiftConformalClassifier(alpha=ALPHA),
            "weighted, BBSE priors": LabelShiftConformalClassifier(
                prior_method="bbse", alpha=ALPHA
            ),
        }
        for name, model in models.items():
            extra = {"X_target": P[target]} if "EM" in name or "BBSE" in name else {}
            model.fit(P[cal], Y[cal], **extra)
            out.setdefault(name, []).append(
                _coverage(model.predict_set(P[test]), Y[test])
            )
    return out


def _draw(rng, n, shift):
    x, z = rng.normal(shift, 1.0, n), rng.normal(0.0, 1.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-4.0 * np.exp(-x) * z))).astype(int)
    return np.c_[x, z], y


def _true_ratio(X):
    return np.exp(np.asarray(X)[:, 0] - 0.5)


def covariate_shift(n_splits, seed=0):
    """Coverage and size per split and method under the ``exp(x)`` tilt."""
    rng = np.random.default_rng(seed)
    model = LogisticRegression().fit(*_draw(rng, 5000, 0.0))
    out = {}
    for _ in range(n_splits):
        X_cal, y_cal = _draw(rng, 1000, 0.0)
        X_target, _ = _draw(rng, 1000, 1.0)
        X_test, y_test = _draw(rng, 1000, 1.0)
        models = {
            "plain split conformal": ConformalClassifier(model, alpha=ALPHA).fit(
                X_cal, y_cal
            ),
            "weighted, true ratio": CovariateShiftConformalClassifier(
                model, likelihood_ratio=_true_ratio, alpha=ALPHA
            ).fit(X_cal, y_cal),
            "weighted, domain classifier": CovariateShiftConformalClassifier(
                model, alpha=ALPHA
            ).fit(X_cal, y_cal, X_target=X_target),
        }
        for name, est in models.items():
            out.setdefault(name, []).append(_coverage(est.predict_set(X_test), y_test))
    return out


def _median_time(fn, repeat=5):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def speed(repeat):
    """Median seconds of ``predict_set`` on 10000 rows, plain and weighted."""
    P, Y = _cifar()
    rng = np.random.default_rng(1)
    rows = []
    fitted = {
        "ConformalClassifier (LAC)": ConformalClassifier().fit(P[:5000], Y[:5000]),
        "LabelShiftConformalClassifier (LAC)": LabelShiftConformalClassifier(
            target_priors=_shifted_priors()
        ).fit(P[:5000], Y[:5000]),
        "LabelShiftConformalClassifier (APS)": LabelShiftConformalClassifier(
            target_priors=_shifted_priors(), method="aps", random_state=0
        ).fit(P[:5000], Y[:5000]),
    }
    for method in ("lac", "aps"):
        est = CovariateShiftConformalClassifier(
            likelihood_ratio="given", method=method, random_state=0
        ).fit(P[:5000], Y[:5000], calibration_weight=rng.random(5000))
        fitted[f"CovariateShiftConformalClassifier ({method.upper()})"] = est
    Q = P[np.arange(10000) % 5000 + 5000]
    w = rng.random(10000)
    for name, est in fitted.items():
        kwargs = {"test_weight": w} if "Covariate" in name else {}
        t = _median_time(lambda est=est, kw=kwargs: est.predict_set(Q, **kw), repeat)
        rows.append([name, fmt(1e3 * t, 3)])
    return markdown_table(["estimator", "predict_set, 1e4 x 10 (ms)"], rows, "lr")


def table(results):
    rows = []
    for name, values in results.items():
        v = np.asarray(values)
        se = v[:, 0].std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan
        rows.append([name, fmt(v[:, 0].mean()), fmt(se, 2), fmt(v[:, 1].mean(), 3)])
    return markdown_table(
        ["method", "coverage", "SE", "mean set size"], rows, align="lrrr"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 splits")
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    n_splits = 5 if args.quick else args.splits
    start = time.perf_counter()
    parts = [
        "# Conformal prediction sets under label and covariate shift",
        "",
        *environment(),
        "",
        f"alpha = {ALPHA}, LAC scores, {n_splits} random splits; target "
        f"coverage {1 - ALPHA:g}.",
    ]
    for title, run in (
        ("Label shift (CIFAR-10 WRN, class 5 ten times as frequent)", label_shift),
        ("Covariate shift (Gaussian tilt exp(x), logistic model)", covariate_shift),
    ):
        section = f"## {title}\n\n{table(run(n_splits))}"
        print(section + "\n", flush=True)
        parts += ["", section]
    section = f"## Speed\n\n{speed(2 if args.quick else 5)}"
    print(section + "\n", flush=True)
    parts += ["", section]
    elapsed = time.perf_counter() - start
    parts += ["", f"Run time: {elapsed:.0f} s."]
    out = output_dir(args.out, args.quick) / "shift_conformal.md"
    path = _write(out, "\n".join(parts))
    print(f"wrote {path} ({elapsed:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
