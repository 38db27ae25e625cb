"""The result of :func:`~skcalib.monitoring.calibration_by_group`: one row of
calibration metrics per group, as arrays, dicts or a pandas DataFrame."""

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["GroupCalibrationResult"]

#: The columns of a row, in the order of :meth:`GroupCalibrationResult.as_frame`
#: (``group`` is the attribute ``groups``).
COLUMNS = (
    "group",
    "n",
    "weight",
    "accuracy",
    "ece",
    "ece_low",
    "ece_high",
    "corp_mcb",
    "brier",
    "nll",
    "pvalue",
    "pvalue_adjusted",
    "note",
)


def _scalar(value):
    """A Python scalar (None for NaN), for JSON."""
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _curve_dict(curve):
    """The arrays of a :class:`~skcalib.metrics.ReliabilityCurve` as lists
    (None for the NaN of empty bins)."""
    keys = ("edges", "mean_confidence", "accuracy", "counts", "n_samples")
    out = {k: [_scalar(v) for v in getattr(curve, k)] for k in keys}
    out["class_index"] = curve.class_index
    return out


@dataclass(frozen=True, eq=False)
class GroupCalibrationResult:
    """Calibration metrics of each group, from :func:`calibration_by_group`.

    Every array has one entry per group, in the order of :attr:`groups`
    (sorted). A group smaller than ``min_group_size`` has its metrics but
    NaN ``ece_low``, ``ece_high``, ``pvalue`` and ``pvalue_adjusted``, and
    its :attr:`note` says why; no group is ever dropped.

    Attributes
    ----------
    groups : ndarray of shape (n_groups,)
        The distinct group values, sorted (``numpy.unique``).
    n : ndarray of shape (n_groups,)
        Rows of each group (rows of weight 0 included).
    weight : ndarray of shape (n_groups,)
        Total sample weight of each group (``n`` without ``sample_weight``).
    accuracy : ndarray of shape (n_groups,)
        Weighted top-1 accuracy.
    ece : ndarray of shape (n_groups,)
        Expected calibration error of ``kind`` (L1 norm), as
        :func:`~skcalib.metrics.expected_calibration_error` on the group's
        rows.
    ece_low, ece_high : ndarray of shape (n_groups,)
        Bounds of the ECE's interval at ``confidence_level``
        (:func:`~skcalib.metrics.calibration_error_interval`); NaN for a
        group below ``min_group_size``.
    corp_mcb : ndarray of shape (n_groups,)
        CORP miscalibration (Brier MCB, >= 0) of
        :func:`~skcalib.metrics.corp_decomposition`: of the top-1
        confidence (``kind="confidence"``), or the mean over the classes
        of each class's one-vs-rest MCB (``"classwise"``).
    brier : ndarray of shape (n_groups,)
        Brier score (:func:`~skcalib.metrics.brier_score`).
    nll : ndarray of shape (n_groups,)
        Negative log-likelihood
        (:func:`~skcalib.metrics.negative_log_likelihood`).
    pvalue : ndarray of shape (n_groups,)
        p-value of the group's calibration test (``test``); NaN below
        ``min_group_size``.
    pvalue_adjusted : ndarray of shape (n_groups,)
        ``pvalue`` adjusted for the number of groups tested (``adjust``):
        reject calibration in group ``g`` at family-wise level ``alpha``
        when ``pvalue_adjusted[g] <= alpha``. NaN for untested groups.
    note : ndarray of shape (n_groups,) of str
        Empty, or why a group has no interval and no test.
    curves : tuple of ReliabilityCurve
        The reliability curve of each group's top-1 confidence (the bins of
        ``n_bins`` and ``strategy``).
    class_curves : tuple of tuple of ReliabilityCurve or None
        ``kind="classwise"``: per group, the curve of each class (one
        versus the rest), in the order of :attr:`classes`; else None.
    intervals : tuple of CalibrationErrorInterval or None
        The full interval of each tested group (None when untested).
    tests : tuple of CalibrationTestResult or None
        The full test result of each tested group (None when untested).
    classes : ndarray of shape (n_classes,)
        The class labels of the columns of ``y_proba``.
    kind : str
        ``"confidence"`` or ``"classwise"``.
    strategy : str
        The binning strategy.
    n_bins : int
        The number of bins asked for.
    confidence_level : float
        Level of the intervals.
    test : str
        The test, in words (the ``method`` of its results).
    adjust : str or None
        The multiplicity correction over groups (``"holm"``,
        ``"bonferroni"``, or None: none).
    min_group_size : int
        Groups with fewer rows get no interval and no test.

    See Also
    --------
    calibration_by_group : Computes it.
    skcalib.plotting.GroupReliabilityDisplay : Draws its curves.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.monitoring import calibration_by_group
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=600)
    >>> y = (rng.uniform(size=600) < p).astype(int)
    >>> res = calibration_by_group(y, p, np.repeat(["a", "b", "c"], 200),
    ...                            n_bins=5, random_state=0)
    >>> len(res), res.groups.tolist(), res.n.tolist()
    (3, ['a', 'b', 'c'], [200, 200, 200])
    >>> row = res.to_dict()["groups"][0]
    >>> row["group"], row["n"], round(row["ece"], 3)
    ('a', 200, 0.063)
    """

    groups: np.ndarray
    n: np.ndarray
    weight: np.ndarray
    accuracy: np.ndarray
    ece: np.ndarray
    ece_low: np.ndarray
    ece_high: np.ndarray
    corp_mcb: np.ndarray
    brier: np.ndarray
    nll: np.ndarray
    pvalue: np.ndarray
    pvalue_adjusted: np.ndarray
    note: np.ndarray
    curves: tuple = field(repr=False)
    class_curves: tuple | None = field(repr=False)
    intervals: tuple = field(repr=False)
    tests: tuple = field(repr=False)
    classes: np.ndarray = field(repr=False)
    kind: str = "confidence"
    strategy: str = "uniform"
    n_bins: int = 15
    confidence_level: float = 0.95
    test: str = ""
    adjust: str | None = "holm"
    min_group_size: int = 10

    def __len__(self):
        return int(self.groups.size)

    def _column(self, name):
        return self.groups if name == "group" else getattr(self, name)

    def reject(self, alpha=0.05):
        """Which groups are miscalibrated at family-wise level ``alpha``.

        Parameters
        ----------
        alpha : float, default=0.05
            Level, controlled over the groups tested (by ``adjust``).

        Returns
        -------
        reject : ndarray of shape (n_groups,), bool
            ``pvalue_adjusted <= alpha``; False for untested groups.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.monitoring import calibration_by_group
        >>> rng = np.random.default_rng(1)
        >>> p = rng.uniform(size=2000)
        >>> g = np.repeat([0, 1], 1000)
        >>> truth = np.where(g == 1, 0.5 + 0.6 * (p - 0.5), p)  # 1: over-confident
        >>> y = (rng.uniform(size=2000) < truth).astype(int)
        >>> calibration_by_group(y, p, g, random_state=0).reject(0.05).tolist()
        [False, True]
        """
        with np.errstate(invalid="ignore"):
            return np.asarray(self.pvalue_adjusted <= alpha)

    def to_dict(self, curves=False):
        """The settings and one dict per group, with Python scalars (JSON-ready).

        Parameters
        ----------
        curves : bool, default=False
            Add each group's reliability curve (``"curve"``: its ``edges``,
            ``mean_confidence``, ``accuracy``, ``counts``, ``n_samples``
            as lists) and, for ``kind="classwise"``, ``"class_curves"``.

        Returns
        -------
        result : dict
            ``kind``, ``strategy``, ``n_bins``, ``confidence_level``,
            ``test``, ``adjust``, ``min_group_size``, ``classes`` and
            ``groups``: a list with one dict per group holding the columns
            ``group``, ``n``, ``weight``, ``accuracy``, ``ece``,
            ``ece_low``, ``ece_high``, ``corp_mcb``, ``brier``, ``nll``,
            ``pvalue``, ``pvalue_adjusted`` and ``note``; undefined values
            (NaN) are None.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.monitoring import calibration_by_group
        >>> res = calibration_by_group([0, 1, 1, 0], [0.2, 0.7, 0.9, 0.4],
        ...                            ["x", "x", "y", "y"], n_bins=2)
        >>> row = res.to_dict()["groups"][1]
        >>> row["group"], row["n"], row["brier"], row["pvalue"], row["note"]
        ('y', 2, 0.085, None, 'fewer than min_group_size=10 rows: no interval, no test')
        """
        rows = []
        for g in range(len(self)):
            row = {c: _scalar(self._column(c)[g]) for c in COLUMNS}
            if curves:
                row["curve"] = _curve_dict(self.curves[g])
                if self.class_curves is not None:
                    row["class_curves"] = [_curve_dict(c) for c in self.class_curves[g]]
            rows.append(row)
        return {
            "kind": self.kind,
            "strategy": self.strategy,
            "n_bins": self.n_bins,
            "confidence_level": self.confidence_level,
            "test": self.test,
            "adjust": self.adjust,
            "min_group_size": self.min_group_size,
            "classes": self.classes.tolist(),
            "groups": rows,
        }

    def as_frame(self):
        """The table as a pandas DataFrame (needs pandas), one row per group.

        Returns
        -------
        frame : pandas.DataFrame
            The columns of :meth:`to_dict` (NaN where undefined), in the
            order of :attr:`groups`.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.monitoring import calibration_by_group
        >>> res = calibration_by_group([0, 1, 1, 0], [0.2, 0.7, 0.9, 0.4],
        ...                            [2, 2, 1, 1], n_bins=2)
        >>> res.as_frame()[["group", "n", "accuracy", "brier"]]
           group  n  accuracy  brier
        0      1  2       1.0  0.085
        1      2  2       1.0  0.065
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is optional
            raise ImportError("GroupCalibrationResult.as_frame needs pandas.") from exc
        return pd.DataFrame({c: self._column(c) for c in COLUMNS})

    def __repr__(self):
        tested = int(np.count_nonzero(~np.isnan(self.pvalue)))
        return (
            f"{type(self).__name__}(n_groups={len(self)}, tested={tested}, "
            f"kind={self.kind!r}, adjust={self.adjust!r}, "
            f"groups={self.groups.tolist()[:10]!r})"
        )
