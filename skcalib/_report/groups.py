"""The subgroup audit of ``skcalib report --group-col COL``.

The statistics are those of
:func:`skcalib.monitoring.calibration_by_group` (one row per group, groups
sorted; small groups keep their metrics, with a note, and are never
dropped); this module reads the group column (``--group-col``, never a
score column), calls it on the model's own probabilities and turns its
result into the table of the report (:func:`group_rows`). Nothing here
prints.
"""

import numpy as np

from skcalib._report.columns import _py
from skcalib.monitoring._groups_result import COLUMNS

__all__ = []

#: Resamples of each group's ECE interval (the report's own intervals use
#: 200 too).
N_RESAMPLES = 200
#: Columns shown first, in this order (those of the result's rows); any
#: other field follows in its own order.
PREFERRED = COLUMNS
TITLES = {
    "ece": "ECE",
    "ece_low": "ECE low",
    "ece_high": "ECE high",
    "corp_mcb": "CORP MCB",
    "brier": "Brier",
    "nll": "NLL",
    "pvalue": "p-value",
    "pvalue_adjusted": "Holm p-value",
}


def group_audit(labels, proba, groups, classes, random_state=0):
    """The audit rows of the model's own probabilities ``proba`` (n, K) by
    the values of ``groups`` (the group column, as text)."""
    from skcalib.monitoring import calibration_by_group

    groups = np.char.strip(np.asarray(groups).astype(str))
    result = calibration_by_group(
        labels,
        proba,
        groups,
        labels=classes,
        n_resamples=N_RESAMPLES,
        random_state=random_state,
    )
    return group_rows(result)


def group_rows(result):
    """Rows of the audit table: those of ``result.to_dict()`` (a
    :class:`~skcalib.monitoring.GroupCalibrationResult`), JSON values,
    NaN as None, the weight column left out when it equals ``n`` (no
    weights in a predictions file)."""
    rows = []
    for row in result.to_dict()["groups"]:
        row = {str(k): _json_value(v) for k, v in row.items()}
        if row.get("weight") == row.get("n"):
            row.pop("weight", None)
        rows.append(row)
    return rows


def _json_value(value):
    value = _py(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def columns(rows):
    """``[(key, title)]``: the fields of :data:`PREFERRED` that the rows
    have, then the others, in order of first appearance; nested values
    (lists, dicts) are left to the JSON."""
    keys = []
    for row in rows:
        keys += [
            k
            for k, v in row.items()
            if k not in keys and not isinstance(v, list | dict)
        ]
    ordered = [k for k in PREFERRED if k in keys] + [
        k for k in keys if k not in PREFERRED
    ]
    return [(k, TITLES.get(k, k.replace("_", " "))) for k in ordered]


def cell(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
    return str(value)


def cells(row, cols):
    return [cell(row.get(k)) for k, _ in cols]


def format_groups(rows, fmt):
    """The audit table as text or markdown."""
    from skcalib._report.windows import fixed_line

    cols = columns(rows)
    header = [title for _, title in cols]
    body = [cells(r, cols) for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = [fixed_line(header, widths)]
    lines.append("-" * len(lines[0]))
    return "\n".join(lines + [fixed_line(r, widths) for r in body])


def print_lines(audit, fmt):
    """The report's section on subgroups, as lines."""
    return [
        f"calibration by group ({audit['column']}; the model's own probabilities):",
        format_groups(audit["rows"], fmt),
    ]
