"""The report command, ``skcalib report`` (``python -m skcalib``).

One package for the command and its parts: :mod:`skcalib._report.cli` (the
command line, ``main``; the only module that prints), ``run`` (fit the
calibrators and score them out of fold), ``io`` and ``columns`` (read the
predictions), ``out`` (write the results) and ``html`` (the page and its
figure). Nothing is imported here, so that ``skcalib --help`` stays quick.
"""
