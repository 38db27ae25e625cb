"""Built-in prediction sets and synthetic scores with a known calibration map."""

from skcalib.datasets._builtin import list_datasets, load_predictions
from skcalib.datasets._synthetic import make_miscalibrated_scores

__all__ = ["list_datasets", "load_predictions", "make_miscalibrated_scores"]
