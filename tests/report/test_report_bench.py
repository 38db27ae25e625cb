"""The data of ``python -m benchmarks report`` read back as the report reads
them (the benchmark measures the right thing)."""

import numpy as np
import pytest

from skcalib._report.io import read_csv
from skcalib._report.run import prepare_scores

bench = pytest.importorskip("benchmarks.bench_report")


def test_generated_csv_reads_as_rounded_probabilities(tmp_path):
    path = tmp_path / "p.csv"
    bench.generate(path, 2000, 4)
    pred = read_csv(path)
    assert pred.scores.shape == (2000, 4) and pred.scores.flags.c_contiguous
    assert pred.classes.tolist() == [0, 1, 2, 3]
    assert pred.columns == {0: "p_0", 1: "p_1", 2: "p_2", 3: "p_3"}
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(pred.scores, raw[:, 1:])
    np.testing.assert_array_equal(pred.labels, raw[:, 0].astype(int))
    scores, decision = prepare_scores(pred, "auto")
    assert decision.score_type == "probability"
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, atol=1e-12)
