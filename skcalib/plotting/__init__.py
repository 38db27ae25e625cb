"""Plots of calibration (needs matplotlib: ``pip install skcalib[plot]``).

Importing this module does not import matplotlib; drawing does.
"""

from skcalib.plotting._grid import ReliabilityGridDisplay
from skcalib.plotting._groups import GroupReliabilityDisplay
from skcalib.plotting._multilabel_grid import MultilabelReliabilityGridDisplay
from skcalib.plotting._reliability import ReliabilityDisplay
from skcalib.plotting._risk_coverage import RiskCoverageDisplay

__all__ = [
    "GroupReliabilityDisplay",
    "MultilabelReliabilityGridDisplay",
    "ReliabilityDisplay",
    "ReliabilityGridDisplay",
    "RiskCoverageDisplay",
]
