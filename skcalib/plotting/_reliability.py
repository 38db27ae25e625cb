"""Reliability diagrams: :class:`ReliabilityDisplay`.

The display follows scikit-learn's display pattern (``CalibrationDisplay``):
``from_estimator`` -> ``from_predictions`` -> :func:`skcalib.metrics.reliability_curve`
-> ``ReliabilityDisplay(...)`` (stores) -> :meth:`ReliabilityDisplay.plot`
(draws, returns ``self``). No binning happens here: bins, per-bin statistics and
intervals all come from :func:`~skcalib.metrics.reliability_curve`.

matplotlib is imported only inside the methods that draw, so importing
:mod:`skcalib.plotting` never imports it.
"""

import numpy as np

from skcalib.metrics import expected_calibration_error, reliability_curve

__all__ = ["ReliabilityDisplay"]

_KINDS = ("confidence", "top_label", "classwise")
_HISTOGRAMS = ("counts", "density")

#: ``gid`` of the diagonal; a second display on the same axes finds it and
#: does not draw it again.
_REF_LINE_GID = "skcalib-reliability-diagonal"
#: Attribute set on the main axes that points to its histogram panel, so that
#: displays overlaid on the same axes share one panel.
_HIST_AX_ATTR = "_skcalib_reliability_hist_ax"
_REF_LINE_LABEL = "Perfectly calibrated"
#: Drawn width of a zero-width bin (``[0, 0]``) in the confidence histogram.
_POINT_BIN_WIDTH = 0.01

_MARGIN = 0.02


def _import_pyplot():
    """``matplotlib.pyplot``, or an ``ImportError`` that says how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "ReliabilityDisplay requires matplotlib: pip install skcalib[plot]"
        ) from exc
    return plt


def _check_option(value, name, options):
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")


def _resolve_class_index(kind, class_index, pos_label, classes):
    """The column index selected by ``class_index`` or ``pos_label`` (or None)."""
    if class_index is not None and pos_label is not None:
        raise ValueError(
            f"Pass class_index or pos_label, not both (got class_index="
            f"{class_index!r} and pos_label={pos_label!r})."
        )
    if pos_label is not None:
        known = [] if classes is None else np.asarray(classes).tolist()
        if pos_label not in known:
            raise ValueError(
                f"pos_label={pos_label!r} is not one of the classes {known}."
            )
        class_index = known.index(pos_label)
    if class_index is not None and kind == "confidence":
        raise ValueError(
            "class_index and pos_label select one class, but kind='confidence' "
            "pools every class; use kind='classwise' (probability of that class "
            "vs. being that class) or kind='top_label' (samples predicted as that "
            "class)."
        )
    return class_index


def _class_label(classes, class_index):
    """The class name at ``class_index``, or the index when names are unknown."""
    if class_index is None:
        return None
    if classes is not None and 0 <= class_index < len(classes):
        return np.asarray(classes).tolist()[class_index]
    return class_index


def _ece_from_curve(curve):
    """Weighted mean of ``|accuracy - mean_confidence|`` over non-empty bins.

    This is the L1 expected calibration error of exactly the bins plotted;
    it is used when :func:`~skcalib.metrics.expected_calibration_error` has no
    option for the curve drawn (one class selected).
    """
    keep = np.asarray(curve.nonempty, dtype=bool) & (np.asarray(curve.counts) > 0)
    weights = np.asarray(curve.counts, dtype=np.float64)[keep]
    if not weights.sum() > 0:
        return float("nan")
    gaps = np.abs(
        np.asarray(curve.accuracy, dtype=np.float64)[keep]
        - np.asarray(curve.mean_confidence, dtype=np.float64)[keep]
    )
    return float(np.sum(weights * gaps) / weights.sum())


def _axis_labels(kind, class_label):
    if kind == "classwise":
        return (
            f"Mean predicted probability (class {class_label})",
            "Fraction of positives",
        )
    xlabel = "Mean predicted confidence"
    if kind == "top_label" and class_label is not None:
        xlabel += f" (predicted class {class_label})"
    return xlabel, "Observed accuracy (fraction correct)"


def _legend_label(name, ece):
    if ece is not None and np.isfinite(ece):
        metric = f"ECE = {ece:.3f}"
        return metric if name is None else f"{name} ({metric})"
    return name


def _merge_kwargs(defaults, user, artist_class):
    """``defaults`` updated by ``user``, with matplotlib aliases resolved."""
    from matplotlib.cbook import normalize_kwargs

    merged = normalize_kwargs(dict(defaults), artist_class)
    merged.update(normalize_kwargs(dict(user or {}), artist_class))
    return merged


def _histogram_axes(ax):
    """The histogram panel below ``ax``, created on first use and then shared."""
    existing = getattr(ax, _HIST_AX_ATTR, None)
    if existing is not None:
        return existing
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    ax_hist = make_axes_locatable(ax).append_axes(
        "bottom", size="28%", pad=0.12, sharex=ax
    )
    setattr(ax, _HIST_AX_ATTR, ax_hist)
    ax.tick_params(axis="x", labelbottom=False)
    return ax_hist


class ReliabilityDisplay:
    """Reliability diagram (calibration curve) with gaps, histogram and ECE.

    Per bin of predicted confidence, the observed accuracy is plotted against
    the mean confidence; a calibrated model follows the diagonal. Optionally
    draws the gap of each bin to the diagonal, the Wilson interval of each
    accuracy and a confidence histogram in a panel below. The legend shows the
    expected calibration error (ECE). Several displays can be overlaid on one
    axes (pass ``ax=disp.ax_``); the diagonal is drawn once per axes and their
    histograms share one panel.

    Use :meth:`from_estimator` or :meth:`from_predictions` to create one: the
    per-bin values come from :func:`skcalib.metrics.reliability_curve`. The
    constructor only stores its arguments.

    Parameters
    ----------
    prob_true : ndarray of shape (n_bins,)
        Observed accuracy per bin (fraction of positives for one class); NaN
        for empty bins.
    prob_pred : ndarray of shape (n_bins,)
        Mean predicted confidence per bin (mean probability of the class for
        one class); NaN for empty bins.
    counts : ndarray of shape (n_bins,)
        Weighted number of samples per bin (0 for empty bins).
    edges : ndarray of shape (n_bins + 1,)
        Bin edges on ``[0, 1]``.
    lower, upper : ndarray of shape (n_bins,), default=None
        Bounds of a confidence interval of ``prob_true`` per bin (Wilson
        interval from :func:`~skcalib.metrics.reliability_curve`); needed for
        ``show_intervals=True``.
    ece : float, default=None
        Expected calibration error shown in the legend; ``None`` shows none.
    name : str, default=None
        Name of the model in the legend.
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        What was binned; chooses the axis labels (see :meth:`from_predictions`).
    class_label : object, default=None
        The class the curve is about (``kind="top_label"`` with a class, or
        ``"classwise"``); shown in the axis labels.
    curve : ReliabilityCurve, default=None
        The full output of :func:`~skcalib.metrics.reliability_curve`, kept
        for reference.

    Attributes
    ----------
    line_ : matplotlib.lines.Line2D
        The reliability curve (non-empty bins only).
    ax_ : matplotlib.axes.Axes
        The main axes.
    figure_ : matplotlib.figure.Figure
        The figure holding ``ax_``.
    gaps_ : matplotlib.container.BarContainer or None
        One bar per non-empty bin from the accuracy to the mean confidence
        (the diagonal), when ``show_gaps=True``.
    intervals_ : matplotlib.container.ErrorbarContainer or None
        Per-bin interval error bars, when ``show_intervals=True``.
    hist_ : matplotlib.container.BarContainer or None
        Histogram bars (one per bin, empty bins included), when
        ``show_histogram=True``.
    ax_hist_ : matplotlib.axes.Axes or None
        The histogram panel below ``ax_``, when ``show_histogram=True``.

    See Also
    --------
    skcalib.metrics.reliability_curve : Compute the per-bin values.
    skcalib.metrics.expected_calibration_error : The ECE in the legend.
    sklearn.calibration.CalibrationDisplay : scikit-learn's binary calibration
        curve display.

    Notes
    -----
    With bins :math:`B_1, \\dots, B_m` of weighted sizes :math:`n_j` out of
    :math:`n`, accuracy :math:`\\mathrm{acc}(B_j)` and mean confidence
    :math:`\\mathrm{conf}(B_j)`, the ECE in the legend is

    .. math::

        \\mathrm{ECE} = \\sum_{j=1}^m \\frac{n_j}{n}
        \\left|\\mathrm{acc}(B_j) - \\mathrm{conf}(B_j)\\right|,

    the weighted mean length of the gap bars (for ``kind="top_label"`` without
    a class, :meth:`from_predictions` shows the top-label ECE instead).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of
       Modern Neural Networks", ICML 2017.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skcalib.metrics import reliability_curve
    >>> from skcalib.plotting import ReliabilityDisplay
    >>> rng = np.random.default_rng(0)
    >>> proba = rng.dirichlet(np.ones(3), size=500)
    >>> y = np.array([rng.choice(3, p=p) for p in proba])
    >>> curve = reliability_curve(y, proba, n_bins=10)
    >>> disp = ReliabilityDisplay(
    ...     prob_true=curve.accuracy, prob_pred=curve.mean_confidence,
    ...     counts=curve.counts, edges=curve.edges, name="model")
    >>> disp.plot()
    <skcalib.plotting._reliability.ReliabilityDisplay object at ...>
    >>> disp.line_.get_label()
    'model'
    >>> plt.close("all")
    """

    def __init__(
        self,
        *,
        prob_true,
        prob_pred,
        counts,
        edges,
        lower=None,
        upper=None,
        ece=None,
        name=None,
        kind="confidence",
        class_label=None,
        curve=None,
    ):
        self.prob_true = prob_true
        self.prob_pred = prob_pred
        self.counts = counts
        self.edges = edges
        self.lower = lower
        self.upper = upper
        self.ece = ece
        self.name = name
        self.kind = kind
        self.class_label = class_label
        self.curve = curve

    def plot(
        self,
        ax=None,
        *,
        name=None,
        ref_line=True,
        show_histogram=False,
        show_gaps=False,
        show_intervals=False,
        histogram="counts",
        gap_kwargs=None,
        hist_kwargs=None,
        interval_kwargs=None,
        **kwargs,
    ):
        """Draw the reliability diagram.

        Empty bins (NaN accuracy or confidence) get no point, gap bar or error
        bar; they still get a (zero) histogram bar.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, default=None
            Axes to draw on; a new figure is created when ``None``. Pass the
            ``ax_`` of another display to overlay.
        name : str, default=None
            Legend name; ``None`` uses :attr:`name`.
        ref_line : bool, default=True
            Draw the diagonal ``y = x`` (once per axes, even when several
            displays are overlaid).
        show_histogram : bool, default=False
            Draw a histogram of the samples per bin in a panel below the main
            axes (shared by overlaid displays).
        show_gaps : bool, default=False
            Draw, for each non-empty bin, a bar spanning the bin from the
            observed accuracy to the mean confidence (the diagonal).
        show_intervals : bool, default=False
            Draw the per-bin confidence interval of the accuracy (``lower`` to
            ``upper``) as error bars.
        histogram : {"counts", "density"}, default="counts"
            Histogram heights: weighted counts, or a density that integrates
            to 1 over ``[0, 1]``.
        gap_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.bar` drawing the
            gaps (defaults: the curve's colour, ``alpha=0.25``, so that the gaps
            of overlaid displays stay apart; pass ``{"color": "tab:red"}`` for
            the classic red gaps of a single diagram).
        hist_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.bar` drawing the
            histogram (defaults: the curve's colour, ``alpha=0.4``).
        interval_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.errorbar`.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing the
            curve (defaults: ``marker="s"``, ``linestyle="-"``).

        Returns
        -------
        display : ReliabilityDisplay
            ``self``, with the artists stored in ``line_``, ``ax_``,
            ``figure_``, ``gaps_``, ``intervals_``, ``hist_`` and ``ax_hist_``.

        See Also
        --------
        ReliabilityDisplay.from_predictions : Compute and plot from labels and
            probabilities.
        ReliabilityDisplay.from_estimator : Compute and plot from a classifier.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.plotting import ReliabilityDisplay
        >>> disp = ReliabilityDisplay(
        ...     prob_true=[0.1, float("nan"), 0.8], prob_pred=[0.2, float("nan"), 0.9],
        ...     counts=[10, 0, 30], edges=[0.0, 1 / 3, 2 / 3, 1.0], ece=0.1)
        >>> disp = disp.plot(show_gaps=True, show_histogram=True, name="model")
        >>> disp.line_.get_label()
        'model (ECE = 0.100)'
        >>> len(disp.gaps_.patches), len(disp.hist_.patches)
        (2, 3)
        >>> plt.close("all")
        """
        plt = _import_pyplot()
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle

        _check_option(histogram, "histogram", _HISTOGRAMS)
        if show_intervals and (self.lower is None or self.upper is None):
            raise ValueError(
                "show_intervals=True needs the per-bin bounds lower and upper; "
                "build the display with from_predictions or pass them."
            )

        prob_true = np.asarray(self.prob_true, dtype=np.float64)
        prob_pred = np.asarray(self.prob_pred, dtype=np.float64)
        counts = np.asarray(self.counts, dtype=np.float64)
        edges = np.asarray(self.edges, dtype=np.float64)
        shown = np.isfinite(prob_true) & np.isfinite(prob_pred)

        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 7.0) if show_histogram else (5.5, 5.5))
        name = self.name if name is None else name

        if ref_line and not any(
            line.get_gid() == _REF_LINE_GID for line in ax.get_lines()
        ):
            ax.plot(
                [0, 1],
                [0, 1],
                linestyle=":",
                color="black",
                linewidth=1,
                label=_REF_LINE_LABEL,
                gid=_REF_LINE_GID,
                zorder=1.5,
            )

        line_kwargs = {"marker": "s", "markersize": 4, "linestyle": "-"}
        label = _legend_label(name, self.ece)
        if label is not None:
            line_kwargs["label"] = label
        line_kwargs = _merge_kwargs(line_kwargs, kwargs, Line2D)
        self.line_ = ax.plot(prob_pred[shown], prob_true[shown], **line_kwargs)[0]
        color = self.line_.get_color()

        self.gaps_ = None
        if show_gaps:
            gap_defaults = {
                "color": color,
                "alpha": 0.25,
                "linewidth": 0,
                "zorder": 1,
            }
            self.gaps_ = ax.bar(
                edges[:-1][shown],
                prob_pred[shown] - prob_true[shown],
                width=np.diff(edges)[shown],
                bottom=prob_true[shown],
                align="edge",
                **_merge_kwargs(gap_defaults, gap_kwargs, Rectangle),
            )

        self.intervals_ = None
        if show_intervals:
            lower = np.asarray(self.lower, dtype=np.float64)[shown]
            upper = np.asarray(self.upper, dtype=np.float64)[shown]
            yerr = np.clip(
                np.vstack((prob_true[shown] - lower, upper - prob_true[shown])),
                0.0,
                None,
            )
            interval_defaults = {
                "fmt": "none",
                "ecolor": color,
                "elinewidth": 1,
                "capsize": 2,
            }
            self.intervals_ = ax.errorbar(
                prob_pred[shown],
                prob_true[shown],
                yerr=yerr,
                **{**interval_defaults, **(interval_kwargs or {})},
            )

        self.hist_ = None
        self.ax_hist_ = None
        if show_histogram:
            self.ax_hist_ = _histogram_axes(ax)
            # A quantile bin [0, 0] (a mass of scores at exactly 0) has no
            # width: it is drawn, and its density computed, on a sliver.
            widths = np.diff(edges)
            widths = np.where(widths > 0, widths, _POINT_BIN_WIDTH)
            heights = counts
            if histogram == "density":
                total = counts.sum()
                heights = counts / (total * widths) if total > 0 else counts * 0.0
            hist_defaults = {
                "color": color,
                "alpha": 0.4,
                "edgecolor": color,
                "linewidth": 0.8,
            }
            self.hist_ = self.ax_hist_.bar(
                edges[:-1],
                heights,
                width=widths,
                align="edge",
                **_merge_kwargs(hist_defaults, hist_kwargs, Rectangle),
            )
            self.ax_hist_.set_ylabel("Count" if histogram == "counts" else "Density")

        xlabel, ylabel = _axis_labels(self.kind, self.class_label)
        limits = (-_MARGIN, 1 + _MARGIN)
        ax.set(xlim=limits, ylim=limits, ylabel=ylabel)
        ax.set_aspect("equal", adjustable="box")
        bottom_ax = getattr(ax, _HIST_AX_ATTR, None)
        if bottom_ax is None:
            ax.set_xlabel(xlabel)
        else:
            ax.set_xlabel("")
            bottom_ax.set_xlabel(xlabel)
        ax.legend(loc="lower right", fontsize="small")

        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        n_bins=15,
        strategy="uniform",
        kind="confidence",
        class_index=None,
        pos_label=None,
        sample_weight=None,
        labels=None,
        confidence_level=0.95,
        name=None,
        ax=None,
        ref_line=True,
        show_histogram=False,
        show_gaps=False,
        show_intervals=False,
        histogram="counts",
        gap_kwargs=None,
        hist_kwargs=None,
        interval_kwargs=None,
        **kwargs,
    ):
        """Plot a reliability diagram from true labels and predicted probabilities.

        Computes :func:`~skcalib.metrics.reliability_curve` and the ECE, builds
        the display and calls :meth:`plot`.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True class labels.
        y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
            Predicted probabilities: one column per class (in the order of
            ``labels``, or of the sorted labels of ``y_true``), or a 1-D array
            with the probability of the positive class of a binary problem.
        n_bins : int, default=15
            Number of bins.
        strategy : {"uniform", "quantile"}, default="uniform"
            Equal-width or equal-mass bins; see
            :func:`~skcalib.metrics.reliability_curve`.
        kind : {"confidence", "top_label", "classwise"}, default="confidence"
            What is binned:

            - ``"confidence"``: the top-1 confidence against whether the
              top-1 prediction is correct (pools every class);
            - ``"top_label"``: the same, restricted to the samples predicted as
              the class chosen with ``class_index``/``pos_label``; without a
              class, the pooled curve with the top-label ECE in the legend;
            - ``"classwise"``: the probability of the chosen class against
              whether the sample belongs to it (for 1-D binary input, the
              positive class by default).
        class_index : int, default=None
            Column of the class for ``kind="top_label"`` or ``"classwise"``.
        pos_label : object, default=None
            The class for ``kind="top_label"`` or ``"classwise"`` by its label
            (looked up in ``labels``, or the sorted labels of ``y_true``);
            an alternative to ``class_index``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        labels : array-like of shape (n_classes,), default=None
            The labels of the columns of ``y_proba``.
        confidence_level : float, default=0.95
            Level of the per-bin Wilson intervals (``show_intervals``).
        name : str, default=None
            Legend name of the curve.
        ax : matplotlib.axes.Axes, default=None
            Axes to draw on; a new figure when ``None``.
        ref_line : bool, default=True
            Draw the diagonal (once per axes).
        show_histogram : bool, default=False
            Draw the confidence histogram in a panel below.
        show_gaps : bool, default=False
            Draw the gap from each bin's accuracy to the diagonal.
        show_intervals : bool, default=False
            Draw the per-bin Wilson intervals.
        histogram : {"counts", "density"}, default="counts"
            Histogram heights.
        gap_kwargs, hist_kwargs, interval_kwargs : dict, default=None
            Styles of the gaps, histogram and intervals; see :meth:`plot`.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing the
            curve.

        Returns
        -------
        display : ReliabilityDisplay
            With ``curve``, ``ece`` and the artists (see :meth:`plot`).

        Raises
        ------
        ValueError
            For an unknown ``kind``, both or an unknown ``class_index`` /
            ``pos_label``, a class given with ``kind="confidence"``, and any
            input that :func:`~skcalib.metrics.reliability_curve` refuses.

        See Also
        --------
        ReliabilityDisplay.from_estimator : Plot from a classifier and data.
        skcalib.metrics.reliability_curve : The per-bin values.
        skcalib.metrics.expected_calibration_error : The ECE.

        Notes
        -----
        The ECE in the legend is
        :func:`~skcalib.metrics.expected_calibration_error` with the same
        ``n_bins``, ``strategy`` and ``kind`` when no class is selected. For
        ``kind="confidence"`` that is exactly the weighted mean gap of the
        plotted bins. For ``kind="top_label"`` without a class it is the
        top-label ECE (Gupta and Ramdas: bins per predicted class), while the
        curve drawn pools the classes (the confidence curve). When one class is
        selected, the ECE is that of the plotted bins,
        :math:`\\sum_j n_j |\\mathrm{acc}_j - \\mathrm{conf}_j| / \\sum_j n_j`.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.plotting import ReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> proba = rng.dirichlet(np.ones(3), size=2000)
        >>> y = np.array([rng.choice(3, p=p) for p in proba])  # calibrated
        >>> sharp = proba ** 3 / (proba ** 3).sum(axis=1, keepdims=True)
        >>> disp = ReliabilityDisplay.from_predictions(
        ...     y, proba, n_bins=10, name="calibrated", show_histogram=True)
        >>> disp = ReliabilityDisplay.from_predictions(
        ...     y, sharp, n_bins=10, name="over-confident", ax=disp.ax_,
        ...     show_histogram=True, show_gaps=True)
        >>> [t.get_text() for t in disp.ax_.get_legend().get_texts()]
        ['Perfectly calibrated', 'calibrated (ECE = 0.015)',
         'over-confident (ECE = 0.219)']
        >>> plt.close("all")
        """
        _import_pyplot()
        _check_option(kind, "kind", _KINDS)
        classes = labels
        if pos_label is not None and classes is None:
            classes = np.unique(np.asarray(y_true))
        class_index = _resolve_class_index(kind, class_index, pos_label, classes)

        curve = reliability_curve(
            y_true,
            y_proba,
            n_bins=n_bins,
            strategy=strategy,
            kind=kind,
            class_index=class_index,
            sample_weight=sample_weight,
            labels=labels,
            confidence_level=confidence_level,
        )
        if curve.class_index is None:  # all classes: the metric's own ECE
            ece = expected_calibration_error(
                y_true,
                y_proba,
                n_bins=n_bins,
                strategy=strategy,
                kind=kind,
                sample_weight=sample_weight,
                labels=labels,
            )
        else:
            ece = _ece_from_curve(curve)

        if classes is None and curve.class_index is not None:
            classes = np.unique(np.asarray(y_true))
        disp = cls(
            prob_true=curve.accuracy,
            prob_pred=curve.mean_confidence,
            counts=curve.counts,
            edges=curve.edges,
            lower=curve.lower,
            upper=curve.upper,
            ece=ece,
            name=name,
            kind=kind,
            class_label=_class_label(classes, curve.class_index),
            curve=curve,
        )
        return disp.plot(
            ax=ax,
            ref_line=ref_line,
            show_histogram=show_histogram,
            show_gaps=show_gaps,
            show_intervals=show_intervals,
            histogram=histogram,
            gap_kwargs=gap_kwargs,
            hist_kwargs=hist_kwargs,
            interval_kwargs=interval_kwargs,
            **kwargs,
        )

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        n_bins=15,
        strategy="uniform",
        kind="confidence",
        class_index=None,
        pos_label=None,
        sample_weight=None,
        confidence_level=0.95,
        name=None,
        ax=None,
        ref_line=True,
        show_histogram=False,
        show_gaps=False,
        show_intervals=False,
        histogram="counts",
        gap_kwargs=None,
        hist_kwargs=None,
        interval_kwargs=None,
        **kwargs,
    ):
        """Plot a reliability diagram from a fitted classifier and data.

        Calls ``estimator.predict_proba(X)`` and :meth:`from_predictions`, with
        the column labels taken from ``estimator.classes_``.

        Parameters
        ----------
        estimator : estimator instance
            A fitted classifier (or pipeline ending in one) with
            ``predict_proba`` and ``classes_``: any skcalib calibrator, in
            raw-score or wrapper mode, or a scikit-learn classifier.
        X : array-like
            Input of ``estimator.predict_proba``.
        y : array-like of shape (n_samples,)
            True labels.
        n_bins : int, default=15
            Number of bins.
        strategy : {"uniform", "quantile"}, default="uniform"
            Equal-width or equal-mass bins.
        kind : {"confidence", "top_label", "classwise"}, default="confidence"
            What is binned; see :meth:`from_predictions`.
        class_index : int, default=None
            Column of the class for ``kind="top_label"`` or ``"classwise"``.
        pos_label : object, default=None
            The class for ``kind="top_label"`` or ``"classwise"`` as one of
            ``estimator.classes_``; an alternative to ``class_index``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        confidence_level : float, default=0.95
            Level of the per-bin Wilson intervals.
        name : str, default=None
            Legend name; the estimator's class name when ``None``.
        ax : matplotlib.axes.Axes, default=None
            Axes to draw on; a new figure when ``None``.
        ref_line : bool, default=True
            Draw the diagonal (once per axes).
        show_histogram : bool, default=False
            Draw the confidence histogram in a panel below.
        show_gaps : bool, default=False
            Draw the gap from each bin's accuracy to the diagonal.
        show_intervals : bool, default=False
            Draw the per-bin Wilson intervals.
        histogram : {"counts", "density"}, default="counts"
            Histogram heights.
        gap_kwargs, hist_kwargs, interval_kwargs : dict, default=None
            Styles of the gaps, histogram and intervals; see :meth:`plot`.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing the
            curve.

        Returns
        -------
        display : ReliabilityDisplay
            With ``curve``, ``ece`` and the artists (see :meth:`plot`).

        See Also
        --------
        ReliabilityDisplay.from_predictions : Plot from labels and
            probabilities.
        skcalib.metrics.reliability_curve : The per-bin values.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from skcalib import IsotonicCalibrator
        >>> from skcalib.plotting import ReliabilityDisplay
        >>> X, y = make_classification(n_samples=3000, random_state=0)
        >>> clf = GaussianNB().fit(X[:1000], y[:1000])
        >>> iso = IsotonicCalibrator(estimator=clf).fit(X[1000:2000], y[1000:2000])
        >>> disp = ReliabilityDisplay.from_estimator(clf, X[2000:], y[2000:])
        >>> disp = ReliabilityDisplay.from_estimator(
        ...     iso, X[2000:], y[2000:], name="isotonic", ax=disp.ax_)
        >>> disp.line_.get_label()
        'isotonic (ECE = 0.0...)'
        >>> plt.close("all")
        """
        _import_pyplot()
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"{type(estimator).__name__} has no predict_proba; "
                "ReliabilityDisplay needs predicted probabilities."
            )
        y_proba = estimator.predict_proba(X)
        name = type(estimator).__name__ if name is None else name
        return cls.from_predictions(
            y,
            y_proba,
            n_bins=n_bins,
            strategy=strategy,
            kind=kind,
            class_index=class_index,
            pos_label=pos_label,
            sample_weight=sample_weight,
            labels=getattr(estimator, "classes_", None),
            confidence_level=confidence_level,
            name=name,
            ax=ax,
            ref_line=ref_line,
            show_histogram=show_histogram,
            show_gaps=show_gaps,
            show_intervals=show_intervals,
            histogram=histogram,
            gap_kwargs=gap_kwargs,
            hist_kwargs=hist_kwargs,
            interval_kwargs=interval_kwargs,
            **kwargs,
        )
