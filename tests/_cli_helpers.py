"""Running the command line in the test process (faster than a subprocess)."""

from skcalib._report.cli import main


def run_cli(capsys, *args):
    """``main(args)``: its exit code (argparse usage errors included), and
    the captured stdout and stderr."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
