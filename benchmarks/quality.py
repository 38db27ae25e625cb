"""Quality of every calibrator on real predictions, skcalib's and the peers'.

For every prediction set in ``shared/data`` (see its README): fit each
calibrator on a calibration split, score it on the test split.

* Splits: ``splinecalib`` pairs use their own ``calibset_*`` / ``testset_*``
  files (and ``mnist4_calib_set`` / ``mnist4_test_set``), ``aigen``'s
  ResNet-50 its ``_val`` / ``_test`` files; every other file is
  split 50/50, stratified by label, with
  ``sklearn.model_selection.train_test_split(test_size=0.5, stratify=y,
  random_state=seed)`` for each seed ``0..N-1`` (``--seeds N``, default 5);
  the own-split sets are run once. Scores are averaged over the seeds.
* Inputs: the stored float32 probabilities (``aigen``: the softmax of its
  float32 logits, in float64), cast to float64 and divided by their row
  sums (they sum to 1 only within float32 rounding), given to every
  library: skcalib as probabilities (``score_type="probability"``),
  scikit-learn through a passthrough classifier whose decision values are the
  logits ``log(max(p, 1e-12))`` (temperature) or the per-class log-odds
  (sigmoid, isotonic) — the scores skcalib's maps see —, netcal, betacal,
  venn-abers and uncertainty-calibration as probabilities.
* Methods: the uncalibrated model; every skcalib calibrator found in
  ``skcalib.__all__`` with its default parameters (binary-only methods use
  their default one-vs-rest strategy on multiclass data;
  ``AutoCalibrator`` has its own benchmark and ``IdentityCalibrator`` is the
  uncalibrated row); the peers'
  implementations (scikit-learn ``CalibratedClassifierCV`` with a frozen
  passthrough classifier; netcal; betacal and uncertainty-calibration
  one-vs-rest on multiclass data, rows renormalised; venn-abers; splinecalib
  and ml-insights ``SplineCalib``; the Mix-n-Match paper's ensemble
  temperature scaling, written here from the paper).
* Scores on the test split: NLL, Brier (sum over classes, halved for two
  classes as sklearn's ``brier_score_loss``), confidence ECE and classwise ECE
  (15 uniform bins, L1), accuracy. Peers whose rows do not sum to 1 are
  renormalised first (noted).

The per-family comparison of our defaults with the best peer and with the
uncalibrated model is :mod:`benchmarks.quality_families`.

Run ``python -m benchmarks quality [--quick] [--seeds N] [--only NAMES]
[--out DIR]``.
"""

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import (
    RESULTS_DIR,
    environment,
    output_dir,
    write_report,
)
from benchmarks import _peers as P
from benchmarks import quality_families as F
from benchmarks._quality_report import print_summary, render

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEEDS = 5
#: skcalib classes left out: (reason shown in the report)
EXCLUDED = {
    "AutoCalibrator": "its own benchmark: python -m benchmarks auto",
    "IdentityCalibrator": "the uncalibrated row",
}
BEFORE = RESULTS_DIR / "quality_before.md"
SEED_FAMILIES = {"temperature", "platt", "isotonic", "histogram"}
QUICK_DATASETS = ("splinecalib/mozilla4_1046_cb1", "pycalib/mnist__AdaBoost")
#: netcal's multiclass beta/Dirichlet fit uses finite-difference gradients
#: over K(K+1) weights: skipped above this many calibration rows.
SLOW_MAX_ROWS = 12_000
#: Methods with K^2 parameters (any library) run up to this many classes.
FULL_MATRIX_FAMILIES = {"dirichlet", "matrix_scaling"}
FULL_MATRIX_MAX_K = 10
#: A method whose fit + predict took longer than this on a data set is not
#: run on later data sets with at least as many classes and rows.
SLOW_FIT_S = 30.0
#: Floor of the true-class probability in the per-sample NLL (skcalib's).
try:
    from skcalib._core.losses import NLL_FLOOR
except ImportError:  # pragma: no cover - older layout
    NLL_FLOOR = np.finfo(np.float64).eps


@dataclass
class Dataset:
    name: str
    y_cal: np.ndarray
    p_cal: np.ndarray
    y_test: np.ndarray
    p_test: np.ndarray
    split: str
    own_split: bool = False

    @property
    def k(self):
        return self.p_cal.shape[1]


@dataclass
class Result:
    label: str
    library: str
    family: str
    scores: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    seconds: float = float("nan")
    note: str = ""
    losses: np.ndarray = None  # per-sample test NLL
    seeds: int = 1


# ----------------------------------------------------------------------- data
def _load(path):
    with np.load(path) as d:
        if "predictions" in d:
            p, y = d["predictions"], d["ground_truth"]
        elif "logits" in d:  # aigen/: softmax in float64
            z = np.asarray(d["logits"], dtype=np.float64)
            p, y = np.exp(z - z.max(axis=1, keepdims=True)), d["labels"]
        else:
            p, y = d["probs"], d["labels"]
    p = np.asarray(p, dtype=np.float64)
    p /= p.sum(axis=1, keepdims=True)
    return p, np.asarray(y, dtype=np.int64)


def _own_split_pair(path):
    """``(name, test_path)`` of a calibration file with its own test file.

    ``None`` for a file of a folder without own splits; ``test_path`` is
    ``None`` for the test files of the folders with own splits.
    """
    folder, stem = path.parent.name, path.stem
    if folder == "aigen":
        if not stem.endswith("_val"):
            return "", None
        base = stem.removesuffix("_val")
        return f"aigen/{base}", path.with_name(base + "_test.npz")
    if folder != "splinecalib":
        return None
    if stem.startswith("calibset_"):
        base = stem.removeprefix("calibset_")
        return f"splinecalib/{base}", path.with_name(f"testset_{base}.npz")
    if stem.endswith("_calib_set"):
        base = stem.removesuffix("_calib_set")
        return f"splinecalib/{base}", path.with_name(base + "_test_set.npz")
    return "", None


def discover_datasets(data_dir=DATA_DIR):
    """``[(name, loader)]`` for every prediction set, in a fixed order.

    ``loader(seed)`` returns the :class:`Dataset` of that split seed
    (ignored by the sets with their own calibration split).
    """
    from sklearn.model_selection import train_test_split

    out = []
    if not data_dir.is_dir():
        return out
    for path in sorted(data_dir.glob("*/*.npz")):
        folder, stem = path.parent.name, path.stem
        pair = _own_split_pair(path)
        if pair is not None:
            name, test = pair
            if test is None or not test.exists():
                continue  # a test file, or a file without its pair

            def load(seed=0, cal=path, test=test, name=name):
                p_cal, y_cal = _load(cal)
                p_test, y_test = _load(test)
                return Dataset(
                    name,
                    y_cal,
                    p_cal,
                    y_test,
                    p_test,
                    f"own files {cal.name} / {test.name}",
                    own_split=True,
                )

            out.append((name, load))
            continue

        def load(seed=0, path=path, name=f"{folder}/{stem}"):
            p, y = _load(path)
            idx = np.arange(y.size)
            try:
                i_cal, i_test = train_test_split(
                    idx, test_size=0.5, stratify=y, random_state=seed
                )
                how = f"50/50 stratified, seed {seed}"
            except ValueError:  # a class with a single member
                i_cal, i_test = train_test_split(idx, test_size=0.5, random_state=seed)
                how = f"50/50 random, seed {seed}"
            return Dataset(name, y[i_cal], p[i_cal], y[i_test], p[i_test], how)

        out.append((f"{folder}/{stem}", load))
    return out


# -------------------------------------------------------------------- methods
def methods(status, *, quick):
    """skcalib calibrators (discovered) followed by the peers'."""
    ours = [
        P.SkcalibCalibrator(cls, score_input="probability", label=f"skcalib {name}")
        for name, cls in P.discover_calibrators().items()
        if name not in EXCLUDED
    ]
    peers = P.peer_calibrators(status)
    if quick:
        ours = [a for a in ours if a.method in SEED_FAMILIES]
        peers = [a for a in peers if a.library == "sklearn"]
    order = ["temperature", "platt", "isotonic", "histogram"]
    ours.sort(
        key=lambda a: (order.index(a.method) if a.method in order else 99, a.label)
    )
    return ours + peers


def only_families(adapters, families, parser):
    """The adapters of skcalib's calibrators of ``families`` and of their
    peers (the peer methods of :data:`quality_families.FAMILY_TABLE`)."""
    table = {key: multi | binary for key, _, multi, binary in F.FAMILY_TABLE}
    unknown = [f for f in families if f not in table]
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {sorted(table)}")
    peers = set().union(*(table[f] for f in families))
    return [
        a
        for a in adapters
        if (a.method in families if a.library == "skcalib" else a.method in peers)
    ]


def score(y, proba):
    from skcalib import metrics as M

    k = proba.shape[1]
    labels = np.arange(k)
    out = {}
    for key, fn in (
        ("NLL", lambda: M.negative_log_likelihood(y, proba, labels=labels)),
        ("Brier", lambda: M.brier_score(y, proba, labels=labels)),
        ("ECE", lambda: M.expected_calibration_error(y, proba, labels=labels)),
        ("cwECE", lambda: M.classwise_calibration_error(y, proba, labels=labels)),
        ("acc", lambda: float(np.mean(np.argmax(proba, axis=1) == y))),
    ):
        try:
            out[key] = float(fn())
        except Exception as exc:  # noqa: BLE001 - a metric failure is reported
            out[key] = float("nan")
            out.setdefault("_errors", []).append(f"{key}: {type(exc).__name__}: {exc}")
    return out


def sample_nll(y, proba):
    """Per-sample NLL, the true-class probability floored as skcalib's NLL."""
    p = proba[np.arange(y.size), y].astype(np.float64)
    return -np.log(np.maximum(p, NLL_FLOOR))


def average_seeds(per_seed):
    """One result per method: scores and seconds averaged over the seeds it
    ran on, parameters of its first seed, notes of every seed (once each)."""
    out = []
    for i, first in enumerate(per_seed[0]):
        runs = [results[i] for results in per_seed]
        ran = [r for r in runs if r.scores]
        notes = list(dict.fromkeys(r.note for r in runs if r.note))
        avg = Result(first.label, first.library, first.family, note="; ".join(notes))
        avg.seeds = len(ran)
        if ran:
            keys = [k for k in ran[0].scores if all(k in r.scores for r in ran)]
            avg.scores = {k: float(np.mean([r.scores[k] for r in ran])) for k in keys}
            avg.seconds = float(np.mean([r.seconds for r in ran]))
            avg.params = ran[0].params
        if len(per_seed) > 1 and ran and len(ran) < len(runs):
            avg.note = (avg.note + "; " if avg.note else "") + (
                f"{len(ran)} of {len(runs)} seeds"
            )
        out.append(avg)
    return out


def run_dataset(ds, adapters, log, slow=None):
    from benchmarks._peers import ScoreSet

    tr = ScoreSet(ds.y_cal, proba=ds.p_cal)
    te = ScoreSet(ds.y_test, proba=ds.p_test)
    results = [
        Result(
            "uncalibrated",
            "-",
            "none",
            score(te.y, te.proba),
            losses=sample_nll(te.y, te.proba),
        )
    ]
    for a in adapters:
        res = Result(a.label, a.library, a.method)
        reason = a.applies(tr.n, tr.k)
        if (
            not reason
            and a.library == "netcal"
            and a.method in ("dirichlet", "beta")
            and tr.k > 2
            and tr.n > SLOW_MAX_ROWS
        ):
            reason = f"skipped for more than {SLOW_MAX_ROWS} calibration rows (slow)"
        if (
            not reason
            and a.library != "skcalib"
            and a.method in FULL_MATRIX_FAMILIES
            and tr.k > FULL_MATRIX_MAX_K
        ):
            reason = f"skipped for K > {FULL_MATRIX_MAX_K} (K^2 parameters, slow)"
        if not reason and slow is not None and a.label in slow:
            secs, k0, n0, where = slow[a.label]
            if tr.k >= k0 and tr.n >= n0:
                reason = f"skipped: took {secs:.0f} s on {where}"
        if reason:
            res.note = reason
            results.append(res)
            continue
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                state = a.fit(tr)
                proba = np.asarray(a.predict(state, te), dtype=np.float64)
            res.seconds = time.perf_counter() - t0
            res.params = a.params(state)
        except Exception as exc:  # noqa: BLE001 - a failing method is a result
            res.note = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            results.append(res)
            log(f"    {a.label}: {res.note}")
            continue
        if proba.ndim == 1:
            proba = P.renormalise(proba)
        rowsum = np.abs(proba.sum(axis=1) - 1.0).max()
        if not np.isfinite(proba).all():
            res.note = "non-finite probabilities"
            proba = np.nan_to_num(proba, nan=1.0 / tr.k)
        if rowsum > 1e-8:
            res.note = (res.note + "; " if res.note else "") + (
                f"rows off by {rowsum:.1e}: renormalised"
            )
            proba = P.renormalise(proba)
        if slow is not None and res.seconds > SLOW_FIT_S and a.label not in slow:
            slow[a.label] = (res.seconds, tr.k, tr.n, f"{ds.name} ({ds.split})")
        res.scores = score(te.y, proba)
        res.losses = sample_nll(te.y, proba)
        if "_errors" in res.scores:
            res.note = (res.note + "; " if res.note else "") + "; ".join(
                res.scores.pop("_errors")
            )
        results.append(res)
        log(
            f"    {a.label:58s} NLL {res.scores.get('NLL', np.nan):.5f} "
            f"({res.seconds:.2f} s)"
        )
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks quality", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"2 data sets ({', '.join(QUICK_DATASETS)}), seed "
        "methods of skcalib and sklearn; writes to a temp dir",
    )
    parser.add_argument("--out", default=None, help="output folder for quality.md")
    parser.add_argument(
        "--peers",
        default="all",
        help="all (default), none, or a comma list of " + ", ".join(P.PEERS),
    )
    parser.add_argument(
        "--data", default=None, help=f"data folder (default {DATA_DIR})"
    )
    parser.add_argument(
        "--only", default=None, help="comma list of data set names (substring match)"
    )
    parser.add_argument(
        "--families",
        default=None,
        help="comma list of method families (default: all): "
        + ", ".join(key for key, *_ in F.FAMILY_TABLE),
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=SEEDS,
        help=f"split seeds 0..N-1 of the sets without their own split "
        f"(default {SEEDS}; --quick: 1)",
    )
    parser.add_argument(
        "--before",
        default=None,
        help=f"an earlier quality.md whose family summary is shown beside this "
        f"run's (default {BEFORE.relative_to(RESULTS_DIR.parents[1])} if it "
        "exists; 'none' for no comparison)",
    )
    parser.add_argument(
        "--note", default=None, help="a line shown under the command in the report"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = 1
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    t_start = time.perf_counter()
    out = output_dir(args.out, args.quick)
    status = P.load_peers(["sklearn"] if args.quick else P.parse_peers(args.peers))
    notes = [] if args.quick else P.skip_notes(status)
    for note in notes:
        print(f"skip {note}", flush=True)
    data_dir = Path(args.data) if args.data else DATA_DIR
    sets = discover_datasets(data_dir)
    if args.quick:
        sets = [s for s in sets if s[0] in QUICK_DATASETS]
    if args.only:
        keys = args.only.split(",")
        sets = [s for s in sets if any(k in s[0] for k in keys)]
    skipped_data = []
    if not sets:
        msg = f"No prediction sets found under {data_dir}: quality benchmark skipped."
        print(msg)
        skipped_data.append(msg)
    adapters = methods(status, quick=args.quick)
    if args.families:
        adapters = only_families(adapters, args.families.split(","), parser)
    done, slow = [], {}
    for name, load in sets:
        per_seed, ds0 = [], None
        t_set = time.perf_counter()
        for seed in range(args.seeds):
            ds = load(seed)
            if ds.own_split and seed > 0:
                break  # one split only: the seeds would repeat it
            ds0 = ds0 or ds
            print(
                f"{name} (K={ds.k}, {ds.y_cal.size}/{ds.y_test.size}, {ds.split})",
                flush=True,
            )
            per_seed.append(
                run_dataset(ds, adapters, lambda s: print(s, flush=True), slow)
            )
        ds0.split = ds0.split.removesuffix(", seed 0")
        done.append((ds0, per_seed))
        print(f"  {name}: {time.perf_counter() - t_set:.0f} s", flush=True)
    elapsed = time.perf_counter() - t_start
    fam = F.compare(done)
    before = None
    if not args.quick and args.before != "none":
        path = Path(args.before) if args.before else BEFORE
        summary = F.read_summary(path)
        if summary is not None:
            before = (summary, path.name)
        elif args.before:
            print(f"no family summary in {path}: no before/after table")
    report = render(
        [(ds, average_seeds(per_seed)) for ds, per_seed in done],
        environment(status),
        notes,
        args,
        elapsed,
        adapters,
        skipped_data,
        fam,
        before,
        doc=__doc__,
        excluded=EXCLUDED,
        raw=done,
    )
    print_summary(fam)
    path = write_report(out / "quality.md", report)
    print(f"\nwrote {path} ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
