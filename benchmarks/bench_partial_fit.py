"""``partial_fit`` over many batches against one ``fit`` on their concatenation.

``python -m benchmarks partial-fit [--quick] [--out DIR] [--n N] [--batches B]``
(from the repository root) writes ``partial_fit.md``: for each calibrator
with ``partial_fit`` (temperature, Platt, vector scaling, histogram binning,
beta), ``--n`` rows of ``--k`` classes (the logits
``2 (N(0, 1) + 1.5 e_y)`` of :mod:`benchmarks.bench_large`, or their
softmax for the maps of probabilities), the medians over ``--repeat``
interleaved rounds of

* ``fit(X, y)`` on all rows;
* ``--batches`` calls of ``partial_fit`` on consecutive blocks, then the
  first ``predict_proba`` (on 10 rows), which refits on the kept rows:
  the cost of a stream up to its first use;

with the ratio of the two, and the NLL of both fits on all rows (float64)
and their difference.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import environment, fmt, markdown_table, output_dir, write_report
from benchmarks.bench_large import labels_block, logits_block


def _calibrators():
    from skcalib import (
        BetaCalibrator,
        HistogramBinningCalibrator,
        PlattCalibrator,
        TemperatureCalibrator,
        VectorScalingCalibrator,
    )

    return [
        ("TemperatureCalibrator", TemperatureCalibrator, "logit"),
        ("PlattCalibrator", PlattCalibrator, "logit"),
        ("VectorScalingCalibrator", VectorScalingCalibrator, "logit"),
        ("HistogramBinningCalibrator", HistogramBinningCalibrator, "proba"),
        ("BetaCalibrator", BetaCalibrator, "proba"),
    ]


def _nll(proba, y):
    p = proba[np.arange(y.size), y].astype(np.float64)
    return float(-np.mean(np.log(np.maximum(p, 1e-300))))


def _data(n, k):
    z = logits_block(0, n, k)
    y = labels_block(0, n, k)
    p = np.exp(z - z.max(axis=1, keepdims=True), dtype=np.float64)
    p /= p.sum(axis=1, keepdims=True)
    return {"logit": z, "proba": p}, y


def _round(cls, X, y, n_batches):
    t0 = time.perf_counter()
    whole = cls().fit(X, y)
    t_fit = time.perf_counter() - t0
    step = -(-y.size // n_batches)
    t0 = time.perf_counter()
    stream = cls()
    for start in range(0, y.size, step):
        stream.partial_fit(X[start : start + step], y[start : start + step])
    stream.predict_proba(X[:10])
    t_stream = time.perf_counter() - t0
    return t_fit, t_stream, whole, stream


def run(args):
    n, k = int(args.n), args.k
    data, y = _data(n, k)
    rows = []
    for name, cls, kind in _calibrators():
        X = data[kind]
        times = [_round(cls, X, y, args.batches) for _ in range(args.repeat)]
        t_fit = float(np.median([t[0] for t in times]))
        t_stream = float(np.median([t[1] for t in times]))
        whole, stream = times[-1][2], times[-1][3]
        nll_fit = _nll(whole.predict_proba(X), y)
        nll_stream = _nll(stream.predict_proba(X), y)
        rows.append(
            {
                "name": name,
                "input": f"{X.dtype} {'logits' if kind == 'logit' else 'proba'}",
                "fit": t_fit,
                "stream": t_stream,
                "ratio": t_stream / t_fit,
                "nll_fit": nll_fit,
                "nll_diff": abs(nll_stream - nll_fit),
            }
        )
        print(f"{name}: fit {t_fit:.3f} s, stream {t_stream:.3f} s", file=sys.stderr)
    return rows


def render(args, rows, elapsed):
    n_rows = int(args.n)
    lines = [
        "# partial_fit against fit on the concatenation",
        "",
        f"{n_rows:.0e} rows x {args.k} classes in {args.batches} batches of "
        f"{n_rows // args.batches:.0e}; medians of {args.repeat} rounds; "
        "`stream` = every partial_fit call plus the first predict_proba "
        "(the refit on the kept rows). "
        "`python -m benchmarks partial-fit`.",
        "",
        *environment(),
        "",
        markdown_table(
            [
                "calibrator",
                "input",
                "fit (s)",
                "stream (s)",
                "stream / fit",
                "NLL of fit",
                "abs NLL difference",
            ],
            [
                [
                    r["name"],
                    r["input"],
                    fmt(r["fit"]),
                    fmt(r["stream"]),
                    f"{r['ratio']:.2f}",
                    f"{r['nll_fit']:.10f}",
                    f"{r['nll_diff']:.1e}",
                ]
                for r in rows
            ],
            align="llrrrrr",
        ),
        "",
        f"Run time {elapsed:.0f} s.",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n=1e5, one round")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--n", type=float, default=1e6, help="rows")
    parser.add_argument("--k", type=int, default=10, help="classes")
    parser.add_argument("--batches", type=int, default=100, help="batches")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeat = 1e5, 1
    t0 = time.perf_counter()
    rows = run(args)
    text = render(args, rows, time.perf_counter() - t0)
    out = output_dir(args.out, args.quick)
    path = write_report(Path(out) / "partial_fit.md", text)
    print(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
