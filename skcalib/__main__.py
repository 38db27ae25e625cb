"""``python -m skcalib [report ...]``: see :mod:`skcalib._cli`."""

import sys

from skcalib._cli import main

if __name__ == "__main__":
    sys.exit(main())
