"""The result of a calibration test, shared by every test of the package."""

from dataclasses import dataclass

import numpy as np

__all__ = ["CalibrationTestResult"]


@dataclass(frozen=True, eq=False)
class CalibrationTestResult:
    """Result of a test of the hypothesis that predictions are calibrated.

    A small p-value says that the data are unlikely under calibration; it
    does not say how large the miscalibration is (with many samples a tiny,
    harmless miscalibration is rejected). Report :attr:`effect` beside it.

    Attributes
    ----------
    statistic : float
        Value of the test statistic.
    pvalue : float
        p-value of the test (for a multiclass test, the p-value of the
        combined hypothesis "every class is calibrated" after the
        multiplicity correction).
    method : str
        The test and the distribution its p-value comes from, in words.
    df : float or None, default=None
        Degrees of freedom of the reference distribution, where they apply
        (Hosmer-Lemeshow's chi-squared), else None.
    n_samples : int or None, default=None
        Number of samples the test was computed on.
    effect : float or None, default=None
        An effect size on the probability scale, to report beside the
        p-value: what :attr:`effect_name` names.
    effect_name : str or None, default=None
        What :attr:`effect` measures, in words.
    per_class_statistic, per_class_pvalue, per_class_effect : ndarray or None
        For a multiclass (one-vs-rest) test, the statistic, the unadjusted
        p-value and the effect size of each class, in the order of the
        columns of ``y_proba``; None for a binary test.
    pvalues_adjusted : ndarray or None, default=None
        For a multiclass test, the per-class p-values after the
        multiplicity correction (reject class ``k`` at level ``alpha`` when
        ``pvalues_adjusted[k] <= alpha``).
    correction : str or None, default=None
        The multiplicity correction of a multiclass test (``"holm"`` or
        ``"bonferroni"``).

    Examples
    --------
    >>> from skcalib.metrics import CalibrationTestResult
    >>> r = CalibrationTestResult(statistic=2.5, pvalue=0.0124, method="z")
    >>> r.reject(0.05)
    True
    """

    statistic: float
    pvalue: float
    method: str
    df: float | None = None
    n_samples: int | None = None
    effect: float | None = None
    effect_name: str | None = None
    per_class_statistic: np.ndarray | None = None
    per_class_pvalue: np.ndarray | None = None
    per_class_effect: np.ndarray | None = None
    pvalues_adjusted: np.ndarray | None = None
    correction: str | None = None

    def reject(self, alpha=0.05):
        """Whether the hypothesis of calibration is rejected at level ``alpha``.

        Parameters
        ----------
        alpha : float, default=0.05
            Level of the test.

        Returns
        -------
        reject : bool
            ``pvalue <= alpha`` (for a multiclass test, the combined
            decision: some class is rejected after the correction).
        """
        return bool(self.pvalue <= alpha)

    def __repr__(self):
        parts = [f"statistic={self.statistic:.6g}", f"pvalue={self.pvalue:.4g}"]
        if self.df is not None:
            parts.append(f"df={self.df:g}")
        if self.effect is not None:
            parts.append(f"effect={self.effect:.4g}")
        if self.n_samples is not None:
            parts.append(f"n_samples={self.n_samples}")
        parts.append(f"method={self.method!r}")
        return f"CalibrationTestResult({', '.join(parts)})"
