"""Issue 16, items 5 and 6: the defaults of the binning calibrators, checked
against slow obvious implementations and against uncertainty-calibration
(Kumar et al.'s code) on real prediction sets."""

import numpy as np
import pytest
from sklearn.model_selection import train_test_split

from skcalib import HistogramBinningCalibrator, ScalingBinningCalibrator


def _split(shared_loader, name, n=None):
    probs, labels = shared_loader(name)
    probs = probs.astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    if n is not None:
        probs, labels = probs[:n], labels[:n]
    i_cal, i_test = train_test_split(
        np.arange(labels.size), test_size=0.5, stratify=labels, random_state=0
    )
    return probs[i_cal], labels[i_cal], probs[i_test], labels[i_test]


# ------------------------------------------------ histogram binning: hybrid
def _slow_hybrid_map(s, t, m=5.0):
    """One map of the default, row by row: n/200 bins, the union of the
    edges of n_bins - n_bins // 2 equal-width bins and of n_bins // 2
    equal-mass bins (an edge at the largest score dropped), right-closed
    bins, Beta prior of m samples at the bin's mean probability."""
    n_bins = max(1, s.size // 200)
    n_q = n_bins // 2
    if n_q < 2:
        edges = set(np.linspace(0.0, 1.0, n_bins + 1).tolist())
    else:
        edges = set(np.linspace(0.0, 1.0, n_bins - n_q + 1).tolist())
        # the documented rule of skcalib's quantile edges: np.quantile's
        # inverted CDF at the levels k / n_q, k = 1 .. n_q - 1
        levels = np.arange(1, n_q) / n_q
        for e in np.quantile(s, levels, method="inverted_cdf"):
            if e < s.max():
                edges.add(float(e))
    edges = np.array(sorted(edges))

    def which(x):
        for j in range(edges.size - 1):
            if x <= edges[j + 1]:
                return j
        return edges.size - 2

    bins = np.array([which(x) for x in s])
    table = []
    for j in range(edges.size - 1):
        inside = bins == j
        if not inside.any():
            table.append(0.5 * (edges[j] + edges[j + 1]))
            continue
        prior = s[inside].mean()
        table.append((t[inside].sum() + m * prior) / (inside.sum() + m))
    table = np.clip(table, 1e-12, 1 - 1e-12)
    return lambda x: table[[which(v) for v in x]]


@pytest.mark.parametrize(
    "name, n",
    [
        ("pycalib/mnist__AdaBoost.npz", 4000),
        ("splinecalib/calibset_2dplanes_727_rf.npz", None),
    ],
)
def test_default_hybrid_bins_match_a_slow_implementation(shared_loader, name, n):
    pc, yc, pt, _ = _split(shared_loader, name, n)
    cal = HistogramBinningCalibrator(score_type="probability")
    assert cal.strategy == "hybrid"
    if pc.shape[1] == 2:
        got = cal.fit(pc[:, 1], yc).predict_proba(pt[:, 1])[:, 1]
        ref = _slow_hybrid_map(pc[:, 1], (yc == 1).astype(float))(pt[:, 1])
    else:
        got = cal.fit(pc, yc).predict_proba(pt)
        ref = np.column_stack(
            [
                _slow_hybrid_map(pc[:, k], (yc == k).astype(float))(pt[:, k])
                for k in range(pc.shape[1])
            ]
        )
        ref /= ref.sum(axis=1, keepdims=True)
    assert max(e.size for e in cal.bin_edges_) > 3
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)


def test_hybrid_chunks_equal_in_memory_with_weights(shared_loader):
    pc, yc, _, _ = _split(shared_loader, "pycalib/mnist__AdaBoost.npz", 3000)
    w = np.random.default_rng(0).integers(0, 4, yc.size).astype(float)
    chunks = [
        (pc[a:b], yc[a:b], w[a:b]) for a, b in ((0, 400), (400, 1100), (1100, 1500))
    ]
    got = HistogramBinningCalibrator(score_type="probability")
    got.fit_chunks(chunks)
    ref = HistogramBinningCalibrator(score_type="probability").fit(
        pc, yc, sample_weight=w
    )
    assert got.n_bins_ == ref.n_bins_
    for a, b in zip(got.bin_edges_, ref.bin_edges_, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got.bin_proba_, ref.bin_proba_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_uniform_remains_reachable(shared_loader):
    pc, yc, _, _ = _split(shared_loader, "pycalib/mnist__AdaBoost.npz", 4000)
    cal = HistogramBinningCalibrator(strategy="uniform", score_type="probability")
    cal.fit(pc, yc)
    np.testing.assert_array_equal(cal.bin_edges_[0], np.linspace(0, 1, 11))


# ------------------------------------------------- scaling-binning: no split
def test_default_scaling_binning_is_the_authors_code_binary(shared_loader):
    uc = pytest.importorskip("calibration.calibrators")
    pc, yc, pt, yt = _split(shared_loader, "pycalib/pcam__mondrian_forest.npz")
    theirs = uc.PlattBinnerCalibrator(yc.size, 100)
    theirs.train_calibration(pc[:, 1], yc)
    ref = theirs.calibrate(pt[:, 1])
    cal = ScalingBinningCalibrator(score_type="probability")
    assert cal.split is None
    got = cal.fit(pc[:, 1], yc).predict_proba(pt[:, 1])[:, 1]
    # Platt then 100 equal-mass bins of its outputs, each the mean Platt
    # output; Platt's smoothed targets (theirs: plain labels, C=1e10) and
    # the quantile rule of the edges differ slightly (measured: 2.4e-3 on
    # average, test NLL within 0.5%)
    assert np.abs(got - ref).mean() < 4e-3
    rows = np.arange(yt.size)
    nll = -np.log(np.where(yt == 1, got, 1 - got)[rows]).mean()
    nll_ref = -np.log(np.where(yt == 1, ref, 1 - ref)[rows]).mean()
    assert nll == pytest.approx(nll_ref, rel=0.01)
    # tied forest scores merge bins: both take fewer than 100 values
    assert np.unique(got).size <= cal.bin_proba_[0].size < 100
    assert abs(np.unique(got).size - np.unique(ref).size) <= 5
    # the former default (scaler on one half, bins on the other) is reachable
    half = ScalingBinningCalibrator(split=0.5, random_state=0, score_type="probability")
    assert half.fit(pc[:, 1], yc).bin_counts_[0].sum() < 0.51 * yc.size
