"""Conformal risk control: prediction sets whose expected loss (false
negative rate of multi-label sets, or miscoverage of multiclass sets) is at
most ``alpha``."""

from numbers import Real

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from skcalib._base import BaseCalibrator
from skcalib._core.compat import Interval, StrOptions, _fit_context
from skcalib._core.labels import check_classes
from skcalib._core.multilabel import check_label_indicator, positive_proba
from skcalib._core.weights import _checked_weights, check_count_weights
from skcalib._core.xp import namespace
from skcalib._core.xp.estimator import call_on_host, follows_input
from skcalib.conformal._quantile import check_alphas
from skcalib.conformal._risk_inputs import (
    check_label_proba,
    resolve_loss,
    warn_infeasible,
)
from skcalib.conformal._risk_lambda import empirical_risk, risk_lambdas, risk_steps
from skcalib.conformal._risk_user_loss import check_grid, grid_lambdas, grid_loss_sums

__all__ = ["ConformalRiskController"]

#: The bound ``B`` of both built-in losses (each lies in [0, 1]).
_BOUND = 1.0


class ConformalRiskController(BaseCalibrator):
    """Prediction sets whose expected loss is at most ``alpha``.

    Conformal risk control (Angelopoulos et al. 2024) generalises split
    conformal prediction from coverage to any loss that shrinks as the sets
    grow. The sets are :math:`C_\\lambda(x) = \\{j : 1 - p_j(x) \\le
    \\lambda\\}` (the labels of probability at least :math:`1 - \\lambda`),
    and :math:`\\hat\\lambda` is chosen on a calibration set that the model
    was not trained on so that, for a new exchangeable sample,

    .. math::

        \\mathbb{E}\\big[\\ell\\big(C_{\\hat\\lambda}(X_{n+1}),
        Y_{n+1}\\big)\\big] \\le \\alpha.

    Two losses, both bounded by :math:`B = 1`:

    * ``"fnr"`` (multi-label, ``y`` a label-indicator matrix of shape
      ``(n_samples, n_labels)``): the false negative rate
      :math:`1 - |C \\cap Y| / |Y|`, the share of the true labels missing
      from the set. A row with no true label has loss 0.
    * ``"miscoverage"`` (multiclass, ``y`` one label per row):
      :math:`\\mathbb{1}\\{y \\notin C\\}`. This is split conformal
      prediction with LAC sets: the sets equal those of
      ``ConformalClassifier(method="lac")`` (see Notes).

    Raw-probability mode (``estimator=None``): ``X`` holds the
    probabilities, ``(n, L)`` per-label probabilities for ``"fnr"`` (each in
    [0, 1], rows need not sum to 1), ``(n, K)`` class scores for
    ``"miscoverage"`` (read as :class:`ConformalClassifier` reads them:
    probabilities, or logits turned into probabilities by softmax). Wrapper
    mode: ``X`` holds the features of a prefit ``estimator``, which is never
    refit; a multi-label classifier's ``predict_proba`` may be an ``(n, L)``
    matrix or a list of per-label ``(n, 2)`` arrays (class 1 found by the
    estimator's ``classes_``).

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode), or ``None`` (``X`` holds the
        probabilities).
    loss : {"auto", "fnr", "miscoverage"}, default="auto"
        The loss whose expectation is controlled. ``"auto"``: ``"fnr"`` when
        ``y`` is a label-indicator matrix (scikit-learn's
        ``type_of_target(y) == "multilabel-indicator"``: 2-D, more than one
        column, entries 0/1), ``"miscoverage"`` otherwise; the value used is
        ``loss_``. The two agree on one-hot ``y`` (one true label per row),
        where the false negative rate is the miscoverage. A callable
        ``loss(sets, y)`` is a loss of your own: given the boolean sets
        ``(n, n_columns)`` of all rows at one ``lambda`` and ``y`` (the
        label-indicator matrix, or the class indices ``0, ..., K - 1``
        of the columns of ``classes_`` for one label per row), it returns
        the ``(n,)`` losses. It is evaluated on ``lambda_grid`` and must lie
        in ``[0, loss_bound]`` and not increase as the sets grow (checked at
        every grid point: an error names the row and the ``lambda``).
    alpha : float in (0, 1), default=0.1
        The bound on the expected loss. :meth:`predict_set` can give the
        sets of other levels too (``alpha=`` there).
    lambda_grid : array-like of shape (n_grid,) or None, default=None
        Callable ``loss`` only: the strictly increasing values of
        ``lambda`` in [0, 1] at which the loss is evaluated (1, full sets,
        is appended when absent); :math:`\\hat\\lambda` is the first grid
        point that passes. None: 1001 points ``0, 0.001, ..., 1``. The
        built-in losses are exact and take no grid (an error if given).
    loss_bound : float > 0, default=1.0
        Callable ``loss`` only: the bound :math:`B` of the loss.
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds. ``"miscoverage"``: as in
        :class:`ConformalClassifier`. ``"fnr"``: ``"auto"`` and
        ``"probability"`` need per-label probabilities in [0, 1];
        ``"logit"``: per-label log-odds, turned into probabilities by the
        logistic function.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores. ``"fnr"`` reads
        ``predict_proba`` (``"auto"``); ``"decision_function"`` is refused
        there.
    classes : array-like of shape (n_classes,) or (n_labels,), default=None
        Raw mode: the class (``"miscoverage"``) or label name (``"fnr"``)
        of each column. None: the sorted labels of ``y``, or ``0, ...,
        L - 1`` for a label-indicator ``y``.

    Attributes
    ----------
    loss_ : str or callable
        The loss used (``loss`` resolved).
    lambda_ : float
        :math:`\\hat\\lambda` at ``alpha``, in [0, 1]: label :math:`j` is in
        the set when ``1 - p_j <= lambda_``.
    threshold_ : float
        ``1 - lambda_``: the probability above which a label is in the set
        (up to the rounding of ``1 - p``; the sets compare ``1 - p`` with
        ``lambda_``, as :class:`ConformalClassifier` does).
    calibration_risk_ : float
        The empirical risk :math:`\\hat R_n(\\hat\\lambda)` on the
        calibration rows (weighted mean loss).
    classes_ : ndarray of shape (n_classes,) or (n_labels,)
        The columns of :meth:`predict_set` and :meth:`predict_proba`.
    score_type_ : str
        What the scores were taken to be.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen at fit (when they are all strings).

    See Also
    --------
    ConformalClassifier : Split-conformal sets with a coverage guarantee.

    Notes
    -----
    **The parameter.** With :math:`L_i(\\lambda)` the loss of calibration
    row :math:`i` (non-increasing in :math:`\\lambda`, :math:`L_i(1) = 0`,
    bounded by :math:`B`) and :math:`\\hat R_n(\\lambda) = \\frac1n \\sum_i
    L_i(\\lambda)`,

    .. math::

        \\hat\\lambda = \\inf\\Big\\{\\lambda \\in [0, 1] :
        \\frac{n}{n + 1} \\hat R_n(\\lambda) + \\frac{B}{n + 1} \\le
        \\alpha\\Big\\}.

    The risk is a step function: the true label :math:`j` of row :math:`i`
    adds :math:`1 / |Y_i|` to :math:`L_i` while :math:`\\lambda < 1 -
    p_{ij}`. The scores :math:`1 - p_{ij}` of all true labels are sorted
    once with these weights; the cumulative sums give the risk at every
    step, and :math:`\\hat\\lambda` is the first step where the inequality
    holds: exact, no grid. When :math:`\\alpha < B / (n + 1)` no
    :math:`\\lambda` passes (even full sets, of loss 0, leave
    :math:`B / (n + 1)`): then :math:`\\hat\\lambda = 1`, every set holds
    every label, and a warning says so.

    **Sample weights** are repetition counts, as in
    :class:`ConformalClassifier`: with weights :math:`w_i` of total
    :math:`W`, the condition is :math:`\\sum_i w_i L_i(\\lambda) + B \\le
    \\alpha (W + 1)` (the test sample counts with weight 1), which is the
    unweighted rule when every weight is 1, and a weight of 2 equals a
    duplicated row. This is not the covariate-shift weighting of
    Tibshirani et al. (2019).

    **Rows without a true label** (``"fnr"``): their false negative rate is
    0/0, taken as 0; they count in :math:`n` (or :math:`W`), so the
    guarantee is on the mean loss over all rows, those rows included. Drop
    them before ``fit`` for a guarantee on the rows that have labels.

    **Miscoverage is split conformal.** With :math:`L_i(\\lambda) =
    \\mathbb{1}\\{1 - p_{y_i} > \\lambda\\}` the condition reads
    :math:`\\#\\{i : s_i \\le \\lambda\\} \\ge (1 - \\alpha)(n + 1)` with
    :math:`s_i = 1 - p_{y_i}`, so :math:`\\hat\\lambda` is the
    :math:`\\lceil (1 - \\alpha)(n + 1) \\rceil`-th smallest score: the
    threshold of ``ConformalClassifier(method="lac")``, and the same sets
    (also weighted). Where that threshold is infinite (too few samples),
    :math:`\\hat\\lambda = 1` gives the same full sets.

    **A callable loss** is evaluated once per grid point on all rows
    (``n_grid`` calls), and :math:`\\hat\\lambda` is the first grid point
    where :math:`\\sum_i w_i L_i(\\lambda) + B \\le \\alpha (W + 1)`. The
    guarantee holds for the grid values (the infimum is over the grid); a
    grid holding every point where the loss changes gives the exact
    :math:`\\hat\\lambda`.

    **Guarantee.** :math:`\\alpha - 2B/(n + 1) \\le \\mathbb{E}[L_{n+1}]
    \\le \\alpha` (the lower bound when the losses have no jumps in common,
    e.g. continuous probabilities), over the calibration set and the test
    sample together.

    References
    ----------
    .. [1] A. N. Angelopoulos, S. Bates, A. Fisch, L. Lei and T. Schuster,
       "Conformal risk control", ICLR 2024 (arXiv:2208.02814).
    .. [2] R. J. Tibshirani, R. Foygel Barber, E. Candès and A. Ramdas,
       "Conformal prediction under covariate shift", NeurIPS 2019.

    Examples
    --------
    Multi-label sets with a false negative rate of at most 0.25:

    >>> import numpy as np
    >>> from skcalib.conformal import ConformalRiskController
    >>> proba = np.array([[0.9, 0.6, 0.1], [0.8, 0.3, 0.4], [0.2, 0.7, 0.5],
    ...                   [0.6, 0.2, 0.9], [0.4, 0.5, 0.3], [0.7, 0.9, 0.2]])
    >>> y = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 0],
    ...               [0, 0, 1], [1, 1, 0], [1, 1, 0]])
    >>> crc = ConformalRiskController(alpha=0.25).fit(proba, y)
    >>> crc.loss_, round(crc.lambda_, 2)
    ('fnr', 0.6)
    >>> crc.predict_set([[0.5, 0.35, 0.45], [0.3, 0.1, 0.9]])
    array([[ True, False,  True],
           [False, False,  True]])

    The true labels' scores ``1 - p`` are 0.1 (three), 0.2, 0.3 (two), 0.4,
    0.5 and 0.6 (two: label 2 of row 1 and label 0 of row 4, both of
    probability 0.4). Just below 0.6 those two rows miss one of their two
    labels each, total loss 1, and ``(1 + 1) / 7 > 0.25``; at 0.6 the loss
    is 0 and ``(0 + 1) / 7 <= 0.25``:

    >>> crc.calibration_risk_
    0.0
    """

    _parameter_constraints: dict = {
        **BaseCalibrator._parameter_constraints,
        "loss": [StrOptions({"auto", "fnr", "miscoverage"}), callable],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "lambda_grid": ["array-like", None],
        "loss_bound": [Interval(Real, 0, None, closed="neither")],
    }

    #: Weights are repetition counts (the level is ``alpha (W + 1)``).
    _rescale_sample_weight = False

    def __init__(
        self,
        estimator=None,
        *,
        loss="auto",
        alpha=0.1,
        lambda_grid=None,
        loss_bound=1.0,
        score_type="auto",
        response_method="auto",
        classes=None,
    ):
        self.estimator = estimator
        self.loss = loss
        self.alpha = alpha
        self.lambda_grid = lambda_grid
        self.loss_bound = loss_bound
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes

    # ---------------------------------------------------------------- fitting
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, sample_weight=None):
        """Choose :math:`\\hat\\lambda` on calibration data.

        Parameters
        ----------
        X : array-like
            Raw mode: the probabilities, ``(n_samples, n_labels)`` for
            ``"fnr"``, ``(n_samples, n_classes)`` (or 1-D binary) for
            ``"miscoverage"``. Wrapper mode: the features of ``estimator``.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels (``"miscoverage"``) or a label-indicator matrix
            (``"fnr"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative repetition counts (see Notes).

        Returns
        -------
        self : object
        """
        self.loss_, self._multilabel = resolve_loss(self.loss, y)
        self._check_user_loss_options()
        if not self._multilabel:
            return super().fit(X, y, sample_weight=sample_weight)
        proba = self._label_proba(X, reset=True)
        y = check_label_indicator(y, n_labels=proba.shape[1])
        if y.shape[0] != proba.shape[0]:
            raise ValueError(
                f"X gives {proba.shape[0]} samples but y has {y.shape[0]}."
            )
        self.classes_ = self._label_names(proba.shape[1])
        if sample_weight is not None:
            sample_weight = _checked_weights(sample_weight, y, rescale=False)
        if callable(self.loss_):
            self._fit_grid(proba, y, sample_weight)
            return self
        rows, cols = np.nonzero(y)
        self._fit_steps(1 - proba[rows, cols], rows, y.sum(axis=1), sample_weight)
        return self

    def _fit(self, scores, y, sample_weight):
        """Miscoverage: one true label per row, of score ``1 - p_y``."""
        proba = self._predict_proba(scores)
        if callable(self.loss_):
            self._fit_grid(proba, y, sample_weight)
            return
        rows = np.arange(y.size)
        self._fit_steps(1 - proba[rows, y], rows, np.ones(y.size), sample_weight)

    def _predict_proba(self, scores):
        return scores.proba

    def _check_user_loss_options(self):
        if callable(self.loss):
            return
        if self.lambda_grid is not None or self.loss_bound != 1.0:
            raise ValueError(
                f"lambda_grid and loss_bound are for a callable loss; "
                f"loss={self.loss!r} is exact (no grid) and bounded by 1, got "
                f"lambda_grid={self.lambda_grid!r}, loss_bound={self.loss_bound!r}."
            )

    def _weights(self, n, sample_weight):
        check_count_weights(sample_weight, type(self).__name__)
        weight = np.ones(n) if sample_weight is None else sample_weight
        self._total_weight = float(weight.sum())
        return weight

    def _fit_steps(self, label_scores, rows, label_count, sample_weight):
        weight = self._weights(label_count.size, sample_weight)
        self._steps = risk_steps(label_scores, rows, weight, label_count)
        self._grid = None
        self._finish()

    def _fit_grid(self, proba, y, sample_weight):
        weight = self._weights(proba.shape[0], sample_weight)
        self._grid = check_grid(self.lambda_grid)
        self._grid_sums = grid_loss_sums(
            proba, y, self.loss_, self._grid, float(self.loss_bound), weight
        )
        self._finish()

    def _bound(self):
        return _BOUND if self._grid is None else float(self.loss_bound)

    def _lambdas(self, alphas):
        """``(lambdas, feasible)`` at levels ``alphas``."""
        if self._grid is None:
            return risk_lambdas(*self._steps, self._total_weight, alphas, _BOUND)
        lambdas, feasible, _ = grid_lambdas(
            self._grid, self._grid_sums, self._total_weight, alphas, self._bound()
        )
        return lambdas, feasible

    def _finish(self):
        lambdas, feasible = self._lambdas([self.alpha])
        self.lambda_ = float(lambdas[0])
        self.threshold_ = 1.0 - self.lambda_
        if self._grid is None:
            risk = empirical_risk(*self._steps, self._total_weight, self.lambda_)
        else:
            k = int(np.searchsorted(self._grid, self.lambda_))
            risk = float(self._grid_sums[k]) / self._total_weight
        self.calibration_risk_ = risk
        if not feasible[0]:
            warn_infeasible(self.alpha, self._total_weight, self._bound())

    # ------------------------------------------------------- multi-label input
    def _label_names(self, n_labels):
        if self.classes is None:
            if self.estimator is not None:
                known = getattr(self.estimator, "classes_", None)
                if isinstance(known, np.ndarray) and known.shape == (n_labels,):
                    return known
            return np.arange(n_labels)
        classes = check_classes(self.classes)
        if classes.size != n_labels:
            raise ValueError(
                f"classes has {classes.size} labels but the probabilities have "
                f"{n_labels} columns; give one name per label column."
            )
        return classes

    def _label_proba(self, X, *, reset):
        """The ``(n, L)`` per-label probabilities of ``X`` (``"fnr"``)."""
        if self.estimator is None:
            X = validate_data(
                self,
                X,
                reset=reset,
                dtype=[np.float64, np.float32],
                ensure_all_finite=False,
            )
            if reset:
                self.score_type_ = (
                    "logit" if self.score_type == "logit" else "probability"
                )
            return check_label_proba(X, "X", self.score_type_ == "logit")
        if self.response_method == "decision_function":
            raise ValueError(
                "loss='fnr' reads per-label probabilities from predict_proba; "
                "response_method='decision_function' is not supported there "
                "(pass response_method='auto' or 'predict_proba')."
            )
        check_is_fitted(self.estimator)
        if reset:
            self.score_type_ = "probability"
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self.estimator, attr):
                    setattr(self, attr, getattr(self.estimator, attr))
        proba = positive_proba(self.estimator.predict_proba(X), self.estimator)
        if not reset and proba.shape[1] != len(self.classes_):
            raise ValueError(
                f"{type(self.estimator).__name__}.predict_proba gives "
                f"{proba.shape[1]} labels; {len(self.classes_)} at fit."
            )
        return proba

    # ------------------------------------------------------------- prediction
    def _set_proba(self, X):
        if self._multilabel:
            return self._label_proba(X, reset=False)
        return self._predict_proba(
            self._scores(*self._raw_scores(X, reset=False), reset=False)
        )

    @follows_input
    def predict_set(self, X, alpha=None):
        """Risk-controlled sets, at the fitted level or at several.

        Parameters
        ----------
        X : array-like
            Probabilities (raw mode) or features (wrapper mode), as in
            :meth:`fit`.
        alpha : None, float in (0, 1) or array-like of shape (n_alpha,), \
                default=None
            Risk level(s). ``None``: the fitted ``alpha`` (``lambda_``). A
            float, or a list of strictly increasing floats: the sets at
            those levels, from the same calibration data (no refit); the
            set of a larger ``alpha`` is a subset of that of a smaller one.

        Returns
        -------
        sets : ndarray of shape (n_samples, n_columns) or \
                (n_samples, n_columns, n_alpha), dtype=bool
            ``sets[i, j]`` is True when ``classes_[j]`` is in the set of row
            ``i``: ``1 - p_j <= lambda``. Sizes are ``sets.sum(axis=1)``.
        """
        check_is_fitted(self)
        if namespace(X) is not None:  # sets on the host, returned on the device
            return call_on_host(self, "predict_set", X, alpha)
        alphas, scalar = check_alphas(self.alpha if alpha is None else alpha)
        if alpha is None:
            lambdas = np.array([self.lambda_])
        else:
            lambdas, feasible = self._lambdas(alphas)
            for a in alphas[~feasible]:
                if a != self.alpha:
                    warn_infeasible(a, self._total_weight, self._bound())
        proba = self._set_proba(X)
        sets = (1 - proba)[:, :, None] <= lambdas[None, None, :]
        return sets[:, :, 0] if scalar else sets

    def predict_proba(self, X):
        """The probabilities the sets are made of (a passthrough).

        Parameters
        ----------
        X : array-like
            As in :meth:`fit`.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes) or (n_samples, n_labels)
            ``"miscoverage"``: class probabilities, rows sum to 1.
            ``"fnr"``: per-label probabilities (rows need not sum to 1).
        """
        check_is_fitted(self)
        if self._multilabel:
            return self._label_proba(X, reset=False)
        return super().predict_proba(X)

    def predict(self, X):
        """The model's own prediction (not risk-controlled).

        Parameters
        ----------
        X : array-like
            As in :meth:`fit`.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_labels)
            ``"miscoverage"``: the most probable class. ``"fnr"``: the
            label-indicator matrix of the labels with ``p_j >= 0.5``. The
            risk-controlled output is :meth:`predict_set`.
        """
        check_is_fitted(self)
        if self._multilabel:
            return (self._label_proba(X, reset=False) >= 0.5).astype(np.int64)
        return super().predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags
