"""Pages of the documentation that a newcomer runs first: their code works
with what the README's main command installs (``python -m pip install .``:
no matplotlib)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "doc"
sys.path.insert(0, str(DOC / "_ext"))

from _runblock_check import page_blocks  # noqa: E402

#: Makes ``import matplotlib`` fail, as after ``pip install .``.
NO_MATPLOTLIB = "import sys\nsys.modules['matplotlib'] = None\n"


def test_landing_example_runs_without_matplotlib():
    """The landing page's first example (the ECE before and after
    temperature scaling) runs with matplotlib missing; the plot comes in a
    later block, after the page says to install ``.[plot]``."""
    pytest.importorskip("skcalib.datasets")
    text = (DOC / "index.rst").read_text(encoding="utf-8")
    blocks = [b for b in page_blocks(DOC / "index.rst") if b.shown]
    first, plot = blocks[0], blocks[1]
    assert "plotting" not in first.code and "matplotlib" not in first.code
    assert "skcalib.plotting" in plot.code
    # the page names the extra before the block that needs it
    assert text.index('pip install ".[plot]"') < text.index(plot.code.splitlines()[0])
    res = subprocess.run(
        [sys.executable, "-c", NO_MATPLOTLIB + first.code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    before, after = map(
        float, re.fullmatch(r"ECE (\S+) -> (\S+)\n", res.stdout).groups()
    )
    assert after < before
    # and the plotting block does need matplotlib (the test has teeth)
    res = subprocess.run(
        [sys.executable, "-c", NO_MATPLOTLIB + first.code + "\n" + plot.code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode != 0 and "matplotlib" in res.stderr


from _report_tables import key_columns, split_table, split_wide_tables  # noqa: E402

TABLE = [
    "| rank | method | NLL | note |",
    "| ---: | :--- | ---: | :--- |",
    "| 1 | skcalib Platt | 0.51 |  |",
    "| 2 | uncalibrated | 0.70 | binary only |",
]


def test_a_wide_report_table_is_split_repeating_its_key_column():
    # 10 px a character, no padding: rank 40 (its header), method 120
    # ("uncalibrated"), NLL 40 ("0.51"), note 60 ("binary"): 260 px
    sizes = {"char_px": 10, "cell_px": 0}
    assert split_table(TABLE, column=260, **sizes) == TABLE
    # in 230 px: the method (the first text column) names the rows and is
    # repeated; rank + method + NLL = 200 px, then method + note = 180 px
    assert split_table(TABLE, column=230, **sizes) == [
        "| rank | method | NLL |",
        "| ---: | :--- | ---: |",
        "| 1 | skcalib Platt | 0.51 |",
        "| 2 | uncalibrated | 0.70 |",
        "",
        "| method | note |",
        "| :--- | :--- |",
        "| skcalib Platt |  |",
        "| uncalibrated | binary only |",
    ]
    text = "# Report\n\nSome text | with a bar.\n\n" + "\n".join(TABLE) + "\n\nEnd.\n"
    out = split_wide_tables(text, column=230, **sizes)
    assert out.startswith("# Report\n\nSome text | with a bar.\n\n| rank | method")
    assert out.endswith("| uncalibrated | binary only |\n\nEnd.\n")
    assert split_wide_tables(text, column=260, **sizes) == text


def test_key_columns():
    # two leading text columns both name the row when they fit with the
    # widest other column; else only the first
    delimiter = [":---", ":---", "---:"]
    assert key_columns(delimiter, [100, 100, 50], column=250) == [0, 1]
    assert key_columns(delimiter, [100, 100, 51], column=250) == [0]
    assert key_columns(["---:", ":---", "---:"], [40, 120, 40], 500) == [1]
    assert key_columns(["---:", "---:"], [40, 40], 500) == [0]
