"""Vector and matrix scaling: ``softmax(W z + b)`` on the scores as given.

The fit and the penalties are those of
:mod:`skcalib.calibration._linear_map`; :class:`DirichletCalibrator`
(:mod:`skcalib.calibration._dirichlet`) is the same map on normalised
log-probabilities.
"""

from numbers import Real

from skcalib._core.compat import Interval, StrOptions
from skcalib.calibration._linear_map import _LinearMapCalibrator
from skcalib.calibration._partial_fit import FORGETTING_FACTOR, PartialFitMixin

__all__ = ["MatrixScalingCalibrator", "VectorScalingCalibrator"]


class VectorScalingCalibrator(PartialFitMixin, _LinearMapCalibrator):
    """Vector scaling: one scale and one offset per class on the logits.

    .. math::

        \\hat p(y \\mid z) = \\operatorname{softmax}(w \\odot z + b),
        \\qquad w, b \\in \\mathbb{R}^K.

    Temperature scaling is the special case ``w = 1/T``, ``b = 0``; unlike
    it, vector scaling can change the predicted class. The fit starts from
    "no change" (``w = 1``, ``b = 0``) and minimises the weighted mean
    negative log-likelihood plus an optional ridge towards that start (see
    Notes); ``2K`` parameters need little data.

    ``z`` are the scores as given (:attr:`~skcalib._core.scores.Scores.logits`):
    2-D logits or decision values unchanged, ``log p`` for probabilities
    (floored at 1e-12), and the log-probabilities ``(log(1 - p), log p)`` of
    a 1-D binary score. Vector scaling is **not** invariant to adding a
    constant to a row of logits (``w * (z + c) = w * z + c w``): the logits
    and the log-probabilities of one model give different fits. Guo et al.
    use the logits; :class:`DirichletCalibrator` with a very large
    ``reg_lambda`` is vector scaling of the log-probabilities.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    reg_lambda : float, default=0.0
        Strength ``lambda >= 0`` of the penalty on ``w - 1``.
    reg_mu : float, default=0.0
        Strength ``mu >= 0`` of the penalty on the intercept ``b``.
    max_iter : int, default=100
        Newton iterations.
    tol : float, default=1e-8
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (gradient taken with the scores divided by
        ``max(1, max |z|)``, so that ``tol`` does not depend on their scale).
    n_jobs : int or None, default=None
        Threads over the blocks of rows (numpy releases the GIL); ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context, ``-1``
        all cores. The result does not depend on it. BLAS is kept to one
        thread during the fit (the products are small).
    forgetting_factor : float in (0, 1], default=1.0
        :meth:`partial_fit` only: after ``m`` batches, the rows of the
        ``j``-th weigh ``forgetting_factor ** (m - j)`` times their
        ``sample_weight`` (exponential forgetting of old batches, for
        drifting streams): the fit is the weighted fit on the concatenated
        batches. 1 forgets nothing; :meth:`fit` does not use it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    coef_ : ndarray of shape (n_classes,)
        The scales ``w`` (the diagonal of ``W``).
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b``; with ``reg_mu=0`` they are defined up to a common
        constant (softmax ignores it) and returned with zero sum.
    reg_lambda_, reg_mu_ : float
        The strengths used (``reg_lambda`` and ``reg_mu`` as floats).
    n_iter_ : int
        Newton iterations used.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    TemperatureCalibrator : one shared scale; never changes the prediction.
    MatrixScalingCalibrator : a full matrix ``W``.
    DirichletCalibrator : a full, regularised matrix on log-probabilities.

    Notes
    -----
    With sample weights ``s_i``, ``w`` and ``b`` minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\left(\\operatorname{logsumexp}(w \\odot z_i + b)
        - (w \\odot z_i + b)_{y_i}\\right)}{\\sum_i s_i}
        + \\frac{\\lambda}{K} \\sum_k (w_k - 1)^2
        + \\frac{\\mu}{K} \\sum_k b_k^2 .

    The NLL is a weighted *mean*: the penalty does not fade as the
    calibration set grows, and scaling all weights changes nothing. It is
    minimised by Newton's method with the exact ``2K x 2K`` Hessian and a
    backtracking line search, polished by up to 3 Newton steps once ``tol``
    is met (the fit is then the optimum to float64 rounding, whatever the
    order or scale of the rows; directions the objective cannot see, as a
    constant score column beside its intercept, get no step), in float64,
    reading the scores by blocks of rows (float32 scores are never copied
    whole in float64). An iteration costs ``O(n K^2)`` time and ``O(K^2)``
    memory, plus ``O(K)`` per row of a block. Scores that separate the
    classes get a warning and the tie-breaking ridge described in
    :class:`MatrixScalingCalibrator`.

    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace (torch, CuPy, array-api-strict) are fitted and predicted on
    their device (the same solver, the per-row terms in float64 where the
    device has it); per Newton step only the ``2K`` parameters, the loss,
    the gradient and the ``2K x 2K`` Hessian cross to the host, never the
    ``n x K`` scores (wrapper mode computes on the host).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import VectorScalingCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = 2.0 * rng.normal(size=(20000, 3))           # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(20000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> scores = z * [3.0, 1.0, 0.5] + [1.0, 0.0, 0.0]  # distorted per class
    >>> vs = VectorScalingCalibrator().fit(scores, y)
    >>> vs.coef_.round(1)                               # undoes the scales
    array([0.3, 1. , 2. ])
    >>> vs.intercept_.round(1)                          # and the offset (sum 0)
    array([-0.2,  0.1,  0.1])
    >>> vs.predict_proba(scores[:2]).sum(axis=1)
    array([1., 1.])
    """

    _parameter_constraints: dict = {
        **_LinearMapCalibrator._parameter_constraints,
        "forgetting_factor": FORGETTING_FACTOR,
    }
    _diagonal = True

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        reg_lambda=0.0,
        reg_mu=0.0,
        max_iter=100,
        tol=1e-8,
        n_jobs=None,
        forgetting_factor=1.0,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.forgetting_factor = forgetting_factor


class MatrixScalingCalibrator(_LinearMapCalibrator):
    """Matrix scaling: an affine map of the logits, then softmax.

    .. math::

        \\hat p(y \\mid z) = \\operatorname{softmax}(W z + b),
        \\qquad W \\in \\mathbb{R}^{K \\times K},\\ b \\in \\mathbb{R}^K.

    The fit starts from "no change" (``W = I``, ``b = 0``) and minimises the
    weighted mean negative log-likelihood plus the ODIR penalty of Kull et
    al. 2019 ("MS-ODIR"), with strengths that follow the number of classes
    and of calibration rows (``reg_lambda="auto"``, see Notes). The
    unregularised matrix scaling of Guo et al. 2017 (``reg_lambda=0,
    reg_mu=0``, the previous default) overfits its ``K (K + 1)``
    parameters: on CIFAR-100 (WideResNet, ``K = 100``, 5000 calibration
    rows) its held-out NLL was 10.46 against 1.65 uncalibrated, the error
    26% -> 48%. :class:`MatrixScalingCalibratorCV` chooses the strengths
    by cross-validation along a warm-started path.

    ``z`` are the scores as given (:attr:`~skcalib._core.scores.Scores.logits`):
    2-D logits or decision values unchanged, ``log p`` for probabilities
    (floored at 1e-12), and the log-probabilities ``(log(1 - p), log p)`` of
    a 1-D binary score. ``softmax(W z + b)`` is **not** invariant to adding a
    constant to a row of ``z`` (unless the rows of ``W`` have equal sums):
    the logits and the log-probabilities of one model give different fits.
    On probabilities and 1-D binary scores, ``z`` is ``log p`` and matrix
    scaling is the same model as :class:`DirichletCalibrator`: with equal
    ``penalty``, ``reg_lambda`` and ``reg_mu`` the two give the same fit up
    to rounding.

    Parameters
    ----------
    estimator : classifier or None, default=None
        A prefit classifier (wrapper mode) or ``None`` (``X`` holds scores).
    score_type : {"auto", "logit", "probability"}, default="auto"
        What raw ``X`` holds; see :class:`~skcalib._base.BaseCalibrator`.
    response_method : {"auto", "decision_function", "predict_proba"}, default="auto"
        Wrapper mode: the method that gives scores.
    classes : array-like of shape (n_classes,), default=None
        Raw-score mode: the class of each score column, so that ``y`` may
        miss classes (:ref:`absent_classes`); None: the sorted labels of ``y``.
    penalty : {"odir", "l2_identity", "l2_zero"}, default="odir"
        Form of the penalty on ``W`` (see Notes): ``"odir"`` penalises the
        off-diagonal entries only (Kull et al.'s ODIR; a large ``reg_lambda``
        gives vector scaling); ``"l2_identity"`` penalises ``W - I`` (a large
        ``reg_lambda`` gives back the scores, up to the intercept);
        ``"l2_zero"`` penalises ``W`` itself, shrinking towards the uniform
        prediction: Kull et al.'s "L2" (Dir-L2, MS-L2). ``"l2"`` is the
        deprecated name of ``"l2_identity"`` (a ``FutureWarning``).
    reg_lambda : float or "auto", default="auto"
        Strength ``lambda >= 0`` of the penalty on ``W``. ``"auto"``
        (``penalty="odir"`` only): ``300 K (K - 1) / n``, with ``n`` the
        number of calibration rows, the sum of ``sample_weight`` when given
        (weights are repetition counts: a weight of 2 is a duplicated row):
        a fixed Gaussian prior of variance ``1/600`` on each off-diagonal
        entry of the summed log-likelihood, strong when ``W`` has more
        entries than there are rows and fading as data grow (see Notes for
        the measured effect). ``0`` with ``reg_mu=0`` is the
        unregularised matrix scaling of Guo et al.
    reg_mu : float or "auto", default="auto"
        Strength ``mu >= 0`` of the penalty on the intercept ``b``;
        ``"auto"``: ``K / n`` (``n`` as for ``reg_lambda``).
    max_iter : int, default=1000
        Newton iterations (up to 12 classes) or L-BFGS iterations (over all
        restarts).
    tol : float, default=1e-8
        Stop when the largest absolute entry of the gradient of the objective
        is at most ``tol`` (gradient taken with the scores divided by
        ``max(1, max |z|)``, so that ``tol`` does not depend on their scale).
        Up to 12 classes Newton's method then polishes the fit to the
        optimum in float64. The previous default ``1e-6`` left L-BFGS
        predictions up to 3.3e-4 from the optimum on CIFAR-100 (K = 100,
        5000 rows), ``1e-8`` 7.7e-6, for a fit of 1.4 s instead of 1.0 s.
    n_jobs : int or None, default=None
        Threads over the blocks of rows (numpy releases the GIL); ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context, ``-1``
        all cores. The result does not depend on it. BLAS is kept to one
        thread during the fit (the products are small).
    warm_start : bool, default=False
        Start the solver from the previous fit's map (same classes) instead
        of from temperature scaling: refits along a path of strengths
        (``set_params(reg_lambda=...)`` then ``fit``) take a few
        iterations. The optimum does not depend on it (the problem is
        convex), only the time to reach it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    score_type_ : str
        What the scores were taken to be (``"logit"`` or ``"probability"``).
    coef_ : ndarray of shape (n_classes, n_classes)
        The matrix ``W``; row ``j`` gives the calibrated logit of class ``j``.
    intercept_ : ndarray of shape (n_classes,)
        The offsets ``b``.
    penalty_ : str
        The penalty form used (``"l2"`` resolved to ``"l2_identity"``).
    reg_lambda_, reg_mu_ : float
        The strengths used (``"auto"`` resolved).
    n_iter_ : int
        Solver iterations used to reach ``tol``.
    n_features_in_ : int
        Number of columns of ``X`` seen at fit (2-D input).

    See Also
    --------
    VectorScalingCalibrator : diagonal ``W``, ``2K`` parameters.
    DirichletCalibrator : the same map on log-probabilities, ODIR-regularised.
    TemperatureCalibrator : ``W = I / T``, ``b = 0``.

    Notes
    -----
    With sample weights ``s_i`` and ``a_i = W z_i + b``, ``W`` and ``b``
    minimise the convex

    .. math::

        \\frac{\\sum_i s_i \\left(\\operatorname{logsumexp}(a_i)
        - a_{i, y_i}\\right)}{\\sum_i s_i} + P(W) + \\frac{\\mu}{K}
        \\sum_j b_j^2,

    with ``P(W) = lambda / (K (K - 1)) * sum_{j != l} W_jl**2`` for
    ``penalty="odir"`` (off-diagonal and intercept regularisation, Kull et
    al. 2019) and ``P(W) = lambda / K**2 * sum_{j, l} (W - I)_jl**2`` for
    ``"l2_identity"``, ``P(W) = lambda / K**2 * sum_{j, l} W_jl**2`` for
    ``"l2_zero"``. The NLL is a weighted *mean*, so a fixed strength does
    not fade as the calibration set grows, and scaling all weights changes
    nothing; ``"auto"`` divides by ``n``, the total weight, so that the
    prior is fixed instead.

    **Sample weights.** With numeric strengths the fit does not depend on
    the scale of the weights (the NLL is a weighted mean). With ``"auto"``
    strengths the weights are repetition counts, as in scikit-learn: their
    sum is the ``n`` of the strengths, so a weight of 2 gives the fit of a
    duplicated row (to the solver's tolerance), and multiplying every weight
    by ``c`` weakens the prior as ``c`` times the data would. Weights
    normalised to sum to 1 therefore count as one row (a prior of
    ``300 K (K - 1)``); pass counts, or numeric strengths. Kish's effective
    size ``(sum s)^2 / sum s^2``, used before, made ``"auto"`` free of the
    weights' scale but gave a weight of 2 another strength than a
    duplicated row (predictions up to 0.26 apart on 35 rows).

    **Kull et al.'s parameters.** Their code (``dirichletcal``) adds
    unnormalised sums to the mean NLL: ``lambda' sum_{j != l} W_jl^2 + mu'
    sum_j b_j^2`` for ODIR, ``lambda' sum (W^2) + lambda' sum (b^2)`` for
    L2. They map onto these parameters as ``reg_lambda = lambda' K (K -
    1)``, ``reg_mu = mu' K`` (ODIR) and ``reg_lambda = lambda' K^2``,
    ``reg_mu = lambda' K`` (``penalty="l2_zero"``); with their
    ``reg_norm=True`` (the normalised form printed in the paper) the
    values are the same as ours. (Their code also fixes the last row of
    ``W`` to 0 before penalising, a different representative of the same
    softmax map; the test suite checks the objective against the formula
    above.)

    **Measured effect of the default** (50/50 splits of the 34 sets of
    real predictions in the project's data, K from 2 to 100): the held-out
    NLL is lower than uncalibrated on every set; see the user guide's
    table.

    Softmax ignores a constant added to every calibrated logit, so a column
    of ``[W | b]`` that no penalty touches (all of them when
    ``reg_lambda=reg_mu=0``) is defined only up to a constant; it is
    returned with the mean of ``W - I`` (or of ``b``) over its rows equal
    to zero (unless the identity is more than 1e6 times the fitted column,
    as for logits of 1e200, where that shift would round the fit away).

    The solver starts from the better of the identity map and temperature
    scaling (``W = I / T``, fitted first), so that scores of any scale
    start near the optimum. When the calibration data are (quasi-)
    separated -- some direction of the unpenalised parameters never lowers
    any sample's margin and raises some (a linear program decides it, up
    to 4e6 margin-parameter entries) -- the likelihood has no maximum and
    the solver would stop anywhere on its way to infinity, at a point that
    depends on the order of the rows. A ``UserWarning`` then says so, and a
    tie-breaking ridge of ``1e-6`` on every parameter (on the features
    divided by ``max |z|``) makes the minimiser unique: a near-step map,
    the same for any order of the rows.

    Solver: up to 12 classes (156 parameters), Newton's method with the
    exact Hessian (``O(n K^4)`` per step) and a backtracking line search,
    then up to 3 polishing Newton steps once ``tol`` is met, so that the fit
    is the optimum to float64 rounding whatever the order or the scale of
    the rows (at ``tol`` alone, a gradient of ``1e-6`` left predictions at
    scores of 1e4 up to 0.03 apart under a row permutation); directions the
    objective cannot see (the softmax gauge, a constant score column beside
    the intercept) get no step. Above 12 classes: L-BFGS-B with the exact
    gradient, in float64, reading the scores
    by blocks of rows (float32 scores are never copied whole in float64), in
    variables preconditioned by the exact per-class diagonal blocks of the
    Hessian, refreshed each time the gradient drops a hundredfold. Cost per
    iteration ``O(n K^2)``; the preconditioner costs ``O(n K^3)`` per
    refresh and ``O(K^3)`` memory (8 MB at ``K = 100``; above 128 classes
    only its diagonal, ``O(K^2)``, is kept). ``K = 100``, ``n = 5000``
    takes a few seconds (see the user guide).

    Array API: with ``array_api_dispatch=True``, raw scores of another
    namespace (torch, CuPy, array-api-strict) are fitted and predicted on
    their device (the same solver, the per-row terms in float64 where the
    device has it); per iteration only the ``K (K + 1)`` parameters, the
    loss and the gradient (and for a Newton step the Hessian, at most
    ``156 x 156``) cross to the host, never the ``n x K`` scores (wrapper
    mode computes on the host).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.
    .. [2] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and
       P. Flach, "Beyond temperature scaling: Obtaining well-calibrated
       multi-class probabilities with Dirichlet calibration", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import MatrixScalingCalibrator, TemperatureCalibrator
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(20000, 3))                 # calibrated logits
    >>> p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    >>> y = (rng.uniform(size=(20000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> mix = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]])
    >>> scores = z @ mix.T                              # classes mixed up
    >>> ms = MatrixScalingCalibrator().fit(scores, y)
    >>> err = np.abs(ms.predict_proba(scores) - p).max()   # true probabilities
    >>> round(float(err), 2)
    0.03
    >>> ts = TemperatureCalibrator().fit(scores, y)      # cannot undo a mixing
    >>> round(float(np.abs(ts.predict_proba(scores) - p).max()), 2)
    0.74
    """

    _parameter_constraints: dict = {
        **_LinearMapCalibrator._parameter_constraints,
        "reg_lambda": [
            Interval(Real, 0, None, closed="left"),
            StrOptions({"auto"}),
        ],
        "reg_mu": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "penalty": [
            StrOptions({"odir", "l2_identity", "l2_zero", "l2"}, deprecated={"l2"})
        ],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        score_type="auto",
        response_method="auto",
        classes=None,
        penalty="odir",
        reg_lambda="auto",
        reg_mu="auto",
        max_iter=1000,
        tol=1e-8,
        n_jobs=None,
        warm_start=False,
    ):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method
        self.classes = classes
        self.penalty = penalty
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.warm_start = warm_start
