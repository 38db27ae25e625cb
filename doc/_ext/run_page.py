"""Check documentation pages without a Sphinx build.

Usage::

    python doc/_ext/run_page.py doc/user_guide/PAGE.rst [PAGE.rst ...]

For each page, runs its ``.. runblock::`` blocks (and those of the ``.rst``
files it includes) in order in one namespace, as the ``skcalib_docs``
extension does at build time, and reports, with the file and the line of the
block:

* an exception or a Python warning raised by a block (a build error under
  ``sphinx -W``);
* a shown block that uses a name defined only by hidden blocks or injected
  by the extension (``DOC_SOURCE_DIR``): a reader who copies the shown blocks
  in order could not run it;
* a shown code or output line longer than the page width.

Exits 1 if any page has a problem. Output of the blocks is not printed
(``-v`` prints it).
"""

import argparse
import contextlib
import io
import os
import sys
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _runblock_check import (  # noqa: E402
    ShownNames,
    find_source_dir,
    initial_namespace,
    message,
    page_blocks,
)

#: Same as ``skcalib_docs.MAX_LINE`` (not imported: that needs Sphinx).
MAX_LINE = 74


def _run_block(block, namespace):
    """Run one block; return (printed output, problems)."""
    stdout = io.StringIO()
    problems = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(stdout):
                exec(
                    compile(block.code, f"{block.path}:{block.line}", "exec"), namespace
                )
        except Exception:
            problems.append("raised an exception:\n" + traceback.format_exc())
    problems += [f"emitted {w.category.__name__}: {w.message}" for w in caught]
    return stdout.getvalue().rstrip(), problems


def check_page(page, verbose=False):
    """Run the blocks of ``page``; return the list of problem lines."""
    source_dir = find_source_dir(page)
    namespace = initial_namespace(source_dir)
    shown_names = ShownNames()
    problems = []
    for block in page_blocks(page, source_dir):
        where = f"{block.path}:{block.line}"
        missing = shown_names.check(block.code, block.shown)
        if missing:
            problems.append(f"{where}: {message(missing)}")
        output, run_problems = _run_block(block, namespace)
        problems += [f"{where}: runblock {text}" for text in run_problems]
        if verbose and output:
            print(f"--- {where}\n{output}")
        shown = block.code.splitlines() if block.shown else []
        if "hide-output" not in block.options and "output-rst" not in block.options:
            shown += output.splitlines()
        too_long = [text for text in shown if len(text) > MAX_LINE]
        if too_long:
            problems.append(
                f"{where}: runblock line longer than {MAX_LINE} characters: "
                f"{too_long[0]!r}"
            )
    return problems


def _including_page(page):
    """The page that includes ``page`` (a section file such as
    ``binning_free_tests.rst`` runs only inside its page), else ``page``."""
    page = Path(page)
    for other in sorted(page.parent.glob("*.rst")):
        if other != page and f".. include:: {page.name}" in other.read_text(
            encoding="utf-8"
        ):
            print(f"{page}: included by {other.name}; checking that page")
            return other
    return page


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print block output"
    )
    args = parser.parse_args(argv)
    # as in doc/conf.py and a headless build
    os.environ.setdefault("SCIPY_ARRAY_API", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = 0
    for page in map(_including_page, args.pages):
        problems = check_page(page, args.verbose)
        n_blocks = len(page_blocks(page))
        status = "FAIL" if problems else "ok"
        print(f"{page}: {n_blocks} runblocks, {status}")
        for text in problems:
            print("  " + text.replace("\n", "\n    "))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
