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


def read(text):
    """The section :func:`render` wrote, read back from a ``quality.md`` text.

    Returns
    -------
    groups : list of str
        The kinds of prediction set, in column order (``"binary"``, ...).
    cells : dict
        ``{calibrator: {group: (lowest, within noise, sets run)}}``, in the
        order of the table (most sets within noise first); ``None`` where
        the calibrator did not run.
    accuracy : dict
        ``{calibrator: accuracy change in percentage points}``.

    Raises ``ValueError`` when the text has no such section.
    """
    if START not in text or END not in text:
        raise ValueError(f"no {START} ... {END} section")
    section = text.split(START)[1].split(END)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    split = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    suffix = ": lowest / within noise"
    groups = [h.removesuffix(suffix) for h in split[0] if h.endswith(suffix)]
    cells, accuracy = {}, {}
    for row in split[2:]:
        cells[row[0]] = {
            g: None if c == "-" else _read_cell(c)
            for g, c in zip(groups, row[1 : 1 + len(groups)], strict=True)
        }
        accuracy[row[0]] = float("nan") if row[-1] == "-" else float(row[-1])
    return groups, cells, accuracy


def _read_cell(cell):
    low, rest = cell.split(" / ")
    near, ran = rest.split(" of ")
    return int(low), int(near), int(ran)
