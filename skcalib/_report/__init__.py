"""The report command, ``skcalib report`` (``python -m skcalib``).

One package for the command and its parts: :mod:`skcalib._report.cli` (the
command line, ``main``; the only module that prints), ``run`` (fit the
calibrators and score them out of fold), ``io`` and ``columns`` (read the
predictions), ``out`` (write the results) and ``html`` (the page and its
figures). Calibration over time: ``extras`` (the report's extra sections),
``windows`` (the monitor's looks and windows), ``times`` (``--time-col``),
``groups`` (``--group-col``), and ``skcalib monitor``: ``monitor_cli`` (the
command) and ``stream`` (the log read in chunks). Nothing is imported here,
so that ``skcalib --help`` stays quick.
"""
