"""The objective of :mod:`skcalib._core.solvers.linear` on data in
chunks (:class:`skcalib._backends.chunks.ChunkedData`): each pass sums the terms of
every chunk."""

from functools import partial

import numpy as np

from skcalib._core.solvers.linear import PenalisedNLL

__all__ = []


class ChunkedPenalisedNLL:
    """:class:`PenalisedNLL` of data in chunks
    (:class:`skcalib._backends.chunks.ChunkedData`).

    The solvers need the objective's value, gradient, (vector scaling)
    Hessian and curvature blocks: all are sums over rows, so each is one
    pass over the chunks, every chunk evaluated by a :class:`PenalisedNLL`
    of its own rows with the global row weights ``s_i / sum(s)`` and
    ``x_scale``; the penalty is added once. ``features`` names the
    :class:`~skcalib._core.scores.Scores` attribute used as ``x``. Threads over
    row blocks are not used (the chunks are the parallel units).
    """

    def __init__(self, data, features, C, *, diagonal, centre="identity"):
        self.data, self.features, self.diagonal = data, features, diagonal
        (x_max,) = data.map_scores(
            partial(_chunk_abs_max, features=features),
            combine=lambda parts: (max(p[0] for p in parts if p is not None),),
        )
        k = C.shape[1] if diagonal else C.shape[0]
        # A one-row problem holds the scaled penalty and the start point.
        self.template = PenalisedNLL(
            np.zeros((1, k)),
            np.zeros(1, dtype=np.intp),
            None,
            C,
            diagonal=diagonal,
            x_scale=max(1.0, x_max),
            centre=centre,
        )
        self.k, self.x_scale = k, self.template.x_scale
        self.C, self.theta0 = self.template.C, self.template.theta0
        self.blocks, self.pool = [], None

    def _pass(self, what, **kwargs):
        return self.data.map_scores(
            partial(
                _chunk_terms,
                what=what,
                features=self.features,
                diagonal=self.diagonal,
                x_scale=self.x_scale,
                total=self.data.total_weight,
                **kwargs,
            )
        )

    def loss_grad(self, theta, hessian=False):
        """As :meth:`PenalisedNLL.loss_grad`."""
        parts = self._pass("loss_grad", theta=theta, hessian=hessian)
        return self.template.add_penalty(theta, *parts)

    def curvature_blocks(self, theta, full):
        """As :meth:`PenalisedNLL.curvature_blocks` (each chunk subsampled on
        its own: it only steers the solver)."""
        (out,) = self._pass("curvature", theta=theta, full=full)
        return self.template.add_curvature_penalty(out, full)

    def original(self, theta):
        return self.template.original(theta)

    def scaled(self, theta):
        return self.template.scaled(theta)

    def gauge_fix(self, theta):
        return self.template.gauge_fix(theta)


def _chunk_abs_max(scores, y, w, *, features):
    x = getattr(scores, features)
    if w is not None:
        x = x[w > 0]
    return (float(np.max(np.abs(x), initial=0.0)),)


def _chunk_terms(scores, y, w, *, what, features, diagonal, x_scale, total, **kw):
    """Data terms of one chunk, rows weighted by ``w / total``."""
    x = getattr(scores, features)
    k = x.shape[1]
    shape = (2, k) if diagonal else (k, k + 1)
    problem = PenalisedNLL(
        x, y, None, np.zeros(shape), diagonal=diagonal, x_scale=x_scale
    )
    problem.w = None if w is None else w / total
    problem.w_const = 1.0 / total
    if what == "curvature":
        return (problem.curvature_blocks(kw["theta"], kw["full"]),)
    loss, grad, hess = problem._sum(
        lambda sl: problem._block_terms(sl, kw["theta"], kw["hessian"])
    )
    return (loss, grad) if hess is None else (loss, grad, hess)
