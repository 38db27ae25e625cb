"""``ReliabilityDisplay.from_predictions`` and ``from_estimator``.

The two constructors of :class:`~skcalib.plotting.ReliabilityDisplay` that
compute before they draw: labels and probabilities (or a classifier and its
data) -> :func:`~skcalib.plotting._display_data.display_data` (the curve, its
legend ECE and overlays) -> ``cls(...)`` -> ``plot``. They live on a mixin
so that the display's module holds the class and its drawing only.
"""

from skcalib.plotting._classes import check_option
from skcalib.plotting._display_data import display_data
from skcalib.plotting._drawing import estimator_proba, import_pyplot

__all__ = ["ReliabilityFromDataMixin", "check_option"]


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
        kind=None,
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
        show_intervals=None,
        legend_interval=False,
        histogram="counts",
        histtype="step",
        hist_scale="auto",
        gap_kwargs=None,
        hist_kwargs=None,
        interval_kwargs=None,
        overlay=(),
        n_resamples=100,
        random_state=0,
        show_band=True,
        band_kwargs=None,
        overlay_kwargs=None,
        interval="wilson",
        band=None,
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
        n_bins : int or {"sqrt", "sturges", "rice"}, default=15
            Number of bins, or a rule resolved from the number of samples
            (``curve.n_bins``); see :func:`~skcalib.metrics.reliability_curve`.
        strategy : {"uniform", "quantile", "isotonic"}, default="uniform"
            Equal-width or equal-mass bins, or ``"isotonic"``: the CORP
            curve (PAV blocks, no bins to choose) with its consistency band;
            see :func:`~skcalib.metrics.reliability_curve`.
        kind : {"confidence", "top_label", "classwise"}, default=None
            What is binned (``None``: ``"classwise"`` of the positive class
            for a binary problem, as :class:`~sklearn.calibration.CalibrationDisplay`
            draws it, on ``[0, 1]``; ``"classwise"`` of the class chosen by
            ``pos_label``/``class_index``; else ``"confidence"``):

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
            an alternative to ``class_index``. With a 1-D ``y_proba``, the
            class whose probability it is (as in scikit-learn). Without
            it, the positive class of a binary problem is ``labels[1]``, or
            the larger of two numeric labels; string labels without
            ``labels`` raise a ``ValueError`` asking for ``pos_label``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        labels : array-like of shape (n_classes,), default=None
            The labels of the columns of ``y_proba``.
        confidence_level : float, default=0.95
            Level of the per-bin intervals (``show_intervals``), of the
            bands and of the legend's ECE interval (``legend_interval``).
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
        show_intervals : bool, default=None
            Draw the per-bin intervals (``None``: for binned curves, not
            for a CORP curve, whose consistency band is drawn instead).
        legend_interval : bool, default=False
            Show the confidence interval of the ECE in the legend, ``ECE =
            0.085 [0.061, 0.112]``, from
            :func:`~skcalib.metrics.calibration_error_interval` (same kind,
            bins, weights and ``confidence_level``; 1000 resamples seeded by
            ``random_state``): about 0.5 s for 10,000 samples, 4 s for
            100,000.
        histogram : {"counts", "density"}, default="counts"
            Histogram heights.
        histtype : {"step", "bar"}, default="step"
            Histogram outlines (readable when overlaid) or filled bars.
        hist_scale : {"auto", "linear", "log"}, default="auto"
            Count axis of the histogram panel; see :meth:`plot`.
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
            no band), and row resamples of the bootstrap band (``band``).
        random_state : int, RandomState instance or None, default=0
            Seed of the consistency and bootstrap bands.
        show_band : bool, default=True
            Draw the consistency band of the CORP curve and the bootstrap
            band.
        band_kwargs, overlay_kwargs : dict, default=None
            Styles of the bands and of the overlaid curves; see :meth:`plot`.
        interval : {"wilson", "clopper-pearson"}, default="wilson"
            Per-bin interval drawn (``show_intervals``); see
            :func:`~skcalib.metrics.reliability_curve`.
        band : {"pointwise", "simultaneous"}, default=None
            Binned curves: a bootstrap band of the whole curve, drawn with
            ``fill_between`` (``bootstrap_band_``); see
            :func:`~skcalib.metrics.reliability_curve`.
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
            ``pos_label``, a class given with ``kind="confidence"``, a binary
            problem of string labels with neither ``pos_label`` nor
            ``labels`` (no positive class to take), and any input that
            :func:`~skcalib.metrics.reliability_curve` refuses.

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

        For a binary problem the default curve is the positive class's, and
        so is its legend ECE; :func:`~skcalib.metrics.expected_calibration_error`
        with ``kind="classwise"`` averages it with the ECE of the negative
        class's mirror-image curve, the same number unless probabilities lie
        on bin edges (quantile edges are data values: at most one sample
        per edge changes bin).

        ``legend_interval=True`` calls
        :func:`~skcalib.metrics.calibration_error_interval` with the curve's
        kind (a curve of one class: the one-vs-rest problem, for
        ``kind="top_label"`` restricted to the samples predicted as the
        class); its ``statistic`` is the legend ECE, with the above
        exception for one class and quantile bins. The interval is for the
        true binned ECE: the plug-in ECE shown, biased upwards, can lie
        above it for a well calibrated model.

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

        A binary problem draws the positive class on ``[0, 1]``, as
        scikit-learn's ``CalibrationDisplay``; the ECE interval on request:

        >>> p = rng.uniform(size=1000)
        >>> y_bin = (rng.uniform(size=1000) < p).astype(int)
        >>> disp = ReliabilityDisplay.from_predictions(
        ...     y_bin, p, n_bins=5, legend_interval=True)
        >>> disp.curve.kind, disp.curve.class_index
        ('classwise', 1)
        >>> disp.line_.get_label()
        'ECE = 0.024 [0.000, 0.039]'
        >>> plt.close("all")
        """
        import_pyplot()
        data = display_data(
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
            legend_interval=legend_interval,
            interval=interval,
            band=band,
        )
        disp = cls(**data, name=name)
        return disp.plot(
            ax=ax,
            ref_line=ref_line,
            show_histogram=show_histogram,
            show_gaps=show_gaps,
            show_intervals=show_intervals,
            histogram=histogram,
            histtype=histtype,
            hist_scale=hist_scale,
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
        kind=None,
        class_index=None,
        pos_label=None,
        sample_weight=None,
        confidence_level=0.95,
        name=None,
        ax=None,
        ref_line=True,
        show_histogram=False,
        show_gaps=False,
        show_intervals=None,
        legend_interval=False,
        histogram="counts",
        histtype="step",
        hist_scale="auto",
        gap_kwargs=None,
        hist_kwargs=None,
        interval_kwargs=None,
        overlay=(),
        n_resamples=100,
        random_state=0,
        show_band=True,
        band_kwargs=None,
        overlay_kwargs=None,
        interval="wilson",
        band=None,
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
        n_bins : int or {"sqrt", "sturges", "rice"}, default=15
            Number of bins, or a rule resolved from the number of samples
            (``curve.n_bins``); see :func:`~skcalib.metrics.reliability_curve`.
        strategy : {"uniform", "quantile", "isotonic"}, default="uniform"
            Equal-width or equal-mass bins, or the CORP curve; see
            :meth:`from_predictions`.
        kind : {"confidence", "top_label", "classwise"}, default=None
            What is binned; ``None``: the positive class
            (``estimator.classes_[1]``, or ``pos_label``) of a binary
            classifier, the top-1 confidence of a multiclass one; see
            :meth:`from_predictions`.
        class_index : int, default=None
            Column of the class for ``kind="top_label"`` or ``"classwise"``.
        pos_label : object, default=None
            The class for ``kind="top_label"`` or ``"classwise"`` as one of
            ``estimator.classes_`` (default for a binary classifier:
            ``classes_[1]``); an alternative to ``class_index``.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        confidence_level : float, default=0.95
            Level of the per-bin intervals and of the bands.
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
        show_intervals : bool, default=None
            Draw the per-bin intervals (``None``: for binned curves, not
            for a CORP curve, whose consistency band is drawn instead).
        legend_interval : bool, default=False
            Show the confidence interval of the ECE in the legend, ``ECE =
            0.085 [0.061, 0.112]``, from
            :func:`~skcalib.metrics.calibration_error_interval` (same kind,
            bins, weights and ``confidence_level``; 1000 resamples seeded by
            ``random_state``): about 0.5 s for 10,000 samples, 4 s for
            100,000.
        histogram : {"counts", "density"}, default="counts"
            Histogram heights.
        histtype : {"step", "bar"}, default="step"
            Histogram outlines (readable when overlaid) or filled bars.
        hist_scale : {"auto", "linear", "log"}, default="auto"
            Count axis of the histogram panel; see :meth:`plot`.
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
            no band), and row resamples of the bootstrap band (``band``).
        random_state : int, RandomState instance or None, default=0
            Seed of the consistency and bootstrap bands.
        show_band : bool, default=True
            Draw the consistency band of the CORP curve and the bootstrap
            band.
        band_kwargs, overlay_kwargs : dict, default=None
            Styles of the bands and of the overlaid curves; see :meth:`plot`.
        interval : {"wilson", "clopper-pearson"}, default="wilson"
            Per-bin interval drawn (``show_intervals``); see
            :func:`~skcalib.metrics.reliability_curve`.
        band : {"pointwise", "simultaneous"}, default=None
            Binned curves: a bootstrap band of the whole curve, drawn with
            ``fill_between`` (``bootstrap_band_``); see
            :func:`~skcalib.metrics.reliability_curve`.
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
        y_proba, name, classes = estimator_proba(
            estimator, X, "ReliabilityDisplay", name
        )
        return cls.from_predictions(
            y,
            y_proba,
            n_bins=n_bins,
            strategy=strategy,
            kind=kind,
            class_index=class_index,
            pos_label=pos_label,
            sample_weight=sample_weight,
            labels=classes,
            confidence_level=confidence_level,
            name=name,
            ax=ax,
            ref_line=ref_line,
            show_histogram=show_histogram,
            show_gaps=show_gaps,
            show_intervals=show_intervals,
            legend_interval=legend_interval,
            histogram=histogram,
            histtype=histtype,
            hist_scale=hist_scale,
            gap_kwargs=gap_kwargs,
            hist_kwargs=hist_kwargs,
            interval_kwargs=interval_kwargs,
            overlay=overlay,
            n_resamples=n_resamples,
            random_state=random_state,
            show_band=show_band,
            band_kwargs=band_kwargs,
            overlay_kwargs=overlay_kwargs,
            interval=interval,
            band=band,
            **kwargs,
        )
