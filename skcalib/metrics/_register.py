"""The opt-in that makes skcalib's scorer names valid strings in scikit-learn.

scikit-learn has no public scorer registry. :func:`register_scorers` adds
skcalib's scorers to the table scikit-learn's ``get_scorer`` reads and adds
their names to the ``StrOptions`` sets its parameter validation built from
``get_scorer_names()`` at import time; :func:`unregister_scorers` takes them
out again. Nothing happens on import: only a call changes scikit-learn.
"""

from skcalib._core.compat import scoring_name_option_sets, sklearn_scorer_table
from skcalib.metrics._scorer import _SCORERS

__all__ = ["register_scorers", "unregister_scorers"]

#: skcalib's names that scikit-learn also defines (the same quantities, see
#: :func:`get_scorer`): scikit-learn's own scorers stay under them.
_SKLEARN_NAMES = ("neg_brier_score", "neg_log_loss")

#: name -> the scorer this module put in scikit-learn's table.
_REGISTERED = {}


def _check_names(names):
    if names is None:
        return [name for name in _SCORERS if name not in _SKLEARN_NAMES]
    names = [names] if isinstance(names, str) else list(names)
    unknown = sorted(set(names) - set(_SCORERS))
    if unknown:
        raise ValueError(
            f"{unknown} are not skcalib scorer names; they are {sorted(_SCORERS)}."
        )
    return names


def register_scorers(names=None):
    """Make skcalib's scorer names valid ``scoring`` strings in scikit-learn.

    After this call ``GridSearchCV(..., scoring="neg_expected_calibration_error")``,
    ``cross_validate(..., scoring=[...])``, ``sklearn.metrics.get_scorer``,
    ``check_scoring`` and ``get_scorer_names`` know the names. An explicit
    opt-in: importing skcalib never changes scikit-learn. Calling it again
    does nothing; :func:`unregister_scorers` undoes it.

    Parameters
    ----------
    names : str or list of str, default=None
        Which of :func:`get_scorer_names`' skcalib names to register. None
        registers the names scikit-learn does not have:
        ``"neg_expected_calibration_error"``,
        ``"neg_maximum_calibration_error"``,
        ``"neg_classwise_calibration_error"``, ``"neg_aurc"``,
        ``"neg_smooth_calibration_error"`` and the multi-label
        ``"neg_multilabel_calibration_error"``,
        ``"neg_multilabel_brier_score"`` and ``"neg_multilabel_log_loss"``.
        ``"neg_brier_score"`` and ``"neg_log_loss"`` are scikit-learn's own
        and stay so.

    Returns
    -------
    names : list of str
        The names registered, sorted.

    Raises
    ------
    ValueError
        If scikit-learn already has a different scorer under one of the
        names (its own, or another library's); nothing is registered then.
    RuntimeError
        If this scikit-learn release keeps its scorer names or validates
        ``scoring`` in a way skcalib does not know; the message names the
        version. Pass ``scoring=skcalib.metrics.get_scorer(name)`` instead.

    See Also
    --------
    unregister_scorers : Undo it.
    get_scorer : The scorers by name without touching scikit-learn.

    Notes
    -----
    scikit-learn validates a ``scoring`` string against option sets made
    from ``get_scorer_names()`` when each module was imported. This function
    adds the scorers to the dict ``sklearn.metrics.get_scorer`` reads and the
    names to every such set of every loaded class and function; modules
    imported afterwards build their sets from the updated names.
    ``sklearn.metrics.get_scorer(name)`` then returns a copy of the same
    scorer as :func:`skcalib.metrics.get_scorer`, so a search gives the same
    results with the string as with the object.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_validate
    >>> from skcalib.metrics import register_scorers, unregister_scorers
    >>> X, y = make_classification(n_samples=300, random_state=0)
    >>> register_scorers()
    ['neg_aurc', 'neg_classwise_calibration_error',
     'neg_expected_calibration_error', 'neg_maximum_calibration_error',
     'neg_multilabel_brier_score', 'neg_multilabel_calibration_error',
     'neg_multilabel_log_loss', 'neg_smooth_calibration_error']
    >>> out = cross_validate(LogisticRegression(), X, y, cv=3,
    ...                      scoring=["neg_expected_calibration_error", "accuracy"])
    >>> bool((out["test_neg_expected_calibration_error"] <= 0).all())
    True
    >>> unregister_scorers()
    ['neg_aurc', 'neg_classwise_calibration_error',
     'neg_expected_calibration_error', 'neg_maximum_calibration_error',
     'neg_multilabel_brier_score', 'neg_multilabel_calibration_error',
     'neg_multilabel_log_loss', 'neg_smooth_calibration_error']
    """
    names = _check_names(names)
    table = sklearn_scorer_table()
    option_sets = scoring_name_option_sets()
    for name in names:
        held = table.get(name)
        if held is not None and held is not _REGISTERED.get(name):
            raise ValueError(
                f"scikit-learn already has a scorer named {name!r} ({held!r}); "
                "skcalib does not overwrite it. Pass "
                f"scoring=skcalib.metrics.get_scorer({name!r}) instead."
            )
    for name in names:
        _REGISTERED[name] = table[name] = _SCORERS[name]
        for options in option_sets:
            options.add(name)
    return sorted(names)


def unregister_scorers(names=None):
    """Take the names :func:`register_scorers` added out of scikit-learn again.

    Parameters
    ----------
    names : str or list of str, default=None
        Which names; None takes out every name skcalib registered. A name
        skcalib did not register is left alone.

    Returns
    -------
    names : list of str
        The names taken out, sorted.

    See Also
    --------
    register_scorers : The opt-in.

    Examples
    --------
    >>> import sklearn.metrics
    >>> from skcalib.metrics import register_scorers, unregister_scorers
    >>> register_scorers("neg_aurc")
    ['neg_aurc']
    >>> "neg_aurc" in sklearn.metrics.get_scorer_names()
    True
    >>> unregister_scorers()
    ['neg_aurc']
    >>> "neg_aurc" in sklearn.metrics.get_scorer_names()
    False
    """
    names = list(_REGISTERED) if names is None else _check_names(names)
    names = [name for name in names if name in _REGISTERED]
    if not names:
        return []
    table = sklearn_scorer_table()
    for name in names:
        if table.get(name) is _REGISTERED.pop(name):
            del table[name]
    for options in scoring_name_option_sets():
        options.difference_update(names)
    return sorted(names)
