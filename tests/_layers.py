"""Read skcalib's imports with :mod:`ast` and check them against its layers.

Used by ``tests/test_layers.py``; every function takes the directory that
holds the ``skcalib`` package, so the checks also run on a modified copy of
the tree (that is how the test shows that a wrong-way import is caught).

Imports are collected wherever they are written: at module level, inside
functions and methods, under ``if``/``try``, as relative imports
(``from . import x``, ``from ..metrics import y``) and as
``importlib.import_module("skcalib...")``/``__import__`` calls whose argument
is a string constant or a subscript of a module-level dict of string
constants (the lazy forwarding ``__getattr__`` of
``skcalib/calibration/__init__.py``). A call whose argument cannot be read is
reported, so that no import hides from the checks.

Importing ``skcalib.a.b`` also runs ``skcalib/__init__.py`` and
``skcalib/a/__init__.py``; like every import linter, these implicit parent
imports are not edges: an edge is the module the statement names.
"""

import ast
import dataclasses
import io
import itertools
import tokenize
from pathlib import Path

PACKAGE = "skcalib"

#: The layers, lowest first. Each entry is one layer: a tuple of sibling
#: groups, each group a tuple of module-name patterns (``x`` means the module
#: ``x`` and everything under it; ``x*`` every module whose name starts with
#: ``x``). A module may import a module of its own group (inside a package,
#: without circles) or of a lower layer; never a sibling group of its own
#: layer, never a higher layer.
LAYERS = (
    (("skcalib._core.accel",),),
    (("skcalib._core",), ("skcalib._version",)),
    (("skcalib._core.xp",),),
    (("skcalib._backends",),),
    (("skcalib._base",),),
    (("skcalib.calibration",), ("skcalib.conformal",)),
    (("skcalib.metrics",),),
    (("skcalib.selection",), ("skcalib.decision",), ("skcalib.monitoring",)),
    (
        ("skcalib.plotting",),
        ("skcalib.datasets",),
        ("skcalib.export",),
        ("skcalib.cluster",),
    ),
    (("skcalib._report", "skcalib.__main__"),),
    (("skcalib",),),
)

#: The one import allowed against the layer order (and left out of the
#: circle search), keyed by ``(importing module, enclosing function,
#: imported module)``.
ALLOWED = {
    (
        "skcalib.calibration",
        "__getattr__",
        target,
    ): (
        "lazy forwarding of the old name skcalib.calibration."
        f"{name}: code written before the layers (issue 17) keeps working; "
        "it runs on attribute access only, never on import"
    )
    for target, name in (
        ("skcalib.selection", "AutoCalibrator"),
        ("skcalib.conformal", "ConformalClassifier"),
    )
}

#: The numpy core (``skcalib._core`` outside its ``xp`` and ``accel``
#: packages) imports neither the array-API twins nor the compiled kernels,
#: except these edges, keyed by ``(importing module, imported module)``.
NUMPY_CORE = "skcalib._core"
CORE_TWINS = ("skcalib._core.xp", "skcalib._core.accel")
_DISPATCH = (
    "the numpy function dispatches to the compiled kernel through the front "
    "door skcalib._core.accel, which falls back to numpy without numba and "
    "imports numba only on first use; moving the choice up a layer would "
    "change which callers get the fast path"
)
CORE_ALLOWED = {
    (f"skcalib._core.{name}", "skcalib._core.accel"): _DISPATCH
    for name in ("binning", "labels", "scores", "top1", "totals")
}

#: The only module that may import scikit-learn's private names.
SKLEARN_PRIVATE_HOME = "skcalib/_core/compat.py"

#: The only module that may import numba's internals (``numba.core``, the
#: low-level names of ``numba.extending``) or llvmlite.
NUMBA_PRIVATE_HOME = "skcalib/_core/accel/simd.py"
#: The names of ``numba.extending`` that numba documents for everyday use.
NUMBA_PUBLIC_EXTENDING = frozenset({"register_jitable", "overload"})

MAX_FILE_LINES = 600
MAX_FUNCTION_LOC = 80


@dataclasses.dataclass(frozen=True)
class Import:
    """One import of a skcalib module, as written in the source."""

    source: str  # importing module, e.g. "skcalib.metrics._proper"
    path: str  # its file, relative to the root, e.g. "skcalib/metrics/_proper.py"
    line: int
    scope: str  # enclosing function's qualified name, "" at module level
    target: str  # imported module
    statement: str  # the source text of the statement or call

    def where(self):
        scope = f" (in {self.scope})" if self.scope else ""
        return f"{self.path}:{self.line}{scope}: {self.statement}"


def module_files(root):
    """Map every module name of the package under ``root`` to its path."""
    root = Path(root)
    modules = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_package(path):
    return path.name == "__init__.py"


def _resolve_relative(module, path, level, name):
    """Absolute name of ``from <level dots><name> import ...`` in ``module``."""
    package = module.split(".")
    if not _is_package(path):
        package = package[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    return ".".join(package + ([name] if name else []))


def _module_or_parent(dotted, modules):
    """``dotted`` if it is a module, else the longest module prefix of it."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return dotted


class _Collector(ast.NodeVisitor):
    """Collect the skcalib imports (and sklearn private ones) of one file."""

    def __init__(self, module, path, rel, source, modules):
        self.module, self.path, self.rel = module, path, rel
        self.source, self.modules = source, modules
        self.scope = []
        self.imports, self.unreadable, self.sklearn_private = [], [], []
        self.numba_private = []
        self.string_dicts = {}
        self.seen = set()

    # --- scopes -----------------------------------------------------------
    def _scoped(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Module(self, node):
        for stmt in node.body:  # module-level dicts of module names
            if isinstance(stmt, ast.Assign | ast.AnnAssign) and isinstance(
                stmt.value, ast.Dict
            ):
                values = stmt.value.values
                if values and all(
                    isinstance(v, ast.Constant) and isinstance(v.value, str)
                    for v in values
                ):
                    targets = (
                        stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    )
                    for target in targets:
                        if isinstance(target, ast.Name):
                            self.string_dicts[target.id] = [v.value for v in values]
        self.generic_visit(node)

    # --- recording --------------------------------------------------------
    def _text(self, node):
        text = ast.get_source_segment(self.source, node) or ast.unparse(node)
        return " ".join(text.split())

    def _add(self, node, target):
        imp = Import(
            source=self.module,
            path=self.rel,
            line=node.lineno,
            scope=".".join(self.scope),
            target=_module_or_parent(target, self.modules),
            statement=self._text(node),
        )
        if imp not in self.seen:  # ``from m import a, b``: one edge
            self.seen.add(imp)
            self.imports.append(imp)

    def _sklearn(self, node, module, names=()):
        private_module = any(part.startswith("_") for part in module.split("."))
        private_names = [
            n for n in names if n.startswith("_") and not n.startswith("__")
        ]
        if private_module or private_names:
            self.sklearn_private.append((self.rel, node.lineno, self._text(node)))

    def _numba(self, node, module, names=()):
        top = module.split(".")[0]
        private = (
            top == "llvmlite"
            or module == "numba.core"
            or module.startswith("numba.core.")
            or (top == "numba" and "core" in names)
            or (
                module == "numba.extending"
                and (not names or set(names) - NUMBA_PUBLIC_EXTENDING)
            )
        )
        if private:
            self.numba_private.append((self.rel, node.lineno, self._text(node)))

    # --- import statements ------------------------------------------------
    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.split(".")[0] == PACKAGE:
                self._add(node, alias.name)
            elif alias.name.split(".")[0] == "sklearn":
                self._sklearn(node, alias.name)
            elif alias.name.split(".")[0] in ("numba", "llvmlite"):
                self._numba(node, alias.name)

    def visit_ImportFrom(self, node):
        if node.level:
            base = _resolve_relative(self.module, self.path, node.level, node.module)
        else:
            base = node.module or ""
        top = base.split(".")[0]
        if top == "sklearn":
            self._sklearn(node, base, [a.name for a in node.names])
        if top in ("numba", "llvmlite"):
            self._numba(node, base, [a.name for a in node.names])
        if top != PACKAGE:
            return
        for alias in node.names:
            # ``from pkg import name``: the submodule pkg.name if there is one
            self._add(node, f"{base}.{alias.name}" if alias.name != "*" else base)

    # --- importlib.import_module("...") and __import__("...") --------------
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        name = (
            func.attr
            if isinstance(func, ast.Attribute)
            else func.id
            if isinstance(func, ast.Name)
            else None
        )
        if name not in ("import_module", "__import__") or not node.args:
            return
        for target in self._string_values(node.args[0]):
            if target is None:
                self.unreadable.append((self.rel, node.lineno, self._text(node)))
                continue
            if target.startswith("."):
                package = next(
                    (
                        k.value.value
                        for k in node.keywords
                        if k.arg == "package" and isinstance(k.value, ast.Constant)
                    ),
                    None,
                )
                if package is None:
                    self.unreadable.append((self.rel, node.lineno, self._text(node)))
                    continue
                level = len(target) - len(target.lstrip("."))
                target = _resolve_relative(
                    package, Path("__init__.py"), level, target.lstrip(".")
                )
            top = target.split(".")[0]
            if top == PACKAGE:
                self._add(node, target)
            elif top == "sklearn":
                self._sklearn(node, target)
            elif top in ("numba", "llvmlite"):
                self._numba(node, target)

    def _string_values(self, arg):
        """The module names an import call's argument can take (None: unknown)."""
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if (
            isinstance(arg, ast.Subscript)
            and isinstance(arg.value, ast.Name)
            and arg.value.id in self.string_dicts
        ):
            return self.string_dicts[arg.value.id]
        return [None]


def _collectors(root):
    root = Path(root)
    modules = module_files(root)
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        collector = _Collector(module, path, rel, source, modules)
        collector.visit(ast.parse(source, filename=rel))
        yield collector


def numba_private_imports(root):
    """``(path, line, text)`` of every import of numba's internals or of
    llvmlite (see ``NUMBA_PRIVATE_HOME``) under ``root``."""
    return [item for c in _collectors(root) for item in c.numba_private]


def scan(root):
    """Read every module under ``root``.

    Returns
    -------
    imports : list of Import
    unreadable : list of (path, line, text)
        Import calls whose module name could not be read.
    sklearn_private : list of (path, line, text)
        Imports of scikit-learn private modules or names.
    """
    imports, unreadable, sklearn_private = [], [], []
    for collector in _collectors(root):
        imports += collector.imports
        unreadable += collector.unreadable
        sklearn_private += collector.sklearn_private
    return imports, unreadable, sklearn_private


def _matches(module, pattern):
    if pattern.endswith("*"):
        return module.startswith(pattern[:-1])
    return module == pattern or module.startswith(pattern + ".")


def layer_of(module):
    """``(layer index, group index)`` of a module; the most specific pattern
    wins (``skcalib`` itself matches only the facade)."""
    best = None
    for rank, groups in enumerate(LAYERS):
        for group, patterns in enumerate(groups):
            for pattern in patterns:
                if _matches(module, pattern):
                    length = len(pattern.rstrip("*"))
                    if best is None or length > best[0]:
                        best = (length, rank, group)
    if best is None or (best[1:] == (len(LAYERS) - 1, 0) and module != PACKAGE):
        return None
    return best[1:]


def describe(rank, group):
    return " / ".join(LAYERS[rank][group])


def is_allowed(imp):
    return (imp.source, imp.scope, imp.target) in ALLOWED


def layer_violations(imports):
    """Messages for imports against the layer order, and for unplaced modules."""
    messages = []
    for imp in imports:
        if is_allowed(imp) or imp.source == imp.target:
            continue
        src, tgt = layer_of(imp.source), layer_of(imp.target)
        for module, where in ((imp.source, src), (imp.target, tgt)):
            if where is None:
                messages.append(
                    f"{imp.where()}\n    {module} is in no layer: add it to "
                    "LAYERS in tests/_layers.py"
                )
        if src is None or tgt is None or src == tgt or tgt[0] < src[0]:
            continue
        kind = "a sibling" if tgt[0] == src[0] else "a higher"
        messages.append(
            f"{imp.where()}\n    {imp.source} (layer {src[0] + 1}: "
            f"{describe(*src)}) imports {imp.target} from {kind} layer "
            f"({tgt[0] + 1}: {describe(*tgt)})"
        )
    return messages


def _inside(module, package):
    return module == package or module.startswith(package + ".")


def core_violations(imports):
    """Messages for imports of the array-API twins or the kernels from the
    numpy core, other than the edges of ``CORE_ALLOWED``."""
    messages = []
    for imp in imports:
        if not _inside(imp.source, NUMPY_CORE) or any(
            _inside(imp.source, home) for home in CORE_TWINS
        ):
            continue
        home = next((h for h in CORE_TWINS if _inside(imp.target, h)), None)
        if home is None or (imp.source, imp.target) in CORE_ALLOWED:
            continue
        messages.append(
            f"{imp.where()}\n    the numpy core module {imp.source} imports "
            f"{imp.target} (package {home}): the numpy core stays free of the "
            "array-API twins and the kernels (CORE_ALLOWED in tests/_layers.py "
            "lists the dispatch edges)"
        )
    return messages


def find_cycles(imports):
    """Import circles among skcalib modules, each as a list of the Import
    edges that close it (Tarjan's strongly connected components, then one
    shortest circle through each component)."""
    graph = {}
    for imp in imports:
        if is_allowed(imp) or imp.source == imp.target:
            continue
        graph.setdefault(imp.source, {}).setdefault(imp.target, imp)
        graph.setdefault(imp.target, {})
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(node):  # recursive Tarjan; the graph has < 200 nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_shortest_cycle(graph, set(c), c[0]) for c in components]


def _shortest_cycle(graph, members, start):
    """Breadth-first search from ``start`` back to itself inside ``members``."""
    parents, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node]):
                if succ == start:
                    path = [node]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    path.reverse()
                    nodes = path + [start]
                    return [graph[a][b] for a, b in itertools.pairwise(nodes)]
                if succ in members and succ not in parents:
                    parents[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # pragma: no cover


def format_cycle(edges):
    chain = " -> ".join([e.source for e in edges] + [edges[0].source])
    return chain + "".join(f"\n    {e.where()}" for e in edges)


# --- sizes ----------------------------------------------------------------
def _code_lines(source):
    """Line numbers that hold code: not blank, not only a comment, not in a
    docstring."""
    lines = set()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    skip = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    for token in tokens:
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                lines.difference_update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines, tree


def _functions(tree, prefix=""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, node
            yield from _functions(node, name + ".")


def size_offences(root):
    """``{key: message}`` for files over MAX_FILE_LINES lines (key: the path)
    and functions over MAX_FUNCTION_LOC lines of code (key:
    ``path::Qualified.name``; code lines exclude blank lines, comments and
    docstrings; a nested function counts in its outer function too)."""
    root = Path(root)
    offences = {}
    for path in module_files(root).values():
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        n_lines = len(source.splitlines())
        if n_lines > MAX_FILE_LINES:
            offences[rel] = f"{rel}: {n_lines} lines > {MAX_FILE_LINES}"
        code, tree = _code_lines(source)
        for name, node in _functions(tree):
            loc = len(code.intersection(range(node.lineno, node.end_lineno + 1)))
            if loc > MAX_FUNCTION_LOC:
                offences[f"{rel}::{name}"] = (
                    f"{rel}:{node.lineno}: {name} has {loc} lines of code "
                    f"> {MAX_FUNCTION_LOC}"
                )
    return offences
