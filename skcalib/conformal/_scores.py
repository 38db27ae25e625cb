"""Nonconformity scores of prediction sets (LAC, APS, RAPS, top-k) and the
sets they give at one or several thresholds.

Every set score is written once, as a score of each class of a row, and read
in two ways: at the true label of calibration rows (:func:`label_scores`)
and for every class of test rows (:func:`prediction_sets`). With one
threshold per row (marginal sets) the score of the adaptive methods grows
along each row sorted by decreasing probability, so the set is the prefix
of the sorted row that passes: one ``sort`` per row, no ``argsort``.
"""

import numpy as np

__all__ = []  # private module

#: Work arrays of the set computation hold at most this many cells per block.
_BLOCK_CELLS = 1 << 20
#: Constants of the SplitMix64 finaliser (Steele, Lea & Flood 2014).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)

#: The set scores, and those that take a uniform (``randomized=True``).
METHODS = ("lac", "aps", "raps", "top_k")
RANDOMIZABLE = ("aps", "raps")


def resolve_randomized(randomized, method, include_last_label):
    """The ``randomized_`` of a conformal classifier: ``"auto"`` is True for
    APS and RAPS (unless ``include_last_label=False``, a rule of
    non-randomised sets) and False for LAC and top-k; a bool as given.

    Randomised APS and RAPS are the default because non-randomised sets of
    confident models are far larger than needed (CIFAR-100 DenseNet at
    ``alpha=0.1``: APS covers 0.998 with 24.1 classes per set, randomised
    APS 0.899 with 2.5; the table is in the ConformalClassifier Notes).
    """
    if randomized != "auto":
        return bool(randomized)
    return method in RANDOMIZABLE and bool(include_last_label)


def check_set_options(method, randomized, include_last_label):
    """Refuse set options that do not apply to ``method`` (the resolved
    ``randomized_``); one rule for the split and the cross-conformal
    classifiers."""
    adaptive = method in RANDOMIZABLE
    if randomized and not adaptive:
        raise ValueError(
            f"randomized=True applies to method='aps' or 'raps' only, got "
            f"method={method!r}."
        )
    if not include_last_label and not adaptive:
        raise ValueError(
            f"include_last_label=False applies to method='aps' or 'raps' "
            f"only, got method={method!r}."
        )
    if not include_last_label and randomized:
        raise ValueError(
            "include_last_label=False applies to non-randomised sets; with "
            "randomized=True the last label is kept or dropped at random."
        )


# ------------------------------------------------------------ building blocks
def _sorted_row_state(proba):
    """Descending order of each row, the mass before each sorted position,
    and the start of each position's block of tied probabilities."""
    n, k = proba.shape
    order = np.argsort(proba, axis=1)[:, ::-1]  # descending; tie order irrelevant
    sorted_p = np.take_along_axis(proba, order, axis=1)
    before = np.zeros_like(sorted_p)
    start = np.broadcast_to(np.arange(k), (n, k))
    if k > 1:
        np.cumsum(sorted_p[:, :-1], axis=1, out=before[:, 1:])
        new_block = np.ones((n, k), dtype=bool)
        np.not_equal(sorted_p[:, 1:], sorted_p[:, :-1], out=new_block[:, 1:])
        if not new_block.all():
            start = np.where(new_block, np.arange(k), 0)
            np.maximum.accumulate(start, axis=1, out=start)
            before = np.take_along_axis(before, start, axis=1)
    return order, before, start


def aps_mass_above(proba):
    """Probability mass of the classes more probable than each class.

    ``above[i, k] = sum of proba[i, j] over j with proba[i, j] > proba[i, k]``:
    the classes are sorted once per row (descending), the sorted
    probabilities summed cumulatively, and every class of a block of tied
    probabilities gets the mass before the block (ties are treated alike,
    whatever their column order). Sums run in the dtype of ``proba``, in the
    sorted order.

    Parameters
    ----------
    proba : ndarray of shape (n, K)

    Returns
    -------
    above : ndarray of shape (n, K), dtype of ``proba``
    """
    order, before, _ = _sorted_row_state(proba)
    above = np.empty_like(proba)
    np.put_along_axis(above, order, before, axis=1)
    return above


def class_ranks(proba):
    """Number of classes strictly more probable than each class, ``(n, K)``.

    Tied classes share the rank of their block (its first sorted position).
    The 1-based rank of class ``k`` is ``class_ranks(proba)[:, k] + 1``.
    """
    order, _, start = _sorted_row_state(proba)
    ranks = np.empty(proba.shape, dtype=np.intp)
    np.put_along_axis(ranks, order, start, axis=1)
    return ranks


def _mix64(h):
    """SplitMix64 finaliser of a uint64 array (wraps modulo 2**64, no warning)."""
    h = h + _GOLDEN
    h = (h ^ (h >> np.uint64(30))) * _MIX1
    h = (h ^ (h >> np.uint64(27))) * _MIX2
    return h ^ (h >> np.uint64(31))


def row_uniforms(proba, seed):
    """One uniform on [0, 1) per test row, from the seed, the row's position
    and the row's probabilities.

    The uniforms of the rows of one :meth:`ConformalClassifier.predict_set`
    call. The hashed ``seed`` is mixed with the row's position in ``proba``
    (0, 1, ...), then the row's probabilities, rounded to float32 and read
    as bit patterns (``-0.0`` read as ``0.0``), are folded in one column at
    a time, each step the SplitMix64 finaliser; the top 53 bits of the hash
    are the uniform. For a random seed the uniform of a row is U(0, 1) and
    independent of its label, which is what the coverage of that row needs,
    and the uniforms of the rows of a call are independent of each other,
    also when rows are tied (identical probabilities at different positions
    get different uniforms: without the position, the coverage of one test
    set of 1000 rows from a model with two distinct rows ranged from 0.48
    to 0.94 over seeds, instead of 0.85 to 0.94). The position makes the
    sets of a call depend on the row order; the content makes one-row
    calls of different rows draw different uniforms. The same call gives
    the same uniforms every time; rows that differ only by float64 rounding
    get the same ones.

    Parameters
    ----------
    proba : ndarray of shape (n, K)
    seed : int
        Non-negative, below 2**63.

    Returns
    -------
    u : ndarray of shape (n,), float64
    """
    bits = (
        (np.ascontiguousarray(proba, dtype=np.float32) + np.float32(0.0))
        .view(np.uint32)
        .astype(np.uint64)
    )
    n = bits.shape[0]
    h = _mix64(np.full(n, seed, dtype=np.uint64))
    h = _mix64(h ^ np.arange(n, dtype=np.uint64))
    for j in range(bits.shape[1]):  # a loop over columns, vectorised over rows
        h = _mix64(h ^ bits[:, j])
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


def calibration_uniforms(n, seed):
    """Independent U(0, 1) draws for ``n`` calibration rows, by position.

    ``numpy.random.default_rng(seed).random(n)``: the uniform of a row
    depends on the seed and its position only, never on its content, so
    calibration rows with tied probabilities get distinct uniforms. With
    such ties (rounded probabilities, a k-nearest-neighbours model, a tree)
    uniforms that are a function of the row (:func:`row_uniforms`) would
    give tied rows tied scores: coverage then stays above ``1 - alpha`` but
    loses its ``1 - alpha + 1 / (n + 1)`` upper bound.
    """
    return np.random.default_rng(seed).random(n)


def _blocks(n, k):
    step = max(1, _BLOCK_CELLS // max(k, 1))
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def _sorted_mass(proba):
    """Each row in decreasing order, and the mass before each position.

    ``before[:, j]`` is the cumulative sum of the ``j`` largest probabilities,
    added in that order: the same numbers as :func:`aps_mass_above` at the
    first position of each block of ties.
    """
    desc = np.sort(proba, axis=1)[:, ::-1]
    before = np.zeros(desc.shape, dtype=desc.dtype)
    np.cumsum(desc[:, :-1], axis=1, out=before[:, 1:])
    return desc, before


def _penalty(rank, k_reg, lam, dtype):
    """RAPS penalty ``lam * max(rank - k_reg, 0)`` in ``dtype`` (rank 1-based)."""
    return (lam * np.maximum(rank - k_reg, 0)).astype(dtype, copy=False)


def _adaptive_score(mass, p, rank, u, method, k_reg, lam, last):
    """APS / RAPS score from the mass before a class, its probability and its
    1-based rank: ``mass + p`` (``mass + u p`` randomised) plus the RAPS
    penalty; ``last=True`` gives the score whose strict bound includes the
    class that crosses the threshold: ``mass`` plus the penalty of the
    previous rank. The same floating-point operations on every path."""
    if last:
        score = mass
        if method == "raps":
            score = score + _penalty(rank - 1, k_reg, lam, mass.dtype)
        return score
    score = mass + (p if u is None else u * p)
    if method == "raps":
        score = score + _penalty(rank, k_reg, lam, score.dtype)
    return score


def _conditions(mass, p, rank, u, method, k_reg, lam, rule):
    """``[(score, strict), ...]``: a class is in the set when every score is
    below the threshold (``<`` where strict, else ``<=``).

    ``rule`` is ``"last"`` (non-randomised, the crossing class included),
    ``"plain"`` (randomised: the score itself) or ``"no_last"`` (the score
    itself, and the class must not start at or beyond the threshold: a
    class that adds no mass is left out, so these sets are subsets of the
    ``"last"`` ones)."""
    score = _adaptive_score(mass, p, rank, u, method, k_reg, lam, rule == "last")
    if rule == "last":
        return [(score, True)]
    if rule == "plain":
        return [(score, False)]
    start = _adaptive_score(mass, p, rank, u, method, k_reg, lam, True)
    return [(score, False), (start, True)]


def _passes(conditions, t):
    ok = None
    for score, strict in conditions:
        c = score < t if strict else score <= t
        ok = c if ok is None else ok & c
    return ok


# ------------------------------------------------------------- label scores
def label_scores(proba, y, method, u=None, *, k_reg=0, lam=0.0, **_):
    """Nonconformity score of the class ``y[i]`` of every row.

    * ``"lac"``: ``1 - p_y``;
    * ``"aps"``: ``m_y + p_y`` (``m_y + u p_y`` randomised with uniforms
      ``u``), ``m_y`` the mass of the classes more probable than ``y`` (the
      values of :func:`aps_mass_above`);
    * ``"raps"``: the APS score plus ``lam * max(o_y - k_reg, 0)``, with
      ``o_y = 1 + #{j : p_j > p_y}`` the 1-based rank of ``y``;
    * ``"top_k"``: the rank ``o_y`` (a float).

    ``m_y`` is read from the sorted row at the position of the first class as
    probable as ``y``: no ``argsort`` is needed. Other keyword arguments
    (``include_last_label``) are accepted and ignored: the calibration score
    is the same whichever set rule is used at prediction.
    """
    rows = np.arange(y.size)
    if method == "lac":
        return 1 - proba[rows, y]
    if method == "top_k":
        p_y = proba[rows, y]
        return (np.count_nonzero(proba > p_y[:, None], axis=1) + 1).astype(np.float64)
    dtype = proba.dtype if u is None else np.result_type(proba.dtype, np.float64)
    out = np.empty(y.size, dtype=dtype)
    for b in _blocks(y.size, proba.shape[1]):
        p = proba[b]
        r = rows[: p.shape[0]]
        p_y = p[r, y[b]]
        _, before = _sorted_mass(p)
        rank0 = np.count_nonzero(p > p_y[:, None], axis=1)
        ub = None if u is None else u[b]
        out[b] = _adaptive_score(
            before[r, rank0], p_y, rank0 + 1, ub, method, k_reg, lam, False
        )
    return out


# ---------------------------------------------------------- prediction sets
def _sorted_conditions(p, method, u, k_reg, lam, rule):
    """Conditions of each sorted position of each row (scores non-decreasing
    along the row) and the descending probabilities."""
    desc, before = _sorted_mass(p)
    rank = np.arange(1, p.shape[1] + 1)
    if method == "top_k":
        return desc, [(np.broadcast_to(rank.astype(np.float64), p.shape), False)]
    uu = None if u is None else u[:, None]
    return desc, _conditions(before, desc, rank, uu, method, k_reg, lam, rule)


def _class_conditions(p, method, u, k_reg, lam, rule):
    """Conditions of every class of every row, ``(n, K)`` arrays."""
    order, before, start = _sorted_row_state(p)
    if method == "top_k":
        ranks = np.empty(p.shape, dtype=np.float64)
        np.put_along_axis(ranks, order, start + 1.0, axis=1)
        return [(ranks, False)]
    mass = np.empty_like(p)
    np.put_along_axis(mass, order, before, axis=1)
    rank = np.empty(p.shape, dtype=np.intp)
    np.put_along_axis(rank, order, start + 1, axis=1)
    uu = None if u is None else u[:, None]
    return _conditions(mass, p, rank, uu, method, k_reg, lam, rule)


def _block_sets(p, method, thresholds, u, k_reg, lam, rule):
    """Sets ``(n, K, m)`` of one block at ``m`` thresholds (``(m,)`` or
    ``(m, K)``)."""
    n, k = p.shape
    m = thresholds.shape[0]
    if method == "lac":
        t = thresholds[None, None, :] if thresholds.ndim == 1 else thresholds.T[None]
        return (1 - p)[:, :, None] <= t
    out = np.empty((n, k, m), dtype=bool)
    if thresholds.ndim == 2:  # per-class thresholds: every class's score
        conditions = _class_conditions(p, method, u, k_reg, lam, rule)
        for a in range(m):
            out[:, :, a] = _passes(conditions, thresholds[a])
        return out
    desc, conditions = _sorted_conditions(p, method, u, k_reg, lam, rule)
    rows = np.arange(n)
    for a in range(m):
        passed = np.count_nonzero(_passes(conditions, thresholds[a]), axis=1)
        last_p = desc[rows, np.maximum(passed - 1, 0)]
        cutoff = np.where(passed > 0, last_p, np.inf)
        np.greater_equal(p, cutoff[:, None], out=out[:, :, a])
    return out


def prediction_sets_many(
    proba,
    method,
    thresholds,
    u=None,
    include_top=False,
    *,
    k_reg=0,
    lam=0.0,
    include_last_label=True,
):
    """Boolean ``(n, K, m)`` prediction sets at ``m`` thresholds.

    ``thresholds`` has shape ``(m,)`` (one threshold per level, marginal) or
    ``(m, K)`` (one per level and class). The rows are sorted once for all
    levels. See :func:`prediction_sets` for the set rules.
    """
    thresholds = np.asarray(thresholds, dtype=np.float64)
    n, k = proba.shape
    rule = "plain" if u is not None else "last" if include_last_label else "no_last"
    sets = np.empty((n, k, thresholds.shape[0]), dtype=bool)
    for b in _blocks(n, k * thresholds.shape[0]):
        ub = None if u is None else u[b]
        sets[b] = _block_sets(proba[b], method, thresholds, ub, k_reg, lam, rule)
    if include_top:
        sets[np.arange(n), np.argmax(proba, axis=1), :] = True
    return sets


def prediction_sets(proba, method, threshold, u=None, include_top=False, **params):
    """Boolean ``(n, K)`` prediction sets from probabilities and thresholds.

    ``threshold`` is a float (marginal) or an array of shape (K,) (one per
    class). With ``o_k`` the 1-based rank of class ``k`` (tied classes share
    the best rank of their block) and ``m_k`` the mass of the more probable
    classes:

    * LAC: ``1 - p_k <= t_k``;
    * top-k: ``o_k <= t_k``: the ``floor(t)`` most probable classes (and any
      class tied with the last of them);
    * APS / RAPS, non-randomised, ``include_last_label=True`` (default):
      ``m_k + pen(o_k - 1) < t_k``, the classes added in decreasing
      probability up to and including the one whose cumulative (penalised)
      score reaches ``t``; ``include_last_label=False``: ``m_k + p_k +
      pen(o_k) <= t_k`` and ``m_k + pen(o_k - 1) < t_k``, the classes whose
      own score is within the threshold (the plain conformal set of the
      score) but for those that add no mass (a class of probability 0, or
      one whose mass is lost to rounding once the cumulative mass has
      reached the threshold): a subset of the default sets;
    * randomised (uniforms ``u``): ``m_k + u p_k + pen(o_k) <= t_k``,

    where ``pen(o) = lam * max(o - k_reg, 0)`` for RAPS and 0 for APS
    (keyword arguments ``k_reg``, ``lam``, ``include_last_label``).

    With one threshold the score grows along each sorted row (also in
    floating point, and is constant over a block of ties), so the classes
    that pass are those at least as probable as the last sorted position
    that passes: one ``sort`` per row, no ``argsort``. Per-class thresholds
    need the score of every class (:func:`aps_mass_above`).
    """
    t = np.asarray(threshold, dtype=np.float64)[None]
    return prediction_sets_many(proba, method, t, u, include_top, **params)[:, :, 0]
