"""Plots of calibration (needs matplotlib: ``pip install skcalib[plot]``).

Importing this module does not import matplotlib; drawing does.
"""

from skcalib.plotting._reliability import ReliabilityDisplay

__all__ = ["ReliabilityDisplay"]
