"""The subgroup audit of ``skcalib report --group-col COL``.

The statistics are those of
:func:`skcalib.monitoring.calibration_by_group`; this module only reads the
group column (``--group-col``, never a score column), calls it on the
model's own probabilities and turns its result into the table of the
report (:func:`group_rows`, the one place that knows the result's shape).
A build of skcalib without that function refuses ``--group-col`` with a
usage error. Nothing here prints.
"""

import numpy as np

from skcalib._report.columns import _py

__all__ = []

UNAVAILABLE = (
    "--group-col: the subgroup audit is not available in this build of skcalib "
    "(it needs skcalib.monitoring.calibration_by_group)"
)
#: Columns shown first, in this order, when the result has them; any other
#: field of the result follows in its own order.
PREFERRED = (
    "group",
    "n",
    "n_samples",
    "ece",
    "ece_low",
    "ece_high",
    "brier",
    "nll",
    "accuracy",
    "statistic",
    "p_value",
    "p_value_adjusted",
    "flagged",
)
TITLES = {
    "n_samples": "n",
    "ece": "ECE",
    "ece_low": "ECE low",
    "ece_high": "ECE high",
    "brier": "Brier",
    "nll": "NLL",
    "p_value": "p-value",
    "p_value_adjusted": "adj. p-value",
}


def audit_function():
    """:func:`skcalib.monitoring.calibration_by_group`, or None in a build
    without it."""
    try:
        from skcalib.monitoring import calibration_by_group
    except ImportError:
        return None
    return calibration_by_group


def group_audit(labels, proba, groups, classes):
    """The audit rows of the model's own probabilities ``proba`` (n, K) by
    the values of ``groups`` (the group column, as text)."""
    function = audit_function()
    groups = np.char.strip(np.asarray(groups).astype(str))
    # INTEGRATION POINT (the call): the arguments of calibration_by_group
    result = function(labels, proba, groups, labels=classes)
    return group_rows(result)


# ==================================================================
# INTEGRATION POINT: the result of calibration_by_group -> table rows.
# The one function that knows the result's shape; everything after it
# (text, markdown, JSON, HTML) takes a list of flat dicts of JSON values.
# ==================================================================
def group_rows(result):
    """Rows of the audit table (a list of dicts of JSON values).

    Takes the result as a list of mappings (one per group), a mapping of
    equal-length columns, an object with ``to_dict(orient="records")`` (a
    pandas DataFrame) or one with a ``rows`` attribute holding one of those.
    """
    if hasattr(result, "to_dict"):
        result = result.to_dict(orient="records")
    elif hasattr(result, "rows"):
        return group_rows(result.rows)
    if isinstance(result, dict):
        keys = list(result)
        n = len(result[keys[0]]) if keys else 0
        result = [{k: result[k][i] for k in keys} for i in range(n)]
    return [{str(k): _json_value(v) for k, v in dict(row).items()} for row in result]


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
