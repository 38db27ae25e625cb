"""A grid of per-class reliability diagrams: :class:`ReliabilityGridDisplay`.

One :class:`~skcalib.plotting.ReliabilityDisplay` per class, each on its own
panel, all computed by the same code as a single diagram
(:func:`~skcalib.plotting._display_data.display_data`); a method keeps one
colour across every panel of the figure. A grid drawn again on the
``axes_`` of another overlays a second model panel by panel.
"""

import numpy as np

from skcalib.plotting._display_data import display_data
from skcalib.plotting._drawing import import_pyplot
from skcalib.plotting._reliability import ReliabilityDisplay

__all__ = ["ReliabilityGridDisplay"]

_GRID_KINDS = ("classwise", "top_label")
#: Side of one panel, in inches (a histogram panel adds a third below).
PANEL_INCHES = 3.2


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
    for ax in axes.ravel()[n_panels:]:
        ax.set_visible(False)
    return axes


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
    intervals and its legend ECE of the same kind (the ECE of that class's
    curve). The pooled top-label (or top-1 confidence) view of all classes
    at once is :meth:`ReliabilityDisplay.from_predictions` with
    ``kind="top_label"`` (``"confidence"``).

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
            Legend name on every panel; ``None`` keeps each display's.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot` (e.g.
            ``show_histogram``, ``show_intervals``, ``hist_scale``, curve
            styles), the same for every panel.

        Returns
        -------
        display : ReliabilityGridDisplay
            ``self``, with ``displays_``, ``axes_`` and ``figure_``.

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
                    f"ax holds {axes.size} axes, fewer than the {n} classes."
                )
        n_rows, n_cols = axes.shape
        for i, (disp, panel) in enumerate(
            zip(self.displays, axes.ravel()[:n], strict=True)
        ):
            disp.plot(ax=panel, name=name, **plot_kwargs)
            panel.set_title(f"class {self.classes[i]}", fontsize="medium")
            if i % n_cols:  # the y labels on the first column only
                panel.set_ylabel("")
                if disp.ax_hist_ is not None:
                    disp.ax_hist_.set_ylabel("")
        self.displays_ = list(self.displays)
        self.axes_ = axes
        self.figure_ = axes.ravel()[0].figure
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
        n_bins : int, default=15
            Number of bins of each panel.
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
            Legend name of the model (one colour per name on the figure).
        ax : ndarray of matplotlib.axes.Axes, default=None
            Panels to draw on (the ``axes_`` of another grid to overlay).
        n_cols : int, default=None
            Columns of a new grid; ``None``: up to 3.
        random_state : int, RandomState instance or None, default=0
            Seed of the CORP band and of the legend's ECE interval.
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
        >>> [t.get_text()[:5] for t in grid.axes_[0, 0].get_legend().get_texts()]
        ['Perfe', 'calib', 'sharp']
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
                n_resamples=100,
                random_state=random_state,
                legend_interval=legend_interval,
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
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"{type(estimator).__name__} has no predict_proba; "
                "ReliabilityGridDisplay needs predicted probabilities."
            )
        name = type(estimator).__name__ if name is None else name
        return cls.from_predictions(
            y,
            estimator.predict_proba(X),
            labels=getattr(estimator, "classes_", None),
            name=name,
            **kwargs,
        )
