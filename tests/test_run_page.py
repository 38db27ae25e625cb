"""doc/_ext/run_page.py: runs a page's runblocks and checks that the shown
blocks, copied in order, define every name they use."""

import subprocess
import sys
from pathlib import Path

import pytest

EXT_DIR = Path(__file__).resolve().parents[1] / "doc" / "_ext"
sys.path.insert(0, str(EXT_DIR))

from _runblock_check import ShownNames, page_blocks  # noqa: E402

PAGE = """\
Title
=====

.. runblock::
   :hide-code:

   secret = 3
   FIG = DOC_SOURCE_DIR

.. runblock::

   import numpy as np
   x = np.arange(secret)
   print(len(x), FIG)

.. include:: inc.rst
"""

INCLUDED = """\
.. note::

   .. runblock::
      :hide-output:

      def f(a, *rest, key=1):
          return [a + x + k for k in range(key)]

      total = sum(f(1)) + len([y for y in range(2)])
      print(total, min(x))
"""


@pytest.fixture
def doc_dir(tmp_path):
    (tmp_path / "conf.py").write_text("")
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "page.rst").write_text(PAGE)
    (tmp_path / "guide" / "inc.rst").write_text(INCLUDED)
    return tmp_path


def test_blocks_in_reading_order_with_includes(doc_dir):
    blocks = page_blocks(doc_dir / "guide" / "page.rst")
    assert [(b.path.name, b.line, b.shown) for b in blocks] == [
        ("page.rst", 4, False),
        ("page.rst", 10, True),
        ("inc.rst", 3, True),
    ]
    assert blocks[2].options == {"hide-output": ""}
    assert blocks[2].code.startswith("def f(a, *rest, key=1):")


def test_shown_block_names_defined_by_hidden_blocks_only():
    names = ShownNames()
    assert names.check("secret = 1\nFIG = DOC_SOURCE_DIR", shown=False) == []
    assert names.check("import numpy as np\nx = np.arange(secret, FIG)", True) == [
        "FIG",
        "secret",
    ]
    # bound by a shown block: usable later; builtins, arguments and
    # comprehension variables are not reported
    code = "def g(a, *b, c=1):\n    return [a + x + i for i in b]\nprint(g(1))"
    assert names.check(code, shown=True) == []


def test_run_page_reports_page_line_and_names(doc_dir):
    result = subprocess.run(
        [
            sys.executable,
            str(EXT_DIR / "run_page.py"),
            str(doc_dir / "guide" / "page.rst"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "page.rst:10: runblock shows code that uses FIG, secret" in result.stdout
    # the included block uses only names of shown blocks and runs
    assert "inc.rst" not in result.stdout


def test_run_page_passes_a_good_page(doc_dir):
    page = doc_dir / "guide" / "page.rst"
    page.write_text(PAGE.replace(":hide-code:", ":hide-output:"))
    result = subprocess.run(
        [sys.executable, str(EXT_DIR / "run_page.py"), str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1  # FIG comes from DOC_SOURCE_DIR, injected
    assert "uses DOC_SOURCE_DIR" in result.stdout
    page.write_text(
        PAGE.replace(":hide-code:", ":hide-output:").replace(
            "FIG = DOC_SOURCE_DIR", "FIG = 'fig'"
        )
    )
    result = subprocess.run(
        [sys.executable, str(EXT_DIR / "run_page.py"), str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
    assert "3 runblocks, ok" in result.stdout
