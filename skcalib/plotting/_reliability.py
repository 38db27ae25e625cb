"""Reliability diagrams: :class:`ReliabilityDisplay`.

The display follows scikit-learn's display pattern (``CalibrationDisplay``):
``from_estimator`` -> ``from_predictions`` -> :func:`skcalib.metrics.reliability_curve`
-> ``ReliabilityDisplay(...)`` (stores) -> :meth:`ReliabilityDisplay.plot`
(draws, returns ``self``). No binning happens here: bins, per-bin statistics and
intervals all come from :func:`~skcalib.metrics.reliability_curve`.

This module holds the class and :meth:`~ReliabilityDisplay.plot`, a sequence
of calls to the drawing helpers of :mod:`skcalib.plotting._drawing`; the
constructors that compute (``from_predictions``, ``from_estimator``) are in
:mod:`skcalib.plotting._from_data` (what they compute, in
:mod:`skcalib.plotting._display_data`; which curve, in
:mod:`skcalib.plotting._classes`), the legend ECE and the labels in
:mod:`skcalib.plotting._annotations`; the per-class grid in
:mod:`skcalib.plotting._grid`.

matplotlib is imported only inside the methods that draw, so importing
:mod:`skcalib.plotting` never imports it.
"""

import numpy as np

from skcalib.plotting._annotations import axis_labels, legend_label
from skcalib.plotting._drawing import (
    draw_band,
    draw_curve,
    draw_diagonal,
    draw_gaps,
    draw_histogram,
    draw_intervals,
    draw_smooth_curve,
    draw_step_curve,
    finish_axes,
    histogram_axes,
    import_pyplot,
    method_color,
    new_axes,
)
from skcalib.plotting._from_data import ReliabilityFromDataMixin, check_option

__all__ = ["ReliabilityDisplay"]


_HISTOGRAMS = ("counts", "density")
_HISTTYPES = ("step", "bar")
_HIST_SCALES = ("auto", "linear", "log")


def _is_isotonic(curve):
    return getattr(curve, "strategy", None) == "isotonic"


def _suffixed(name, what):
    return what if name is None else f"{name} {what}"


class ReliabilityDisplay(ReliabilityFromDataMixin):
    """Reliability diagram (calibration curve) with gaps, histogram and ECE.

    Per bin of predicted confidence, the observed accuracy is plotted against
    the mean confidence; a calibrated model follows the diagonal. Optionally
    draws the gap of each bin to the diagonal, the interval (Wilson or
    Clopper-Pearson) of each accuracy, a bootstrap band of the whole curve
    and a confidence histogram in a panel below. The legend shows the
    expected calibration error (ECE). Several displays can be overlaid on one
    axes (pass ``ax=disp.ax_``); the diagonal is drawn once per axes and their
    histograms share one panel.

    Binning-free variants: ``strategy="isotonic"`` draws the CORP curve [2]_
    (the isotonic regression of the outcome on the probability, a step
    curve with no bins to choose) with its consistency band and CORP
    miscalibration in the legend; ``overlay=("isotonic", "smooth")`` draws
    the CORP curve and the kernel-smoothed curve of the smooth ECE [3]_
    beside a binned one.

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
        Bounds of a confidence interval of ``prob_true`` per bin (the Wilson
        or Clopper-Pearson interval of
        :func:`~skcalib.metrics.reliability_curve`); needed for
        ``show_intervals=True``.
    ece : float, default=None
        Expected calibration error shown in the legend; ``None`` shows none.
    ece_interval : CalibrationErrorInterval, default=None
        Confidence interval of ``ece``
        (:func:`~skcalib.metrics.calibration_error_interval`), shown in the
        legend after it (``legend_interval=True`` of :meth:`from_predictions`).
    name : str, default=None
        Name of the model in the legend.
    kind : {"confidence", "top_label", "classwise"}, default="confidence"
        What was binned; chooses the axis labels (see :meth:`from_predictions`).
    class_label : object, default=None
        The class the curve is about (``kind="top_label"`` with a class, or
        ``"classwise"``); shown in the axis labels.
    curve : ReliabilityCurve, default=None
        The full output of :func:`~skcalib.metrics.reliability_curve`, kept
        for reference. A curve of ``strategy="isotonic"`` (CORP) is drawn
        as its PAV step curve (``curve_x``, ``curve_y``) with its
        consistency band, instead of one marker per bin; a binned curve
        with a bootstrap band (``band_lower``, ``band_upper``) gets it
        drawn behind its markers.
    mcb : float, default=None
        CORP miscalibration (Brier MCB, :func:`~skcalib.metrics.corp_decomposition`)
        of the isotonic curve (``curve`` or ``isotonic_curve``), shown in
        its legend entry.
    isotonic_curve : ReliabilityCurve, default=None
        A CORP curve (``strategy="isotonic"``) drawn over a binned ``curve``
        (dash-dotted, in the curve's colour), with its band.
    smooth_curve : SmoothReliabilityCurve, default=None
        A kernel-smoothed curve (:func:`~skcalib.metrics.smooth_reliability_curve`)
        drawn over the curve (dashed, in the curve's colour), with its smooth
        ECE in the legend.

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
    hist_ : matplotlib.patches.StepPatch or matplotlib.container.BarContainer or None
        The histogram (one step or bar per bin, empty bins included), when
        ``show_histogram=True``: a step outline (``histtype="step"``, the
        default) or bars (``histtype="bar"``, or a bin ``[0, 0]``, drawn on
        a sliver).
    ax_hist_ : matplotlib.axes.Axes or None
        The histogram panel below ``ax_``, when ``show_histogram=True``.
    isotonic_line_ : matplotlib.lines.Line2D or None
        The CORP curve (``line_`` itself when ``curve`` is isotonic).
    band_ : matplotlib.collections.PolyCollection or None
        The consistency band of the CORP curve, when it has one and
        ``show_band=True``.
    bootstrap_band_ : matplotlib.collections.PolyCollection or None
        The bootstrap band of a binned ``curve`` (``band=`` of
        :meth:`from_predictions`), drawn at the bins' mean confidence, when
        it has one and ``show_band=True``.
    smooth_line_ : matplotlib.lines.Line2D or None
        The smoothed curve, when ``smooth_curve`` is given.

    See Also
    --------
    skcalib.metrics.reliability_curve : Compute the per-bin values.
    skcalib.metrics.expected_calibration_error : The ECE in the legend.
    sklearn.calibration.CalibrationDisplay : scikit-learn's binary calibration
        curve display.

    Notes
    -----
    **Defaults.** The per-bin intervals (Wilson unless
    ``interval="clopper-pearson"``) are drawn (a bin of ten
    samples has an interval about 0.5 wide: its zigzag is noise, not
    miscalibration); ``show_intervals=False`` turns them off. A binary
    problem draws the positive class on ``[0, 1]``, as
    :class:`~sklearn.calibration.CalibrationDisplay` does
    (:meth:`from_predictions`, ``kind=None``). Histograms are step
    outlines, on a log count scale when a linear one would hide a
    non-empty bin (``hist_scale``).

    **Colours.** A named model keeps one colour on every panel of a
    figure: the first display of a name on a figure takes the next colour
    of matplotlib's ``axes.prop_cycle`` not yet given to a name there (or
    the ``color`` passed), and every later display of that name on the
    figure (any axes, its histogram, intervals, gaps and overlays) reuses
    it. Unnamed displays follow the axes' own colour cycle.

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
    .. [2] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability
       diagrams for probabilistic classifiers", PNAS 118(8), 2021.
    .. [3] J. Błasiok and P. Nakkiran, "Smooth ECE: Principled reliability
       diagrams via kernel smoothing", ICLR 2024.

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
        ece_interval=None,
        name=None,
        kind="confidence",
        class_label=None,
        curve=None,
        mcb=None,
        isotonic_curve=None,
        smooth_curve=None,
    ):
        self.prob_true = prob_true
        self.prob_pred = prob_pred
        self.counts = counts
        self.edges = edges
        self.lower = lower
        self.upper = upper
        self.ece = ece
        self.ece_interval = ece_interval
        self.name = name
        self.kind = kind
        self.class_label = class_label
        self.curve = curve
        self.mcb = mcb
        self.isotonic_curve = isotonic_curve
        self.smooth_curve = smooth_curve

    def plot(
        self,
        ax=None,
        *,
        name=None,
        ref_line=True,
        show_histogram=False,
        show_gaps=False,
        show_intervals=None,
        histogram="counts",
        histtype="step",
        hist_scale="auto",
        gap_kwargs=None,
        hist_kwargs=None,
        interval_kwargs=None,
        show_band=True,
        band_kwargs=None,
        overlay_kwargs=None,
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
        show_intervals : bool, default=None
            Draw the per-bin confidence interval of the accuracy (``lower`` to
            ``upper``) as error bars, so that the zigzag of bins holding few
            samples reads as the noise it is. ``None``: drawn when the
            display has ``lower`` and ``upper`` and the curve is binned (a
            CORP curve shows its consistency band instead).
        histogram : {"counts", "density"}, default="counts"
            Histogram heights: weighted counts, or a density that integrates
            to 1 over ``[0, 1]``.
        histtype : {"step", "bar"}, default="step"
            Histogram drawn as a step outline (overlaid histograms stay
            readable) or as filled bars.
        hist_scale : {"auto", "linear", "log"}, default="auto"
            Scale of the histogram's count axis. ``"auto"``: logarithmic when
            the smallest non-empty bar of the panel (over every display
            overlaid on it) is below 2% of the tallest, so that every
            non-empty bin stays visible; else linear.
        gap_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.bar` drawing the
            gaps (defaults: the curve's colour, ``alpha=0.25``, so that the gaps
            of overlaid displays stay apart; pass ``{"color": "tab:red"}`` for
            the classic red gaps of a single diagram).
        hist_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.stairs`
            (``histtype="step"``: the curve's colour, ``linewidth=1.5``, no
            fill) or :meth:`matplotlib.axes.Axes.bar` (``"bar"``: the curve's
            colour, ``alpha=0.4``) drawing the histogram.
        interval_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.errorbar`.
        show_band : bool, default=True
            Draw the consistency band of the CORP curve, and the bootstrap
            band of a binned ``curve``, when they have one.
        band_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.fill_between`
            drawing the bands (defaults: the curve's colour, ``alpha=0.15``).
        overlay_kwargs : dict, default=None
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing
            the overlaid CORP and smoothed curves.
        **kwargs : dict
            Keyword arguments for :meth:`matplotlib.axes.Axes.plot` drawing the
            curve (defaults: ``marker="s"``, ``linestyle="-"``; a CORP curve:
            no marker; the colour of ``name`` on the figure, see Notes).

        Returns
        -------
        display : ReliabilityDisplay
            ``self``, with the artists stored in ``line_``, ``ax_``,
            ``figure_``, ``gaps_``, ``intervals_``, ``hist_``, ``ax_hist_``,
            ``isotonic_line_``, ``band_``, ``bootstrap_band_`` and
            ``smooth_line_``.

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
        >>> len(disp.gaps_.patches), disp.hist_.get_data().values
        (2, array([10.,  0., 30.]))
        >>> plt.close("all")
        """
        import_pyplot()
        check_option(histogram, "histogram", _HISTOGRAMS)
        check_option(histtype, "histtype", _HISTTYPES)
        check_option(hist_scale, "hist_scale", _HIST_SCALES)
        has_bounds = self.lower is not None and self.upper is not None
        if show_intervals and not has_bounds:
            raise ValueError(
                "show_intervals=True needs the per-bin bounds lower and upper; "
                "build the display with from_predictions or pass them."
            )
        if show_intervals is None:
            show_intervals = has_bounds and not _is_isotonic(self.curve)
        prob_true, prob_pred, counts, edges = (
            np.asarray(a, dtype=np.float64)
            for a in (self.prob_true, self.prob_pred, self.counts, self.edges)
        )
        shown = np.isfinite(prob_true) & np.isfinite(prob_pred)
        ax = new_axes(show_histogram) if ax is None else ax
        if ref_line:
            draw_diagonal(ax)
        name = self.name if name is None else name
        color = method_color(ax, name, kwargs)
        if _is_isotonic(self.curve):
            label = legend_label(name, self.mcb, "MCB")
            self.line_ = draw_step_curve(ax, self.curve, label, kwargs, color=color)
        else:
            label = legend_label(name, self.ece, interval=self.ece_interval)
            self.line_ = draw_curve(
                ax, prob_pred[shown], prob_true[shown], label, kwargs, color=color
            )
        color = self.line_.get_color()
        self._draw_overlays(ax, name, color, show_band, band_kwargs, overlay_kwargs)
        self.gaps_ = None
        if show_gaps:
            self.gaps_ = draw_gaps(
                ax, edges, prob_pred, prob_true, shown, color, gap_kwargs
            )
        self.intervals_ = None
        if show_intervals:
            bounds = [
                np.asarray(b, dtype=np.float64)[shown] for b in (self.lower, self.upper)
            ]
            self.intervals_ = draw_intervals(
                ax, prob_pred[shown], prob_true[shown], *bounds, color, interval_kwargs
            )
        self.hist_ = self.ax_hist_ = None
        if show_histogram:
            self._draw_histogram(
                ax, counts, edges, color, histogram, hist_kwargs, histtype, hist_scale
            )
        finish_axes(ax, *axis_labels(self.kind, self.class_label))
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    def _draw_histogram(self, ax, counts, edges, color, histogram, *style):
        """The histogram panel below ``ax`` (shared) and this display's
        histogram on it; ``style``: ``hist_kwargs``, ``histtype``,
        ``hist_scale``."""
        hist_kwargs, histtype, hist_scale = style
        self.ax_hist_ = histogram_axes(ax)
        self.hist_ = draw_histogram(
            self.ax_hist_,
            counts,
            edges,
            histogram,
            color,
            hist_kwargs,
            histtype=histtype,
            hist_scale=hist_scale,
        )

    def _draw_overlays(self, ax, name, color, show_band, band_kwargs, overlay_kwargs):
        """The CORP curve over a binned one, its band, and the smoothed curve."""
        corp_main = _is_isotonic(self.curve)
        iso = self.curve if corp_main else self.isotonic_curve
        self.isotonic_line_ = self.line_ if corp_main else None
        self.band_ = self.smooth_line_ = self.bootstrap_band_ = None
        if not corp_main and self.curve is not None and show_band:
            self.bootstrap_band_ = draw_band(ax, self.curve, color, band_kwargs)
        if iso is not None and not corp_main:
            label = legend_label(_suffixed(name, "CORP"), self.mcb, "MCB")
            self.isotonic_line_ = draw_step_curve(
                ax, iso, label, overlay_kwargs, color=color, linestyle="-."
            )
        if iso is not None and show_band:
            self.band_ = draw_band(ax, iso, color, band_kwargs)
        if self.smooth_curve is not None:
            smooth = self.smooth_curve
            label = legend_label(_suffixed(name, "smooth"), smooth.smooth_ece, "smECE")
            self.smooth_line_ = draw_smooth_curve(
                ax, smooth, label, color, overlay_kwargs
            )
