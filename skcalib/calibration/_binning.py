"""Histogram binning."""

from functools import partial
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from skcalib.calibration._binary import OUTPUT_EPS, _BinaryMapCalibrator
from skcalib.metrics._binning import (
    N_BINS_CONSTRAINT,
    bin_edges,
    binned_sums,
    lookup_bins,
)

__all__ = ["HistogramBinningCalibrator"]


def _binned_chunk(scores, y, w, *, view, edges, smooth):
    """Per-bin weights, positives (and scores) of one chunk of one map."""
    score, target = view(scores, y)
    values = (target, score) if smooth else (target,)
    return binned_sums(score, edges, w, *values, in_range=True)


class HistogramBinningCalibrator(_BinaryMapCalibrator):
    """Histogram binning: replace a probability by the frequency of its bin.

    The probability ``p`` of the class (one-vs-rest) or of the predicted class
    (top-label) is put in one of ``n_bins`` bins; the calibrated probability is
    the weighted fraction of positives among the calibration samples of that
    bin. Bins are right-closed, ``(e_j, e_{j+1}]``, the first one ``[0, e_1]``
    (the convention of :func:`sklearn.calibration.calibration_curve`).

    With ``smoothing`` :math:`= m > 0` each bin's estimate is shrunk towards
    the mean uncalibrated probability :math:`\\bar p_j` of the samples in it:

    .. math::

        \\hat p_j = \\frac{\\sum_{i \\in j} w_i y_i + m\\, \\bar p_j}
                        {\\sum_{i \\in j} w_i + m}.

    **Empty bins** (no calibration sample) keep the model's own probability:
    their value is the bin's midpoint ``(e_j + e_{j+1}) / 2``; they never give
    NaN. Outputs are kept in ``[1e-12, 1 - 1e-12]`` so that log-loss stays
    finite (a bin without positives would otherwise give exactly 0).

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: equal-width bins on ``[0, 1]``; ``"quantile"``:
        equal-mass bins from the (weighted) quantiles of the calibration
        probabilities. Quantile edges that coincide because probabilities tie
        are merged, so fewer bins may be used (one if all probabilities are
        equal).
    smoothing : float, default=0.0
        Pseudo-count ``m`` of the shrinkage above; 0 gives plain frequencies.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    multi_class : {"ovr", "top_label"}, default="ovr"
        Strategy for more than two classes.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be.
    calibrators_ : list of tuple (edges, bin_proba) or None
        One fitted map per class (one for binary problems); ``None`` for a
        top-label class never predicted at fit (identity).
    bin_edges_ : list of ndarray
        The edges of each map.
    bin_proba_ : list of ndarray
        The calibrated probability of each bin of each map (in
        ``[1e-12, 1 - 1e-12]``).
    bin_counts_ : list of ndarray
        The weighted number of calibration samples in each bin of each map.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    IsotonicCalibrator : bins chosen by the data, monotone.

    References
    ----------
    .. [1] B. Zadrozny and C. Elkan, "Obtaining calibrated probability
       estimates from decision trees and naive Bayesian classifiers",
       ICML 2001.
    .. [2] C. Gupta and A. Ramdas, "Top-label calibration and multiclass-to-
       binary reductions", ICLR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import HistogramBinningCalibrator
    >>> p = np.array([0.1, 0.2, 0.6, 0.7, 0.8, 0.9])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> cal = HistogramBinningCalibrator(n_bins=2).fit(p, y)
    >>> cal.bin_proba_[0]
    array([1.00e-12, 7.50e-01])
    >>> cal.predict_proba([0.3, 0.95])[:, 1]
    array([1.00e-12, 7.50e-01])
    """

    _parameter_constraints: dict = {
        **_BinaryMapCalibrator._parameter_constraints,
        "n_bins": [N_BINS_CONSTRAINT],
        "strategy": [StrOptions({"uniform", "quantile"})],
        "smoothing": [Interval(Real, 0, None, closed="left")],
    }
    _map_input = "proba"
    _map_output_clipped = True
    _bool_target = True

    def __init__(
        self,
        estimator=None,
        *,
        n_bins=15,
        strategy="uniform",
        smoothing=0.0,
        score_type="auto",
        response_method="auto",
        multi_class="ovr",
    ):
        self.estimator = estimator
        self.n_bins = n_bins
        self.strategy = strategy
        self.smoothing = smoothing
        self.score_type = score_type
        self.response_method = response_method
        self.multi_class = multi_class

    def _fit_map(self, score, target, sample_weight):
        # target: boolean, or the 0/1 encoded labels of a binary problem.
        edges = bin_edges(score, self.n_bins, self.strategy, sample_weight)
        if self.smoothing > 0:
            sums = binned_sums(
                score, edges, sample_weight, target != 0, score, in_range=True
            )
        else:
            sums = binned_sums(
                score, edges, sample_weight, target, in_range=True, binary_target=True
            )
        return self._table(edges, *sums)

    def _fit_map_chunks(self, data, view, n_pos):
        if self.strategy != "uniform":
            raise ValueError(
                "HistogramBinningCalibrator fits chunks with strategy='uniform' only "
                "(quantile edges need every score at once); got "
                f"strategy={self.strategy!r}."
            )
        edges = bin_edges(None, self.n_bins, "uniform")
        sums = data.map_scores(
            partial(_binned_chunk, view=view, edges=edges, smooth=self.smoothing > 0)
        )
        return self._table(edges, *sums)

    def _table(self, edges, counts, sum_y, sum_p=None):
        """The fitted map from per-bin weights, positives and (with
        smoothing) sums of the scores."""
        m = float(self.smoothing)
        midpoints = 0.5 * (edges[:-1] + edges[1:])
        if m > 0:
            filled = counts > 0
            prior = np.where(filled, sum_p / np.where(filled, counts, 1.0), midpoints)
        else:  # the prior only fills empty bins: no need to sum the scores
            prior = midpoints
        denom = counts + m
        proba = np.where(
            denom > 0, (sum_y + m * prior) / np.where(denom > 0, denom, 1.0), prior
        )
        # Clip the table once instead of every prediction.
        proba = np.clip(proba, OUTPUT_EPS, 1.0 - OUTPUT_EPS)
        return edges, proba, counts

    def _set_fitted_views(self):
        maps = self.calibrators_
        self.bin_edges_ = [None if m is None else m[0] for m in maps]
        self.bin_proba_ = [None if m is None else m[1] for m in maps]
        self.bin_counts_ = [None if m is None else m[2] for m in maps]
        self.calibrators_ = [None if m is None else (m[0], m[1]) for m in maps]

    def _apply_map(self, fitted, score):
        edges, proba = fitted
        # The map's inputs are probabilities (validated, or softmax outputs).
        return lookup_bins(score, edges, proba, in_range=True)

    def _binary_proba(self, fitted, score, dtype):
        # Both columns from one lookup of a two-column table.
        edges, proba = fitted
        table = np.column_stack((1.0 - proba, proba)).astype(dtype, copy=False)
        return lookup_bins(score, edges, table, in_range=True)
