"""A grid of per-class reliability diagrams: :class:`ReliabilityGridDisplay`.

One :class:`~skcalib.plotting.ReliabilityDisplay` per class, each on its own
panel, all computed by the same code as a single diagram
(:func:`~skcalib.plotting._display_data.display_data`); a method keeps one
colour across every panel of the figure. A grid drawn again on the
``axes_`` of another overlays a second model panel by panel.

The figure has one legend, above the panels (the methods and the
diagonal), rather than one per panel over the curves; each panel's ECE,
which differs from class to class, goes into the panel's title.
"""

import numpy as np

from skcalib.plotting._annotations import legend_label
from skcalib.plotting._display_data import display_data
from skcalib.plotting._drawing import (
    REF_LINE_GID,
    REF_LINE_LABEL,
    estimator_proba,
    import_pyplot,
)
from skcalib.plotting._reliability import ReliabilityDisplay

__all__ = ["ReliabilityGridDisplay"]

_GRID_KINDS = ("classwise", "top_label")
#: Side of one panel, in inches (a histogram panel adds a third below).
PANEL_INCHES = 3.2
#: Attribute of a figure made by :func:`_grid_axes` (its layout is ours to
#: adjust as titles and legend entries are added).
GRID_FIGURE_ATTR = "_skcalib_grid_figure"
#: Attribute of a figure: its one grid legend, and the handle of each entry
#: (by label, in the order drawn).
LEGEND_ATTR = "_skcalib_grid_legend"
HANDLES_ATTR = "_skcalib_grid_handles"
#: Attribute of a panel: its class line and the ECE line of each method
#: drawn on it (by name), which make its title.
TITLE_ATTR = "_skcalib_grid_title"
#: Inches: a title line (``fontsize="medium"``), a legend row, and the tick
#: labels with the x label under a panel.
_TITLE_LINE, _LEGEND_ROW, _XLABEL = 0.19, 0.3, 0.5
#: Legend entries per row.
_LEGEND_COLS = 4


def _grid_axes(n_panels, n_cols, show_histogram):
    plt = import_pyplot("ReliabilityGridDisplay")
    n_cols = min(n_panels, 3) if n_cols is None else int(n_cols)
    n_rows = -(-n_panels // n_cols)
    height = PANEL_INCHES * (1.3 if show_histogram else 1.0)
    fig, axes = plt.subplots(
        n_rows,
        n_cols,
        figsize=(PANEL_INCHES * n_cols, height * n_rows),
        squeeze=False,
    )
    fig.subplots_adjust(wspace=0.25, hspace=0.35)
    setattr(fig, GRID_FIGURE_ATTR, True)
    for ax in axes.ravel()[n_panels:]:
        ax.set_visible(False)
    return axes


def _panel_title(panel, head, disp, name):
    """Set the title of ``panel``: ``head`` (its class), then one line per
    method drawn on it with its ECE (``"name (ECE = 0.031)"``); return the
    line count."""
    _, lines = getattr(panel, TITLE_ATTR, (None, {}))
    if disp.ece is not None and np.isfinite(disp.ece):
        lines[name] = legend_label(name, disp.ece, interval=disp.ece_interval)
    setattr(panel, TITLE_ATTR, (head, lines))
    panel.set_title("\n".join([head, *lines.values()]), fontsize="medium")
    return 1 + len(lines)


def _figure_legend(fig, panel, displays, name):
    """Replace the figure's grid legend by one that lists the diagonal and
    every method drawn so far (by name; a nameless curve has no entry),
    above the panels; drop the panels' own legends. Return its row count."""
    handles = getattr(fig, HANDLES_ATTR, None)
    if handles is None:
        handles = {}
        setattr(fig, HANDLES_ATTR, handles)
    diagonal = [line for line in panel.get_lines() if line.get_gid() == REF_LINE_GID]
    if diagonal:
        handles.setdefault(REF_LINE_LABEL, diagonal[0])
    for disp in displays:
        label = disp.name if name is None else name
        if label is not None:
            handles.setdefault(str(label), disp.line_)
    for disp in displays:
        if disp.ax_.get_legend() is not None:
            disp.ax_.get_legend().remove()
    old = getattr(fig, LEGEND_ATTR, None)
    if old is not None:
        old.remove()
    n_cols = max(1, min(len(handles), _LEGEND_COLS))
    legend = fig.legend(
        list(handles.values()),
        list(handles),
        loc="upper center",
        bbox_to_anchor=(0.5, 1.0),
        ncols=n_cols,
        fontsize="medium",
        frameon=False,
    )
    setattr(fig, LEGEND_ATTR, legend)
    return legend, -(-len(handles) // n_cols)


def _fit_layout(fig, n_rows, title_lines, legend_rows):
    """Room for the legend and the titles above the panels (a figure made by
    the grid only: the layout of the caller's figure is the caller's)."""
    if not getattr(fig, GRID_FIGURE_ATTR, False):
        return
    height = fig.get_figheight()
    title = _TITLE_LINE * title_lines + 0.1
    above = 0.1 + _LEGEND_ROW * legend_rows + title
    top, bottom = 1 - above / height, _XLABEL / height
    gap = _XLABEL + title
    panel = (top - bottom) * height
    panel = (panel - (n_rows - 1) * gap) / n_rows
    fig.subplots_adjust(top=top, bottom=bottom, hspace=gap / max(panel, 1e-3))


def _chosen_classes(classes, known):
    if isinstance(classes, str) and classes == "all":
        return list(known)
    chosen = list(classes)
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise ValueError(
            f"classes must be 'all' or a non-empty list of the classes {known}; "
            f"got {classes!r}."
        )
    return chosen


class ReliabilityGridDisplay:
    """Grid of per-class reliability diagrams of a multiclass model.

    One panel per class: with ``kind="classwise"``, the predicted
    probability of the class against whether the sample is of that class
    (one-vs-rest, all samples); with ``kind="top_label"``, the confidence of
    the samples predicted as the class against whether that prediction is
    right. Each panel is a :class:`ReliabilityDisplay` with its per-bin
    intervals, titled with its class and the ECE of that class's curve (of
    the same kind), one line per method drawn on it. The figure has one
    legend, above the panels: the diagonal and the methods by name (a
    curve drawn without a name has none). The pooled top-label (or top-1
    confidence) view of all classes at once is
    :meth:`ReliabilityDisplay.from_predictions` with ``kind="top_label"``
    (``"confidence"``).

    Use :meth:`from_predictions` or :meth:`from_estimator` to create one.
    To overlay a second model, pass ``ax=grid.axes_``: a method keeps its
    colour on every panel of the figure.

    Parameters
    ----------
    displays : list of ReliabilityDisplay
        One display per class, in the order of ``classes``.
    classes : list
        The class of each display.

    Attributes
    ----------
    displays_ : list of ReliabilityDisplay
        The displays drawn, one per panel (their artists: ``line_``,
        ``intervals_``, ``hist_``, ...).
    axes_ : ndarray of matplotlib.axes.Axes of shape (n_rows, n_cols)
        The panels (those past the last class are hidden).
    figure_ : matplotlib.figure.Figure
        The figure.
    legend_ : matplotlib.legend.Legend
        The figure's one legend (also in ``figure_.legends``); the panels
        have none. Drawing another grid on ``axes_`` replaces it by one that
        lists both.

    See Also
    --------
    ReliabilityDisplay : One reliability diagram.
    skcalib.metrics.reliability_curve : The per-bin values of each panel.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skcalib.plotting import ReliabilityGridDisplay
    >>> rng = np.random.default_rng(0)
    >>> proba = rng.dirichlet(np.ones(3), size=900)
    >>> y = (rng.random(900)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
    >>> grid = ReliabilityGridDisplay.from_predictions(
    ...     y, proba, n_bins=5, name="model")
    >>> grid.axes_.shape, [d.class_label for d in grid.displays_]
    ((1, 3), [0, 1, 2])
    >>> plt.close("all")
    """

    def __init__(self, *, displays, classes):
        self.displays = displays
        self.classes = classes

    #: What a panel is about, in the messages.
    _unit = "classes"

    def _panel_heads(self):
        """The first title line of each panel."""
        return [f"class {c}" for c in self.classes]

    def plot(self, ax=None, *, n_cols=None, name=None, **plot_kwargs):
        """Draw one panel per class.

        Parameters
        ----------
        ax : ndarray of matplotlib.axes.Axes, default=None
            Panels to draw on, at least one per class (e.g. the ``axes_`` of
            another grid, to overlay); a new figure when ``None``.
        n_cols : int, default=None
            Columns of a new grid; ``None``: up to 3.
        name : str, default=None
            Name of the method in the legend and in the panel titles; ``None``
            keeps each display's.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot` (e.g.
            ``show_histogram``, ``show_intervals``, ``hist_scale``, curve
            styles), the same for every panel.

        Returns
        -------
        display : ReliabilityGridDisplay
            ``self``, with ``displays_``, ``axes_``, ``figure_`` and
            ``legend_``.

        Notes
        -----
        On a figure the grid made itself, the space above the panels is
        set to fit the legend and the longest title, and the space between
        rows to fit the titles; on axes passed as ``ax`` the layout is left
        to the caller.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.plotting import ReliabilityDisplay, ReliabilityGridDisplay
        >>> panels = [
        ...     ReliabilityDisplay(prob_true=[0.2, 0.7], prob_pred=[0.3, 0.8],
        ...                        counts=[5, 5], edges=[0, 0.5, 1],
        ...                        kind="classwise", class_label=c)
        ...     for c in ("a", "b")]
        >>> grid = ReliabilityGridDisplay(displays=panels, classes=["a", "b"])
        >>> grid.plot(name="m").axes_.shape
        (1, 2)
        >>> plt.close("all")
        """
        n = len(self.displays)
        show_histogram = plot_kwargs.get("show_histogram", False)
        if ax is None:
            axes = _grid_axes(n, n_cols, show_histogram)
        else:
            axes = np.asarray(ax, dtype=object).reshape(-1, np.shape(ax)[-1])
            if axes.size < n:
                raise ValueError(
                    f"ax holds {axes.size} axes, fewer than the {n} {self._unit}."
                )
        n_rows, n_cols = axes.shape
        title_lines = 1
        heads = self._panel_heads()
        for i, (disp, panel) in enumerate(
            zip(self.displays, axes.ravel()[:n], strict=True)
        ):
            disp.plot(ax=panel, name=name, **plot_kwargs)
            shown = disp.name if name is None else name
            lines = _panel_title(panel, heads[i], disp, shown)
            title_lines = max(title_lines, lines)
            if i % n_cols:  # the y labels on the first column only
                panel.set_ylabel("")
                if disp.ax_hist_ is not None:
                    disp.ax_hist_.set_ylabel("")
        self.displays_ = list(self.displays)
        self.axes_ = axes
        self.figure_ = axes.ravel()[0].figure
        self.legend_, legend_rows = _figure_legend(
            self.figure_, axes.ravel()[0], self.displays_, name
        )
        _fit_layout(self.figure_, n_rows, title_lines, legend_rows)
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        classes="all",
        kind="classwise",
        n_bins=15,
        strategy="uniform",
        sample_weight=None,
        labels=None,
        confidence_level=0.95,
        legend_interval=False,
        name=None,
        ax=None,
        n_cols=None,
        random_state=0,
        interval="wilson",
        band=None,
        n_resamples=100,
        **plot_kwargs,
    ):
        """Plot one reliability diagram per class from labels and probabilities.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True class labels.
        y_proba : array-like of shape (n_samples, n_classes)
            Predicted probabilities, one column per class in the order of
            ``labels`` (or of the sorted labels of ``y_true``).
        classes : "all" or list, default="all"
            The classes to draw, by label.
        kind : {"classwise", "top_label"}, default="classwise"
            ``"classwise"``: the probability of the class against being of
            the class (all samples); ``"top_label"``: the confidence of the
            samples predicted as the class.
        n_bins : int or {"sqrt", "sturges", "rice"}, default=15
            Number of bins of each panel, or a rule resolved from the
            samples of each panel's curve.
        strategy : {"uniform", "quantile", "isotonic"}, default="uniform"
            Binning of each panel; see
            :func:`~skcalib.metrics.reliability_curve`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        labels : array-like of shape (n_classes,), default=None
            The labels of the columns of ``y_proba``.
        confidence_level : float, default=0.95
            Level of the per-bin intervals (and of the legend's ECE interval).
        legend_interval : bool, default=False
            Show the ECE interval of each panel in its legend; see
            :meth:`ReliabilityDisplay.from_predictions`.
        name : str, default=None
            Name of the model in the legend and the panel titles (one colour
            per name on the figure).
        ax : ndarray of matplotlib.axes.Axes, default=None
            Panels to draw on (the ``axes_`` of another grid to overlay).
        n_cols : int, default=None
            Columns of a new grid; ``None``: up to 3.
        random_state : int, RandomState instance or None, default=0
            Seed of the CORP band, of the bootstrap band and of the legend's
            ECE interval.
        interval : {"wilson", "clopper-pearson"}, default="wilson"
            Per-bin interval of each panel; see
            :func:`~skcalib.metrics.reliability_curve`.
        band : {"pointwise", "simultaneous"}, default=None
            A bootstrap band of each panel's binned curve; see
            :func:`~skcalib.metrics.reliability_curve`.
        n_resamples : int, default=100
            Resamples of the CORP consistency band and of the bootstrap band.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot`.

        Returns
        -------
        display : ReliabilityGridDisplay
            The grid, drawn.

        Raises
        ------
        ValueError
            For a class not among the labels, or a ``kind`` other than
            ``"classwise"`` and ``"top_label"``.

        See Also
        --------
        ReliabilityDisplay.from_predictions : One diagram.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.plotting import ReliabilityGridDisplay
        >>> rng = np.random.default_rng(0)
        >>> proba = rng.dirichlet(np.ones(3), size=900)
        >>> y = (rng.random(900)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
        >>> sharp = proba ** 2 / (proba ** 2).sum(axis=1, keepdims=True)
        >>> grid = ReliabilityGridDisplay.from_predictions(
        ...     y, proba, classes=[0, 2], n_bins=5, name="calibrated")
        >>> grid = ReliabilityGridDisplay.from_predictions(
        ...     y, sharp, classes=[0, 2], n_bins=5, name="sharp", ax=grid.axes_)
        >>> [t.get_text() for t in grid.legend_.get_texts()]
        ['Perfectly calibrated', 'calibrated', 'sharp']
        >>> print(grid.axes_[0, 0].get_title())  # doctest: +ELLIPSIS
        class 0
        calibrated (ECE = 0...)
        sharp (ECE = 0...)
        >>> plt.close("all")
        """
        import_pyplot("ReliabilityGridDisplay")
        if kind not in _GRID_KINDS:
            raise ValueError(f"kind must be one of {list(_GRID_KINDS)}, got {kind!r}.")
        if np.ndim(y_proba) != 2:
            raise ValueError(
                "ReliabilityGridDisplay needs one column of y_proba per class; "
                "for a 1-D binary y_proba, use ReliabilityDisplay."
            )
        known = (
            np.asarray(labels) if labels is not None else np.unique(np.asarray(y_true))
        ).tolist()
        chosen = _chosen_classes(classes, known)
        displays = []
        for c in chosen:
            data = display_data(
                y_true,
                y_proba,
                (),
                kind=kind,
                class_index=None,
                pos_label=c,
                labels=labels,
                n_bins=n_bins,
                strategy=strategy,
                sample_weight=sample_weight,
                confidence_level=confidence_level,
                n_resamples=n_resamples,
                random_state=random_state,
                legend_interval=legend_interval,
                interval=interval,
                band=band,
            )
            displays.append(ReliabilityDisplay(**data, name=name))
        grid = cls(displays=displays, classes=chosen)
        return grid.plot(ax=ax, n_cols=n_cols, **plot_kwargs)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, name=None, **kwargs):
        """Plot one reliability diagram per class from a fitted classifier.

        Calls ``estimator.predict_proba(X)`` and :meth:`from_predictions`
        with the labels ``estimator.classes_``.

        Parameters
        ----------
        estimator : estimator instance
            A fitted classifier with ``predict_proba`` and ``classes_``.
        X : array-like
            Input of ``estimator.predict_proba``.
        y : array-like of shape (n_samples,)
            True labels.
        name : str, default=None
            Legend name; the estimator's class name when ``None``.
        **kwargs : dict
            Keyword arguments of :meth:`from_predictions` (``classes``,
            ``kind``, ``n_bins``, ``ax``, ...), but ``labels``.

        Returns
        -------
        display : ReliabilityGridDisplay
            The grid, drawn.

        See Also
        --------
        ReliabilityGridDisplay.from_predictions : From probabilities.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skcalib.plotting import ReliabilityGridDisplay
        >>> X, y = load_iris(return_X_y=True, as_frame=False)
        >>> clf = LogisticRegression(max_iter=1000).fit(X, y)
        >>> grid = ReliabilityGridDisplay.from_estimator(clf, X, y, n_bins=5)
        >>> grid.displays_[0].line_.get_label()[:18]
        'LogisticRegression'
        >>> plt.close("all")
        """
        y_proba, name, classes = estimator_proba(
            estimator, X, "ReliabilityGridDisplay", name
        )
        return cls.from_predictions(
            y,
            y_proba,
            labels=classes,
            name=name,
            **kwargs,
        )
