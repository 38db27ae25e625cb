"""numpy on the CPU against torch on the device, in one run (issue 18).

``python -m benchmarks gpu [--quick] [--out DIR] [--repeat N]`` (or
``python -m benchmarks.bench_gpu``, from the repository root) writes
``gpu.md``. Runs on any machine with torch: it names
the device (``torch.cuda.get_device_name``), or says "no GPU: torch-CPU only"
and runs smaller sizes. Measures, each the median of ``--repeat`` (>= 3)
timed runs after a warm-up, with ``torch.cuda.synchronize()`` around every
device call:

* **temperature fit**: ``TemperatureCalibrator().fit`` on float32 logits,
  1e7 x 1000 on a GPU (1e5 x 1000 on the CPU);
* **ECE**: ``expected_calibration_error`` (confidence, 15 uniform bins) on
  float32 probabilities, 1e8 x 10 on a GPU (1e7 x 10 on the CPU), with the
  achieved **memory bandwidth** (bytes of ``y_proba`` and ``y_true`` read
  once / time) against the device's peak, and a plain read of the same
  array (``amax(p, axis=1).sum()``) as the reachable bandwidth;
* **vector scaling fit**: ``VectorScalingCalibrator().fit`` on float32
  logits, 1e6 x 1000 on a GPU (1e4 x 1000 on the CPU).

On a GPU the full sizes run on the device only; numpy and the device are
compared on the first rows of the same data (a size the host CPU runs in
seconds), and the numpy time is also scaled linearly to the full size (said
so in the table). Without a GPU both run at the same (smaller) size.
Torch calls run inside ``sklearn.config_context(array_api_dispatch=True)``
with ``SCIPY_ARRAY_API=1`` (set here before SciPy is imported). A measure
that fails (an error, out of device memory) is reported with its error; an
out-of-memory run is retried at half the rows, twice at most.

Data: labels uniform on ``K`` classes; logits ``2 (N(0, 1) + 1.5 e_y)`` in
float32, generated on the device (seeded); probabilities their softmax.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before SciPy is imported

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

if __package__ in (None, ""):  # run as a script: python benchmarks/bench_gpu.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks import environment, fmt, markdown_table, write_report  # noqa: E402

SEED = 20261201
N_BINS = 15
#: A warm-up longer than this (seconds) is the only run of its measure.
MAX_WARMUP_S = 15.0
#: The full size is skipped when the same-rows device time scaled linearly
#: to it would exceed this (seconds): e.g. a calibrator that runs on the host.
MAX_PREDICTED_S = 30.0

#: (n, K) of each measure: on the device, and of the numpy comparison.
SIZES = {
    "gpu": {
        "temperature": ((10_000_000, 1000), (200_000, 1000)),
        "ece": ((100_000_000, 10), (20_000_000, 10)),
        "vector": ((1_000_000, 1000), (20_000, 1000)),
    },
    "cpu": {
        "temperature": ((100_000, 1000), (100_000, 1000)),
        "ece": ((10_000_000, 10), (10_000_000, 10)),
        "vector": ((10_000, 1000), (10_000, 1000)),
    },
    "quick": {
        "temperature": ((4000, 50), (4000, 50)),
        "ece": ((200_000, 10), (200_000, 10)),
        "vector": ((2000, 20), (2000, 20)),
    },
}

#: Peak memory bandwidth (TB/s) of known devices, by a part of their name
#: (vendor figures), checked in this order.
PEAK_BANDWIDTH_TBS = [
    ("GH200", 4.0),
    ("H200", 4.8),
    ("H100 PCIe", 2.0),
    ("H100 NVL", 3.9),
    ("H100", 3.35),
    ("B200", 8.0),
    ("A100-SXM4-80GB", 2.039),
    ("A100 80GB PCIe", 1.935),
    ("A100", 1.555),
    ("L40S", 0.864),
    ("L40", 0.864),
    ("L4", 0.3),
    ("A10G", 0.6),
    ("A10", 0.6),
    ("V100", 0.9),
    ("T4", 0.32),
    ("RTX 4090", 1.008),
    ("RTX 3090", 0.936),
    ("MI300X", 5.3),
    ("MI250X", 3.2),
]


# --------------------------------------------------------------------- device
def device_info(torch):
    """``dict``: the device the torch runs use, its name and peak bandwidth."""
    if not torch.cuda.is_available():
        return {"device": "cpu", "gpu": False, "name": "no GPU: torch-CPU only"}
    props = torch.cuda.get_device_properties(0)
    name = torch.cuda.get_device_name(0)
    info = {"device": "cuda:0", "gpu": True, "name": name}
    info["memory_gb"] = props.total_memory / 1e9
    peak, source = peak_bandwidth(name, props)
    info["peak_bw"], info["peak_source"] = peak, source
    return info


def peak_bandwidth(name, props):
    """(bytes/s, where the figure comes from) of the device's memory, or
    (None, reason)."""
    for key, tbs in PEAK_BANDWIDTH_TBS:
        if key.lower() in name.lower():
            return tbs * 1e12, f"vendor figure for {key} (table in bench_gpu.py)"
    clock_khz = getattr(props, "memory_clock_rate", None)
    width_bits = getattr(props, "memory_bus_width", None)
    if clock_khz and width_bits:
        peak = 2 * clock_khz * 1e3 * width_bits / 8
        return peak, "torch device properties: 2 x memory clock x bus width"
    return None, "unknown device, and torch reports no memory clock"


def synchronize(torch, device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def run_timed(fn, repeat, sync):
    """``fn`` once as a warm-up, then ``repeat`` timed runs, each between two
    synchronisations; a warm-up longer than :data:`MAX_WARMUP_S` is the only
    run. Returns ``dict(value, median, runs, error)``."""
    out = {"value": None, "median": float("nan"), "runs": [], "error": ""}
    try:
        sync()
        t0 = time.perf_counter()
        out["value"] = fn()
        sync()
        warmup = time.perf_counter() - t0
        if warmup > MAX_WARMUP_S:
            out["runs"] = [warmup]
            repeat = 0
        for _ in range(repeat):
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            out["runs"].append(time.perf_counter() - t0)
    except Exception as exc:  # a failure is a result of the benchmark
        out["error"] = f"{type(exc).__name__}: {_first_line(exc)}"
        out["oom"] = "out of memory" in str(exc).lower()
    if out["runs"]:
        out["median"] = float(np.median(out["runs"]))
    return out


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return (text[0] if text else "")[:200]


# ----------------------------------------------------------------------- data
def make_logits(torch, n, k, device, seed=0):
    """Float32 logits ``2 (N(0, 1) + 1.5 e_y)`` and int64 labels on ``device``."""
    gen = torch.Generator(device=device).manual_seed(SEED + seed)
    y = torch.randint(0, k, (n,), generator=gen, device=device)
    z = torch.randn(n, k, generator=gen, device=device, dtype=torch.float32)
    z[torch.arange(n, device=device), y] += 1.5
    z *= 2.0
    return z, y


def make_proba(torch, n, k, device, seed=0):
    z, y = make_logits(torch, n, k, device, seed)
    return torch.softmax(z, dim=1), y


def free(torch, device):
    import gc

    gc.collect()
    if str(device).startswith("cuda"):
        torch.cuda.empty_cache()


# ------------------------------------------------------------------- measures
def _fit_value(attr):
    def value(est):
        v = getattr(est, attr)
        return float(v) if np.ndim(v) == 0 else np.asarray(_host(v))

    return value


def _host(a):
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def _device_run(torch, make, call, n, k, device, repeat, sync):
    """``call`` timed on data ``make(n, k)`` on the device; on out of memory,
    again at half the rows (twice at most)."""
    import sklearn

    for _ in range(3):
        try:
            data = make(torch, n, k, device)
        except Exception as exc:
            res = {"error": f"{type(exc).__name__}: {_first_line(exc)}", "runs": []}
            res.update(median=float("nan"), value=None, n=n)
            res["oom"] = "out of memory" in str(exc).lower()
        else:
            with sklearn.config_context(array_api_dispatch=True):
                res = run_timed(lambda data=data: call(*data), repeat, sync)
            res["n"] = n
            del data
        free(torch, device)
        if not res.get("oom"):
            return res
        n //= 2
    return res


def compare(torch, dev, sizes, repeat, make, call, value):
    """numpy on the CPU and torch on the device on the same rows; the device
    alone at the full size. Returns ``dict(np, same, full)``."""
    import sklearn

    (n_full, k), (n_cmp, _) = sizes
    device = dev["device"]

    def sync():
        synchronize(torch, device)

    data = make(torch, n_cmp, k, device)
    host = [_host(a) for a in data]
    res_np = run_timed(lambda h=host: value(call(*h)), repeat, lambda: None)
    with sklearn.config_context(array_api_dispatch=True):
        res_same = run_timed(lambda d=data: value(call(*d)), repeat, sync)
    res_np["n"] = res_same["n"] = n_cmp
    del data, host
    free(torch, device)
    if n_full == n_cmp:
        return {"np": res_np, "same": res_same, "full": None, "k": k}
    predicted = res_same["median"] * n_full / n_cmp
    if res_same["error"] or not predicted <= MAX_PREDICTED_S:
        why = res_same["error"] or f"predicted {predicted:.0f} s from the same rows"
        skipped = {"error": f"skipped ({why})", "median": np.nan, "runs": []}
        skipped.update(value=None, n=n_full)
        return {"np": res_np, "same": res_same, "full": skipped, "k": k}
    res_full = _device_run(torch, make, call, n_full, k, device, repeat, sync)
    return {"np": res_np, "same": res_same, "full": res_full, "k": k}


def measure_temperature(torch, dev, sizes, repeat):
    from skcalib import TemperatureCalibrator

    def call(z, y):
        return TemperatureCalibrator().fit(z, y)

    return compare(
        torch, dev, sizes, repeat, make_logits, call, _fit_value("temperature_")
    )


def measure_vector(torch, dev, sizes, repeat):
    from skcalib import VectorScalingCalibrator

    def call(z, y):
        return VectorScalingCalibrator().fit(z, y)

    def value(est):
        return np.concatenate([_host(est.coef_).ravel(), _host(est.intercept_).ravel()])

    return compare(torch, dev, sizes, repeat, make_logits, call, value)


def measure_ece(torch, dev, sizes, repeat):
    from skcalib.metrics import expected_calibration_error

    def call(p, y):
        return float(expected_calibration_error(y, p, n_bins=N_BINS))

    out = compare(torch, dev, sizes, repeat, make_proba, call, lambda v: v)
    out["read"] = _read_only(torch, dev, sizes, repeat)
    if dev["gpu"]:
        out["np_full"] = _numpy_full_ece(torch, dev, sizes[0], call)
    return out


def _read_only(torch, dev, sizes, repeat):
    """A plain read of the probabilities: ``amax(p, axis=1).sum()`` and the
    labels' sum, at the full size on the device (the reachable bandwidth)."""
    (n, k), _ = sizes
    device = dev["device"]

    def call(p, y):
        return float(torch.amax(p, dim=1).sum()) + float(y.sum())

    return _device_run(
        torch,
        make_proba,
        call,
        n,
        k,
        device,
        repeat,
        lambda: synchronize(torch, device),
    )


def _numpy_full_ece(torch, dev, size, call):
    """numpy's float64-accumulated ECE of the full-size data (one call, for
    the precision check at that n)."""
    n, k = size
    try:
        p, y = make_proba(torch, n, k, dev["device"])
        p, y = _host(p), _host(y)
        free(torch, dev["device"])
        return call(p, y)
    except Exception as exc:
        return f"{type(exc).__name__}: {_first_line(exc)}"


# ------------------------------------------------------------------- report
MEASURES = [
    ("temperature", "temperature fit", "`TemperatureCalibrator().fit(z, y)`"),
    ("ece", "ECE", f"`expected_calibration_error(y, p, n_bins={N_BINS})`"),
    ("vector", "vector scaling fit", "`VectorScalingCalibrator().fit(z, y)`"),
]


def _secs(res):
    if res is None:
        return "-"
    return res["error"] or fmt(res["median"])


def _size(n, k):
    return f"{n:.0e} x {k}".replace("e+0", "e")


def _agreement(key, a, b):
    """|numpy - torch| of the values of two runs (the fitted temperature,
    the ECE, the largest parameter difference)."""
    if a["value"] is None or b["value"] is None:
        return "-"
    diff = float(np.max(np.abs(np.asarray(a["value"]) - np.asarray(b["value"]))))
    what = {"temperature": "|dT|", "ece": "|dECE|", "vector": "max |d param|"}[key]
    return f"{what} {diff:.1e}"


def same_rows_table(results, dev):
    rows = []
    for key, label, _ in MEASURES:
        r = results[key]
        np_, same = r["np"], r["same"]
        ratio = np_["median"] / same["median"] if same["median"] > 0 else np.nan
        rows.append(
            [
                label,
                _size(same["n"], r["k"]),
                _secs(np_),
                _secs(same),
                fmt(ratio, 3) if np.isfinite(ratio) else "-",
                f"{len(np_['runs'])}, {len(same['runs'])}",
                _agreement(key, np_, same),
            ]
        )
    head = ["measure", "n x K", "numpy CPU (s)", f"torch {dev['device']} (s)"]
    head += ["numpy / torch", "runs", "agreement"]
    return markdown_table(head, rows)


def full_size_table(results, dev):
    rows = []
    for key, label, _ in MEASURES:
        r = results[key]
        full, np_ = r["full"], r["np"]
        if full is None:
            continue
        scaled = np_["median"] * full["n"] / np_["n"]
        ratio = scaled / full["median"] if full["median"] > 0 else np.nan
        rows.append(
            [
                label,
                _size(full["n"], r["k"]),
                _secs(full),
                str(len(full["runs"])),
                fmt(scaled),
                fmt(ratio, 3) if np.isfinite(ratio) else "-",
            ]
        )
    head = ["measure", "n x K", f"torch {dev['device']} (s)", "runs"]
    head += ["numpy CPU scaled linearly (s)", "numpy (scaled) / torch"]
    return markdown_table(head, rows)


def bandwidth_lines(results, dev):
    """The memory bandwidth of the ECE on the device (and of a plain read)."""
    r = results["ece"]
    run = r["full"] or r["same"]
    n, k = run["n"], r["k"]
    nbytes = n * k * 4 + n * 8  # float32 probabilities + int64 labels, once
    peak = dev.get("peak_bw")
    rows = []
    for label, res in [("ECE", run), ("plain read (amax + sum)", r["read"])]:
        if res["error"] or not res["median"] > 0:
            rows.append([label, _secs(res), "-", "-"])
            continue
        bw = nbytes / res["median"]
        share = f"{100 * bw / peak:.0f}%" if peak else "-"
        rows.append([label, fmt(res["median"]), fmt(bw / 1e9, 3), share])
    lines = [
        f"## ECE memory bandwidth ({_size(n, k)}, {nbytes / 1e9:.2f} GB read once)",
        "",
        markdown_table(
            ["call", "time (s)", "bytes read / time (GB/s)"] + ["of peak"], rows
        ),
        "",
    ]
    if peak:
        lines.append(f"Peak: {peak / 1e12:.2f} TB/s ({dev['peak_source']}).")
    else:
        lines.append(f"Peak: not known ({dev.get('peak_source', 'CPU run')}).")
    return lines, rows


def targets_lines(results, dev, bw_rows):
    """The issue's targets, at their sizes (GPU runs only)."""
    if not dev["gpu"]:
        return [
            "No GPU: the targets of issue 18 (temperature fit of 1e7 x 1000 "
            "under 1 s; ECE at >= 50% of the peak bandwidth) are not checked."
        ]
    full = results["temperature"]["full"]
    t_ok = full and not full["error"] and full["n"] == SIZES["gpu"]["temperature"][0][0]
    t_ok = bool(t_ok and full["median"] < 1.0)
    share = bw_rows[0][3]
    bw_ok = share.endswith("%") and float(share[:-1]) >= 50
    lines = [
        f"- temperature fit of 1e7 x 1000 in under 1 s: {_secs(full)} s at "
        f"{_size(full['n'], results['temperature']['k'])}, "
        f"{'met' if t_ok else 'NOT met'}",
        f"- ECE at >= 50% of the peak memory bandwidth: {share}, "
        f"{'met' if bw_ok else 'NOT met'}",
    ]
    ece = results["ece"]
    if ece["full"] and ece["full"]["value"] is not None:
        ref = ece.get("np_full")
        if isinstance(ref, float):
            d = abs(ref - ece["full"]["value"])
            size = _size(ece["full"]["n"], ece["k"])
            lines.append(
                f"- ECE at {size} equal to numpy's (float64 "
                f"sums) within 1e-6: |d| = {d:.1e}, {'met' if d <= 1e-6 else 'NOT met'}"
            )
        else:
            lines.append(f"- numpy ECE at the full size: {ref}")
    return lines


def render(args, results, dev, torch, elapsed):
    command = "python -m benchmarks.bench_gpu" + (" --quick" if args.quick else "")
    mode = "GPU sizes" if dev["gpu"] else "CPU sizes (scaled down)"
    if args.quick:
        mode = "quick sizes"
    dev_line = f"- device: {dev['name']}"
    if dev["gpu"]:
        dev_line += f" ({dev['memory_gb']:.0f} GB), CUDA {torch.version.cuda}"
    else:
        dev_line += "; the torch runs use the CPU and smaller sizes"
    lines = [
        "# numpy on the CPU against torch on the device",
        "",
        f"`{command}` ({elapsed:.0f} s in all; {mode}).",
        "",
        *environment(),
        f"- torch {torch.__version__}; SCIPY_ARRAY_API="
        f"{os.environ.get('SCIPY_ARRAY_API')}; torch calls inside "
        "`sklearn.config_context(array_api_dispatch=True)`",
        dev_line,
        "",
        "Measures (median of the timed runs after a warm-up; "
        "`torch.cuda.synchronize()` around each device run):",
        "",
        *[f"- {label}: {call}" for _, label, call in MEASURES],
        "",
        "Data: float32 logits `2 (N(0, 1) + 1.5 e_y)`, labels uniform; ECE on "
        "their softmax. The agreement column compares the numpy and torch values.",
        "",
        "## Same rows: numpy on the CPU against torch",
        "",
        same_rows_table(results, dev),
        "",
    ]
    if dev["gpu"]:
        lines += [
            "## Full size on the device",
            "",
            "numpy at the full size is the numpy time of the rows above scaled "
            "linearly in n (not run).",
            "",
            full_size_table(results, dev),
            "",
        ]
    bw, bw_rows = bandwidth_lines(results, dev)
    lines += [*bw, "", "## Targets", "", *targets_lines(results, dev, bw_rows)]
    return "\n".join(lines)


# ----------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_gpu", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes; seconds")
    parser.add_argument("--out", default=None, help="output folder for gpu.md")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (>= 3)")
    args = parser.parse_args(argv)
    args.repeat = max(3, args.repeat)
    try:
        import torch
    except ImportError:
        print("bench_gpu needs torch (pip install torch)", file=sys.stderr)
        return 2
    dev = device_info(torch)
    sizes = SIZES["quick" if args.quick else ("gpu" if dev["gpu"] else "cpu")]
    print(f"device: {dev['name']}", flush=True)
    t_start = time.perf_counter()
    results = {}
    measure = {
        "temperature": measure_temperature,
        "ece": measure_ece,
        "vector": measure_vector,
    }
    for key, label, _ in MEASURES:
        print(f"{label} ...", flush=True)
        results[key] = measure[key](torch, dev, sizes[key], args.repeat)
    text = render(args, results, dev, torch, time.perf_counter() - t_start)
    print(text)
    out = _output_dir(args, dev)
    print(f"\nwrote {write_report(out / 'gpu.md', text)}")
    return 0


def _output_dir(args, dev):
    """``--out``; else ``benchmarks/results`` for a full GPU run and a
    temporary folder otherwise (a CPU run never replaces the GPU figures)."""
    if args.out is not None:
        path = Path(args.out)
    elif dev["gpu"] and not args.quick:
        path = Path(__file__).resolve().parent / "results"
    else:
        path = Path(tempfile.mkdtemp(prefix="skcalib-bench-gpu-"))
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    sys.exit(main())
