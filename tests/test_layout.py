"""The test folders are laid out like the package, under names that no
installed module has: tests/ is on ``sys.path`` (pyproject's ``pythonpath``),
so a folder ``tests/calibration/`` shadowed uncertainty-calibration's
``calibration`` module and ``pytest.importorskip("calibration")`` imported
the folder instead of skipping."""

import importlib.util
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FOLDERS = sorted(
    p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))
)


def test_there_are_test_folders():
    assert {"calibrators", "metrics", "plotting"} <= set(FOLDERS)


@pytest.mark.parametrize("name", FOLDERS)
def test_no_test_folder_shadows_an_importable_module(name, monkeypatch):
    kept = [p for p in sys.path if Path(p or ".").resolve() != TESTS]
    monkeypatch.setattr(sys, "path", kept)
    monkeypatch.delitem(sys.modules, name, raising=False)
    assert importlib.util.find_spec(name) is None, (
        f"tests/{name}/ has the name of an importable module; rename the folder"
    )
