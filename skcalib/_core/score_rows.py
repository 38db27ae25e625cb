"""Rows of earlier inputs found again in a new one: the ``reuse_rows`` path
of :class:`~skcalib._core.score_cache.ScoreCache`.

A block keeps the rows (their bytes) that one call predicted, their
scores, and a sorted 64-bit hash per row. A new input's rows are looked up
by hash in each block and every candidate is checked byte for byte, so a
hash collision costs a prediction, never a wrong score. All of it is
vectorised: one pass to hash the rows, a binary search per block, one
comparison of the matched rows.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = []  # private module


@dataclass(frozen=True)
class RowBlock:
    """The rows of one call and their scores.

    ``rows``: (m, B) uint8, the bytes of each row; ``scores``: (m,) or
    (m, k); ``hashes``: the sorted row hashes; ``order``: the row of each
    sorted hash. Every array is read-only.
    """

    rows: np.ndarray
    scores: np.ndarray
    hashes: np.ndarray
    order: np.ndarray

    @classmethod
    def of(cls, rows, hashes, scores):
        """A block of private read-only copies, sorted by hash."""
        order = np.argsort(hashes, kind="stable")
        block = cls(rows.copy(), scores.copy(), hashes[order], order)
        for a in (block.rows, block.scores, block.hashes, block.order):
            a.flags.writeable = False
        return block

    @property
    def nbytes(self):
        """Bytes held by the block's arrays."""
        return sum(a.nbytes for a in (self.rows, self.scores, self.hashes, self.order))

    def find(self, rows, hashes, todo):
        """``(q, c)``: the rows ``q`` of ``todo`` (indices of ``rows``) that
        this block holds, at its rows ``c``, equal byte for byte."""
        pos = np.searchsorted(self.hashes, hashes[todo])
        np.minimum(pos, self.hashes.size - 1, out=pos)
        hit = self.hashes[pos] == hashes[todo]
        q, c = todo[hit], self.order[pos[hit]]
        same = (self.rows[c] == rows[q]).all(axis=1)
        return q[same], c[same]


def row_bytes(X):
    """The bytes of each row of 2-D numpy ``X`` as an (n, B) uint8 view (a
    copy only when ``X`` is not C-contiguous), or None when ``X`` is not a
    plain 2-D array of fixed-size items."""
    if type(X) is not np.ndarray or X.ndim != 2 or X.dtype.hasobject or not X.size:
        return None
    X = np.ascontiguousarray(X)
    return X.reshape(X.shape[0], -1).view(np.uint8).reshape(X.shape[0], -1)


def row_hashes(rows):
    """A 64-bit hash of each row of an (n, B) uint8 array.

    The row, read as words of the largest size in 8, 4, 2, 1 bytes that
    divides ``B``, is dotted with fixed odd 64-bit multipliers (modulo
    2**64) and the sum mixed (the finaliser of SplitMix64). Equal rows give
    equal hashes; :meth:`RowBlock.find` checks the bytes of every match.
    """
    n, width = rows.shape
    size = next(s for s in (8, 4, 2, 1) if width % s == 0)
    words = rows.view(np.dtype(f"<u{size}")).astype(np.uint64, copy=False)
    h = (words * _multipliers(words.shape[1])).sum(axis=1, dtype=np.uint64)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@lru_cache(maxsize=64)
def _multipliers(n_words):
    """Fixed odd multipliers, one per word of a row (the same in every run)."""
    rng = np.random.default_rng(0x5C0CA1)
    odd = rng.integers(0, 2**63, size=n_words, dtype=np.uint64) * np.uint64(2)
    odd += np.uint64(1)
    odd.flags.writeable = False
    return odd


def assemble(n, found, missing, new):
    """Scores of ``n`` rows from the blocks' rows ``found`` (a list of
    ``(q, block, c)``) and the ``new`` scores of the rows ``missing``; None
    when their shapes or dtypes disagree."""
    parts = [block.scores for _, block, _ in found]
    if new is not None:
        parts.append(new)
    tail = {p.shape[1:] for p in parts}
    if len(tail) != 1:
        return None
    out = np.empty((n, *tail.pop()), dtype=np.result_type(*parts))
    for q, block, c in found:
        out[q] = block.scores[c]
    if new is not None:
        out[missing] = new
    return out
