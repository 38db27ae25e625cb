import sys

import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    """Close every figure a test opened (nothing to do without matplotlib)."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
