"""ONNX export: onnxruntime against ``predict_proba``, and the graphs' sizes.

``python -m benchmarks export [--quick] [--out DIR] [--n N] [--repeat R]``
(from the repository root; needs the onnx extra) writes ``export.md``: each
exportable calibrator fitted on 5000 rows of the built-in CIFAR-10
(10 classes) or airlines (binary) predictions, as probabilities or as their
logs (logits), exported with :func:`skcalib.export.to_onnx` in float32 and
float64. On ``--n`` rows (the set's rows repeated, the fit rows left out
where the set has enough), the medians over ``--repeat`` interleaved rounds
of ``predict_proba`` and of one onnxruntime ``run`` (CPU, one intra-op
thread, as numpy computes here), their ratio, the serialised model's size,
the export time, and the largest difference of the probabilities.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks import environment, fmt, markdown_table, output_dir, write_report


def _configs():
    from skcalib import (
        BetaCalibrator,
        BiasCorrectedTemperatureCalibrator,
        ConformalClassifier,
        DirichletCalibrator,
        HistogramBinningCalibrator,
        IdentityCalibrator,
        IsotonicCalibrator,
        MatrixScalingCalibrator,
        PlattCalibrator,
        ScalingBinningCalibrator,
        TemperatureCalibrator,
        VectorScalingCalibrator,
    )

    multi = [
        ("IdentityCalibrator", IdentityCalibrator, {}, "logit"),
        ("TemperatureCalibrator", TemperatureCalibrator, {}, "logit"),
        (
            "BiasCorrectedTemperatureCalibrator",
            BiasCorrectedTemperatureCalibrator,
            {},
            "logit",
        ),
        ("VectorScalingCalibrator", VectorScalingCalibrator, {}, "logit"),
        ("MatrixScalingCalibrator", MatrixScalingCalibrator, {}, "logit"),
        ("DirichletCalibrator", DirichletCalibrator, {}, "proba"),
        ("PlattCalibrator", PlattCalibrator, {}, "logit"),
        ("BetaCalibrator", BetaCalibrator, {}, "proba"),
        ("IsotonicCalibrator", IsotonicCalibrator, {}, "proba"),
        ("HistogramBinningCalibrator", HistogramBinningCalibrator, {}, "proba"),
        (
            "HistogramBinningCalibrator(top_label)",
            HistogramBinningCalibrator,
            {"multi_class": "top_label"},
            "proba",
        ),
        ("ScalingBinningCalibrator", ScalingBinningCalibrator, {}, "proba"),
        ("ConformalClassifier(lac)", ConformalClassifier, {}, "proba"),
    ]
    binary = [
        ("PlattCalibrator", PlattCalibrator, {}, "proba"),
        ("IsotonicCalibrator", IsotonicCalibrator, {}, "proba"),
        ("HistogramBinningCalibrator", HistogramBinningCalibrator, {}, "proba"),
    ]
    return {"cifar10_wideresnet": multi, "airlines_catboost": binary}


def _data(name, n):
    from skcalib.datasets import load_predictions

    d = load_predictions(name)
    fit, rest = slice(0, 5000), slice(5000, None)
    probs = d.probs.astype(np.float64)
    test = np.resize(probs[rest], (n, probs.shape[1]))  # repeated rows
    logit = np.log(np.maximum(probs, 1e-12))
    inputs = {
        "proba": (probs[fit], test),
        "logit": (logit[fit], np.log(np.maximum(test, 1e-12))),
    }
    return inputs, d.labels[fit]


def _session(model):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _row(label, cal, X, dtype, repeat):
    from skcalib.export import to_onnx

    X = X.astype(dtype)
    t0 = time.perf_counter()
    try:
        model = to_onnx(cal, dtype=dtype)
    except ValueError as exc:  # the float32 refusal of a too narrow bin
        return {"label": label, "dtype": dtype.__name__, "refused": str(exc)[:90]}
    t_export = time.perf_counter() - t0
    session = _session(model)
    feed = {"X": X}
    names = [o.name for o in session.get_outputs()]
    index = names.index("probabilities")
    t_np, t_ort = [], []
    for _ in range(repeat):  # interleaved rounds
        t0 = time.perf_counter()
        expected = cal.predict_proba(X)
        t_np.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = session.run(None, feed)
        t_ort.append(time.perf_counter() - t0)
    numpy_s, ort_s = float(np.median(t_np)), float(np.median(t_ort))
    return {
        "label": label,
        "dtype": dtype.__name__,
        "numpy": numpy_s,
        "ort": ort_s,
        "ratio": ort_s / numpy_s,
        "size": len(model.SerializeToString()),
        "export": t_export,
        "error": float(np.abs(out[index] - expected).max()),
    }


def run(args):
    n = int(args.n)
    rows = []
    for set_name, configs in _configs().items():
        inputs, y = _data(set_name, n)
        for name, cls, params, kind in configs:
            if args.quick and name not in (
                "TemperatureCalibrator",
                "IsotonicCalibrator",
            ):
                continue
            fit_X, X = inputs[kind]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cal = cls(**params).fit(fit_X, y)
            label = f"{name} | {set_name.split('_')[0]} {kind}"
            for dtype in (np.float32, np.float64):
                rows.append(_row(label, cal, X, dtype, args.repeat))
                print(f"{label} {dtype.__name__}", file=sys.stderr)
    return rows


def render(args, rows, elapsed):
    import onnxruntime

    done = [r for r in rows if "refused" not in r]
    table = markdown_table(
        [
            "calibrator",
            "set and input",
            "dtype",
            "predict_proba (ms)",
            "onnxruntime (ms)",
            "onnxruntime / predict_proba",
            "model (KiB)",
            "export (ms)",
            "max abs difference",
        ],
        [
            [
                *r["label"].split(" | "),
                r["dtype"],
                fmt(1e3 * r["numpy"]),
                fmt(1e3 * r["ort"]),
                f"{r['ratio']:.2f}",
                f"{r['size'] / 1024:.1f}",
                fmt(1e3 * r["export"]),
                f"{r['error']:.1e}",
            ]
            for r in done
        ],
        align="lllrrrrrr",
    )
    refused = [
        f"- {r['label']} ({r['dtype']}): {r['refused']}..."
        for r in rows
        if "refused" in r
    ]
    lines = [
        "# ONNX export: onnxruntime against predict_proba",
        "",
        f"{int(args.n):.0e} rows per call (the set's held-out rows repeated), "
        f"medians of {args.repeat} interleaved rounds; onnxruntime "
        f"{onnxruntime.__version__} on the CPU with one intra-op thread. The "
        "fit: 5000 rows of the built-in set (`skcalib.datasets`), as "
        "probabilities or their logs. `python -m benchmarks export`.",
        "",
        *environment(),
        "",
        table,
        "",
        *(["Refused exports:", "", *refused, ""] if refused else []),
        f"Run time {elapsed:.0f} s.",
    ]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n=1e4, two calibrators")
    parser.add_argument("--out", default=None, help="output folder")
    parser.add_argument("--n", type=float, default=1e5, help="rows per call")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeat = 1e4, 1
    try:
        import onnxruntime  # noqa: F401
        import skl2onnx  # noqa: F401
    except ImportError:
        print(
            "python -m benchmarks export needs the onnx extra: pip install -e '.[onnx]'"
        )
        return 2
    t0 = time.perf_counter()
    rows = run(args)
    text = render(args, rows, time.perf_counter() - t0)
    out = output_dir(args.out, args.quick)
    path = write_report(Path(out) / "export.md", text)
    print(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
