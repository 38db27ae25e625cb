"""Drawing helpers of :class:`~skcalib.plotting.ReliabilityDisplay`.

One function per part of the diagram: the diagonal, the curve, the gap bars,
the interval error bars, the histogram panel and its bars, and the axes
(labels, limits, legend). Each takes the axes and the per-bin arrays and
returns the artist it drew; none computes a statistic.

matplotlib is imported inside the functions, so importing this module never
imports it.
"""

import numpy as np

#: ``gid`` of the diagonal; a second display on the same axes finds it and
#: does not draw it again.
REF_LINE_GID = "skcalib-reliability-diagonal"
#: Attribute set on the main axes that points to its histogram panel, so that
#: displays overlaid on the same axes share one panel.
HIST_AX_ATTR = "_skcalib_reliability_hist_ax"
REF_LINE_LABEL = "Perfectly calibrated"
#: Drawn width of a zero-width bin (``[0, 0]``) in the confidence histogram.
POINT_BIN_WIDTH = 0.01
#: Space around ``[0, 1]`` on both axes.
MARGIN = 0.02


def import_pyplot(what="ReliabilityDisplay"):
    """``matplotlib.pyplot``, or an ``ImportError`` that says how to get it
    (``what``: the name of the display that needs it)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            f"{what} requires matplotlib: pip install skcalib[plot]"
        ) from exc
    return plt


def merge_kwargs(defaults, user, artist_class):
    """``defaults`` updated by ``user``, with matplotlib aliases resolved."""
    from matplotlib.cbook import normalize_kwargs

    merged = normalize_kwargs(dict(defaults), artist_class)
    merged.update(normalize_kwargs(dict(user or {}), artist_class))
    return merged


def new_axes(show_histogram):
    """Axes of a new figure, taller when a histogram panel will go below."""
    plt = import_pyplot()
    _, ax = plt.subplots(figsize=(5.5, 7.0) if show_histogram else (5.5, 5.5))
    return ax


def draw_diagonal(ax):
    """Draw ``y = x`` unless a display already drew it on ``ax``."""
    if any(line.get_gid() == REF_LINE_GID for line in ax.get_lines()):
        return
    ax.plot(
        [0, 1],
        [0, 1],
        linestyle=":",
        color="black",
        linewidth=1,
        label=REF_LINE_LABEL,
        gid=REF_LINE_GID,
        zorder=1.5,
    )


def draw_curve(ax, prob_pred, prob_true, label, kwargs, color=None):
    """The curve through the shown bins (``marker="s"``, ``linestyle="-"``)."""
    from matplotlib.lines import Line2D

    defaults = {"marker": "s", "markersize": 4, "linestyle": "-"}
    if color is not None:
        defaults["color"] = color
    if label is not None:
        defaults["label"] = label
    return ax.plot(prob_pred, prob_true, **merge_kwargs(defaults, kwargs, Line2D))[0]


def draw_gaps(ax, edges, prob_pred, prob_true, shown, color, gap_kwargs):
    """One bar per shown bin, spanning it from the accuracy to the diagonal."""
    from matplotlib.patches import Rectangle

    defaults = {"color": color, "alpha": 0.25, "linewidth": 0, "zorder": 1}
    return ax.bar(
        edges[:-1][shown],
        prob_pred[shown] - prob_true[shown],
        width=np.diff(edges)[shown],
        bottom=prob_true[shown],
        align="edge",
        **merge_kwargs(defaults, gap_kwargs, Rectangle),
    )


def draw_intervals(ax, prob_pred, prob_true, lower, upper, color, interval_kwargs):
    """Error bars from ``lower`` to ``upper`` at each point of the curve."""
    yerr = np.clip(np.vstack((prob_true - lower, upper - prob_true)), 0.0, None)
    defaults = {"fmt": "none", "ecolor": color, "elinewidth": 1, "capsize": 2}
    return ax.errorbar(
        prob_pred, prob_true, yerr=yerr, **{**defaults, **(interval_kwargs or {})}
    )


def histogram_axes(ax):
    """The histogram panel below ``ax``, created on first use and then shared."""
    existing = getattr(ax, HIST_AX_ATTR, None)
    if existing is not None:
        return existing
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    ax_hist = make_axes_locatable(ax).append_axes(
        "bottom", size="28%", pad=0.12, sharex=ax
    )
    setattr(ax, HIST_AX_ATTR, ax_hist)
    ax.tick_params(axis="x", labelbottom=False)
    return ax_hist


def histogram_heights(counts, edges, histogram):
    """Bar widths and heights: weighted counts, or a density on ``[0, 1]``.

    A quantile bin ``[0, 0]`` (a mass of scores at exactly 0) has no width: it
    is drawn, and its density computed, on a sliver of
    :data:`POINT_BIN_WIDTH`.
    """
    widths = np.diff(edges)
    widths = np.where(widths > 0, widths, POINT_BIN_WIDTH)
    if histogram == "counts":
        return widths, counts
    total = counts.sum()
    return widths, counts / (total * widths) if total > 0 else counts * 0.0


#: ``hist_scale="auto"`` draws the count axis on a log scale when the
#: smallest non-empty bar of the panel would be lower than this fraction of
#: the tallest on a linear one (under 2% of the panel: hard to see).
LOG_SCALE_RATIO = 0.02
#: Attribute of the histogram panel: the heights drawn on it so far, so that
#: the scale suits every display overlaid there.
HEIGHTS_ATTR = "_skcalib_hist_heights"


def choose_hist_scale(heights):
    """``"log"`` when the smallest positive height is below
    :data:`LOG_SCALE_RATIO` times the largest, else ``"linear"``."""
    positive = heights[heights > 0]
    if positive.size and positive.min() < LOG_SCALE_RATIO * positive.max():
        return "log"
    return "linear"


def set_hist_scale(ax_hist, heights, hist_scale):
    """Apply ``hist_scale`` to the panel (``"auto"``: :func:`choose_hist_scale`
    of every height drawn on it); on a log scale the axis starts at half the
    smallest positive height, so that every non-empty bin shows."""
    drawn = np.concatenate([getattr(ax_hist, HEIGHTS_ATTR, np.empty(0)), heights])
    setattr(ax_hist, HEIGHTS_ATTR, drawn)
    scale = choose_hist_scale(drawn) if hist_scale == "auto" else hist_scale
    positive = drawn[drawn > 0]
    if scale == "log" and positive.size:
        ax_hist.set_yscale("log")
        ax_hist.set_ylim(positive.min() / 2, positive.max() * 2)
    elif scale == "linear":
        ax_hist.set_yscale("linear")
        ax_hist.set_ylim(0, positive.max() * 1.05 if positive.size else 1)
    return scale


def draw_histogram(ax_hist, counts, edges, histogram, color, hist_kwargs, **options):
    """The histogram of one display in the panel: step outlines
    (``options["histtype"] == "step"``; a :class:`~matplotlib.patches.StepPatch`)
    or one bar per bin (a ``BarContainer``), empty bins included, on the
    count scale ``options["hist_scale"]``."""
    from matplotlib.patches import Rectangle, StepPatch

    widths, heights = histogram_heights(counts, edges, histogram)
    point_bin = bool((np.diff(edges) <= 0).any())
    if options["histtype"] == "step" and not point_bin:
        defaults = {"color": color, "linewidth": 1.5, "fill": False}
        artist = ax_hist.stairs(
            heights, edges, **merge_kwargs(defaults, hist_kwargs, StepPatch)
        )
    else:  # bars (a zero-width bin is drawn on a sliver)
        defaults = {"color": color, "alpha": 0.4, "edgecolor": color, "linewidth": 0.8}
        if options["histtype"] == "step":
            defaults.update(fill=False, alpha=1.0, linewidth=1.5)
        artist = ax_hist.bar(
            edges[:-1],
            heights,
            width=widths,
            align="edge",
            **merge_kwargs(defaults, hist_kwargs, Rectangle),
        )
    set_hist_scale(
        ax_hist, np.asarray(heights, dtype=np.float64), options["hist_scale"]
    )
    ax_hist.set_ylabel("Count" if histogram == "counts" else "Density")
    return artist


#: Attribute of a figure: the colour of each named method drawn on it.
COLORS_ATTR = "_skcalib_method_colors"


def method_color(ax, name, kwargs):
    """The colour of method ``name`` on the figure of ``ax``: the one it
    got first on that figure (any panel), else the next colour of the
    ``axes.prop_cycle`` not yet given to a method there. A colour in
    ``kwargs`` wins and is remembered for the name if it has none. None
    (the axes' own cycle) when ``name`` is None."""
    import matplotlib as mpl
    from matplotlib.cbook import normalize_kwargs
    from matplotlib.lines import Line2D

    user = normalize_kwargs(dict(kwargs or {}), Line2D).get("color")
    if name is None:
        return user
    figure = ax.figure
    colors = getattr(figure, COLORS_ATTR, None)
    if colors is None:
        colors = {}
        setattr(figure, COLORS_ATTR, colors)
    if user is not None:
        colors.setdefault(name, user)
        return user
    if name not in colors:
        cycle = mpl.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
        colors[name] = cycle[len(colors) % len(cycle)]
    return colors[name]


def finish_axes(ax, xlabel, ylabel):
    """Square ``[0, 1]`` limits, axis labels (the x label under the histogram
    panel when there is one) and the legend."""
    limits = (-MARGIN, 1 + MARGIN)
    ax.set(xlim=limits, ylim=limits, ylabel=ylabel)
    ax.set_aspect("equal", adjustable="box")
    bottom_ax = getattr(ax, HIST_AX_ATTR, None)
    if bottom_ax is None:
        ax.set_xlabel(xlabel)
    else:
        ax.set_xlabel("")
        bottom_ax.set_xlabel(xlabel)
    ax.legend(loc="lower right", fontsize="small")


#: Smoothed curves are drawn where the kernel density of the predictions is
#: at least this (the density integrates to 1 over ``[0, 1]``): elsewhere
#: the kernel average rests on almost no sample.
SMOOTH_MIN_DENSITY = 0.01


def draw_step_curve(ax, curve, label, kwargs, color=None, linestyle="-"):
    """The CORP curve of an isotonic :class:`~skcalib.metrics.ReliabilityCurve`:
    straight lines through ``curve_x``, ``curve_y`` (each PAV block a
    horizontal segment), no markers by default."""
    from matplotlib.lines import Line2D

    defaults = {"linestyle": linestyle, "linewidth": 1.5}
    if color is not None:
        defaults["color"] = color
    if label is not None:
        defaults["label"] = label
    x = np.asarray(curve.curve_x, dtype=np.float64)
    y = np.asarray(curve.curve_y, dtype=np.float64)
    return ax.plot(x, y, **merge_kwargs(defaults, kwargs, Line2D))[0]


def draw_band(ax, curve, color, band_kwargs):
    """The band of a curve (None when it has none): the consistency band of
    an isotonic curve at ``curve_x``, or the bootstrap band of a binned one
    at the mean confidence of its bins (those where the band is finite)."""
    if curve.band_lower is None or curve.band_upper is None:
        return None
    from matplotlib.collections import PolyCollection

    lower, upper = (
        np.asarray(b, dtype=np.float64) for b in (curve.band_lower, curve.band_upper)
    )
    if curve.strategy == "isotonic":
        x = np.asarray(curve.curve_x, dtype=np.float64)
    else:
        x = np.asarray(curve.mean_confidence, dtype=np.float64)
        keep = np.isfinite(x) & np.isfinite(lower) & np.isfinite(upper)
        x, lower, upper = x[keep], lower[keep], upper[keep]
    defaults = {"color": color, "alpha": 0.15, "linewidth": 0, "zorder": 1}
    return ax.fill_between(
        x, lower, upper, **merge_kwargs(defaults, band_kwargs, PolyCollection)
    )


def draw_smooth_curve(ax, smooth, label, color, kwargs):
    """The kernel-smoothed curve (``accuracy`` at ``x``) where the density of
    the predictions is at least :data:`SMOOTH_MIN_DENSITY` (NaN elsewhere,
    so the line breaks there)."""
    from matplotlib.lines import Line2D

    x = np.asarray(smooth.x, dtype=np.float64)
    acc = np.asarray(smooth.accuracy, dtype=np.float64)
    dense = np.asarray(smooth.density, dtype=np.float64) >= SMOOTH_MIN_DENSITY
    defaults = {"color": color, "linestyle": "--", "linewidth": 1.5}
    if label is not None:
        defaults["label"] = label
    return ax.plot(
        x, np.where(dense, acc, np.nan), **merge_kwargs(defaults, kwargs, Line2D)
    )[0]


def estimator_proba(estimator, X, display, name):
    """``(y_proba, name, classes)`` of a display's ``from_estimator``: the
    estimator's ``predict_proba(X)``, the name (its class name when
    ``name`` is None) and its ``classes_`` (None without them); a
    ``TypeError`` naming ``display`` when it has no ``predict_proba``."""
    if not hasattr(estimator, "predict_proba"):
        raise TypeError(
            f"{type(estimator).__name__} has no predict_proba; "
            f"{display} needs predicted probabilities."
        )
    name = type(estimator).__name__ if name is None else name
    return estimator.predict_proba(X), name, getattr(estimator, "classes_", None)
