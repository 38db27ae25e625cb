"""What ``to_onnx`` and the skl2onnx converters share: which classes have a
graph (and why the others have none), the graph of a calibrator from its
scores, and the ``label`` output."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from skcalib._core.xp import to_numpy
from skcalib.calibration import CalibratedClassifier, VennAbersCalibrator
from skcalib.conformal import ConformalClassifier
from skcalib.export._onnx_maps import GRAPHS
from skcalib.export._onnx_sets import check_conformal
from skcalib.selection import AutoCalibrator

__all__ = []  # private module

#: What ``to_onnx`` says about the classes it refuses, and what to do instead.
REFUSED = {
    AutoCalibrator: (
        "it chooses among calibrators at fit; export the one it chose, "
        "`to_onnx(calibrator.best_calibrator_)` (fitted on all the "
        "calibration scores; it takes the same raw scores)"
    ),
    VennAbersCalibrator: (
        "its guarantee is the interval (p0, p1) of predict_interval, read at "
        "predict time from the calibration scores, which a graph of "
        "probabilities does not carry; IsotonicCalibrator gives an exportable "
        "monotone map"
    ),
    CalibratedClassifier: (
        "its predictions average the cross-fitted (classifier, calibrator) "
        "pairs of calibrated_classifiers_, which to_onnx does not combine; "
        "fit one calibrator in wrapper mode on held-out data (exportable), or "
        "use sklearn.calibration.CalibratedClassifierCV, which skl2onnx "
        "converts"
    ),
}


def import_onnx():
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ImportError(
            "to_onnx needs the onnx package: pip install 'skcalib[onnx]' "
            "(onnx, onnxruntime and skl2onnx)."
        ) from exc
    return onnx


def check_exportable(calibrator):
    """Raise ``TypeError`` for classes without a graph, ``NotFittedError``
    for an unfitted calibrator; returns the class name."""
    cls = type(calibrator)
    name = cls.__name__
    if cls in REFUSED:
        raise TypeError(f"{name} cannot be exported to ONNX: {REFUSED[cls]}.")
    if cls is not ConformalClassifier and cls not in GRAPHS:
        known = sorted(c.__name__ for c in (*GRAPHS, ConformalClassifier))
        raise TypeError(
            f"{name} cannot be exported to ONNX: no graph is written for it "
            f"(exportable: {', '.join(known)})."
        )
    check_is_fitted(calibrator)
    if cls is ConformalClassifier:
        if calibrator.estimator is not None:
            raise TypeError(
                f"{name} in wrapper mode cannot be exported to ONNX: export "
                "its classifier with skl2onnx, and a ConformalClassifier "
                "fitted on the classifier's scores (raw-score mode) with "
                "to_onnx."
            )
        check_conformal(calibrator)
        inner = calibrator.calibrator_
        if inner is not None and type(inner) not in GRAPHS:
            raise TypeError(
                f"{name} with calibrator={type(inner).__name__} cannot be exported "
                "to ONNX: its calibrator must be one of skcalib's exportable "
                "calibrators."
            )
    return name


def build_graph(g, calibrator, sc):
    """The probabilities of ``calibrator`` from :class:`GraphScores` ``sc``."""
    return GRAPHS[type(calibrator)](g, calibrator, sc)


def label_output(g, classes, proba):
    """``classes_[argmax(proba)]``: int64 for integer labels, bool, float64
    for float labels, strings for string labels."""
    classes = np.asarray(to_numpy(classes))
    kind = classes.dtype.kind
    if kind in "iu":
        table = classes.astype(np.int64)
    elif kind in "bf":
        table = classes.astype(bool if kind == "b" else np.float64)
    elif all(isinstance(c, str) for c in classes.tolist()):
        table = np.array([str(c) for c in classes], dtype=object)
    else:
        raise TypeError(
            "to_onnx writes integer, boolean, float or string class labels; "
            f"classes_ holds {classes.dtype} values {classes[:3].tolist()}."
        )
    if table.dtype == object:
        from onnx import numpy_helper

        name = g.fresh("classes")
        g.initializers.append(numpy_helper.from_array(table, name))
        g.declare(name, object)
        return g.gather(name, g.argmax(proba))
    return g.gather(table, g.argmax(proba))
