"""What :class:`~skcalib.plotting.ReliabilityDisplay` writes on its diagram.

The ECE of the legend (reduced from the per-bin values of the curve drawn, so
that no second binning pass happens), the legend label, the axis labels and
the name of the class a curve is about.
"""

import numpy as np


def ece_of_curve(curve):
    """L1 expected calibration error of exactly the bins of ``curve``.

    ``sum_j n_j |acc_j - conf_j| / sum_j n_j`` over the bins of the
    :class:`~skcalib.metrics.ReliabilityCurve`, with ``n_j`` its ``counts``
    (total weight per bin): the reduction that
    :func:`~skcalib.metrics.expected_calibration_error` applies to the same
    per-bin totals (empty bins add nothing), without binning again.

    Parameters
    ----------
    curve : ReliabilityCurve
        Output of :func:`~skcalib.metrics.reliability_curve`.

    Returns
    -------
    ece : float
        NaN when no bin holds weight.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import expected_calibration_error, reliability_curve
    >>> from skcalib.plotting._annotations import ece_of_curve
    >>> y = np.array([0, 1, 2, 2])
    >>> proba = np.array([[0.9, 0.05, 0.05], [0.6, 0.3, 0.1],
    ...                   [0.1, 0.1, 0.8], [0.2, 0.2, 0.6]])
    >>> ece_of_curve(reliability_curve(y, proba, n_bins=5))
    0.125
    >>> expected_calibration_error(y, proba, n_bins=5)
    0.125
    """
    weight = np.asarray(curve.counts, dtype=np.float64)
    filled = np.asarray(curve.nonempty, dtype=bool) & (weight > 0)
    total = weight.sum()
    if not total > 0:
        return float("nan")
    gap = np.where(
        filled,
        np.asarray(curve.accuracy, dtype=np.float64)
        - np.asarray(curve.mean_confidence, dtype=np.float64),
        0.0,
    )
    return float((weight / total * np.abs(gap)).sum())


def class_label(classes, class_index):
    """The class name at ``class_index``, or the index when names are unknown."""
    if class_index is None:
        return None
    if classes is not None and 0 <= class_index < len(classes):
        return np.asarray(classes).tolist()[class_index]
    return class_index


def axis_labels(kind, class_label):
    """``(xlabel, ylabel)`` of a curve of ``kind`` about ``class_label``."""
    if kind == "classwise":
        return (
            f"Mean predicted probability (class {class_label})",
            "Fraction of positives",
        )
    xlabel = "Mean predicted confidence"
    if kind == "top_label" and class_label is not None:
        xlabel += f" (predicted class {class_label})"
    return xlabel, "Observed accuracy (fraction correct)"


def legend_label(name, ece, metric="ECE", interval=None):
    """``"name (ECE = 0.123)"``, the ECE alone, the name alone, or None
    (``metric``: the name of the value shown, e.g. ``"MCB"``, ``"smECE"``);
    ``"name (ECE = 0.123 [0.101, 0.150])"`` with ``interval``, a
    :class:`~skcalib.metrics.CalibrationErrorInterval` (its ``low`` and
    ``high``)."""
    if ece is not None and np.isfinite(ece):
        metric = f"{metric} = {ece:.3f}"
        if interval is not None:
            metric += f" [{interval.low:.3f}, {interval.high:.3f}]"
        return metric if name is None else f"{name} ({metric})"
    return name
