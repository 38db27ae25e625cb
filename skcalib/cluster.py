"""Inputs held by a cluster engine: columns of Spark DataFrames and Ray
Datasets.

A DataFrame carries many columns; the metrics take ``(y_true, y_proba,
sample_weight)`` and the calibrators ``(X, y, sample_weight)``. The
functions here name the columns that make each argument and return handles
of the same table, which every metric, :class:`~skcalib.metrics.CalibrationAccumulator`
and the chunk-capable calibrators take in place of arrays: each pass over the
data runs on the engine, and only per-partition totals reach the driver
(see the guide "Calibration on a cluster"). The names and types of the
columns are checked here, before any job runs.
"""

from skcalib._backends.ray import columns as _ray_columns
from skcalib._backends.ray import make_aggregation
from skcalib._backends.spark import columns as _spark_columns

__all__ = ["accumulator_aggregation", "ray_columns", "spark_columns"]

_RETURNS = """
    Returns
    -------
    handles : tuple
        One column handle per given argument, in the order ``label``, ``proba``,
        ``weight``: pass them as ``y_true``, ``y_proba``,
        ``sample_weight`` of a metric, or as ``y``, ``X``, ``sample_weight``
        of a calibrator's ``fit``, and the score handle to
        ``predict_proba``.
"""


def spark_columns(df, *, label=None, proba=None, weight=None):
    """Name the label, score and weight columns of a Spark DataFrame.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data, never collected: each pass is one Spark job over its
        partitions (``mapInArrow``).
    label : str, default=None
        The column of class labels (integers, strings, booleans, or floats
        holding integers).
    proba : str or list of str, default=None
        The probability (metrics) or score (calibrators: logits or
        probabilities) columns: one column per class, in the order of the
        classes; one column (binary: of the positive class); or one array
        column holding a row's scores (``array<double>`` or
        ``array<float>``; convert an ML vector with
        ``pyspark.ml.functions.vector_to_array`` first).
    weight : str, default=None
        The column of sample weights.
    %s
    Raises
    ------
    ValueError
        A column that is not in ``df`` (named, with ``df``'s columns).
    TypeError
        A column of the wrong type (named, with its type).

    See Also
    --------
    ray_columns : The same for a Ray Dataset.

    Notes
    -----
    Nulls cannot be seen from the schema: the first pass finds them and
    raises a ``ValueError`` naming the column. Float32 score columns stay
    float32 in the kernels and the output of ``predict_proba``.

    Examples
    --------
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> from skcalib.cluster import spark_columns
    >>> from skcalib.metrics import expected_calibration_error
    >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
    >>> df = spark.createDataFrame(
    ...     [(0, 0.2, 0.8), (1, 0.3, 0.7), (1, 0.9, 0.1)], ["y", "p0", "p1"]
    ... )  # doctest: +SKIP
    >>> y, p = spark_columns(df, label="y", proba=["p0", "p1"])  # doctest: +SKIP
    >>> round(expected_calibration_error(y, p, n_bins=2), 4)  # doctest: +SKIP
    0.4667
    """
    return _spark_columns(df, label=label, proba=proba, weight=weight)


spark_columns.__doc__ = spark_columns.__doc__ % _RETURNS


def ray_columns(ds, *, label=None, proba=None, weight=None):
    """Name the label, score and weight columns of a Ray Dataset.

    Parameters
    ----------
    ds : ray.data.Dataset
        The data, never brought to the driver whole: each pass is one
        ``map_batches`` over its blocks.
    label : str, default=None
        The column of class labels (integers, strings, booleans, or floats
        holding integers).
    proba : str or list of str, default=None
        The probability (metrics) or score (calibrators) columns: one per
        class, in the order of the classes; one (binary: of the positive
        class); or one list column holding a row's scores.
    weight : str, default=None
        The column of sample weights.
    %s
    Raises
    ------
    ValueError
        A column that is not in ``ds`` (named, with ``ds``'s columns).
    TypeError
        A column of the wrong type (named, with its type).

    See Also
    --------
    spark_columns : The same for a Spark DataFrame.

    Examples
    --------
    >>> import ray  # doctest: +SKIP
    >>> from skcalib.cluster import ray_columns
    >>> from skcalib.metrics import brier_score
    >>> ds = ray.data.from_items(
    ...     [{"y": 0, "p": 0.2}, {"y": 1, "p": 0.7}, {"y": 1, "p": 0.9}]
    ... )  # doctest: +SKIP
    >>> y, p = ray_columns(ds, label="y", proba="p")  # doctest: +SKIP
    >>> round(brier_score(y, p), 4)  # doctest: +SKIP
    0.0467
    """
    return _ray_columns(ds, label=label, proba=proba, weight=weight)


ray_columns.__doc__ = ray_columns.__doc__ % _RETURNS


def accumulator_aggregation(accumulator, *, label, proba, weight=None):
    """Make a Ray Data aggregation that fills a calibration accumulator.

    Parameters
    ----------
    accumulator : CalibrationAccumulator
        An empty accumulator fixing the bins, ``labels`` and ``classwise``
        (pass ``labels=`` when a block may miss a class).
    label, proba, weight : str
        The columns, as for :func:`ray_columns`.

    Returns
    -------
    aggregation : ray.data.aggregate.AggregateFnV2
        For ``ds.aggregate(aggregation)``: each block fills an accumulator,
        they are merged, and the result (under the key ``"calibration"``)
        is the accumulator of the whole Dataset.

    Examples
    --------
    >>> import ray  # doctest: +SKIP
    >>> from skcalib.cluster import accumulator_aggregation
    >>> from skcalib.metrics import CalibrationAccumulator
    >>> ds = ray.data.from_items(
    ...     [{"y": 0, "p": 0.2}, {"y": 1, "p": 0.7}, {"y": 1, "p": 0.9}]
    ... )  # doctest: +SKIP
    >>> agg = accumulator_aggregation(
    ...     CalibrationAccumulator(labels=[0, 1]), label="y", proba="p"
    ... )  # doctest: +SKIP
    >>> acc = ds.aggregate(agg)["calibration"]  # doctest: +SKIP
    >>> acc.n_samples_  # doctest: +SKIP
    3
    """
    return make_aggregation(accumulator, label=label, proba=proba, weight=weight)
