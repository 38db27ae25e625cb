"""An opt-in cache of the scores of a wrapped classifier, keyed on content.

In wrapper mode a calibrator reads its scores by calling the prefit
classifier's ``decision_function`` or ``predict_proba``. A grid search over
the calibrator's parameters calls it again for every candidate on the same
folds; :class:`ScoreCache` computes each distinct input's scores once.

The key says everything the scores depend on, so that a hit is the array a
new call would return:

* the classifier's whole state: a SHA-256 of its pickle (its class,
  parameters and fitted attributes; a refit, a ``set_params`` or an
  in-place change of a fitted array gives another key), computed once per
  state of the classifier, not per call (see :class:`_ModelKeys`);
* the content of ``X``: SHA-256 of the bytes of a numpy array with its
  dtype, shape and memory order (a change in place gives another key),
  a SHA-256 of the pickle of anything else (DataFrames with their
  columns, sparse matrices, lists);
* the method name and scikit-learn's global configuration.

The same key from two objects (a pickled copy, say) shares one entry: their
scores are the same. Keys are content, not ``id()``: an address that Python
reuses for a new object never finds the old object's scores.
"""

import hashlib
import itertools
import pickle
import threading
from collections import OrderedDict

import numpy as np
from sklearn import get_config

from skcalib._core.score_rows import RowBlock, assemble, row_bytes, row_hashes

__all__ = ["ScoreCache", "active_score_cache", "cached_scores"]

#: The cache that :func:`cached_scores` uses now (None: no caching). Set by
#: ``with ScoreCache(...)`` and restored on exit; process-wide, so that
#: threads of a search see it (processes do not: each has its own module).
_ACTIVE = [None]
_ACTIVE_LOCK = threading.Lock()


class ScoreCache:
    """Compute each distinct input's scores of a wrapped classifier once.

    Inside ``with ScoreCache():`` every skcalib calibrator in wrapper mode
    (``estimator=clf``) looks the scores of ``clf`` on ``X`` up before it
    calls ``clf.decision_function(X)`` or ``clf.predict_proba(X)``, and keeps
    those it computes, so that a :class:`~sklearn.model_selection.GridSearchCV`
    over the calibrator's parameters predicts each fold once instead of once
    per candidate. Results are identical with or without the cache.

    An entry is found only for the same classifier state and the same input
    content: the key holds a SHA-256 of the classifier's pickle (class,
    parameters and fitted attributes), a SHA-256 of the bytes of ``X`` (with
    dtype, shape and memory order; of its pickle for DataFrames and other
    inputs), the method name and scikit-learn's configuration. A refit
    classifier, a changed parameter or an ``X`` changed in place gives a new
    key, never the old scores.

    Parameters
    ----------
    max_bytes : int, default=268435456
        Most bytes of scores held (256 MiB); the least recently used entries
        go first. An array larger than this is not kept. ``0`` switches
        caching off inside the block (nothing is hashed).
    reuse_rows : bool, default=False
        Also find the rows of ``X`` among the rows of earlier inputs (2-D
        numpy arrays), and predict only the rows not seen yet, in one call.
        The folds of a search are then predicted once in all: the first
        fold's train and test parts hold every row. Assumes what holds for
        scikit-learn's tree ensembles but not for every model: a row's
        scores depend on that row only and are the same bits in any batch
        (a matrix product may round a row differently in another batch;
        a step that standardises each batch by its own mean breaks it
        outright). Rows are matched by a 64-bit hash and then byte for
        byte; the rows are kept (their bytes count in ``max_bytes``).
    model_check : {"attributes", "pickle"}, default="attributes"
        How a classifier seen before is known to be unchanged. ``"pickle"``:
        its pickle is hashed again on every call (a few milliseconds for
        200 boosted trees, more than predicting a fold of a small search).
        ``"attributes"``: the pickle's hash is kept with a snapshot of the
        classifier's attributes, taken through every estimator, list,
        tuple and dict it holds (the objects, by identity, held so that no
        new object can take their address, and a SHA-256 of every numpy
        array met); a call whose snapshot matches reuses the hash. See the
        Notes for what this does not see.

    Attributes
    ----------
    hits : int
        Calls answered from the cache.
    misses : int
        Calls looked up and not found (their scores were computed).

    See Also
    --------
    sklearn.pipeline.Pipeline : Its ``memory=`` caches fitted transformers.

    Notes
    -----
    The cache is off unless a ``with`` block turns it on, because only
    what a classifier's pickle holds is in the key: a classifier whose
    predictions depend on anything else (a global variable read by a
    function it calls, randomness at predict time, an external model server)
    could get outdated or frozen scores from a cache that is always on.
    Inside the block, use it for classifiers whose predictions are a
    function of their state and ``X``, as they are for scikit-learn's.

    The block is process-wide: threads (``n_jobs`` with the threading
    backend) share it; worker processes (the default ``loky`` backend with
    ``n_jobs > 1``) do not see it. With the cache, the calibrator fits are
    what remains, and they are fast, so ``n_jobs=1`` is usually quickest.

    A classifier that cannot be pickled (a lambda in a step, say) is not
    cached: its scores are computed on every call, as without the cache.
    The cost of a lookup is one SHA-256 of ``X`` (about 0.7 ms for 6000 x
    20 float64) and, with ``model_check="attributes"``, one snapshot of the
    classifier (about 0.1 ms for 200 boosted trees, against 3 to 7 ms for
    hashing its pickle, which is done once per state).

    What ``model_check="attributes"`` sees: any assignment of an attribute
    of the classifier or of an estimator, list, tuple or dict it holds (a
    refit, ``partial_fit``, ``set_params``, also of a nested step: the
    attribute then holds another object), and any change in place of a
    numpy array held that way (``clf.coef_ *= 2``; a dict or list grown in
    place). What it does not see: a change in place inside another kind of
    object held by the classifier, for example writing into the node
    arrays of one tree of a :class:`~sklearn.ensemble.RandomForestClassifier`
    (``clf.estimators_[0].tree_.value[...] = ...``) or of a
    ``HistGradientBoostingClassifier``'s predictors. scikit-learn never
    does that (a refit builds new trees); code that does must use
    ``model_check="pickle"``, or call :meth:`clear`, inside the block.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skcalib import HistogramBinningCalibrator
    >>> from skcalib import ScoreCache
    >>> X, y = make_classification(2000, random_state=0)
    >>> clf = LogisticRegression().fit(X[:1000], y[:1000])
    >>> search = GridSearchCV(
    ...     HistogramBinningCalibrator(estimator=clf), {"n_bins": [5, 10, 20]}
    ... )
    >>> with ScoreCache() as cache:
    ...     _ = search.fit(X[1000:], y[1000:])
    >>> cache.misses  # 5 folds x (train, test) + the refit
    11
    >>> cache.hits
    20
    """

    def __init__(
        self, max_bytes=256 * 2**20, *, reuse_rows=False, model_check="attributes"
    ):
        self.max_bytes = max_bytes
        self.reuse_rows = reuse_rows
        self.model_check = model_check
        self._models = _ModelKeys()
        self.hits = 0
        self.misses = 0
        self._entries = OrderedDict()
        self._groups = {}
        self._serial = itertools.count()
        self._nbytes = 0
        self._lock = threading.Lock()
        self._previous = []

    def __enter__(self):
        if int(self.max_bytes) < 0:
            raise ValueError(f"max_bytes must be >= 0, got {self.max_bytes!r}.")
        if self.model_check not in ("attributes", "pickle"):
            raise ValueError(
                "model_check must be 'attributes' or 'pickle', got "
                f"{self.model_check!r}."
            )
        with _ACTIVE_LOCK:
            self._previous.append(_ACTIVE[0])
            _ACTIVE[0] = self
        return self

    def __exit__(self, *exc_info):
        with _ACTIVE_LOCK:
            _ACTIVE[0] = self._previous.pop()
        return False

    def __len__(self):
        return len(self._entries)

    def __getstate__(self):
        # Entries and the lock stay in this process; a copy starts empty.
        return {
            "max_bytes": self.max_bytes,
            "reuse_rows": self.reuse_rows,
            "model_check": self.model_check,
        }

    def __setstate__(self, state):
        max_bytes = state.pop("max_bytes")
        self.__init__(max_bytes, **state)

    @property
    def nbytes(self):
        """Return the bytes of scores held now.

        Returns
        -------
        nbytes : int
        """
        return self._nbytes

    def clear(self):
        """Drop every entry and reset the counters.

        Returns
        -------
        self : ScoreCache
            The emptied cache.
        """
        with self._lock:
            self._entries.clear()
            self._groups.clear()
            self._models.clear()
            self._nbytes = 0
            self.hits = self.misses = 0
        return self

    def scores(self, estimator, method, X):
        """Return ``getattr(estimator, method)(X)``, computed at most once.

        Parameters
        ----------
        estimator : object
            A fitted classifier.
        method : str
            ``"decision_function"`` or ``"predict_proba"``.
        X : array-like
            The classifier's input.

        Returns
        -------
        scores : ndarray
            The method's result; an array from the cache is read-only.
        """
        predict = getattr(estimator, method)
        model = None
        if self.max_bytes:
            memo = self._models if self.model_check == "attributes" else None
            model = _model_key(estimator, method, memo)
        if model is None:
            return predict(X)
        if self.reuse_rows and (rows := row_bytes(X)) is not None:
            return self._row_scores(model, predict, X, rows)
        key = (model, content_hash(X))
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        scores = predict(X)
        if _storable(scores):
            kept = scores.copy()  # the caller owns (and may change) scores
            kept.flags.writeable = False
            self._store(key, kept)
        return scores

    def _row_scores(self, model, predict, X, rows):
        """The ``reuse_rows`` lookup: rows found in earlier blocks, the
        others predicted in one call on ``X[missing]`` and kept as a block."""
        group = (model, X.dtype.str, X.shape[1])
        hashes = row_hashes(rows)
        with self._lock:
            blocks = [(k, self._entries[k]) for k in self._groups.get(group, ())]
        todo, found = np.arange(len(rows)), []
        for key, block in blocks:
            q, c = block.find(rows, hashes, todo)
            if q.size:
                found.append((q, block, c))
                todo = np.setdiff1d(todo, q, assume_unique=True)
                with self._lock:
                    if key in self._entries:
                        self._entries.move_to_end(key)
            if not todo.size:
                break
        with self._lock:
            self.hits += not todo.size
            self.misses += bool(todo.size)
        if not found:
            new = predict(X)
        elif todo.size:
            new = predict(X[todo])
        else:
            new = None
        if new is not None and not _storable(new):
            return new if not found else predict(X)
        if new is not None:
            self._store(
                ("rows", group, next(self._serial)),
                RowBlock.of(rows[todo], hashes[todo], new),
                group=group,
            )
        if not found:
            return new
        out = assemble(len(rows), found, todo, new)
        return predict(X) if out is None else out

    def _store(self, key, value, group=None):
        """Keep ``value`` (a read-only array or a :class:`RowBlock`) unless
        it is larger than ``max_bytes``, evicting the least recently used
        entries."""
        if value.nbytes > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self._nbytes += value.nbytes
            if group is not None:
                self._groups.setdefault(group, []).append(key)
            while self._nbytes > self.max_bytes:
                old_key, old = self._entries.popitem(last=False)
                self._nbytes -= old.nbytes
                if isinstance(old, RowBlock):
                    keys = self._groups[old_key[1]]
                    keys.remove(old_key)
                    if not keys:
                        del self._groups[old_key[1]]


def active_score_cache():
    """The :class:`ScoreCache` of the innermost open ``with`` block, or None.

    Examples
    --------
    >>> from skcalib._core.score_cache import ScoreCache, active_score_cache
    >>> active_score_cache() is None
    True
    >>> with ScoreCache() as cache:
    ...     active_score_cache() is cache
    True
    """
    return _ACTIVE[0]


def cached_scores(estimator, method, X):
    """``getattr(estimator, method)(X)`` through the active cache, if any."""
    cache = _ACTIVE[0]
    if cache is None:
        return getattr(estimator, method)(X)
    return cache.scores(estimator, method, X)


def _model_key(estimator, method, memo=None):
    """What the scores depend on besides ``X``: the classifier's state, the
    method and scikit-learn's configuration; None when the classifier
    cannot be hashed (it does not pickle). ``memo``: a :class:`_ModelKeys`
    that knows the state's hash while a snapshot says it is unchanged."""
    try:
        model = pickle_hash(estimator) if memo is None else memo.key(estimator)
    except Exception:  # anything pickling raises: no caching
        return None
    return (model, method, repr(sorted(get_config().items())))


class _ModelKeys:
    """The pickle hash of each classifier seen, kept while its snapshot
    (:func:`state_snapshot`) is unchanged: a search pays one hash of the
    model per state, not one per call. The classifiers and the objects of
    their snapshots are held (the last :attr:`size` classifiers), so that
    no new object can take an address the snapshot compares."""

    size = 8

    def __init__(self):
        self._keys = OrderedDict()
        self._lock = threading.Lock()

    def clear(self):
        with self._lock:
            self._keys.clear()

    def key(self, estimator):
        held, digest = state_snapshot(estimator)
        with self._lock:
            found = self._keys.get(id(estimator))
        if (
            found is not None
            and found[0] is estimator
            and found[2] == digest
            and len(found[1]) == len(held)
            and all(a is b for a, b in zip(found[1], held, strict=True))
        ):
            with self._lock:
                self._keys.move_to_end(id(estimator), last=True)
            return found[3]
        key = pickle_hash(estimator)
        with self._lock:
            self._keys[id(estimator)] = (estimator, held, digest, key)
            self._keys.move_to_end(id(estimator), last=True)
            while len(self._keys) > self.size:
                self._keys.popitem(last=False)
        return key


def state_snapshot(estimator):
    """``(held, digest)``: the objects reachable from ``estimator`` through
    the attributes of estimators (objects with ``get_params``) and the
    items of lists, tuples and dicts, in a fixed order, and a SHA-256 of
    every numpy array among them (dtype, shape and bytes).

    Any assignment along those paths puts another object in ``held``; any
    change in place of such an array changes ``digest``. Other objects
    are compared by identity only (their contents are not walked).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib._core.score_cache import state_snapshot
    >>> clf = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> held, digest = state_snapshot(clf)
    >>> clf.coef_ *= 2  # in place: the same objects, another digest
    >>> state_snapshot(clf)[1] == digest
    False
    """
    held, seen, parts = [], set(), []
    stack = [estimator]
    walked = _WALKED
    while stack:
        obj = stack.pop()
        held.append(obj)
        kind = type(obj)
        if kind in _ATOMS or id(obj) in seen:
            continue
        seen.add(id(obj))
        how = walked.get(kind)
        if how is None:
            how = walked[kind] = _how_to_walk(kind)
        if how == 1:  # list, tuple
            stack.extend(obj)
        elif how == 2:  # dict
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif how == 3:  # estimator
            state = vars(obj)
            stack.extend(state.keys())
            stack.extend(state.values())
        elif how == 4:  # numpy array
            parts.append(f"{obj.dtype.str}{obj.shape}".encode())
            if obj.dtype.hasobject:
                stack.extend(obj.reshape(-1).tolist())
            else:
                parts.append(np.ascontiguousarray(obj).reshape(-1).view(np.uint8))
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return held, digest.digest()


#: Types compared by identity without a look inside (no state to walk).
_ATOMS = frozenset({str, int, float, bool, bytes, complex, type(None)})

#: How :func:`state_snapshot` walks each type met so far (0: not at all).
_WALKED = {}


def _how_to_walk(kind):
    if issubclass(kind, (list, tuple)):
        return 1
    if issubclass(kind, dict):
        return 2
    if kind is np.ndarray:
        return 4
    if hasattr(kind, "get_params") and "__dict__" in dir(kind):
        return 3
    return 0


def _storable(scores):
    """Scores the cache keeps: float numpy arrays (anything else a method
    returns is given back as it is, uncached)."""
    return type(scores) is np.ndarray and scores.dtype.kind == "f"


def pickle_hash(obj):
    """SHA-256 of the pickle of ``obj`` (protocol 5), its array buffers
    hashed where they lie (out of band: no copy of a model's arrays).

    Equal pickles rebuild equal objects, so equal hashes mean equal state;
    the same state may pickle differently (a set built in another order),
    which only costs a miss. Raises what pickling raises.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._core.score_cache import pickle_hash
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1])
    >>> clf = LogisticRegression().fit(X, y)
    >>> before = pickle_hash(clf)
    >>> pickle_hash(clf) == before
    True
    >>> pickle_hash(clf.fit(X[::-1] * 2, y[::-1])) == before  # refit in place
    False
    """
    buffers = []
    stream = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    digest = hashlib.sha256(stream)
    for buffer in buffers:
        digest.update(buffer.raw())
    return digest.hexdigest()


def _is_data_frame(X):
    return type(X).__module__.partition(".")[0] == "pandas" and hasattr(X, "iloc")


def _frame_hash(frame):
    """A DataFrame's hash from its column names, dtypes, index and each
    column's values: a frame's pickle is not the same for equal frames on
    every pandas (2.0 pickles a copy's block layout differently)."""
    if frame.ndim != 2:
        return pickle_hash(frame)
    head = (list(frame.columns), [str(d) for d in frame.dtypes], frame.shape)
    digest = hashlib.sha256(pickle_hash(head).encode())
    digest.update(pickle_hash(frame.index.to_numpy()).encode())
    for i in range(frame.shape[1]):
        column = np.ascontiguousarray(frame.iloc[:, i].to_numpy())
        digest.update(content_hash(column).encode())
    return digest.hexdigest()


def content_hash(X):
    """A hash of the content of ``X``: equal for equal content, different
    after any change in place.

    A plain numpy array of fixed-size items is hashed with SHA-256 over its
    bytes (no copy when C- or Fortran-contiguous), with its dtype, shape
    and memory order (a BLAS product may round differently on the two
    layouts). A DataFrame is hashed from its column names, dtypes, index
    and column values. Anything else (sparse matrices, lists, object
    arrays, array subclasses) goes to :func:`pickle_hash`.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._core.score_cache import content_hash
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> content_hash(a) == content_hash(a.copy())
    True
    >>> before = content_hash(a)
    >>> a[0, 0] = 1.0
    >>> content_hash(a) == before
    False
    """
    if _is_data_frame(X):
        return "frame:" + _frame_hash(X)
    if type(X) is not np.ndarray or X.dtype.hasobject:
        return "pickle:" + pickle_hash(X)
    if X.flags.c_contiguous:
        order, buffer = "C", X
    elif X.flags.f_contiguous:
        order, buffer = "F", X.T
    else:  # strided: hashed as a copy, keyed apart from contiguous arrays
        order, buffer = "strided", np.ascontiguousarray(X)
    digest = hashlib.sha256(repr((X.dtype.str, X.shape, order)).encode())
    digest.update(buffer.reshape(-1).view(np.uint8))
    return "sha256:" + digest.hexdigest()
