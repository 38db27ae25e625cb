"""Where a warning raised inside skcalib should point: at the user's call."""

import os
import sys

__all__ = []  # private module

#: The skcalib package folder (this file is in ``skcalib/_core/``).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_stacklevel():
    """``stacklevel`` for the caller of this function (which calls
    ``warnings.warn``) to point at the first frame outside skcalib,
    scikit-learn and joblib: the user's call."""
    import joblib
    import sklearn

    inside = (_PACKAGE,) + tuple(
        os.path.dirname(m.__file__) + os.sep for m in (sklearn, joblib)
    )
    frame = sys._getframe(1)  # our caller, which calls warnings.warn
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame = frame.f_back
        level += 1
    return level
