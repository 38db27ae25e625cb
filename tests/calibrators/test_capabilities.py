"""Which calibrators fit chunks and Dask arrays is read from their code.

:meth:`skcalib._base.BaseCalibrator._supports_chunks` is True when a class
implements ``_fit_chunks`` (``_fit_map_chunks`` for the one-vs-rest maps) at
least as specifically as ``_fit`` (``_fit_map``); the message of a class that
cannot lists the classes that can, found by discovery. These tests check the
capability against what fitting really does, for every discovered calibrator.
"""

import re
import warnings

import numpy as np
import pytest
from _discovery import calibrator_classes

from skcalib import TemperatureCalibrator
from skcalib._base import BaseCalibrator, chunk_capable_names
from skcalib.calibration._one_vs_rest import _OneVsRestCalibrator
from skcalib.calibration._platt import PlattCalibrator

CALIBRATORS = [c for c in calibrator_classes() if issubclass(c, BaseCalibrator)]


def _multiclass(n=600, k=3):
    rng = np.random.default_rng(0)
    y = rng.integers(0, k, n)
    return 2.0 * (rng.normal(size=(n, k)) + np.eye(k)[y]), y


def _chunks(z, y, n_chunks=3):
    cuts = np.linspace(0, len(y), n_chunks + 1).astype(int)
    return [(z[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def _message_names(cls):
    z, y = _multiclass()
    with pytest.raises(TypeError, match="cannot be fitted in chunks") as info:
        cls().fit_chunks(_chunks(z, y))
    listed = str(info.value).split("; ", 1)[1].removesuffix(" can.")
    names = re.split(r", | and ", listed)
    return [re.sub(r" \(.*\)$", "", name) for name in names]


def test_message_lists_exactly_the_capable_classes():
    capable = sorted(c.__name__ for c in CALIBRATORS if c._supports_chunks())
    incapable = [c for c in CALIBRATORS if not c._supports_chunks()]
    # today's split, so that a regression of the derivation shows here
    assert {"TemperatureCalibrator", "PlattCalibrator", "IsotonicCalibrator"} <= set(
        capable
    )
    assert incapable, "some calibrators cannot fit chunks (beta, Venn-ABERS, ...)"
    for cls in incapable:
        assert _message_names(cls) == capable, cls.__name__
    assert [re.sub(r" \(.*\)$", "", n) for n in chunk_capable_names()] == capable


@pytest.mark.parametrize("cls", CALIBRATORS, ids=lambda c: c.__name__)
def test_capability_matches_what_fit_chunks_does(cls):
    z, y = _multiclass()
    est = cls()
    if cls._supports_chunks():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence on small data
            est.fit_chunks(_chunks(z, y))
        assert est.predict_proba(z[:5]).shape == (5, 3)
    else:
        with pytest.raises(TypeError, match="cannot be fitted in chunks"):
            est.fit_chunks(_chunks(z, y))


class _ChunkedDummy(BaseCalibrator):
    """A calibrator outside skcalib that fits chunks: the identity map."""

    def __init__(self, estimator=None, *, score_type="auto", response_method="auto"):
        self.estimator = estimator
        self.score_type = score_type
        self.response_method = response_method

    def _fit(self, scores, y, sample_weight):
        pass

    def _fit_chunks(self, data):
        self.fitted_on_chunks_ = True

    def _predict_proba(self, scores):
        return scores.proba


class _PlainDummy(_ChunkedDummy):
    """Changes ``_fit`` but inherits ``_fit_chunks``: another model on chunks."""

    def _fit(self, scores, y, sample_weight):
        self.other_ = True


class _NoChunkTemperature(TemperatureCalibrator):
    _fit_chunks = None  # the explicit opt-out


class _MapDummy(PlattCalibrator):
    """Overrides the map fit but not the chunked map fit."""

    def _fit_map(self, score, target, sample_weight):
        return super()._fit_map(score, target, sample_weight)


def test_dummy_subclass_with_fit_chunks_is_capable():
    assert _ChunkedDummy._supports_chunks()
    z, y = _multiclass()
    assert _ChunkedDummy().fit_chunks(_chunks(z, y)).fitted_on_chunks_
    # a class outside skcalib is not listed in skcalib's messages
    assert "_ChunkedDummy" not in " ".join(chunk_capable_names())


@pytest.mark.parametrize("cls", [_PlainDummy, _NoChunkTemperature, _MapDummy])
def test_capability_needs_a_chunk_fit_as_specific_as_fit(cls):
    assert not cls._supports_chunks()
    z, y = _multiclass()
    with pytest.raises(TypeError, match="cannot be fitted in chunks"):
        cls().fit_chunks(_chunks(z, y))


def test_one_vs_rest_capability_follows_the_map():
    assert not _OneVsRestCalibrator._supports_chunks()  # no map at all
    assert PlattCalibrator._supports_chunks()


def test_dask_fit_refused_by_the_same_capability():
    da = pytest.importorskip("dask.array")
    from skcalib import BetaCalibrator

    z, y = _multiclass(k=2)
    with pytest.raises(TypeError, match="nor on Dask arrays"):
        BetaCalibrator().fit(da.from_array(z[:, 1], 200), da.from_array(y, 200))
