"""Which of skcalib's defaults to start with: the figures the user guide cites.

For every prediction set, the skcalib default with the lowest test NLL
(averaged over the seeds) is the set's *lowest*; every skcalib default whose
per-sample NLL difference with it is below two standard errors
(:func:`benchmarks.quality_families.pair`) is *within noise of the lowest*.
The counts are given per kind of set: binary, multiclass neural networks
(the CIFAR sets of ``netcal`` and ``verified_calibration``) and multiclass
classical models (``pycalib`` MNIST, ``splinecalib`` mnist4). The table sits
between two HTML comments so that ``doc/user_guide/choosing.rst`` includes it
at build time (``:start-after:`` / ``:end-before:``), and the guide's
recommendations cite its columns rather than copies of its numbers.
"""

import numpy as np

from benchmarks import markdown_table
from benchmarks.quality_families import _losses, pair

START = "<!-- choosing:start -->"
END = "<!-- choosing:end -->"
HEADING = "## Which default to start with"
GROUPS = (
    ("binary", "binary"),
    ("nn", "multiclass, neural networks"),
    ("classical", "multiclass, other models"),
)


def group_of(ds):
    if ds.k == 2:
        return "binary"
    if ds.name.startswith(("netcal/", "verified_calibration/")):
        return "nn"
    return "classical"


def counts(done):
    """``{method: {group: [lowest, within noise, sets run]}}`` and the number
    of sets per group; plus ``{method: [accuracy change per set]}``."""
    table, n_sets, acc = {}, dict.fromkeys(dict(GROUPS), 0), {}
    for ds, per_seed in done:
        g = group_of(ds)
        n_sets[g] += 1
        ours = [r for r in per_seed[0] if r.library == "skcalib"]
        losses = {r.label: _losses(per_seed, r.label) for r in ours}
        means = {}
        for label, ls in losses.items():
            ran = [x for x in ls if x is not None]
            if len(ran) == len(ls):  # ran on every seed: comparable
                means[label] = float(np.mean([x.mean() for x in ran]))
        for label in losses:
            table.setdefault(label, {k: [0, 0, 0] for k, _ in GROUPS})
        if not means:
            continue
        best = min(means, key=means.get)
        for label in means:
            cell = table[label][g]
            cell[2] += 1
            if label == best:
                cell[0] += 1
                cell[1] += 1
            elif pair(losses[label], losses[best]).ok:
                cell[1] += 1
        acc_unc = _mean_acc(per_seed, "uncalibrated")
        for label in means:
            acc.setdefault(label, []).append(_mean_acc(per_seed, label) - acc_unc)
    return table, n_sets, acc


def _mean_acc(per_seed, label):
    vals = [
        r.scores["acc"]
        for results in per_seed
        for r in results
        if r.label == label and "acc" in r.scores
    ]
    return float(np.mean(vals)) if vals else float("nan")


def render(done):
    """Markdown lines of the section, between the include markers."""
    table, n_sets, acc = counts(done)
    groups = [(k, t) for k, t in GROUPS if n_sets[k]]
    rows = []
    for label, cells in table.items():
        row = [label.removeprefix("skcalib ")]
        for k, _ in groups:
            low, near, ran = cells[k]
            row.append(f"{low} / {near} of {ran}" if ran else "-")
        a = acc.get(label, [])
        row.append(f"{100 * np.nanmean(a):+.2f}" if a else "-")
        rows.append(row)
    rows.sort(key=lambda r: (-sum(_near(c) for c in r[1:-1]), r[0]))
    return [
        HEADING,
        "",
        START,
        "",
        "Per kind of prediction set, for each skcalib calibrator with its "
        "default parameters: on how many sets it had the lowest test NLL of "
        "our defaults / was within noise of that lowest (difference below two "
        "standard errors) / ran. "
        + ", ".join(f"{t}: {n_sets[k]} sets" for k, t in groups)
        + ". The last column is the change of accuracy against the "
        "uncalibrated model, in percentage points, averaged over the sets.",
        "",
        markdown_table(
            [
                "calibrator",
                *[f"{t}: lowest / within noise" for _, t in groups],
                "accuracy change (pp)",
            ],
            rows,
            align="l" + "r" * (len(groups) + 1),
        ),
        "",
        END,
        "",
    ]


def _near(cell):
    if cell == "-":
        return -1
    return int(cell.split(" / ")[1].split(" of ")[0])
