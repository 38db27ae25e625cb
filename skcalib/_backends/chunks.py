"""Fitting calibrators on data held in chunks: numpy chunks or an engine's
blocks (Dask arrays, Spark DataFrames, Ray Datasets).

A :class:`ChunkedData` runs *passes*: a function applied to every chunk,
whose small results (sums, extremes, label sets) are combined in chunk order,
so the result does not depend on the scheduler. Only those results reach the
caller; no chunk is kept. On an engine a pass is one job of one task per row
block (with Dask one ``dask.compute`` on the scheduler in use; with Spark one
job; see :mod:`skcalib._backends.engines`), so the same code runs on a
cluster.

Calibrators that can be fitted this way implement ``_fit_chunks(data)``
(see :meth:`skcalib._base.BaseCalibrator.fit_chunks`).
"""

from functools import partial

import numpy as np
from sklearn.utils.validation import check_array

from skcalib._backends.engines import get as get_engine
from skcalib._backends.engines import sum_parts
from skcalib._core.inputs import weight_scale as _weight_scale
from skcalib._core.labels import (
    check_labels_in,
    lookup,
    present_labels,
    unique_inverse,
)
from skcalib._core.scores import Scores, resolve_score_type
from skcalib._core.weights import unit_weights

__all__ = []  # private module


class ChunkedData:
    """Calibration scores, labels and weights in row chunks.

    Use :meth:`from_engine`, :meth:`from_dask` or :meth:`from_chunks`; then
    :meth:`survey` once (classes, score type, totals) and :meth:`map_scores`
    for each pass.
    """

    def __init__(self, run):
        self._run = run  # run(fn) -> list of fn(X, y, w) over the chunks

    @classmethod
    def from_engine(cls, engine, X, y, sample_weight=None):
        """Row blocks of an engine's inputs (Dask arrays or DataFrames, Spark
        or Ray column handles; see :mod:`skcalib._backends.engines`), aligned
        on ``X``'s."""
        return cls(get_engine(engine).chunk_runner(X, y, sample_weight))

    @classmethod
    def from_dask(cls, X, y, sample_weight=None):
        """Row blocks of Dask arrays (or DataFrames), aligned on ``X``'s."""
        return cls.from_engine("dask", X, y, sample_weight)

    @classmethod
    def from_chunks(cls, chunks):
        """Chunks ``(X, y)`` or ``(X, y, sample_weight)`` of numpy data.

        ``chunks`` is a sequence, or a callable returning a new iterable of
        chunks at each call (fitting reads the data several times; a
        one-shot iterator would be empty after the first pass).
        """
        if callable(chunks):
            source = chunks
        elif isinstance(chunks, (list, tuple)):
            source = lambda: chunks  # noqa: E731
        else:
            raise TypeError(
                "chunks must be a list or tuple of (X, y[, sample_weight]) chunks, "
                "or a callable that returns a new iterable of them at each call "
                f"(the data are read several times); got {type(chunks).__name__}."
            )

        def run(fn, first=False):
            out = []
            for i, chunk in enumerate(source()):
                if first and out:
                    break
                if not isinstance(chunk, (list, tuple)) or len(chunk) not in (2, 3):
                    raise ValueError(
                        f"chunk {i} must be a tuple (X, y) or (X, y, sample_weight)."
                    )
                X, y = chunk[0], chunk[1]
                out.append(fn(X, y, chunk[2] if len(chunk) == 3 else None))
            if not out:
                raise ValueError("chunks holds no chunk: there is nothing to fit.")
            return out

        return cls(run)

    # ------------------------------------------------------------- passes
    def survey(self, score_type, rescale_weights=True, classes=None):
        """One pass: classes, column count, score type and class weights.

        Sets ``classes``, ``n_columns``, ``score_type``, ``class_weight``
        (weighted count of each class), ``total_weight``, ``n_renormalized``,
        ``weighted`` (whether the chunks come with weights) and
        ``weight_scale``: with ``rescale_weights``, weights are divided
        by their maximum over all chunks, as
        :meth:`skcalib._base.BaseCalibrator.fit` does, so that counts and
        totals are those of weights at most 1.

        ``score_type="auto"`` follows
        :func:`~skcalib._core.scores.resolve_score_type` over the whole data:
        probabilities when every chunk lies inside ``[0, 1]`` (rows that miss
        1 by more than the rounding tolerance are then an error), logits
        otherwise.

        ``classes``: the labels of the score columns, in their order (the
        calibrator's ``classes=``, already checked: 1-D, unique); None: the
        sorted labels present in the chunks. A label of the chunks outside
        ``classes`` is a ``ValueError`` naming it.
        """
        parts = self._run(partial(_survey_chunk, score_type=score_type))
        cols = {p["n_columns"] for p in parts if p["n_rows"]}
        if len(cols) > 1:
            raise ValueError(f"Chunks have different numbers of columns: {cols}.")
        if not cols:
            raise ValueError("The chunks hold no sample: there is nothing to fit.")
        self.n_columns = cols.pop()
        labels = present_labels(np.concatenate([p["labels"] for p in parts]))
        self.present = labels
        if classes is not None:
            check_labels_in(labels, classes)
            labels = classes
        self.classes = labels
        scale = max(p["max_weight"] for p in parts)
        # a power of two, as in BaseCalibrator.fit: the division is exact
        self.weight_scale = _weight_scale(scale) if rescale_weights else 1.0
        weight = np.zeros(labels.size)
        for p in parts:
            share = p["unit"] / self.weight_scale
            weight[lookup(p["labels"], labels)[0]] += p["class_weight"] * share
        self.class_weight = weight
        self.total_weight = float(weight.sum())
        self.weighted = any(p["weighted"] for p in parts)
        filled = [p for p in parts if p["n_rows"]]
        in_range = all(p["in_range"] for p in filled)
        if score_type == "probability" or (score_type == "auto" and in_range):
            for i, p in enumerate(filled):
                if p["error"] is not None:
                    raise ValueError(f"Chunk {i}: {p['error']}")
            score_type = "probability"
            self.n_renormalized = sum(p["n_rounded"] for p in filled)
        else:
            score_type = "logit"
            self.n_renormalized = 0
        self.score_type = score_type
        self.dtype = np.result_type(*[p["dtype"] for p in parts])
        return self

    def first_scores(self, fn):
        """``fn(scores, y_encoded, sample_weight)`` of the first chunk only
        (None if it is empty): a cheap look at the data, not a pass."""
        return self._run(self._scores_call(fn), first=True)[0]

    def map_scores(self, fn, combine=sum_parts):
        """One pass of ``fn(scores, y_encoded, sample_weight)`` per chunk.

        ``scores`` is a :class:`~skcalib._core.scores.Scores` of the validated
        chunk; labels are encoded by ``classes``.
        """
        return combine(self._run(self._scores_call(fn)))

    def encoded(self):
        """The same chunks with the labels encoded by ``classes`` (after
        :meth:`survey`): what a calibrator fitted inside another one, on
        ``classes=range(K)``, reads."""
        return ChunkedData(partial(_encoded_run, self._run, self.classes))

    def _scores_call(self, fn):
        """``fn`` applied to a raw chunk once it is validated and wrapped."""
        return partial(
            _scores_chunk,
            fn=fn,
            classes=self.classes,
            score_type=self.score_type,
            n_columns=self.n_columns,
            weight_scale=self.weight_scale,
        )


def _encoded_run(run, classes, fn, first=False):
    return run(partial(_encoded_chunk, fn=fn, classes=classes), first=first)


def _encoded_chunk(X, y, w, *, fn, classes):
    y = np.asarray(y).ravel()
    codes, known = lookup(y, classes)
    if not known.all():
        _changed_labels(y[np.argmin(known)], classes)
    return fn(X, codes, w)


def _changed_labels(label, classes):
    raise ValueError(
        f"A chunk has label {label.tolist()!r}, not among the labels "
        f"{classes.tolist()} of the first pass: the chunks must give the same "
        "data at every pass (seed generated data, or persist it)."
    )


def _validate_chunk(X, y, w):
    X = check_array(
        X,
        ensure_2d=False,
        dtype=[np.float64, np.float32],
        ensure_min_samples=0,
        input_name="X",
    )
    if X.ndim not in (1, 2):
        raise ValueError(f"X chunks must be 1-D or 2-D scores, got ndim={X.ndim}.")
    y = np.asarray(y).ravel()
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"A chunk has {X.shape[0]} rows in X but {y.size} in y.")
    if w is not None:
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape[0] != X.shape[0]:
            raise ValueError(
                f"A chunk has {X.shape[0]} rows in X but {w.size} in sample_weight."
            )
        bad = np.flatnonzero(~(np.isfinite(w) & (w >= 0)))
        if bad.size:
            raise ValueError(
                f"sample_weight must be finite and non-negative; a chunk has "
                f"{w[bad[0]]!r}."
            )
    return X, y, w


def _survey_chunk(X, y, w, score_type="auto"):
    X, y, w = _validate_chunk(X, y, w)
    labels, inverse = unique_inverse(y)
    top = float(w.max()) if w is not None and w.size else 1.0
    unit = 1.0
    if w is not None:  # divided by a power of two: exact, sums cannot overflow
        w, unit = unit_weights(w, top)
    weights = np.bincount(inverse.ravel(), weights=w, minlength=labels.size).astype(
        np.float64
    )
    in_range = bool(X.size) and bool(X.min() >= 0) and bool(X.max() <= 1)
    n_rounded, error = 0, None
    if in_range and X.ndim == 2 and X.shape[1] > 1:
        try:
            asked = "auto" if score_type == "auto" else "probability"
            n_rounded = resolve_score_type(X, asked).n_renormalized
        except ValueError as exc:
            error = str(exc)
    return {
        "n_rows": X.shape[0],
        "n_columns": 1 if X.ndim == 1 else X.shape[1],
        "labels": labels,
        "class_weight": weights,
        "max_weight": top if w is not None else 1.0,
        "weighted": w is not None,
        "unit": unit,
        "in_range": in_range,
        "n_rounded": n_rounded,
        "error": error,
        "dtype": X.dtype,
    }


def _scores_chunk(X, y, w, *, fn, classes, score_type, n_columns, weight_scale=1.0):
    X, y, w = _validate_chunk(X, y, w)
    n_classes = classes.size
    if (1 if X.ndim == 1 else X.shape[1]) != n_columns:
        raise ValueError(f"Chunks have different numbers of columns ({n_columns}).")
    if X.shape[0] == 0:
        return None
    y_enc, known = lookup(y, classes)
    if not known.all():  # the chunk changed since the survey pass
        _changed_labels(y[np.argmin(known)], classes)
    if score_type == "probability":
        X = resolve_score_type(X, "probability").scores
    if w is not None and weight_scale != 1.0:
        w = w / weight_scale
    return fn(Scores(X, score_type, n_classes), y_enc, w)
