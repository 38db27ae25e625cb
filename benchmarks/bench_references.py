"""Published numbers recomputed: every figure that ``shared/data`` lets us check.

Run from the repository root::

    python -m benchmarks references [--quick] [--out DIR]

Each row is a number somebody published (a paper, a figure, the README of
the data files) or printed with their own code on the same file, and the
same quantity computed by skcalib. The run prints ``published | ours |
difference | tolerance`` and **exits with status 1 when a row drifts**
beyond its tolerance, so that a change of an estimator's convention cannot
pass unnoticed. The tolerance of a row is half a unit of the last digit
published (a figure read off a plot: the issue's ``+-0.002``), or, for
numbers printed by the authors' code, the size of a documented difference
of convention (bin edges between ties) and nothing more.

Rows, by source:

* ``shared/data/README.md`` (netcal's records; Kumar, Liang & Ma's VGG-16):
  accuracy and the confidence ECE (15 equal-width bins, right-closed) of
  five prediction files.
* Gupta & Ramdas (2022), CIFAR-10 ResNet-50 logits of ``aigen/``: top-label
  ECE (15 equal-mass bins within each predicted class, weighted by the
  class shares: ``expected_calibration_error(kind="top_label",
  strategy="quantile")``) of the base model, after temperature scaling and
  after top-label histogram binning with 50 calibration points per bin,
  each fitted on the 5000-row val split and scored on the 10000-row test
  split.
* Kumar, Liang & Ma (2019), their package ``uncertainty-calibration`` 0.1.4
  on the VGG-16 file: L2 calibration error with 15 equal-mass bins, plug-in
  and debiased, top-label (their ``"top-label"`` mode is skcalib's
  ``kind="confidence"``) and marginal (the root of the mean over classes of
  each class's squared error, the debiased square clipped at 0 per class as
  their ``unbiased_l2_ce`` does, built here from skcalib's per-class
  ``kind="classwise"`` values). Their equal-mass bins split the sorted
  scores into equal counts with edges at midpoints; skcalib's edges are the
  inverted-CDF quantiles: the two differ by at most 1.5e-4 here, the
  rows' tolerance.

Not recomputable from these files (listed so that nobody looks for them):
the tables of Kull et al. (2019) and Guo et al. (2017) were computed on
their own networks' logits, which ``shared/data`` does not hold.

Writes ``references.md`` into ``--out`` (a full run without ``--out``:
``benchmarks/results/``). ``--quick`` runs the rows that need no fit (they
also run in the test suite, tests/test_benchmarks_references.py).
"""

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.special import softmax

from benchmarks import environment, markdown_table, output_dir
from benchmarks import write_report as _write
from benchmarks.quality import DATA_DIR
from skcalib.metrics import expected_calibration_error


@dataclass(frozen=True)
class Reference:
    """One published number and how skcalib recomputes it."""

    source: str
    quantity: str
    published: float
    tolerance: float
    compute: Callable[[], float]
    quick: bool = True


@cache
def _load(relpath):
    path = DATA_DIR / relpath
    if not path.exists():
        raise FileNotFoundError(f"{path} is not available (shared/data)")
    with np.load(path) as data:
        keys = set(data.files)
        scores = next(data[k] for k in ("predictions", "probs", "logits") if k in keys)
        labels = next(data[k] for k in ("ground_truth", "labels") if k in keys)
    return scores, labels


def _accuracy(relpath):
    p, y = _load(relpath)
    return float(np.mean(p.argmax(axis=1) == y))


def _confidence_ece(relpath):
    p, y = _load(relpath)
    return float(expected_calibration_error(y, p))


# --------------------------------------------------------- Gupta & Ramdas
AIGEN_VAL = "aigen/cifar10_resnet50_val.npz"
AIGEN_TEST = "aigen/cifar10_resnet50_test.npz"


def _top_label_ece(y, proba):
    """Gupta & Ramdas' estimator: 15 equal-mass bins per predicted class."""
    return float(
        expected_calibration_error(
            y, proba, kind="top_label", strategy="quantile", n_bins=15
        )
    )


def _aigen_base():
    logits, y = _load(AIGEN_TEST)
    return _top_label_ece(y, softmax(logits.astype(np.float64), axis=1))


def _aigen_temperature():
    from skcalib import TemperatureCalibrator

    lv, yv = _load(AIGEN_VAL)
    lt, yt = _load(AIGEN_TEST)
    return _top_label_ece(yt, TemperatureCalibrator().fit(lv, yv).predict_proba(lt))


def _aigen_top_label_binning():
    """Top-label histogram binning, 50 calibration points per bin: with 5000
    val rows over 10 predicted classes (475-526 rows each), 10 equal-mass
    bins per class, no smoothing (their method has none)."""
    from skcalib import HistogramBinningCalibrator

    lv, yv = _load(AIGEN_VAL)
    lt, yt = _load(AIGEN_TEST)
    pv = softmax(lv.astype(np.float64), axis=1)
    pt = softmax(lt.astype(np.float64), axis=1)
    n_bins = round(len(yv) / pv.shape[1] / 50)
    cal = HistogramBinningCalibrator(
        n_bins=n_bins, strategy="quantile", smoothing=0.0, multi_class="top_label"
    ).fit(pv, yv)
    return _top_label_ece(yt, cal.predict_proba(pt))


# ------------------------------------------------------ Kumar, Liang & Ma
VGG = "verified_calibration/cifar10_vgg16.npz"


def _kumar_top(debias):
    p, y = _load(VGG)
    return float(
        expected_calibration_error(
            y, p.astype(np.float64), strategy="quantile", norm="l2", debias=debias
        )
    )


def _kumar_marginal(debias):
    p, y = _load(VGG)
    p = p.astype(np.float64)
    per_class = np.array(
        [
            expected_calibration_error(
                (y == k).astype(int),
                p[:, k],
                kind="classwise",
                strategy="quantile",
                norm="l2",
                debias=debias,
            )
            for k in range(p.shape[1])
        ]
    )
    # signed roots back to squares; their debiased square is clipped at 0
    squares = np.maximum(np.sign(per_class) * per_class**2, 0.0)
    return float(np.sqrt(squares.mean()))


README_SOURCE = "shared/data README"
GR = "Gupta & Ramdas 2022"
KUMAR = "Kumar, Liang & Ma 2019 (their code)"

#: (file, accuracy, confidence ECE) as ``shared/data/README.md`` prints them.
README_FIGURES = (
    ("netcal/densenet-bc-100-cifar-100.npz", 0.7541, 0.1422),
    ("netcal/wideresnet-16-4-cifar-100.npz", 0.7543, 0.0581),
    ("netcal/wideresnet-16-4-cifar-10.npz", 0.9109, 0.0537),
    (VGG, 0.9359, 0.0398),
    ("pycalib/mnist__AdaBoost.npz", 0.7306, 0.6124),
)


def _readme_rows():
    rows = []
    for relpath, acc, ece in README_FIGURES:
        name = relpath.split("/")[-1].removesuffix(".npz")
        rows.append(
            Reference(
                README_SOURCE,
                f"{name}: accuracy",
                acc,
                5e-5,
                lambda r=relpath: _accuracy(r),
            )
        )
        rows.append(
            Reference(
                README_SOURCE,
                f"{name}: confidence ECE (15 bins)",
                ece,
                5e-5,
                lambda r=relpath: _confidence_ece(r),
            )
        )
    return rows


def references():
    """Every row, in the order printed."""
    return [
        *_readme_rows(),
        Reference(
            GR,
            "ResNet-50 top-label ECE, base (their figure)",
            0.024,
            0.002,
            _aigen_base,
        ),
        Reference(
            GR,
            "ResNet-50 top-label ECE, base (their code)",
            0.02373,
            1.5e-4,
            _aigen_base,
        ),
        Reference(
            GR,
            "ResNet-50 top-label ECE, temperature scaling",
            0.022,
            0.002,
            _aigen_temperature,
            quick=False,
        ),
        Reference(
            GR,
            "ResNet-50 top-label ECE, top-label binning 50/bin",
            0.015,
            0.002,
            _aigen_top_label_binning,
            quick=False,
        ),
        Reference(
            KUMAR,
            "VGG-16 top-label L2 CE, plug-in",
            0.0781007540575716,
            1.5e-4,
            lambda: _kumar_top(False),
        ),
        Reference(
            KUMAR,
            "VGG-16 top-label L2 CE, debiased",
            0.07768203565242601,
            1.5e-4,
            lambda: _kumar_top(True),
        ),
        Reference(
            KUMAR,
            "VGG-16 marginal L2 CE, plug-in",
            0.01177821128520464,
            1.5e-4,
            lambda: _kumar_marginal(False),
        ),
        Reference(
            KUMAR,
            "VGG-16 marginal L2 CE, debiased",
            0.010671296134445332,
            1.5e-4,
            lambda: _kumar_marginal(True),
        ),
    ]


def evaluate(rows):
    """``(reference, ours, difference, ok)`` for each row; a row whose data
    file is missing gives ``ours=None`` and counts as a failure."""
    results = []
    for ref in rows:
        try:
            ours = ref.compute()
        except FileNotFoundError as exc:
            print(f"{ref.source}, {ref.quantity}: {exc}", file=sys.stderr)
            results.append((ref, None, None, False))
            continue
        diff = ours - ref.published
        results.append((ref, ours, diff, abs(diff) <= ref.tolerance))
    return results


def _table(results):
    rows = [
        (
            ref.source,
            ref.quantity,
            f"{ref.published:.6g}",
            "-" if ours is None else f"{ours:.6g}",
            "-" if diff is None else f"{diff:+.2e}",
            f"{ref.tolerance:.1e}",
            "ok" if ok else "DRIFT",
        )
        for ref, ours, diff, ok in results
    ]
    headers = ["source", "quantity", "published", "ours", "difference", "tolerance", ""]
    return markdown_table(headers, rows, align="llrrrrl")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="only the rows that need no fit"
    )
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [r for r in references() if r.quick or not args.quick]
    results = evaluate(rows)
    table = _table(results)
    print(table)
    drifted = [r for r in results if not r[3]]
    elapsed = time.perf_counter() - start
    summary = (
        f"{len(results) - len(drifted)} of {len(results)} rows within tolerance"
        f" ({elapsed:.1f} s)."
    )
    print(summary)
    text = "\n".join(
        [
            "# Published numbers recomputed",
            "",
            *environment(),
            "",
            table,
            "",
            summary,
            "",
            "Not recomputable from shared/data: the tables of Kull et "
            "al. (2019) and Guo et al. (2017), computed on their own networks' "
            "logits.",
        ]
    )
    path = _write(output_dir(args.out, args.quick) / "references.md", text)
    print(f"wrote {path}", file=sys.stderr)
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
