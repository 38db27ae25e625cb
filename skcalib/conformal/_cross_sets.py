"""The algorithm of :class:`~skcalib.conformal._cross.CrossConformalClassifier`:
the folds, one model per fold and its scores, and the CV+
(cross-conformal) count that turns them into prediction sets."""

import numpy as np

from skcalib._core.folds import split_part
from skcalib.conformal._quantile import _LEVEL_RTOL
from skcalib.conformal._scores import _class_conditions, row_uniforms

__all__ = []  # private module


# -------------------------------------------------------------------- folds
def check_folds(splits, n_samples, *, partition):
    """Validated ``(train, test)`` index pairs.

    Every part is non-empty, no sample is in both parts of a split, and the
    test parts are disjoint. ``partition=True`` (cross-conformal): every
    sample is in exactly one test part, as in K-fold.
    """
    checked = []
    tested = np.zeros(n_samples, dtype=np.intp)
    for i, (train, test) in enumerate(splits):
        train = split_part(train, n_samples, f"The training part of split {i}")
        test = split_part(test, n_samples, f"The test part of split {i}")
        for what, part in (("training", train), ("test", test)):
            if part.size == 0:
                raise ValueError(f"Split {i} of cv has an empty {what} part.")
        both = np.intersect1d(train, test)
        if both.size:
            raise ValueError(
                f"Split {i} of cv puts samples {both[:5].tolist()} in both its "
                "training and its test part: conformity scores must come from "
                "a model that did not see the sample."
            )
        np.add.at(tested, test, 1)
        checked.append((train, test))
    if not checked:
        raise ValueError("cv gives no split.")
    again = np.flatnonzero(tested > 1)
    never = np.flatnonzero(tested == 0)
    if again.size or (partition and never.size):
        what = (
            f"{again.size} sample(s) are in more than one test part (first: "
            f"{again[:5].tolist()})"
            if again.size
            else f"{never.size} sample(s) are in no test part (first: "
            f"{never[:5].tolist()})"
        )
        raise ValueError(
            "The test parts of cv must partition the samples (each sample in "
            f"exactly one test part, as in K-fold); here {what}."
        )
    return checked


# ---------------------------------------------------------- one fold's model
def fold_proba(model, X, classes):
    """``model.predict_proba(X)`` with one column per class of ``classes``.

    The probabilities are used as the model gives them (as
    :class:`~skcalib.ConformalClassifier` does), in float64; a class the
    fold's model never saw (absent from its training part) gets
    probability 0.
    """
    proba = np.asarray(model.predict_proba(X), dtype=np.float64)
    known = np.asarray(model.classes_)
    if known.size == classes.size and np.array_equal(known, classes):
        return proba
    full = np.zeros((proba.shape[0], classes.size))
    full[:, np.searchsorted(classes, known)] = proba
    return full


def query_uniforms(proba, seed):
    """The uniforms of the test rows of randomised scores (None when not
    randomised); those of calibration rows are drawn by position at fit."""
    return None if seed is None else row_uniforms(proba, seed)


def exclusion_conditions(proba, method, u, params):
    """The set rule of :func:`~skcalib.conformal._scores.prediction_sets` as
    conditions on the threshold: ``[(score, strict), ...]``, each score of
    shape ``(n, K)``.

    Class ``k`` of row ``i`` is in the set of threshold ``t`` when every
    ``score[i, k] < t`` (strict) or ``<= t`` holds; so it is left out of
    the set of a calibration score ``s_j`` when ``s_j <= score`` (strict)
    or ``s_j < score`` for some condition. LAC: ``1 - p <= t``; the others
    are the rules of :class:`~skcalib.ConformalClassifier` (randomised, with
    or without the last label), read from its own code.
    """
    if method == "lac":
        return [(1 - proba, False)]
    if u is not None:
        rule = "plain"
    else:
        rule = "last" if params.get("include_last_label", True) else "no_last"
    k_reg, lam = params.get("k_reg", 0), params.get("lam", 0.0)
    return _class_conditions(proba, method, u, k_reg, lam, rule)


# ---------------------------------------------------------------- CV+ count
class FoldScores:
    """The calibration scores of one fold, sorted, with cumulative weights.

    :meth:`below` gives, for test scores ``t``, the total weight of the
    fold's calibration scores below ``t`` (``s_i < t``; ``s_i <= t`` with
    ``ties_below``); :meth:`excluding` the weight of those whose set leaves
    each class out.
    """

    def __init__(self, scores, weight):
        order = np.argsort(scores, kind="stable")
        self.scores = scores[order]
        w = np.ones(scores.size) if weight is None else weight[order]
        self.cum = np.concatenate(([0.0], np.cumsum(w, dtype=np.float64)))

    def below(self, t, ties_below):
        side = "right" if ties_below else "left"
        return self.cum[np.searchsorted(self.scores, t, side=side)]

    def excluding(self, conditions):
        """Weight of the calibration scores whose set leaves each class out.

        The thresholds that fail one condition are the scores below it, a
        prefix of the sorted scores; those that fail any condition are the
        longest of these prefixes.
        """
        out = None
        for score, strict in conditions:
            w = self.below(score, ties_below=strict)
            out = w if out is None else np.maximum(out, w)
        return out


def sets_from_counts(below, total, alphas):
    """``below[i, k] < (1 - alpha)(W + 1)`` for each ``alpha``: ``(n, K, n_alpha)``.

    The level has the relative slack of :func:`conformal_quantile`, so that
    a single split gives exactly the split-conformal sets.
    """
    level = (1.0 - alphas) * (total + 1.0)
    return below[:, :, None] < (level - _LEVEL_RTOL * level)
