"""Label-shift adaptation after calibration: EM and BBSE on real predictions.

Run from the repository root::

    python -m benchmarks.bench_prior_shift [--quick] [--seeds N] [--out DIR]

Reproduces the qualitative finding of Alexandari, Kundaje & Shrikumar (2020,
"Maximum Likelihood with Bias-Corrected Calibration is Hard-To-Beat at Label
Shift Adaptation") on real CIFAR-10 predictions from ``shared/data``
(WideResNet-16-4, LeNet-5, VGG-16; 10000 test rows each, probabilities,
``log p`` used as logits).

Protocol, per data set, shift and seed: the rows are split at random in two
halves. The *source* half (natural priors, about uniform) is the
calibration set: four calibrations are fitted on it by NLL -- none,
:class:`TemperatureCalibrator` (TS), :class:`BiasCorrectedTemperatureCalibrator`
(BCTS) and :class:`VectorScalingCalibrator` (VS). The *target* set is 2000
rows drawn with replacement from the other half, class by class, with
priors ``pi_t``: ``dirichlet(a)``: ``pi_t ~ Dirichlet(a, ..., a)``;
``tweak-one(r)``: one random class gets ``r``, the others share ``1 - r``.
Each calibration's target probabilities are then adapted by
:class:`PriorShiftAdapter` (source priors: the source label frequencies)
with ``method="em"``, ``"bbse"`` (hard confusion matrix of the calibrated
argmax) and the true ``pi_t`` given ("oracle"). Reported, as means over the
seeds: target NLL and accuracy without adaptation and after each, and the
prior-estimation error ``sum_k |pi_hat_k - pi_k|`` against the true priors
the target was drawn with. The NLL floors probabilities at float64's eps
(as :func:`sklearn.metrics.log_loss`): BBSE clips negative prior estimates
to 0, and a target sample of a class given prior 0 costs ``-log(eps) = 36``.

Writes ``prior_shift.md`` into ``--out`` (a full run without ``--out``:
``benchmarks/results/``). A full run (3 sets x 3 shifts x 20 seeds) takes
under a minute on the shared 2-core machine.
"""

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks import environment, fmt, markdown_table, output_dir
from benchmarks import write_report as _write
from benchmarks.quality import DATA_DIR
from skcalib.calibration._bias_temperature import BiasCorrectedTemperatureCalibrator
from skcalib.calibration._identity import IdentityCalibrator
from skcalib.calibration._matrix_scaling import VectorScalingCalibrator
from skcalib.calibration._prior_shift import PriorShiftAdapter
from skcalib.calibration._temperature import TemperatureCalibrator

_NETCAL = ("predictions", "ground_truth")
DATASETS = {
    "CIFAR-10 WRN-16-4": ("netcal/wideresnet-16-4-cifar-10.npz", *_NETCAL),
    "CIFAR-10 LeNet-5": ("netcal/lenet-5-cifar-10.npz", *_NETCAL),
    "CIFAR-10 VGG-16": ("verified_calibration/cifar10_vgg16.npz", "probs", "labels"),
}
CALIBRATORS = {
    "none": IdentityCalibrator,
    "TS": TemperatureCalibrator,
    "BCTS": BiasCorrectedTemperatureCalibrator,
    "VS": VectorScalingCalibrator,
}
SHIFTS = ("dirichlet(1)", "dirichlet(0.1)", "tweak-one(0.5)")
N_TARGET = 2000


def target_priors(shift, k, rng):
    """Target class priors of one shift."""
    kind, _, arg = shift.partition("(")
    value = float(arg.rstrip(")"))
    if kind == "dirichlet":
        return rng.dirichlet(np.full(k, value))
    priors = np.full(k, (1.0 - value) / (k - 1))
    priors[rng.integers(k)] = value
    return priors


def split(labels, priors, rng):
    """Source indices (half the rows) and target indices (``N_TARGET`` rows
    drawn with replacement from the other half with ``priors``)."""
    order = rng.permutation(labels.size)
    source, pool = order[: labels.size // 2], order[labels.size // 2 :]
    y_target = rng.choice(priors.size, size=N_TARGET, p=priors)
    target = np.empty(N_TARGET, dtype=np.intp)
    for k in range(priors.size):
        rows = pool[labels[pool] == k]
        where = np.flatnonzero(y_target == k)
        target[where] = rng.choice(rows, size=where.size)
    return source, target


def nll_acc(proba, y):
    """Mean NLL (probabilities floored at float64's eps, as scikit-learn's
    ``log_loss``: a prior estimated at 0 costs 36 per sample of that class)
    and accuracy."""
    p = np.maximum(proba[np.arange(y.size), y], np.finfo(np.float64).eps)
    return float(-np.log(p).mean()), float((proba.argmax(axis=1) == y).mean())


def run_one(logits, labels, shift, seed):
    """``{(calibrator, adaptation): (nll, acc, prior_error)}`` of one split."""
    rng = np.random.default_rng(seed)
    k = logits.shape[1]
    priors = target_priors(shift, k, rng)
    source, target = split(labels, priors, rng)
    zs, ys, zt, yt = logits[source], labels[source], logits[target], labels[target]
    out = {}
    for cal_name, cls in CALIBRATORS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cal = cls().fit(zs, ys)
        ps, pt = cal.predict_proba(zs), cal.predict_proba(zt)
        out[cal_name, "no adaptation"] = (*nll_acc(pt, yt), np.nan)
        for name, adapter in (
            ("EM", PriorShiftAdapter(method="em", max_iter=10000)),
            ("BBSE", PriorShiftAdapter(method="bbse")),
            ("oracle priors", PriorShiftAdapter(target_priors=priors)),
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                adapter.fit(ps, ys)
                if adapter.target_priors is None:
                    adapter.fit_target(pt)
            error = float(np.abs(adapter.target_priors_ - priors).sum())
            out[cal_name, name] = (*nll_acc(adapter.predict_proba(pt), yt), error)
    return out


def load(relpath, pkey, ykey):
    with np.load(DATA_DIR / relpath) as data:
        p = np.asarray(data[pkey], dtype=np.float64)
        y = np.asarray(data[ykey], dtype=np.intp)
    p /= p.sum(axis=1, keepdims=True)
    return np.log(np.maximum(p, 1e-12)), y


def table(results):
    headers = ["calibration", "adaptation", "target NLL", "accuracy", "|pi_hat - pi|_1"]
    rows = []
    for (cal, adapt), values in results.items():
        nll, acc, err = np.mean(values, axis=0)
        rows.append([cal, adapt, fmt(nll), fmt(acc), fmt(err, 3)])
    return markdown_table(headers, rows, align="llrrr")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 set, 2 seeds")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    names = list(DATASETS)[:1] if args.quick else list(DATASETS)
    seeds = 2 if args.quick else args.seeds
    start = time.perf_counter()
    parts = [
        "# Label-shift adaptation after calibration",
        "",
        *environment(),
        "",
        f"{seeds} seeds per shift; target sets of {N_TARGET} rows; means over "
        "seeds. NLL and accuracy on the shifted target; the prior error is "
        "against the priors the target was drawn with.",
    ]
    for name in names:
        logits, labels = load(*DATASETS[name])
        for shift in SHIFTS:
            results = {}
            for seed in range(seeds):
                for key, value in run_one(logits, labels, shift, seed).items():
                    results.setdefault(key, []).append(value)
            section = f"## {name}, {shift}\n\n{table(results)}"
            print(section + "\n", flush=True)
            parts += ["", section]
    elapsed = time.perf_counter() - start
    parts += ["", f"Run time: {elapsed:.0f} s."]
    path = _write(output_dir(args.out, args.quick) / "prior_shift.md", "\n".join(parts))
    print(f"wrote {path} ({elapsed:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
