"""The predict-time check of a fitted calibrator's score type.

A calibrator fitted on logits and given probabilities (or the reverse)
would read them as the type of the fit, silently wrong. The rule of
:func:`check_fitted_score_type` refuses what contradicts ``score_type_``;
the array-API path decides it on the device
(:func:`skcalib._core.xp.scores.check_fitted`).
"""

import warnings

from skcalib._core.scores import row_sums
from skcalib._core.warn import user_stacklevel

__all__ = []  # private module


def reads_as_probability_rows(scores, value_range=None):
    """Whether 2-D ``scores`` of ``K >= 2`` columns are what the
    ``score_type="auto"`` rule reads as probabilities: every value in
    ``[0, 1]`` and every row summing to 1 within :func:`rounding_tolerance`
    (so float32 and 4-decimal probabilities count). False for 1-D scores or
    one column, whose values in ``[0, 1]`` are also valid log-odds.

    Cheap: the range (``value_range`` when the caller has it) decides for
    scores with a value outside ``[0, 1]``, as logits almost always have;
    otherwise one :func:`row_sums` pass (no ``n x K`` float64 copy).
    """
    if scores.ndim != 2 or scores.shape[1] < 2 or scores.size == 0:
        return False
    lo, hi = (scores.min(), scores.max()) if value_range is None else value_range
    if not (bool(lo >= 0) and bool(hi <= 1)):
        return False
    return row_sums(scores).rounded


def check_fitted_score_type(
    scores,
    score_type_,
    *,
    declared,
    fit_rows_were_probabilities,
    value_range=None,
    name="X",
):
    """Check that raw scores given at predict time are of the fitted type.

    The rule (raw-score mode; the scores come from the user):

    * fitted on probabilities (``score_type_="probability"``): a value
      outside ``[0, 1]`` is impossible for a probability, so it is a
      ``ValueError`` naming ``score_type_`` and the range seen;
    * fitted on logits, 2-D scores of ``K >= 2`` columns that
      :func:`reads_as_probability_rows` (every value in ``[0, 1]``, every
      row summing to 1 within the tolerance of the ``"auto"`` rule): the
      scores are almost surely probabilities. When ``score_type_`` was
      decided by ``score_type="auto"`` (the fit scores had values outside
      ``[0, 1]``), a ``ValueError``; when the user declared
      ``score_type="logit"``, a ``UserWarning`` only (they said they know),
      and nothing when the fit scores looked the same (the fit warned);
    * fitted on logits, 1-D scores (or one column): not checked. Every real
      number is a valid log-odds, and binary decision values inside
      ``[0, 1]`` are common in a small batch: the data cannot decide.

    Parameters
    ----------
    scores : ndarray of shape (n,) or (n, k)
        Finite float scores given to ``predict_proba``.
    score_type_ : {"logit", "probability"}
        The score type decided at fit.
    declared : {"auto", "logit", "probability"}
        The calibrator's ``score_type`` parameter.
    fit_rows_were_probabilities : bool
        Whether the fit scores themselves :func:`reads_as_probability_rows`.
    value_range : tuple or None
        ``(min, max)`` of ``scores`` when the caller has it.
    name : str
        The name of the scores in messages.
    """
    if scores.size == 0:
        return
    lo, hi = (scores.min(), scores.max()) if value_range is None else value_range
    if score_type_ == "probability":
        if bool(lo >= 0) and bool(hi <= 1):
            return
        raise ValueError(
            f"This calibrator was fitted on probabilities (score_type_="
            f"'probability'), but {name} has values outside [0, 1] (min "
            f"{float(lo):.4g}, max {float(hi):.4g}), as logits or decision "
            "values do. Pass probabilities, as at fit (e.g. the softmax of the "
            "logits), or refit the calibrator on logits."
        )
    if fit_rows_were_probabilities or not reads_as_probability_rows(scores, (lo, hi)):
        return
    seen = (
        f"{name} looks like probabilities: every value is in [0, 1] and every "
        f"one of its {scores.shape[0]} row(s) sums to 1"
    )
    if declared == "logit":
        warnings.warn(
            f"This calibrator was fitted on logits (score_type='logit'), but "
            f"{seen}; they are used as logits. Pass logits, as at fit.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
        return
    raise ValueError(
        f"This calibrator was fitted on logits (score_type_='logit', decided by "
        f"score_type={declared!r}: the fit scores had values outside [0, 1]), "
        f"but {seen}. Pass logits, as at fit (np.log of probabilities gives "
        "logits up to a constant per row, which softmax ignores). If these "
        "really are logits, fit with score_type='logit': this error is then a "
        "warning."
    )


def check_against_fit(scores, calibrator, value_range=None, name="X"):
    """:func:`check_fitted_score_type` of ``scores`` against a fitted
    calibrator's ``score_type_`` and ``score_type`` (and whether its fit
    scores read as probabilities: ``_fit_rows_were_probabilities_``)."""
    check_fitted_score_type(
        scores,
        calibrator.score_type_,
        declared=calibrator.score_type,
        fit_rows_were_probabilities=getattr(
            calibrator, "_fit_rows_were_probabilities_", False
        ),
        value_range=value_range,
        name=name,
    )
