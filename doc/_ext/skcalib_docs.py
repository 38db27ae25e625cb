"""Small Sphinx helpers of the skcalib documentation.

* ``.. runblock::`` runs its Python content while the page is built and shows
  the code followed by what it printed, so every number on a page comes from
  the code beside it (not typed by hand). Blocks of one page share a
  namespace. An exception, or a Python warning raised by the code, is a build
  warning (so ``-W`` fails the build).
* ``.. include-if-exists:: path`` includes a file like ``.. include::`` (any
  ``:parser:``) when it exists, and parses the directive's own content (a
  placeholder, or nothing) when it does not. The page is re-read on every
  build while the file is missing, so it appears as soon as it is written.
  With ``:file: other``, it is ``other`` that is included when ``path``
  exists (a section that only makes sense with results in ``path``); with
  ``:fit-tables:``, wide Markdown tables are split to fit the page.
* ``.. include-if-importable:: module`` includes ``:file:`` when ``module``
  imports, and the directive's own content otherwise.
* ``.. skcalib-chunk-capable::`` writes the bullet list of the calibrators
  that fit in chunks and on Dask arrays, read from the code when the page is
  built (:func:`skcalib._base.chunk_capable_names`), so the page cannot
  drift from it.
* :class:`ExampleOrder` sorts the gallery in reading order, and
  :func:`gallery_scraper` saves its figures at :data:`GALLERY_DPI`.
* When an HTML build finishes, every internal link of the site whose page
  does not exist or whose ``#fragment`` names no ``id`` of its page is a
  build warning (so ``-W`` fails the build): :func:`check_links`, with
  ``dead_links`` of ``.ci/check_docs_site.py``.
"""

import contextlib
import importlib
import importlib.util
import io
import os
import textwrap
import traceback
import warnings
from pathlib import Path

from _report_tables import split_wide_tables
from _runblock_check import ShownNames, initial_namespace, message
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.directives.other import Include
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: Gallery examples in reading order; any other example comes after them, by
#: file name.
EXAMPLE_ORDER = [
    "plot_calibrate_prefit_classifier.py",
    "plot_calibrate_unfitted_model.py",
    "plot_compare_calibrators.py",
    "plot_tune_n_bins.py",
    "plot_reliability_cifar10.py",
    "plot_report_command.py",
    "plot_conformal_prediction_sets.py",
]


class ExampleOrder:
    """``within_subsection_order`` of sphinx-gallery: :data:`EXAMPLE_ORDER`."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __repr__(self):
        return "ExampleOrder"

    def __call__(self, filename):
        name = os.path.basename(filename)
        if name in EXAMPLE_ORDER:
            return (EXAMPLE_ORDER.index(name), name)
        return (len(EXAMPLE_ORDER), name)


#: Resolution of the gallery's figures.
GALLERY_DPI = 150


def gallery_scraper(block, block_vars, gallery_conf, **kwargs):
    """sphinx-gallery's matplotlib scraper, saving at :data:`GALLERY_DPI`."""
    from sphinx_gallery.scrapers import matplotlib_scraper

    kwargs.setdefault("dpi", GALLERY_DPI)
    return matplotlib_scraper(block, block_vars, gallery_conf, **kwargs)


#: Longest code or output line of a runblock that fits the page width of the
#: theme (a longer line is a build warning).
MAX_LINE = 74

#: Namespace of the runblocks of each page being read; dropped when the page
#: has been read (it may hold anything, and doctrees are pickled).
_NAMESPACES = {}
#: The names the shown runblocks of each page being read have bound.
_SHOWN_NAMES = {}


def _drop_namespace(app, doctree):
    _NAMESPACES.pop(app.env.docname, None)
    _SHOWN_NAMES.pop(app.env.docname, None)


class RunBlock(SphinxDirective):
    """Run Python code at build time; show the code and its printed output.

    Options
    -------
    hide-code
        Show the output only.
    hide-output
        Run the code (e.g. set-up) but show no output block.
    output-rst
        Parse what the code prints as reStructuredText instead of showing it
        as a literal block (for lists and tables generated from the source).
    """

    has_content = True
    option_spec = {
        "hide-code": directives.flag,
        "hide-output": directives.flag,
        "output-rst": directives.flag,
    }

    def run(self):
        namespace = _NAMESPACES.get(self.env.docname)
        if namespace is None:
            # DOC_SOURCE_DIR: the documentation's source folder (doc/).
            namespace = initial_namespace(self.env.srcdir)
            _NAMESPACES[self.env.docname] = namespace
        # The output depends on the library, not only on the source: read the
        # page again on the next build.
        self.env.note_reread()
        code = textwrap.dedent("\n".join(self.content)).strip("\n")
        source, line = self.get_source_info()
        shown_names = _SHOWN_NAMES.setdefault(self.env.docname, ShownNames())
        missing = shown_names.check(code, "hide-code" not in self.options)
        if missing:
            logger.warning(message(missing), location=(self.env.docname, line))
        stdout = io.StringIO()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with contextlib.redirect_stdout(stdout):
                    exec(compile(code, f"{source}:{line}", "exec"), namespace)
            except Exception:
                raise self.error(
                    "runblock raised an exception:\n" + traceback.format_exc()
                ) from None
        for w in caught:
            logger.warning(
                "runblock emitted %s: %s",
                w.category.__name__,
                w.message,
                location=(self.env.docname, line),
            )
        output = stdout.getvalue().rstrip()
        shown = [] if "hide-code" in self.options else code.splitlines()
        if "hide-output" not in self.options and "output-rst" not in self.options:
            shown += output.splitlines()
        too_long = [text for text in shown if len(text) > MAX_LINE]
        if too_long:
            logger.warning(
                "runblock line longer than %d characters (it would not fit "
                "the page): %r",
                MAX_LINE,
                too_long[0],
                location=(self.env.docname, line),
            )
        result = []
        if "hide-code" not in self.options:
            code_node = nodes.literal_block(code, code)
            code_node["language"] = "python"
            self.set_source_info(code_node)
            result.append(code_node)
        if output and "output-rst" in self.options:
            container = nodes.container()
            self.state.nested_parse(
                StringList(output.splitlines(), source=f"{source}:{line}"),
                0,
                container,
            )
            result.extend(container.children)
        elif output and "hide-output" not in self.options:
            out_node = nodes.literal_block(output, output)
            out_node["language"] = "none"
            out_node["classes"].append("runblock-output")
            self.set_source_info(out_node)
            result.append(out_node)
        return result


class IncludeIfExists(Include):
    """``.. include::`` when the file exists, else the directive's content.

    With the ``:fit-tables:`` flag (for the Markdown reports of
    ``benchmarks/results/``), a pipe table wider than the text column is
    split into narrower ones that repeat the columns naming a row
    (:func:`_report_tables.split_wide_tables`), and the tables get the
    ``skcalib-report`` class (a smaller font, ``_static/skcalib.css``).
    """

    has_content = True
    option_spec = {
        **Include.option_spec,
        "fit-tables": directives.flag,
        "file": directives.unchanged_required,
    }

    def read_file(self, path):
        text = super().read_file(path)
        return split_wide_tables(text) if "fit-tables" in self.options else text

    def run(self):
        _, path = self.env.relfn2path(self.arguments[0])
        if Path(path).is_file():
            if "file" in self.options:
                self.arguments = [self.options.pop("file")]
            result = super().run()
            if "fit-tables" in self.options:
                for node in result:
                    for table in node.findall(nodes.table):
                        table["classes"].append("skcalib-report")
            return result
        logger.info("include-if-exists: %s not found, showing the placeholder", path)
        self.env.note_reread()
        return _parse_content(self)


class IncludeIfImportable(Include):
    """Include ``:file:`` when the module imports, else the directive's content."""

    has_content = True
    option_spec = {**Include.option_spec, "file": directives.unchanged_required}

    def run(self):
        module = self.arguments[0]
        try:
            importlib.import_module(module)
        except ImportError:
            logger.info("include-if-importable: %s is not importable", module)
            self.env.note_reread()
            return _parse_content(self)
        self.arguments = [self.options.pop("file")]
        return super().run()


class ChunkCapable(SphinxDirective):
    """A bullet list of skcalib's chunk-capable calibrators, each with the
    condition on its parameters, if any (``chunk_capable_names()``)."""

    def run(self):
        from skcalib._base import chunk_capable_names

        self.env.note_reread()  # the list depends on the library
        lines = []
        for entry in chunk_capable_names():
            name, _, condition = entry.partition(" (")
            item = f"* :class:`~skcalib.{name}`"
            if condition:
                item += f" (``{condition.removesuffix(')')}``)"
            lines.append(item)
        if not lines:
            raise self.error("skcalib.chunk_capable_names() is empty")
        source, line = self.get_source_info()
        container = nodes.container()
        self.state.nested_parse(
            StringList(lines, source=f"{source}:{line}"), 0, container
        )
        return container.children


def _parse_content(directive):
    container = nodes.container()
    directive.state.nested_parse(directive.content, directive.content_offset, container)
    return container.children


#: The browser check of the built site, whose ``dead_links`` the build runs.
SITE_CHECK = Path(__file__).resolve().parents[2] / ".ci" / "check_docs_site.py"


def check_links(app, exception):
    """``build-finished``: a warning for each dead internal link of the HTML
    output (a page that does not exist, a ``#fragment`` with no ``id``)."""
    if exception is not None or app.builder.format != "html":
        return
    if not SITE_CHECK.is_file():
        logger.warning("cannot check the links: %s is missing", SITE_CHECK)
        return
    spec = importlib.util.spec_from_file_location("_skcalib_site_check", SITE_CHECK)
    site_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_check)
    outdir = Path(app.outdir)
    for page, href, missing in site_check.dead_links(outdir):
        logger.warning(
            "dead link %s in %s: %s", href, page.relative_to(outdir), missing
        )


def setup(app):
    app.add_directive("runblock", RunBlock)
    app.connect("doctree-read", _drop_namespace)
    app.add_directive("include-if-exists", IncludeIfExists)
    app.add_directive("include-if-importable", IncludeIfImportable)
    app.add_directive("skcalib-chunk-capable", ChunkCapable)
    app.connect("build-finished", check_links)
    app.add_css_file("skcalib.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
