"""What the ``.. runblock::`` directive and ``run_page.py`` share.

* :func:`page_blocks` reads the runblocks of a page (and of the ``.rst``
  files it includes) in reading order, without Sphinx.
* :func:`initial_namespace` is the namespace the blocks of one page start
  from (the names the extension injects).
* :class:`ShownNames` is the copy-paste check: a block that is shown (not
  ``:hide-code:``) may only use names that a reader who copies the shown
  blocks of the page in order has defined: a name bound only by a hidden
  block, or injected by the extension, is reported.
"""

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

#: Names every page's namespace starts with, besides ``__name__``.
INJECTED = ("DOC_SOURCE_DIR",)

_BUILTINS = frozenset(dir(builtins))
_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)\.\.[ \t]+(?P<name>[\w-]+)::[ \t]*(?P<arg>.*)$"
)
_OPTION = re.compile(r"^:(?P<name>[\w-]+):(?P<value>.*)$")


def initial_namespace(doc_source_dir):
    """The namespace a page's first runblock runs in."""
    return {"__name__": "__runblock__", "DOC_SOURCE_DIR": Path(doc_source_dir)}


@dataclass
class Block:
    """One ``.. runblock::``: where it is, its options and its code."""

    path: Path
    line: int  # 1-based line of the directive
    options: dict
    code: str

    @property
    def shown(self):
        return "hide-code" not in self.options


def _names_bound(tree):
    """Every name a module binds anywhere (coarse: order within a block and
    scopes are ignored, which only makes the check more lenient)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _names_loaded(tree):
    return {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


@dataclass
class ShownNames:
    """The names the shown blocks of one page have bound so far."""

    bound: set = field(default_factory=set)

    def check(self, code, shown):
        """Record ``code``'s names; return the sorted names a shown block
        uses that no shown block up to it binds (empty for a hidden block,
        and for code that does not parse: running it reports that)."""
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return []
        if not shown:
            return []
        self.bound |= _names_bound(tree)
        missing = _names_loaded(tree) - self.bound - _BUILTINS - {"__name__"}
        return sorted(missing)


def message(names):
    """The warning for a shown block that uses ``names``."""
    return (
        "runblock shows code that uses "
        + ", ".join(names)
        + ", defined only by hidden blocks or by the extension: a reader who "
        "copies the shown blocks could not run it (define it in a shown block)"
    )


def _directive_body(lines, start, indent):
    """Lines after the directive at ``start`` that are indented deeper than
    ``indent`` (or blank); return them and the index after them."""
    end = start + 1
    while end < len(lines):
        text = lines[end]
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        end += 1
    return lines[start + 1 : end], end


def _split_options(body):
    options = {}
    rest = textwrap.dedent("\n".join(body)).split("\n")
    while rest and _OPTION.match(rest[0].strip()):
        match = _OPTION.match(rest[0].strip())
        options[match["name"]] = match["value"].strip()
        rest = rest[1:]
    return options, "\n".join(rest).strip("\n")


def page_blocks(path, doc_source_dir=None, _seen=None):
    """The runblocks of the page at ``path`` in reading order, descending
    into the reStructuredText files it ``.. include::``-s (also
    ``include-if-exists`` when the file exists)."""
    path = Path(path).resolve()
    doc_source_dir = Path(doc_source_dir or find_source_dir(path))
    seen = set() if _seen is None else _seen
    if path in seen:
        return []
    seen.add(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if not match:
            i += 1
            continue
        indent = len(match["indent"].expandtabs())
        body, end = _directive_body(lines, i, indent)
        name = match["name"]
        if name == "runblock":
            options, code = _split_options(body)
            blocks.append(Block(path, i + 1, options, textwrap.dedent(code)))
        elif name in ("include", "include-if-exists"):
            options, _ = _split_options(body)

            def resolve(arg):
                arg = arg.strip()
                if arg.startswith("/"):
                    return doc_source_dir / arg.lstrip("/")
                return path.parent / arg

            target = resolve(match["arg"])
            # include-if-exists PATH with :file: OTHER includes OTHER when
            # PATH exists
            if name == "include-if-exists" and options.get("file"):
                target = resolve(options["file"]) if target.is_file() else None
            if (
                target is not None
                and target.suffix == ".rst"
                and "parser" not in options
                and target.is_file()
            ):
                blocks += page_blocks(target, doc_source_dir, seen)
        i = end if name == "runblock" else i + 1
    return blocks


def find_source_dir(path):
    """The documentation's source folder: the nearest parent with conf.py."""
    for parent in Path(path).resolve().parents:
        if (parent / "conf.py").is_file():
            return parent
    raise FileNotFoundError(f"no conf.py above {path}")
