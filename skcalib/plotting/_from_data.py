"""``ReliabilityDisplay.from_predictions`` and ``from_estimator``.

The two constructors of :class:`~skcalib.plotting.ReliabilityDisplay` that
compute before they draw: labels and probabilities (or a classifier and its
data) -> :func:`skcalib.metrics.reliability_curve` -> the legend ECE from the
curve's own per-bin values -> ``cls(...)`` -> ``plot``. They live on a mixin
so that the display's module holds the class and its drawing only.
"""

import numpy as np

from skcalib.metrics import (
    corp_decomposition,
    expected_calibration_error,
    reliability_curve,
)
from skcalib.plotting._annotations import class_label, ece_of_curve
from skcalib.plotting._drawing import import_pyplot

_KINDS = ("confidence", "top_label", "classwise")
_OVERLAYS = ("isotonic", "smooth")


def check_option(value, name, options):
    """Raise a ``ValueError`` naming ``name`` unless ``value`` is one of ``options``."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}.")


def _pos_label_to_class_index(kind, class_index, pos_label, classes):
    """``class_index``, or the column of the class ``pos_label`` names.

    Only the ``pos_label`` side is checked here; the column itself is checked
    and resolved by :func:`~skcalib.metrics.reliability_curve` (the one
    ``resolve_class_index``, in :mod:`skcalib._core.inputs`).
    """
    if pos_label is None:
        return class_index
    if class_index is not None:
        raise ValueError(
            f"Pass class_index or pos_label, not both (got class_index="
            f"{class_index!r} and pos_label={pos_label!r})."
        )
    if kind == "confidence":
        raise ValueError(
            "pos_label selects one class, but kind='confidence' pools every "
            "class; use kind='classwise' (probability of that class vs. being "
            "that class) or kind='top_label' (samples predicted as that class)."
        )
    known = [] if classes is None else np.asarray(classes).tolist()
    if pos_label not in known:
        raise ValueError(f"pos_label={pos_label!r} is not one of the classes {known}.")
    return known.index(pos_label)


def _curve_and_ece(y_true, y_proba, *, kind, class_index, pos_label, labels, **params):
    """The curve, its legend ECE and the name of its class (or None).

    ``params``: ``n_bins``, ``strategy``, ``sample_weight``,
    ``confidence_level``, ``n_resamples`` and ``random_state`` of
    :func:`~skcalib.metrics.reliability_curve`. A CORP curve
    (``strategy="isotonic"``) has no legend ECE (its legend shows MCB).
    """
    check_option(kind, "kind", _KINDS)
    classes = labels
    if pos_label is not None and classes is None:
        classes = np.unique(np.asarray(y_true))
    class_index = _pos_label_to_class_index(kind, class_index, pos_label, classes)
    curve = reliability_curve(
        y_true, y_proba, kind=kind, class_index=class_index, labels=labels, **params
    )
    if curve.strategy == "isotonic":
        ece = None
    elif kind == "top_label" and curve.class_index is None:
        # The top-label ECE bins each predicted class apart: cells that the
        # pooled curve drawn does not have.
        for key in ("confidence_level", "n_resamples", "random_state"):
            params.pop(key)
        ece = expected_calibration_error(
            y_true, y_proba, kind=kind, labels=labels, **params
        )
    else:  # the weighted mean gap of the bins drawn
        ece = ece_of_curve(curve)
    if classes is None and curve.class_index is not None:
        classes = np.unique(np.asarray(y_true))
    return curve, ece, class_label(classes, curve.class_index)


def _overlays(y_true, y_proba, curve, overlay, *, kind, labels, **params):
    """``(isotonic_curve, smooth_curve, mcb)`` for the display of ``curve``:
    the CORP curve when ``"isotonic"`` is in ``overlay`` (None when
    ``curve`` is itself one), the Brier MCB of the CORP curve drawn, the
    smoothed curve when ``"smooth"`` is in ``overlay``; None for what is
    not drawn. ``params``: ``sample_weight``, ``confidence_level``,
    ``n_resamples``, ``random_state``."""
    overlay = (overlay,) if isinstance(overlay, str) else tuple(overlay)
    for item in overlay:
        check_option(item, "overlay", _OVERLAYS)
    common = dict(
        kind=kind,
        class_index=curve.class_index,
        sample_weight=params.pop("sample_weight"),
        labels=labels,
    )
    iso = None
    if curve.strategy != "isotonic" and "isotonic" in overlay:
        iso = reliability_curve(
            y_true, y_proba, strategy="isotonic", **common, **params
        )
    mcb = None
    if iso is not None or curve.strategy == "isotonic":
        mcb = corp_decomposition(y_true, y_proba, **common).miscalibration
    smooth = None
    if "smooth" in overlay:
        from skcalib.metrics import smooth_reliability_curve

        smooth = smooth_reliability_curve(y_true, y_proba, **common)
    return iso, smooth, mcb


def _display_data(y_true, y_proba, overlay, *, kind, labels, **params):
    """The arguments of ``ReliabilityDisplay(...)`` but ``name``: the curve,
    its legend ECE and class, and the overlaid curves. ``params``: those of
    :func:`_curve_and_ece`."""
    curve, ece, label = _curve_and_ece(
        y_true, y_proba, kind=kind, labels=labels, **params
    )
    iso, smooth, mcb = _overlays(
        y_true,
        y_proba,
        curve,
        overlay,
        kind=kind,
        labels=labels,
        sample_weight=params["sample_weight"],
        confidence_level=params["confidence_level"],
        n_resamples=params["n_resamples"],
        random_state=params["random_state"],
    )
    return dict(
        prob_true=curve.accuracy,
        prob_pred=curve.mean_confidence,
        counts=curve.counts,
        edges=curve.edges,
        lower=curve.lower,
        upper=curve.upper,
        ece=ece,
        kind=kind,
        class_label=label,
        curve=curve,
        mcb=mcb,
        isotonic_curve=iso,
        smooth_curve=smooth,
    )


class ReliabilityFromDataMixin:
    """``from_predictions`` and ``from_estimator`` of ``ReliabilityDisplay``."""

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
        overlay=(),
        n_resamples=100,
        random_state=0,
        show_band=True,
        band_kwargs=None,
        overlay_kwargs=None,
        **kwargs,
    ):
        """Plot a reliability diagram from true labels and predicted probabilities.

        Computes :func:`~skcalib.metrics.reliability_curve` and its ECE, builds
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
        strategy : {"uniform", "quantile", "isotonic"}, default="uniform"
            Equal-width or equal-mass bins, or ``"isotonic"``: the CORP
            curve (PAV blocks, no bins to choose) with its consistency band;
            see :func:`~skcalib.metrics.reliability_curve`.
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
        overlay : tuple of {"isotonic", "smooth"}, default=()
            Curves drawn beside the main one, in its colour, computed on the
            same data: ``"isotonic"``, the CORP curve (dash-dotted, with its
            consistency band and CORP MCB in the legend); ``"smooth"``, the
            kernel-smoothed curve of
            :func:`~skcalib.metrics.smooth_reliability_curve` (dashed, with
            its smooth ECE in the legend; drawn where the density of the
            predictions is at least 0.01).
        n_resamples : int, default=100
            Outcome resamples of the consistency band of the CORP curve (0:
            no band).
        random_state : int, RandomState instance or None, default=0
            Seed of the consistency band.
        show_band : bool, default=True
            Draw the consistency band of the CORP curve.
        band_kwargs, overlay_kwargs : dict, default=None
            Styles of the band and of the overlaid curves; see :meth:`plot`.
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
        The ECE in the legend is reduced from the per-bin values of the curve
        drawn, :math:`\\sum_j n_j |\\mathrm{acc}_j - \\mathrm{conf}_j| /
        \\sum_j n_j` (``counts``, ``accuracy`` and ``mean_confidence`` of the
        :class:`~skcalib.metrics.ReliabilityCurve`), so the data are binned
        once. For ``kind="confidence"`` that is
        :func:`~skcalib.metrics.expected_calibration_error` with the same
        ``n_bins`` and ``strategy``. The one exception is ``kind="top_label"``
        without a class: the legend shows the top-label ECE (Gupta and Ramdas:
        bins per predicted class), whose cells the pooled curve drawn (the
        confidence curve) does not have, so
        :func:`~skcalib.metrics.expected_calibration_error` bins the data a
        second time.

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
        import_pyplot()
        data = _display_data(
            y_true,
            y_proba,
            overlay,
            n_bins=n_bins,
            strategy=strategy,
            kind=kind,
            class_index=class_index,
            pos_label=pos_label,
            sample_weight=sample_weight,
            labels=labels,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            random_state=random_state,
        )
        disp = cls(**data, name=name)
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
            show_band=show_band,
            band_kwargs=band_kwargs,
            overlay_kwargs=overlay_kwargs,
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
        overlay=(),
        n_resamples=100,
        random_state=0,
        show_band=True,
        band_kwargs=None,
        overlay_kwargs=None,
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
        strategy : {"uniform", "quantile", "isotonic"}, default="uniform"
            Equal-width or equal-mass bins, or the CORP curve; see
            :meth:`from_predictions`.
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
        overlay : tuple of {"isotonic", "smooth"}, default=()
            Curves drawn beside the main one, in its colour, computed on the
            same data: ``"isotonic"``, the CORP curve (dash-dotted, with its
            consistency band and CORP MCB in the legend); ``"smooth"``, the
            kernel-smoothed curve of
            :func:`~skcalib.metrics.smooth_reliability_curve` (dashed, with
            its smooth ECE in the legend; drawn where the density of the
            predictions is at least 0.01).
        n_resamples : int, default=100
            Outcome resamples of the consistency band of the CORP curve (0:
            no band).
        random_state : int, RandomState instance or None, default=0
            Seed of the consistency band.
        show_band : bool, default=True
            Draw the consistency band of the CORP curve.
        band_kwargs, overlay_kwargs : dict, default=None
            Styles of the band and of the overlaid curves; see :meth:`plot`.
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
        import_pyplot()
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
            overlay=overlay,
            n_resamples=n_resamples,
            random_state=random_state,
            show_band=show_band,
            band_kwargs=band_kwargs,
            overlay_kwargs=overlay_kwargs,
            **kwargs,
        )
