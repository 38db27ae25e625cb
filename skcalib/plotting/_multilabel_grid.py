"""A grid of per-label reliability diagrams of a multi-label classifier:
:class:`MultilabelReliabilityGridDisplay`.

The layout, the shared legend above the panels, the per-panel ECE titles
and the overlay of a second model are those of
:class:`~skcalib.plotting.ReliabilityGridDisplay` (this class subclasses
it); only the data differ: panel ``j`` is the binary problem
``(y_true[:, j], y_proba[:, j])`` of label ``j``, computed as a binary
:class:`~skcalib.plotting.ReliabilityDisplay` of the positive class.
"""

import numpy as np

from skcalib._core.multilabel import positive_proba
from skcalib.metrics._multilabel import check_multilabel_inputs
from skcalib.plotting._display_data import display_data
from skcalib.plotting._drawing import HIST_AX_ATTR, estimator_proba, import_pyplot
from skcalib.plotting._grid import ReliabilityGridDisplay
from skcalib.plotting._reliability import ReliabilityDisplay

__all__ = ["MultilabelReliabilityGridDisplay"]

_XLABEL = "Mean predicted probability"


def _label_names(label_names, n_labels):
    if label_names is None:
        return [f"label {j}" for j in range(n_labels)]
    names = list(label_names)
    if len(names) != n_labels:
        raise ValueError(
            f"label_names has {len(names)} names but y_true has {n_labels} "
            f"labels (columns): {names!r}."
        )
    return [str(name) for name in names]


class MultilabelReliabilityGridDisplay(ReliabilityGridDisplay):
    """Grid of per-label reliability diagrams of a multi-label classifier.

    One panel per label: the predicted probability of the label against
    whether the sample has it (the binary reliability diagram of column
    ``j`` of a label-indicator ``y_true``), with its per-bin intervals,
    titled with the label's name and, per method drawn on it, its ECE,
    which is that label's :func:`~skcalib.metrics.multilabel_calibration_error`
    (``average=None``). One legend above the panels names the methods; pass
    ``ax=grid.axes_`` to overlay a second model.

    Use :meth:`from_predictions` or :meth:`from_estimator` to create one.

    Parameters
    ----------
    displays : list of ReliabilityDisplay
        One display per label, in the order of ``label_names``.
    label_names : list of str
        The title of each panel.

    Attributes
    ----------
    displays_ : list of ReliabilityDisplay
        The displays drawn, one per panel.
    axes_ : ndarray of matplotlib.axes.Axes of shape (n_rows, n_cols)
        The panels (those past the last label are hidden).
    figure_ : matplotlib.figure.Figure
        The figure.
    legend_ : matplotlib.legend.Legend
        The figure's one legend.

    See Also
    --------
    ReliabilityGridDisplay : The per-class grid of a multiclass model.
    skcalib.metrics.multilabel_reliability_curve : The per-label curves.
    skcalib.metrics.multilabel_calibration_error : Their errors, averaged.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skcalib.plotting import MultilabelReliabilityGridDisplay
    >>> rng = np.random.default_rng(0)
    >>> P = rng.uniform(size=(600, 3))
    >>> Y = (rng.uniform(size=(600, 3)) < P).astype(int)
    >>> grid = MultilabelReliabilityGridDisplay.from_predictions(
    ...     Y, P, n_bins=5, label_names=["cat", "dog", "bird"], name="model")
    >>> grid.axes_.shape
    (1, 3)
    >>> print(grid.axes_[0, 1].get_title())  # doctest: +ELLIPSIS
    dog
    model (ECE = 0...)
    >>> plt.close("all")
    """

    _unit = "labels"

    def __init__(self, *, displays, label_names):
        self.displays = displays
        self.label_names = label_names

    def _panel_heads(self):
        return [str(name) for name in self.label_names]

    def plot(self, ax=None, *, n_cols=None, name=None, **plot_kwargs):
        """Draw one panel per label.

        Parameters
        ----------
        ax : ndarray of matplotlib.axes.Axes, default=None
            Panels to draw on, at least one per label (e.g. the ``axes_`` of
            another grid, to overlay); a new figure when ``None``.
        n_cols : int, default=None
            Columns of a new grid; ``None``: up to 3.
        name : str, default=None
            Name of the method in the legend and the panel titles.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot`.

        Returns
        -------
        display : MultilabelReliabilityGridDisplay
            ``self``, with ``displays_``, ``axes_``, ``figure_`` and
            ``legend_``.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.plotting import (
        ...     MultilabelReliabilityGridDisplay, ReliabilityDisplay)
        >>> panels = [
        ...     ReliabilityDisplay(prob_true=[0.2, 0.7], prob_pred=[0.3, 0.8],
        ...                        counts=[5, 5], edges=[0, 0.5, 1],
        ...                        kind="classwise", class_label=1)
        ...     for _ in range(2)]
        >>> grid = MultilabelReliabilityGridDisplay(
        ...     displays=panels, label_names=["a", "b"])
        >>> grid.plot(n_cols=1).axes_.shape
        (2, 1)
        >>> plt.close("all")
        """
        super().plot(ax, n_cols=n_cols, name=name, **plot_kwargs)
        for disp in self.displays_:  # a label, not "class 1" of it
            bottom = getattr(disp.ax_, HIST_AX_ATTR, None) or disp.ax_
            bottom.set_xlabel(_XLABEL)
        return self

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        label_names=None,
        n_bins=15,
        strategy="uniform",
        sample_weight=None,
        confidence_level=0.95,
        interval="wilson",
        name=None,
        ax=None,
        n_cols=None,
        **plot_kwargs,
    ):
        """Plot one reliability diagram per label from a label-indicator
        matrix and the labels' probabilities.

        Parameters
        ----------
        y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
            Label-indicator matrix (entries 0/1).
        y_proba : array-like of shape (n_samples, n_labels)
            Predicted probability of each label (a list of per-label
            ``predict_proba`` arrays is refused: use :meth:`from_estimator`,
            which reads it by ``classes_``).
        label_names : list of str, default=None
            Panel titles, one per label; ``"label j"`` when ``None``.
        n_bins : int, default=15
            Number of bins of each panel.
        strategy : {"uniform", "quantile"}, default="uniform"
            Binning of each panel; see
            :func:`~skcalib.metrics.reliability_curve`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        confidence_level : float, default=0.95
            Level of the per-bin intervals.
        interval : {"wilson", "clopper-pearson"}, default="wilson"
            Per-bin interval of each panel.
        name : str, default=None
            Name of the model in the legend and the panel titles.
        ax : ndarray of matplotlib.axes.Axes, default=None
            Panels to draw on (the ``axes_`` of another grid to overlay).
        n_cols : int, default=None
            Columns of a new grid; ``None``: up to 3.
        **plot_kwargs : dict
            Keyword arguments of :meth:`ReliabilityDisplay.plot`.

        Returns
        -------
        display : MultilabelReliabilityGridDisplay
            The grid, drawn.

        Raises
        ------
        ValueError
            For the inputs that
            :func:`~skcalib.metrics.multilabel_calibration_error` refuses,
            or ``label_names`` of another length than the labels.

        See Also
        --------
        ReliabilityDisplay.from_predictions : One diagram.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.plotting import MultilabelReliabilityGridDisplay
        >>> rng = np.random.default_rng(0)
        >>> P = rng.uniform(size=(500, 4))
        >>> Y = (rng.uniform(size=(500, 4)) < P).astype(int)
        >>> grid = MultilabelReliabilityGridDisplay.from_predictions(
        ...     Y, P, n_bins=5, n_cols=2)
        >>> grid.axes_.shape, grid.axes_[1, 0].get_title()[:7]
        ((2, 2), 'label 2')
        >>> plt.close("all")
        """
        import_pyplot("MultilabelReliabilityGridDisplay")
        y, proba, w = check_multilabel_inputs(y_true, y_proba, sample_weight)
        names = _label_names(label_names, y.shape[1])
        columns = np.ascontiguousarray(proba.T)
        displays = []
        for j in range(y.shape[1]):
            data = display_data(
                y[:, j],
                columns[j],
                (),
                kind="classwise",
                class_index=1,
                pos_label=None,
                labels=[0, 1],
                n_bins=n_bins,
                strategy=strategy,
                sample_weight=w,
                confidence_level=confidence_level,
                n_resamples=0,
                random_state=0,
                legend_interval=False,
                interval=interval,
                band=None,
            )
            displays.append(ReliabilityDisplay(**data, name=name))
        grid = cls(displays=displays, label_names=names)
        return grid.plot(ax=ax, n_cols=n_cols, **plot_kwargs)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, name=None, **kwargs):
        """Plot one reliability diagram per label from a fitted multi-label
        classifier.

        Calls ``estimator.predict_proba(X)``, takes the probability of class
        1 of each label (a list output by ``estimator.classes_[j]``, never
        by position) and calls :meth:`from_predictions`.

        Parameters
        ----------
        estimator : estimator instance
            A fitted multi-label classifier with ``predict_proba``
            (``OneVsRestClassifier``, ``MultiOutputClassifier``,
            ``RandomForestClassifier``, ...).
        X : array-like
            Input of ``estimator.predict_proba``.
        y : {array-like, sparse matrix} of shape (n_samples, n_labels)
            True label-indicator matrix.
        name : str, default=None
            Legend name; the estimator's class name when ``None``.
        **kwargs : dict
            Keyword arguments of :meth:`from_predictions`.

        Returns
        -------
        display : MultilabelReliabilityGridDisplay
            The grid, drawn.

        See Also
        --------
        MultilabelReliabilityGridDisplay.from_predictions : From probabilities.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.multioutput import MultiOutputClassifier
        >>> from skcalib.plotting import MultilabelReliabilityGridDisplay
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 3))
        >>> Y = (X[:, :2] + rng.normal(size=(300, 2)) > 0).astype(int)
        >>> clf = MultiOutputClassifier(LogisticRegression()).fit(X, Y)
        >>> grid = MultilabelReliabilityGridDisplay.from_estimator(
        ...     clf, X, Y, n_bins=5)
        >>> grid.displays_[0].line_.get_label()[:21]
        'MultiOutputClassifier'
        >>> plt.close("all")
        """
        proba, name, _ = estimator_proba(
            estimator, X, "MultilabelReliabilityGridDisplay", name
        )
        return cls.from_predictions(
            y, positive_proba(proba, estimator), name=name, **kwargs
        )
