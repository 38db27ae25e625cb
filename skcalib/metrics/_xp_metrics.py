"""The totals of the metrics of array-API inputs, computed on the device.

:mod:`skcalib.metrics._dispatch` sends here the inputs whose ``y_proba`` is
of another array-API namespace (with ``array_api_dispatch=True``). They are
validated with the rules and messages of
:func:`~skcalib._core.inputs.check_metric_inputs`: valid inputs are only
summarised on the device (their range, their worst row sum: a few scalars
cross), and whenever a check fails the inputs are moved to the host once so
that the numpy check raises its own message. Labels may be numpy (encoded
on the host, the codes moved to the device) or of the namespace (their
distinct values, a few numbers, cross to the host to resolve the classes;
the codes are made on the device); sample weights are checked on the host
(``n`` numbers, one transfer) and moved to the device in the accumulation
dtype. The totals (:mod:`skcalib._core.xp.totals`) come back as small
float64 numpy arrays, reduced by the code of the numpy path.
"""

from dataclasses import dataclass

import numpy as np

from skcalib._core.inputs import (
    _check_y,
    _resolve_classes,
    check_metric_inputs,
    check_n_bins,
    check_sample_weight,
    curve_cells,
)
from skcalib._core.labels import encode as _encode
from skcalib._core.scores import rounding_tolerance
from skcalib._core.xp import is_foreign, to_numpy
from skcalib._core.xp.totals import loss_sums, statistics

__all__ = []  # private module


@dataclass(frozen=True, eq=False)
class XpMetricInputs:
    """Validated metric inputs on the device (see
    :class:`~skcalib._core.inputs.MetricInputs`): ``y`` int64 codes,
    ``proba`` in its compute dtype, ``sample_weight`` scaled, in the
    accumulation dtype, or None."""

    ns: object
    y: object
    proba: object
    classes: np.ndarray
    sample_weight: object
    weight_scale: float

    @property
    def n_classes(self):
        return int(self.classes.size)

    @property
    def n_samples(self):
        return int(self.y.shape[0])


def _host_check(y_true, y_proba, sample_weight, labels):
    """Run the numpy checks on host copies (they raise numpy's message)."""
    check_metric_inputs(
        np.asarray(to_numpy(y_true)),
        np.asarray(to_numpy(y_proba)),
        sample_weight=to_numpy(sample_weight),
        labels=labels,
    )
    raise AssertionError("the numpy check accepted what the device refused")


def _encode_y(ns, y_true, n_columns, labels):
    """``(codes on the device, classes)`` of the labels."""
    xp = ns.xp
    if not is_foreign(y_true):
        y = _check_y(y_true)
        classes = _resolve_classes(y, n_columns, labels)
        return ns.asarray(np.asarray(_encode(y, classes), dtype=np.int64)), classes
    y = y_true
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] == 0:
        _check_y(to_numpy(y))  # raises numpy's message
    values, index, slots = _unique_inverse(ns, y)
    try:
        _check_y(values)
    except ValueError:
        _check_y(np.asarray(to_numpy(y)))  # the message names the row
        raise
    classes = _resolve_classes(values, n_columns, labels)
    codes = np.asarray(_encode(values, classes), dtype=np.int64)[slots]
    index = xp.reshape(index, (-1,))
    if np.array_equal(codes, np.arange(codes.size)):  # labels 0, 1, ...: as is
        return xp.astype(index, xp.int64), classes
    return xp.take(ns.asarray(codes), index, axis=0), classes


#: Integer labels spanning fewer values than this are encoded through a
#: table (no sort of the labels).
_TABLE_SPAN = 1 << 12


def _unique_inverse(ns, y):
    """``(values, index, slots)``: the distinct labels (numpy), and for each
    label the slot ``index`` (on the device) of a table whose slot ``j``
    holds the label ``values[slots[j]]``.

    Integer labels of a small range (binary, a few classes) index a table
    of that range (two scalars and the table cross); others their
    ``unique_inverse`` (a sort on the device).
    """
    xp = ns.xp
    if xp.isdtype(y.dtype, "integral") and y.shape[0]:
        lo, hi = (int(v) for v in to_numpy(xp.stack([xp.min(y), xp.max(y)])))
        if hi - lo < _TABLE_SPAN:
            shifted = y - lo if lo else y
            span = xp.arange(hi - lo + 1, dtype=y.dtype, device=ns.device)
            present = xp.zeros(hi - lo + 1, dtype=xp.bool, device=ns.device)
            step = max(1, (1 << 22) // (hi - lo + 1))
            for start in range(0, y.shape[0], step):
                block = shifted[start : min(start + step, y.shape[0])]
                present = present | xp.any(block[:, None] == span, axis=0)
            present = np.asarray(to_numpy(present))
            slots = np.maximum(np.cumsum(present) - 1, 0)
            values = np.flatnonzero(present) + lo
            return values.astype(np.asarray(to_numpy(y[:1])).dtype), shifted, slots
    values, inverse = xp.unique_inverse(y)
    values = np.asarray(to_numpy(values))
    return values, inverse, np.arange(values.size)


def _values_ok(ns, proba):
    """Whether ``proba`` is certainly valid (finite, in [0, 1], rows summing
    to 1 within the numpy tolerance), decided from scalars."""
    xp = ns.xp
    acc = ns.accumulate_dtype
    parts = [xp.min(proba), xp.max(proba)]
    k = 1 if proba.ndim == 1 else proba.shape[1]
    if k > 1:
        off = xp.abs(xp.sum(xp.astype(proba, acc), axis=1) - 1.0)
        parts.append(xp.max(off))
    summary = np.asarray(to_numpy(xp.stack([xp.astype(p, acc) for p in parts])))
    if not np.all(np.isfinite(summary)) or summary[0] < 0 or summary[1] > 1:
        return False
    if k == 1:
        return True
    np_dtype = np.float64 if proba.dtype == xp.float64 else np.float32
    # Sums in another order than numpy's: rows within the margin go to the host.
    margin = 1e-12 if ns.has_float64 else 2.0 * k * float(np.finfo(np.float32).eps)
    return bool(summary[2] <= rounding_tolerance(k, np_dtype) - margin)


def prepare(ns, y_true, y_proba, sample_weight, labels, check_values=True):
    """:class:`XpMetricInputs` of a metric's inputs, checked as
    :func:`~skcalib._core.inputs.check_metric_inputs` checks numpy ones."""
    xp = ns.xp
    proba = y_proba
    args = (y_true, y_proba, sample_weight, labels)
    if proba.ndim not in (1, 2) or proba.shape[0] == 0:
        _host_check(*args)
    if proba.ndim == 2 and proba.shape[1] == 1:
        proba = proba[:, 0]
    if proba.ndim == 2 and proba.shape[1] < 1:
        _host_check(*args)
    dtype = ns.compute_dtype(proba.dtype)
    if proba.dtype != dtype:
        proba = xp.astype(proba, dtype)
    n = proba.shape[0]
    if not is_foreign(y_true):
        y_true = np.asarray(y_true)
    if y_true.ndim == 0 or y_true.shape[0] != n:
        _host_check(*args)
    weight, scale = check_sample_weight(to_numpy(sample_weight), n)
    n_columns = 1 if proba.ndim == 1 else proba.shape[1]
    y, classes = _encode_y(ns, y_true, n_columns, labels)
    if check_values and not _values_ok(ns, proba):
        _host_check_values(args)
    if weight is not None:
        weight = ns.asarray(weight, dtype=ns.accumulate_dtype)
    return XpMetricInputs(ns, y, proba, classes, weight, scale)


def _host_check_values(args):
    """The numpy value checks on host copies: they raise numpy's message, or
    accept values the device summary could not decide."""
    try:
        _host_check(*args)
    except AssertionError:
        return


def binned_totals(
    ns,
    y_true,
    y_proba,
    *,
    n_bins,
    strategy,
    kind,
    sample_weight,
    labels,
    class_index=None,
    curve=False,
    pairwise=None,
):
    """``(totals, edges, class_index, weight_scale)`` of a binned metric,
    the totals computed on the device (see
    :func:`skcalib.metrics._dispatch.binned_totals`)."""
    inp = prepare(ns, y_true, y_proba, sample_weight, labels, check_values=False)
    n_bins = check_n_bins(n_bins, inp.n_samples)
    if curve:
        kind, class_index = curve_cells(kind, class_index, inp.n_classes)
    if not _values_ok(ns, inp.proba):
        _host_check_values((y_true, y_proba, sample_weight, labels))
    totals, edges = statistics(
        ns,
        inp.y,
        inp.proba,
        inp.sample_weight,
        inp.n_classes,
        kind,
        n_bins,
        strategy,
        class_index,
        pairwise=pairwise,
    )
    return totals, edges, class_index, inp.weight_scale


def loss_totals(ns, y_true, y_proba, *, loss, sample_weight, labels, pairwise=None):
    """``(loss_sums, n_classes)`` of a proper score, the sums computed on
    the device (see :func:`skcalib.metrics._dispatch.loss_totals`)."""
    inp = prepare(ns, y_true, y_proba, sample_weight, labels)
    sums = loss_sums(
        ns,
        inp.y,
        inp.proba,
        inp.sample_weight,
        inp.n_classes,
        nll=loss == "log_loss",
        brier=loss == "brier",
        pairwise=pairwise,
    )
    return sums, inp.n_classes
