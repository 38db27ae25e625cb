"""Variants of the binning calibrators on the quality benchmark's sets.

The measurements behind the defaults of :class:`HistogramBinningCalibrator`
and :class:`ScalingBinningCalibrator` (issue 16, items 5 and 6): every
variant below is fitted with the protocol of :mod:`benchmarks.quality`
(same sets, same splits, same peers of its family) and scored with the
family comparison of :mod:`benchmarks.quality_families`, as if it were the
default: ours <= the best peer within noise, mean NLL ratio to the best
peer, sets worse than uncalibrated beyond noise.

Run ``python -m benchmarks.quality_binning_variants [--seeds N] [--only
NAMES] [--families histogram,scaling_binning]``; it prints one markdown
table per family (about 10 minutes for both families, 5 seeds, 34 sets, on
the 2-core machine).
"""

import argparse
import sys
import time

from benchmarks import _peers as P
from benchmarks import markdown_table
from benchmarks import quality as Q
from benchmarks import quality_families as F


def _histogram(points_per_bin):
    """HistogramBinningCalibrator whose ``"auto"`` rule has another number of
    samples per bin (a measurement only, not an option of skcalib)."""
    from skcalib import HistogramBinningCalibrator
    from skcalib.calibration._binning import auto_n_bins

    class Histogram(HistogramBinningCalibrator):
        def _resolve_bins(self, size):
            if self.n_bins == "auto":
                return auto_n_bins(size, points_per_bin)
            return self.n_bins

    return Histogram


#: family -> [(label, class name, parameters)]; the first is the former default
#: (every parameter the variant is about is given, so the labels hold
#: whatever the defaults are).
VARIANTS = {
    "histogram": [
        ("uniform (n/200 bins)", "HistogramBinningCalibrator", {"strategy": "uniform"}),
        ("hybrid (n/200 bins)", "HistogramBinningCalibrator", {"strategy": "hybrid"}),
        (
            "hybrid (n/200 bins), smoothing=20",
            "HistogramBinningCalibrator",
            {"strategy": "hybrid", "smoothing": 20.0},
        ),
        (
            "hybrid (n/100 bins)",
            "HistogramBinningCalibrator",
            {"strategy": "hybrid", "points_per_bin": 100},
        ),
        (
            "quantile (n/200 bins)",
            "HistogramBinningCalibrator",
            {"strategy": "quantile"},
        ),
    ],
    "scaling_binning": [
        (
            "split=0.5, 15 bins",
            "ScalingBinningCalibrator",
            {"split": 0.5, "n_bins": 15},
        ),
        (
            "split=None, 15 bins",
            "ScalingBinningCalibrator",
            {"split": None, "n_bins": 15},
        ),
        (
            "split=None, 30 bins",
            "ScalingBinningCalibrator",
            {"split": None, "n_bins": 30},
        ),
        (
            "split=None, 50 bins",
            "ScalingBinningCalibrator",
            {"split": None, "n_bins": 50},
        ),
        (
            "split=None, 100 bins",
            "ScalingBinningCalibrator",
            {"split": None, "n_bins": 100},
        ),
        (
            "split=None, 200 bins",
            "ScalingBinningCalibrator",
            {"split": None, "n_bins": 200},
        ),
        (
            "split=0.5, 30 bins",
            "ScalingBinningCalibrator",
            {"split": 0.5, "n_bins": 30},
        ),
    ],
}
#: family -> the peer methods it is compared with (``FAMILY_TABLE``).
PEER_METHODS = {key: multi | binary for key, _, multi, binary in F.FAMILY_TABLE}


def adapters(families, status):
    """The peers of ``families`` and our variants, labelled by variant."""
    classes = P.discover_calibrators()
    peers = [
        a
        for a in P.peer_calibrators(status)
        if any(a.method in PEER_METHODS[f] for f in families)
    ]
    ours = []
    for f in families:
        for label, name, params in VARIANTS[f]:
            params = dict(params)
            cls = classes[name]
            if "points_per_bin" in params:
                cls = _histogram(params.pop("points_per_bin"))
            adapter = P.SkcalibCalibrator(
                cls, score_input="probability", label=label, **params
            )
            adapter.method = f
            ours.append(adapter)
    return ours + peers


def summarise(done, family, label):
    """The family summary of one variant, as if it were our default."""
    keep = [
        (
            ds,
            [
                [r for r in res if r.library != "skcalib" or r.label == label]
                for res in per_seed
            ],
        )
        for ds, per_seed in done
    ]
    stats = [s for s in F.summary(F.compare(keep)) if s["family"] == family]
    return stats[0] if stats else None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.quality_binning_variants"
    )
    parser.add_argument("--seeds", type=int, default=Q.SEEDS)
    parser.add_argument("--only", default=None, help="comma list of set names")
    parser.add_argument("--families", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    families = args.families.split(",")
    status = P.load_peers(["uncertainty-calibration", "netcal"])
    methods = adapters(families, status)
    sets = Q.discover_datasets()
    if args.only:
        sets = [s for s in sets if any(k in s[0] for k in args.only.split(","))]
    t0 = time.perf_counter()
    done = []
    for name, load in sets:
        per_seed = []
        for seed in range(args.seeds):
            ds = load(seed)
            if ds.own_split and seed > 0:
                break
            per_seed.append(Q.run_dataset(ds, methods, lambda s: None))
        done.append((load(0), per_seed))
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    for family in families:
        rows = []
        for label, _, _ in VARIANTS[family]:
            s = summarise(done, family, label)
            worse = ", ".join(r.dataset for r in s["worse_unc_rows"])
            losers = ", ".join(r.dataset for r in s["losers"])
            rows.append(
                [
                    label,
                    F._share(s),
                    f"{s['ratio']:.3f}",
                    str(s["worse_unc"]),
                    worse or "-",
                    losers or "-",
                ]
            )
        print(f"\n### {F.TITLES[family]} ({len(done)} sets, {args.seeds} seeds)\n")
        print(
            markdown_table(
                [
                    "variant",
                    "ours <= best peer",
                    "mean ratio to best peer",
                    "worse than uncal.",
                    "worse than uncal. on",
                    "loses to peer on",
                ],
                rows,
                align="lrrrll",
            )
        )
    print(f"\n{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
