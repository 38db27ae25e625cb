"""Risk-coverage curves of selective prediction: :class:`RiskCoverageDisplay`.

The display follows scikit-learn's display pattern: ``from_estimator`` ->
``from_predictions`` -> the curve of :mod:`skcalib.metrics` (the same code as
:func:`~skcalib.metrics.risk_coverage_curve` and
:func:`~skcalib.metrics.aurc`) -> ``RiskCoverageDisplay(...)`` (stores) ->
:meth:`RiskCoverageDisplay.plot` (draws, returns ``self``).

matplotlib is imported only inside the methods that draw.
"""

import numpy as np

from skcalib.metrics._selective import RiskCoverageCurve
from skcalib.metrics._selective_core import (
    curve_area,
    curve_from_scores,
    oracle_curve,
    selective_inputs,
)
from skcalib.plotting._drawing import estimator_proba, import_pyplot, merge_kwargs

__all__ = ["RiskCoverageDisplay"]

#: ``gid`` of the oracle curves.
ORACLE_GID = "skcalib-risk-coverage-oracle"
_RISK_LABELS = {
    "error": "Selective risk (error rate)",
    "brier": "Selective risk (Brier score)",
    "log_loss": "Selective risk (log loss)",
}


def _label(name, area):
    metric = f"AURC = {area:.3f}"
    return metric if name is None else f"{name} ({metric})"


def _draw(ax, coverage, risk, label, defaults, kwargs):
    """The curve, from coverage 0 (the risk of the most confident samples)."""
    from matplotlib.lines import Line2D

    x = np.append(0.0, np.asarray(coverage, dtype=np.float64))
    y = np.asarray(risk, dtype=np.float64)
    y = np.append(y[:1], y)
    style = merge_kwargs({**defaults, "label": label}, kwargs, Line2D)
    return ax.plot(x, y, **style)[0]


class RiskCoverageDisplay:
    """Risk-coverage curve of selective prediction, with the AURC in the legend.

    A selective classifier answers the samples whose confidence reaches a
    threshold and abstains on the others. The curve shows the selective risk
    (the mean loss of the answered samples) against the coverage (the
    fraction answered), one point per distinct confidence; the lower the
    curve, the better the confidence ranks the samples. Optionally draws the
    curve of the best ranking (by increasing loss, the *oracle*). Several
    displays overlay on one axes (pass ``ax=disp.ax_``).

    Use :meth:`from_estimator` or :meth:`from_predictions` to create one:
    the values come from the code of
    :func:`skcalib.metrics.risk_coverage_curve`. The constructor only stores
    its arguments.

    Parameters
    ----------
    coverage : ndarray of shape (n_thresholds,)
        Coverage of each point, increasing to 1.
    risk : ndarray of shape (n_thresholds,)
        Selective risk of each point.
    aurc : float, default=None
        Area under the curve, shown in the legend; ``None`` shows none.
    name : str, default=None
        Name of the model in the legend.
    loss : str, default="error"
        The loss the risk averages (``"error"``, ``"brier"``, ``"log_loss"``
        or another name); chooses the y-axis label.
    oracle_coverage, oracle_risk : ndarray, default=None
        The curve of the best ranking, needed for ``plot_oracle=True``.
    oracle_aurc : float, default=None
        Its area, shown in its legend entry.
    curve : RiskCoverageCurve, default=None
        The full curve (with the thresholds), kept for reference.

    Attributes
    ----------
    line_ : matplotlib.lines.Line2D
        The curve, from ``(0, risk[0])`` through every point.
    oracle_line_ : matplotlib.lines.Line2D or None
        The oracle curve (dashed, same colour), when ``plot_oracle=True``.
    ax_ : matplotlib.axes.Axes
        The axes.
    figure_ : matplotlib.figure.Figure
        The figure holding ``ax_``.

    See Also
    --------
    skcalib.metrics.risk_coverage_curve : The points.
    skcalib.metrics.aurc : The area in the legend.
    skcalib.metrics.excess_aurc : The area between the curve and the oracle's.

    Notes
    -----
    The curve starts at coverage 0 with the risk of the most confident
    samples, as the area :func:`~skcalib.metrics.aurc` counts it; between
    two points it is drawn straight (the area integrates the expected risk
    of a random share of tied samples, which bends slightly between far-apart
    points).

    References
    ----------
    .. [1] Y. Geifman and R. El-Yaniv, "Selective Classification for Deep
       Neural Networks", NeurIPS 2017.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from skcalib.plotting import RiskCoverageDisplay
    >>> disp = RiskCoverageDisplay(
    ...     coverage=[0.5, 0.75, 1.0], risk=[0.0, 1 / 3, 0.5], aurc=0.153, name="m")
    >>> disp = disp.plot()
    >>> disp.line_.get_label()
    'm (AURC = 0.153)'
    >>> plt.close("all")
    """

    def __init__(
        self,
        *,
        coverage,
        risk,
        aurc=None,
        name=None,
        loss="error",
        oracle_coverage=None,
        oracle_risk=None,
        oracle_aurc=None,
        curve=None,
    ):
        self.coverage = coverage
        self.risk = risk
        self.aurc = aurc
        self.name = name
        self.loss = loss
        self.oracle_coverage = oracle_coverage
        self.oracle_risk = oracle_risk
        self.oracle_aurc = oracle_aurc
        self.curve = curve

    def plot(
        self, ax=None, *, name=None, plot_oracle=False, oracle_kwargs=None, **kwargs
    ):
        """Draw the risk-coverage curve.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, default=None
            Axes to draw on; a new figure is created when ``None``. Pass the
            ``ax_`` of another display to overlay.
        name : str, default=None
            Legend name; ``None`` uses :attr:`name`.
        plot_oracle : bool, default=False
            Also draw the curve of the best ranking (dashed, in the colour of
            the curve: each model has its own, from its own losses).
        oracle_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing
            the oracle curve.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing
            the curve.

        Returns
        -------
        display : RiskCoverageDisplay
            ``self``, with ``line_``, ``oracle_line_``, ``ax_`` and
            ``figure_``.

        See Also
        --------
        RiskCoverageDisplay.from_predictions : Compute and plot from labels and
            probabilities.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.plotting import RiskCoverageDisplay
        >>> disp = RiskCoverageDisplay(
        ...     coverage=[0.5, 1.0], risk=[0.5, 0.5], aurc=0.5,
        ...     oracle_coverage=[0.5, 1.0], oracle_risk=[0.0, 0.5], oracle_aurc=0.153)
        >>> disp = disp.plot(plot_oracle=True)
        >>> disp.oracle_line_.get_label()
        'oracle (AURC = 0.153)'
        >>> plt.close("all")
        """
        plt = import_pyplot("RiskCoverageDisplay")
        if plot_oracle and (self.oracle_coverage is None or self.oracle_risk is None):
            raise ValueError(
                "plot_oracle=True needs oracle_coverage and oracle_risk; build "
                "the display with from_predictions or pass them."
            )
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 4.5))
        name = self.name if name is None else name
        label = name if self.aurc is None else _label(name, self.aurc)
        self.line_ = _draw(ax, self.coverage, self.risk, label, {}, kwargs)
        self.oracle_line_ = None
        if plot_oracle:
            who = "oracle" if name is None else f"{name} oracle"
            oracle_label = (
                who if self.oracle_aurc is None else _label(who, self.oracle_aurc)
            )
            defaults = {
                "linestyle": "--",
                "color": self.line_.get_color(),
                "gid": ORACLE_GID,
            }
            self.oracle_line_ = _draw(
                ax,
                self.oracle_coverage,
                self.oracle_risk,
                oracle_label,
                defaults,
                oracle_kwargs,
            )
        ax.set(xlim=(0, 1.02), xlabel="Coverage")
        ax.set_ylabel(_RISK_LABELS.get(self.loss, "Selective risk"))
        ax.legend(loc="upper left", fontsize="small")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        confidence="max_proba",
        loss="error",
        sample_weight=None,
        labels=None,
        name=None,
        ax=None,
        plot_oracle=False,
        oracle_kwargs=None,
        **kwargs,
    ):
        """Plot the risk-coverage curve from labels and probabilities.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True class labels.
        y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
            Predicted probabilities: one column per class (in the order of
            ``labels``), or 1-D with the probability of the positive class.
        confidence : {"max_proba", "margin", "negative_entropy"} or \
array-like of shape (n_samples,), default="max_proba"
            The score that ranks the samples (higher = more confident); see
            :func:`~skcalib.metrics.risk_coverage_curve`.
        loss : {"error", "brier", "log_loss"} or callable, default="error"
            The per-sample loss the risk averages; see
            :func:`~skcalib.metrics.risk_coverage_curve`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        labels : array-like of shape (n_classes,), default=None
            Class labels of the columns of ``y_proba`` (never guessed; see
            :func:`~skcalib.metrics.risk_coverage_curve`).
        name : str, default=None
            Legend name.
        ax : matplotlib.axes.Axes, default=None
            Axes to draw on; a new figure when ``None``.
        plot_oracle : bool, default=False
            Also draw the curve of the best ranking.
        oracle_kwargs : dict, default=None
            Style of the oracle curve.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing
            the curve.

        Returns
        -------
        display : RiskCoverageDisplay
            With ``curve``, ``aurc``, the oracle curve and the artists.

        See Also
        --------
        RiskCoverageDisplay.from_estimator : Plot from a classifier.
        skcalib.metrics.risk_coverage_curve : The points.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.plotting import RiskCoverageDisplay
        >>> y = [0, 1, 1, 0, 1]
        >>> p = [0.2, 0.9, 0.6, 0.6, 0.3]
        >>> disp = RiskCoverageDisplay.from_predictions(y, p, name="model")
        >>> disp.curve.coverage
        array([0.2, 0.4, 0.6, 1. ])
        >>> disp.line_.get_label()
        'model (AURC = 0.187)'
        >>> plt.close("all")
        """
        import_pyplot("RiskCoverageDisplay")
        inputs = selective_inputs(
            y_true,
            y_proba,
            confidence=confidence,
            loss=loss,
            sample_weight=sample_weight,
            labels=labels,
        )
        coverage, risk, thresholds = curve_from_scores(
            inputs.confidence, inputs.loss, inputs.weight
        )
        best_coverage, best_risk, _ = oracle_curve(inputs.loss, inputs.weight)
        disp = cls(
            coverage=coverage,
            risk=risk,
            aurc=curve_area(coverage, risk),
            name=name,
            loss=loss if isinstance(loss, str) else getattr(loss, "__name__", None),
            oracle_coverage=best_coverage,
            oracle_risk=best_risk,
            oracle_aurc=curve_area(best_coverage, best_risk),
            curve=RiskCoverageCurve(
                coverage=coverage, risk=risk, thresholds=thresholds
            ),
        )
        return disp.plot(
            ax=ax, plot_oracle=plot_oracle, oracle_kwargs=oracle_kwargs, **kwargs
        )

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        confidence="max_proba",
        loss="error",
        sample_weight=None,
        name=None,
        ax=None,
        plot_oracle=False,
        oracle_kwargs=None,
        **kwargs,
    ):
        """Plot the risk-coverage curve of a fitted classifier on data.

        Calls ``estimator.predict_proba(X)`` and :meth:`from_predictions`,
        with the column labels taken from ``estimator.classes_``.

        Parameters
        ----------
        estimator : estimator instance
            A fitted classifier (or pipeline ending in one) with
            ``predict_proba`` and ``classes_``, such as any skcalib calibrator.
        X : array-like
            Input of ``estimator.predict_proba``.
        y : array-like of shape (n_samples,)
            True labels.
        confidence : {"max_proba", "margin", "negative_entropy"} or \
array-like of shape (n_samples,), default="max_proba"
            The score that ranks the samples (higher = more confident).
        loss : {"error", "brier", "log_loss"} or callable, default="error"
            The per-sample loss the risk averages.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        name : str, default=None
            Legend name; the estimator's class name when ``None``.
        ax : matplotlib.axes.Axes, default=None
            Axes to draw on; a new figure when ``None``.
        plot_oracle : bool, default=False
            Also draw the curve of the best ranking.
        oracle_kwargs : dict, default=None
            Style of the oracle curve.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing
            the curve.

        Returns
        -------
        display : RiskCoverageDisplay
            With ``curve``, ``aurc`` and the artists.

        See Also
        --------
        RiskCoverageDisplay.from_predictions : Plot from labels and
            probabilities.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from skcalib.plotting import RiskCoverageDisplay
        >>> X, y = make_classification(n_samples=2000, random_state=0)
        >>> lr = LogisticRegression().fit(X[:1000], y[:1000])
        >>> nb = GaussianNB().fit(X[:1000], y[:1000])
        >>> disp = RiskCoverageDisplay.from_estimator(lr, X[1000:], y[1000:])
        >>> disp = RiskCoverageDisplay.from_estimator(
        ...     nb, X[1000:], y[1000:], ax=disp.ax_)  # overlaid
        >>> len(disp.ax_.get_lines())
        2
        >>> plt.close("all")
        """
        import_pyplot("RiskCoverageDisplay")
        y_proba, name, classes = estimator_proba(
            estimator, X, "RiskCoverageDisplay", name
        )
        return cls.from_predictions(
            y,
            y_proba,
            confidence=confidence,
            loss=loss,
            sample_weight=sample_weight,
            labels=classes,
            name=name,
            ax=ax,
            plot_oracle=plot_oracle,
            oracle_kwargs=oracle_kwargs,
            **kwargs,
        )
