"""numpydoc validation of every public docstring.

Objects are discovered (``tests/_discovery.py``) from the ``__all__`` of
``skcalib``, ``skcalib.metrics``, ``skcalib.plotting``, ``skcalib.datasets``,
``skcalib.export`` and ``skcalib.cluster``, with the public methods and
properties that skcalib defines on each public class (each function once,
under the first public path that reaches it). Scorer instances carry their
class' docstring and are checked through ``ProbaScorer``.

The checks (numpydoc codes): GL08 docstring present; PR01 every parameter
documented, PR02 no documented parameter missing from the signature; RT01
a Returns section; SS01-SS05 one-line summary that starts with a capital
letter, ends with a period, has no leading whitespace and starts with an
infinitive verb; EX01 an Examples section (classes and functions, not
methods). The fields of a dataclass documented under Attributes count as
documented parameters (they are the same names).
"""

import dataclasses
import importlib
import inspect

import pytest
from _discovery import public_members

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import ClassDoc  # noqa: E402

MODULES = (
    "skcalib",
    "skcalib.metrics",
    "skcalib.plotting",
    "skcalib.datasets",
    "skcalib.export",
    "skcalib.cluster",
)
CHECKS = {"GL08", "PR01", "PR02", "RT01", "SS01", "SS02", "SS03", "SS04", "SS05"}
CHECKS_WITH_EXAMPLES = CHECKS | {"EX01"}

_SS05 = "summary is a noun phrase, not an infinitive verb"
_EX01 = "result type without an Examples section"
#: Known failures, to be fixed at their source, then removed from here (the
#: xfail is strict: a fixed docstring fails this list until it is removed).
#: Keys are the test ids (the public path), values the numpydoc codes.
KNOWN_FAILURES = {}


class KnownDocstringFailure(AssertionError):
    """The failure listed in :data:`KNOWN_FAILURES`, exactly."""


def _own_members(cls):
    """Public methods and property getters that skcalib defines on ``cls``."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        elif isinstance(member, property):
            member = member.fget
        if not inspect.isfunction(member):
            continue
        if (member.__module__ or "").startswith("skcalib"):
            yield name, member


def public_objects():
    """``(path, object, is_method)`` of every public object, each once."""
    seen, found = set(), []

    def add(path, obj, is_method):
        if id(obj) not in seen:
            seen.add(id(obj))
            found.append((path, obj, is_method))

    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name, obj in public_members(module):
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # __version__, scorer instances (ProbaScorer's doc)
            add(f"{module_name}.{name}", obj, False)
            if inspect.isclass(obj):
                for member_name, member in _own_members(obj):
                    add(f"{module_name}.{name}.{member_name}", member, True)
    return found


def _documented_fields(obj):
    """Dataclass fields documented under Attributes (``lower, upper`` names
    two)."""
    if not (inspect.isclass(obj) and dataclasses.is_dataclass(obj)):
        return set()
    names = set()
    for entry in ClassDoc(obj)["Attributes"]:
        names.update(n.strip() for n in entry.name.split(","))
    return names


def docstring_errors(path, obj, is_method):
    """The errors of the chosen checks, as ``{code: message}``."""
    result = numpydoc_validate.validate(path)
    checks = CHECKS if is_method else CHECKS_WITH_EXAMPLES
    errors = {code: msg for code, msg in result["errors"] if code in checks}
    if "PR01" in errors:
        signature = set(inspect.signature(obj).parameters)
        documented = set(ClassDoc(obj)["Parameters"]) if inspect.isclass(obj) else ()
        missing = signature - {p.name for p in documented} - {"self"}
        if missing <= _documented_fields(obj):
            del errors["PR01"]
    return errors


def _params():
    out = []
    for path, obj, is_method in public_objects():
        marks = ()
        if path in KNOWN_FAILURES:
            reason = KNOWN_FAILURES[path][1]
            marks = pytest.mark.xfail(
                strict=True, raises=KnownDocstringFailure, reason=reason
            )
        out.append(pytest.param(path, obj, is_method, id=path, marks=marks))
    return out


@pytest.mark.parametrize(("path", "obj", "is_method"), _params())
def test_docstring(path, obj, is_method):
    errors = docstring_errors(path, obj, is_method)
    if path in KNOWN_FAILURES and set(errors) == KNOWN_FAILURES[path][0]:
        # the listed failure, and only it, is the expected failure; other
        # errors fail the test as a plain assertion
        raise KnownDocstringFailure(errors)
    assert not errors, "\n".join(f"{path}: {c} {m}" for c, m in errors.items())


def test_every_public_module_is_reached():
    paths = {path for path, _, _ in public_objects()}
    for module_name in MODULES:
        assert any(p.startswith(module_name + ".") for p in paths), module_name
    assert set(KNOWN_FAILURES) <= paths
