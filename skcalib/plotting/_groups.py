"""Reliability diagrams of subgroups: :class:`GroupReliabilityDisplay`.

The curves, ECEs and intervals are those of
:func:`~skcalib.monitoring.calibration_by_group` (nothing is binned here);
each curve is drawn by a :class:`~skcalib.plotting.ReliabilityDisplay`, one
panel per group (the layout, titles and figure legend of
:class:`~skcalib.plotting.ReliabilityGridDisplay`) or all groups on one
axes. matplotlib is imported only when drawing.
"""

import numpy as np

from skcalib.monitoring import calibration_by_group
from skcalib.plotting._annotations import legend_label
from skcalib.plotting._drawing import estimator_proba, import_pyplot
from skcalib.plotting._grid import _figure_legend, _fit_layout, _grid_axes
from skcalib.plotting._reliability import ReliabilityDisplay

__all__ = ["GroupReliabilityDisplay"]

LAYOUTS = ("panels", "overlay")
#: Attribute of a panel: its group line and the ECE line of each model drawn
#: on it (by name), which make its title.
TITLE_ATTR = "_skcalib_group_title"


def _display_of(curve, *, name, ece=None, interval=None, class_label=None):
    """A :class:`ReliabilityDisplay` of one curve of the result."""
    return ReliabilityDisplay(
        prob_true=curve.accuracy,
        prob_pred=curve.mean_confidence,
        counts=curve.counts,
        edges=curve.edges,
        lower=curve.lower,
        upper=curve.upper,
        ece=ece,
        ece_interval=interval,
        name=name,
        kind=curve.kind,
        class_label=class_label,
        curve=curve,
    )


def _head(result, g):
    """``"b (n = 995)"``: the group and its rows."""
    return f"{result.groups.tolist()[g]} (n = {int(result.n[g])})"


def _panel_title(panel, head, key, line):
    """Set the title of ``panel``: its group, then one line per model drawn
    on it (``key``: the model's name); return the number of lines."""
    _, lines = getattr(panel, TITLE_ATTR, (None, {}))
    if line is not None:
        lines[key] = line
    setattr(panel, TITLE_ATTR, (head, lines))
    panel.set_title("\n".join([head, *lines.values()]), fontsize="medium")
    return 1 + len(lines)


def _panels(ax, n):
    """``ax`` as a 2-D array of at least ``n`` axes."""
    axes = np.asarray(ax, dtype=object)
    axes = axes.reshape(-1, axes.shape[-1] if axes.ndim else 1)
    if axes.size < n:
        raise ValueError(f"ax holds {axes.size} axes, fewer than the {n} groups.")
    return axes


class GroupReliabilityDisplay:
    """Reliability diagrams of the groups of :func:`calibration_by_group`.

    With ``layout="panels"`` (default), one panel per group, side by side
    on the same ``[0, 1]`` axes, titled with the group, its rows and its
    ECE with the interval; with ``kind="classwise"`` a panel holds the
    curve of every class. With ``layout="overlay"``, every group's curve on
    one axes, the groups in the legend. The curves are the top-1
    confidence curves of the result (``kind="classwise"``: each class's
    curve), with their per-bin intervals.

    Use :meth:`from_predictions`, :meth:`from_estimator` or
    :meth:`from_result` to create one; the constructor only stores.

    Parameters
    ----------
    result : GroupCalibrationResult
        The output of :func:`~skcalib.monitoring.calibration_by_group`.
    name : str, default=None
        Name of the model in the legend and in the panel titles.

    Attributes
    ----------
    displays_ : list of ReliabilityDisplay
        The curves drawn: one per group (per group and class for
        ``kind="classwise"`` panels), in the order of ``result.groups``.
    axes_ : ndarray of matplotlib.axes.Axes of shape (n_rows, n_cols)
        The panels (those past the last group are hidden); ``(1, 1)`` for
        ``layout="overlay"``.
    figure_ : matplotlib.figure.Figure
        The figure.
    legend_ : matplotlib.legend.Legend
        The figure's legend (panels) or the axes' legend (overlay).

    See Also
    --------
    skcalib.monitoring.calibration_by_group : The numbers drawn.
    ReliabilityGridDisplay : One panel per class.
    ReliabilityDisplay : One diagram.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skcalib.plotting import GroupReliabilityDisplay
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1500)
    >>> g = rng.choice(["a", "b", "c"], size=1500)
    >>> truth = np.where(g == "c", 0.5 + 0.6 * (p - 0.5), p)  # c: over-confident
    >>> y = (rng.uniform(size=1500) < truth).astype(int)
    >>> disp = GroupReliabilityDisplay.from_predictions(
    ...     y, p, g, n_bins=10, n_resamples=200, name="model")
    >>> disp.axes_.shape, len(disp.displays_)
    ((1, 3), 3)
    >>> print(disp.axes_[0, 2].get_title())  # doctest: +ELLIPSIS
    c (n = 456)
    model (ECE = 0.1... [0.0..., 0.1...])
    >>> plt.close("all")
    """

    def __init__(self, *, result, name=None):
        self.result = result
        self.name = name

    def plot(self, ax=None, *, layout="panels", n_cols=None, name=None, **plot_kwargs):
        """Draw the groups' reliability diagrams.

        Parameters
        ----------
        ax : matplotlib.axes.Axes or ndarray of them, default=None
            ``layout="panels"``: at least one axes per group (the ``axes_``
            of another display, to overlay a second model panel by panel);
            ``"overlay"``: one axes. A new figure when ``None``.
        layout : {"panels", "overlay"}, default="panels"
            One panel per group, or every group on one axes (one curve per
            group: ``kind="confidence"`` only).
        n_cols : int, default=None
            Columns of a new grid of panels; ``None``: up to 3.
        name : str, default=None
            Name of the model; ``None`` keeps :attr:`name`.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot`
            (``show_histogram``, ``show_intervals``, ``show_gaps``, curve
            styles), the same for every curve. The per-bin intervals are
            drawn on panels and not on an overlay unless
            ``show_intervals`` says otherwise.

        Returns
        -------
        display : GroupReliabilityDisplay
            ``self``, with ``displays_``, ``axes_``, ``figure_`` and
            ``legend_``.

        Raises
        ------
        ValueError
            For an unknown ``layout``, ``"overlay"`` of a classwise result,
            or fewer axes than groups.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.monitoring import calibration_by_group
        >>> from skcalib.plotting import GroupReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=800)
        >>> y = (rng.uniform(size=800) < p).astype(int)
        >>> res = calibration_by_group(y, p, np.repeat([1, 2], 400),
        ...                            n_bins=5, n_resamples=100)
        >>> disp = GroupReliabilityDisplay(result=res).plot(layout="overlay")
        >>> [t.get_text()[:11] for t in disp.legend_.get_texts()]
        ['Perfectly c', '1 (n = 400)', '2 (n = 400)']
        >>> plt.close("all")
        """
        import_pyplot("GroupReliabilityDisplay")
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {list(LAYOUTS)}, got {layout!r}.")
        name = self.name if name is None else name
        if layout == "overlay":
            return self._plot_overlay(ax, name, plot_kwargs)
        return self._plot_panels(ax, n_cols, name, plot_kwargs)

    def _panel_displays(self, g, name):
        """The displays of group ``g``'s panel and the ECE line of its title."""
        res = self.result
        interval = res.intervals[g]
        if res.kind == "classwise":
            displays = [
                _display_of(curve, name=f"class {label}", class_label=label)
                for curve, label in zip(
                    res.class_curves[g], res.classes.tolist(), strict=True
                )
            ]
            line = legend_label(name, res.ece[g], "classwise ECE", interval=interval)
            return displays, line
        display = _display_of(
            res.curves[g], name=name, ece=res.ece[g], interval=interval
        )
        return [display], legend_label(name, res.ece[g], interval=interval)

    def _plot_panels(self, ax, n_cols, name, plot_kwargs):
        n = len(self.result)
        show_histogram = plot_kwargs.get("show_histogram", False)
        axes = _grid_axes(n, n_cols, show_histogram) if ax is None else _panels(ax, n)
        n_rows, n_cols = axes.shape
        drawn, title_lines = [], 1
        for g, panel in enumerate(axes.ravel()[:n]):
            displays, line = self._panel_displays(g, name)
            for disp in displays:
                disp.plot(ax=panel, **plot_kwargs)
            head = _head(self.result, g)
            title_lines = max(title_lines, _panel_title(panel, head, name, line))
            if g % n_cols:  # the y labels on the first column only
                panel.set_ylabel("")
                for disp in displays:
                    if disp.ax_hist_ is not None:
                        disp.ax_hist_.set_ylabel("")
            drawn.extend(displays)
        self.displays_ = drawn
        self.axes_ = axes
        self.figure_ = axes.ravel()[0].figure
        self.legend_, legend_rows = _figure_legend(
            self.figure_, axes.ravel()[0], drawn, None
        )
        _fit_layout(self.figure_, n_rows, title_lines, legend_rows)
        return self

    def _plot_overlay(self, ax, name, plot_kwargs):
        res = self.result
        if res.kind == "classwise":
            raise ValueError(
                "layout='overlay' draws one curve per group, and a classwise "
                "result has one per class and group; use layout='panels'."
            )
        plot_kwargs = {"show_intervals": False, **plot_kwargs}
        if ax is not None:
            ax = np.asarray(ax, dtype=object).ravel()[0]
        drawn = []
        for g in range(len(res)):
            head = _head(res, g)
            disp = _display_of(
                res.curves[g],
                name=head if name is None else f"{name}: {head}",
                ece=res.ece[g],
                interval=res.intervals[g],
            )
            ax = disp.plot(ax=ax, **plot_kwargs).ax_
            drawn.append(disp)
        self.displays_ = drawn
        self.axes_ = np.array([[ax]], dtype=object)
        self.figure_ = ax.figure
        self.legend_ = ax.get_legend()
        return self

    @classmethod
    def from_result(cls, result, *, name=None, layout="panels", ax=None, **kwargs):
        """Plot the curves of a :func:`calibration_by_group` result.

        Parameters
        ----------
        result : GroupCalibrationResult
            The output of :func:`~skcalib.monitoring.calibration_by_group`.
        name : str, default=None
            Name of the model.
        layout : {"panels", "overlay"}, default="panels"
            See :meth:`plot`.
        ax : matplotlib.axes.Axes or ndarray of them, default=None
            See :meth:`plot`.
        **kwargs : dict
            Keyword arguments of :meth:`plot` (``n_cols``, and those of
            :meth:`ReliabilityDisplay.plot`).

        Returns
        -------
        display : GroupReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.monitoring import calibration_by_group
        >>> from skcalib.plotting import GroupReliabilityDisplay
        >>> res = calibration_by_group([0, 1, 1, 0, 1], [.2, .7, .9, .4, .6],
        ...                            ["u", "u", "v", "v", "v"], n_bins=2)
        >>> disp = GroupReliabilityDisplay.from_result(res)
        >>> [ax.get_title().splitlines()[0] for ax in disp.axes_.ravel()]
        ['u (n = 2)', 'v (n = 3)']
        >>> plt.close("all")
        """
        return cls(result=result, name=name).plot(ax=ax, layout=layout, **kwargs)

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_proba,
        groups,
        *,
        n_bins=15,
        strategy="uniform",
        kind="confidence",
        labels=None,
        sample_weight=None,
        confidence_level=0.95,
        n_resamples=1000,
        test="cumulative",
        adjust="holm",
        min_group_size=10,
        random_state=0,
        name=None,
        layout="panels",
        ax=None,
        n_cols=None,
        **plot_kwargs,
    ):
        """Plot each group's reliability diagram from labels and probabilities.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True class labels.
        y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
            Predicted probabilities (1-D: of the positive class).
        groups : array-like of shape (n_samples,)
            The group of each row.
        n_bins : int, default=15
            Number of bins.
        strategy : {"uniform", "quantile", "discrete"}, default="uniform"
            Binning (quantile bins: each group's own).
        kind : {"confidence", "classwise"}, default="confidence"
            The top-1 confidence curve per panel, or every class's curve.
        labels : array-like of shape (n_classes,), default=None
            Class labels of the columns of ``y_proba``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        confidence_level : float, default=0.95
            Level of the per-bin and ECE intervals.
        n_resamples : int, default=1000
            Bootstrap resamples of each ECE interval.
        test : {"cumulative", "spiegelhalter", "hosmer_lemeshow"}, \
default="cumulative"
            The calibration test of each group (in ``display.result``).
        adjust : {"holm", "bonferroni"} or None, default="holm"
            Correction of the p-values over the groups.
        min_group_size : int, default=10
            Smaller groups are drawn without an ECE interval.
        random_state : int, RandomState instance or None, default=0
            Seed of the ECE intervals.
        name : str, default=None
            Name of the model.
        layout : {"panels", "overlay"}, default="panels"
            See :meth:`plot`.
        ax : matplotlib.axes.Axes or ndarray of them, default=None
            See :meth:`plot`.
        n_cols : int, default=None
            Columns of a new grid of panels; ``None``: up to 3.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot`.

        Returns
        -------
        display : GroupReliabilityDisplay
            The display, drawn; ``display.result`` holds the table.

        See Also
        --------
        skcalib.monitoring.calibration_by_group : The numbers alone.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.plotting import GroupReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> proba = rng.dirichlet(np.ones(3), size=900)
        >>> y = (rng.random(900)[:, None] > proba.cumsum(axis=1)).sum(axis=1)
        >>> g = np.tile(["x", "y"], 450)
        >>> disp = GroupReliabilityDisplay.from_predictions(
        ...     y, proba, g, kind="classwise", n_bins=5, n_resamples=100)
        >>> [d.name for d in disp.displays_[:3]]
        ['class 0', 'class 1', 'class 2']
        >>> plt.close("all")
        """
        import_pyplot("GroupReliabilityDisplay")
        result = calibration_by_group(
            y_true,
            y_proba,
            groups,
            n_bins=n_bins,
            strategy=strategy,
            kind=kind,
            labels=labels,
            sample_weight=sample_weight,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            test=test,
            adjust=adjust,
            min_group_size=min_group_size,
            random_state=random_state,
        )
        return cls(result=result, name=name).plot(
            ax=ax, layout=layout, n_cols=n_cols, **plot_kwargs
        )

    @classmethod
    def from_estimator(cls, estimator, X, y, groups, *, name=None, **kwargs):
        """Plot each group's reliability diagram from a fitted classifier.

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
        groups : array-like of shape (n_samples,)
            The group of each row.
        name : str, default=None
            Name of the model; the estimator's class name when ``None``.
        **kwargs : dict
            Keyword arguments of :meth:`from_predictions`, but ``labels``.

        Returns
        -------
        display : GroupReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skcalib.plotting import GroupReliabilityDisplay
        >>> X, y = make_classification(n_samples=600, random_state=0)
        >>> clf = LogisticRegression().fit(X, y)
        >>> disp = GroupReliabilityDisplay.from_estimator(
        ...     clf, X, y, X[:, 0] > 0, n_bins=5, n_resamples=100)
        >>> disp.result.groups.tolist(), disp.result.n.tolist()
        ([False, True], [302, 298])
        >>> disp.displays_[0].line_.get_label()[:18]
        'LogisticRegression'

        >>> plt.close("all")
        """
        y_proba, name, classes = estimator_proba(
            estimator, X, "GroupReliabilityDisplay", name
        )
        return cls.from_predictions(
            y,
            y_proba,
            groups,
            labels=classes,
            name=name,
            **kwargs,
        )
