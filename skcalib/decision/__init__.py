"""Decisions from calibrated probabilities and a cost matrix.

:func:`bayes_decisions` turns probabilities into the actions of least
expected cost (a class, or abstaining), :func:`expected_cost` measures the
mean cost of decisions, and :class:`BayesDecisionClassifier` does the same
after any classifier or skcalib calibrator, as an estimator.
"""

from skcalib.decision._bayes import bayes_decisions, expected_cost
from skcalib.decision._classifier import BayesDecisionClassifier

__all__ = ["BayesDecisionClassifier", "bayes_decisions", "expected_cost"]
