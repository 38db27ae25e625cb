"""``python -m skcalib [report ...]``: see :mod:`skcalib._report.cli`."""

import sys

from skcalib._report.cli import main

if __name__ == "__main__":
    sys.exit(main())
