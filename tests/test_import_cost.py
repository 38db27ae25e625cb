"""What ``import skcalib`` loads (issue 31): a fresh process that imports
skcalib, or any of its public subpackages, must not load the optional heavy
dependencies (matplotlib, Dask, torch, numba) nor the scikit-learn and SciPy
submodules that only some estimators need inside ``fit``
(``sklearn.linear_model``: the default estimator of ``CalibratedClassifier``
and ``CrossConformalClassifier``; ``sklearn.model_selection``: their splits;
``scipy.signal``: the smooth ECE). Each of these is imported inside the
function that uses it. The test reads ``sys.modules``; the seconds are
measured by ``python -m benchmarks cold-start`` (``results/cold_start.md``).
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import skcalib

ROOT = Path(skcalib.__file__).resolve().parents[1]

NOT_ON_IMPORT = [
    "matplotlib",
    "dask",
    "torch",
    "numba",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "scipy.signal",
]

SUBPACKAGES = [
    "skcalib.calibration",
    "skcalib.conformal",
    "skcalib.datasets",
    "skcalib.decision",
    "skcalib.export",
    "skcalib.metrics",
    "skcalib.plotting",
    "skcalib.selection",
]


def _loaded_after(statement):
    """The modules of NOT_ON_IMPORT that a fresh process has after
    ``statement`` (skcalib imported from this checkout)."""
    code = (
        f"import json, sys\n{statement}\n"
        f"print(json.dumps([m for m in {NOT_ON_IMPORT!r} if m in sys.modules]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("SKCALIB_DISABLE_NUMBA", None)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tempfile.gettempdir(),  # PYTHONPATH decides which skcalib
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_skcalib_loads_none_of_the_heavy_modules():
    assert _loaded_after("import skcalib") == []


def test_every_public_name_and_subpackage_loads_none_of_them():
    statement = "from skcalib import *\nimport " + ", ".join(SUBPACKAGES)
    assert _loaded_after(statement) == []


@pytest.mark.parametrize("module", ["sklearn.linear_model", "sklearn.model_selection"])
def test_the_check_sees_a_module_that_is_loaded(module):
    # the probe itself: a module imported in the child is reported
    assert module in _loaded_after(f"import skcalib, {module}")


def test_lazily_imported_defaults_still_work():
    # CalibratedClassifier's and CrossConformalClassifier's default estimator
    # (LogisticRegression) and their splits are imported where they are
    # used: the defaults give what an explicit LogisticRegression() gives.
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from skcalib import CalibratedClassifier, CrossConformalClassifier

    X, y = make_classification(200, n_features=5, random_state=0)
    default = CalibratedClassifier(cv=3).fit(X, y)
    explicit = CalibratedClassifier(LogisticRegression(), cv=3).fit(X, y)
    assert all(
        type(pair.estimator) is LogisticRegression
        for pair in default.calibrated_classifiers_
    )
    np.testing.assert_array_equal(default.predict_proba(X), explicit.predict_proba(X))
    for cv in (3, "split"):
        default = CrossConformalClassifier(cv=cv, random_state=0).fit(X, y)
        explicit = CrossConformalClassifier(
            LogisticRegression(), cv=cv, random_state=0
        ).fit(X, y)
        assert [type(m) for m in default.estimators_] == [LogisticRegression] * (
            3 if cv == 3 else 1
        )
        np.testing.assert_array_equal(default.predict_set(X), explicit.predict_set(X))
