"""Sphinx configuration of the skcalib documentation.

Build (offline, warnings are errors)::

    python -m sphinx -W --keep-going -b html doc doc/_build/html

The gallery (``../examples/plot_*.py``) is executed during the build, on the
data shipped in the package (``skcalib.datasets``). Maths is rendered by a
bundled MathJax (``sphinx-mathjax-offline``): the site needs no network.
"""

import importlib.util
import os
import sys
from pathlib import Path

# scikit-learn's array_api_dispatch (the GPU guide's examples) needs SciPy's
# array-API mode, read when SciPy is first imported
os.environ.setdefault("SCIPY_ARRAY_API", "1")

DOC_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(DOC_DIR / "_ext"))

import skcalib  # noqa: E402

# -- Project ----------------------------------------------------------------
project = "skcalib"
author = "skcalib developers"
copyright = "skcalib developers"
release = skcalib.__version__
version = release

# -- General ----------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # a copy of MathJax in _static/mathjax, used instead of a CDN
    "sphinx-mathjax-offline",
    "sphinx_copybutton",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "skcalib_docs",
]
# Markdown is only included into pages (CHANGELOG.md, benchmark results); the
# pages themselves are reStructuredText.
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"
templates_path = ["_templates"]
# _api_datasets.rst is included by api.rst (only when skcalib.datasets exists).
# the two section files are included by user_guide/binning_free.rst
exclude_patterns = [
    "_build",
    # left by earlier builds; not written any more (write_computation_times)
    "sg_execution_times.rst",
    "auto_examples/sg_execution_times.rst",
    "_templates",
    "_api_datasets.rst",
    "user_guide/binning_free_smooth.rst",
    "user_guide/binning_free_tests.rst",
    "user_guide/conformal_cross.rst",
    # included by user_guide/gpu.rst when benchmarks/results/gpu.md exists
    "user_guide/gpu_device_results.rst",
]
default_role = "literal"
# "On this page" of an API page lists from_estimator(), not
# ReliabilityDisplay.from_estimator() (which the sidebar has to wrap)
toc_object_entries_show_parents = "hide"
pygments_style = "sphinx"
# Curly quotes and ellipses, but keep "--" as typed (command-line options in
# the included benchmark report).
smartquotes_action = "qe"
# No intersphinx: the build must not touch the network.

# -- API reference ----------------------------------------------------------
HAVE_DATASETS = importlib.util.find_spec("skcalib.datasets") is not None
autosummary_generate = ["api.rst"] + (["_api_datasets.rst"] if HAVE_DATASETS else [])
if not HAVE_DATASETS:  # drop stubs of an earlier build, they belong to no toctree
    for stale in (DOC_DIR / "generated").glob("skcalib.datasets.*"):
        stale.unlink()
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_typehints = "none"
autoclass_content = "class"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True


def _defining_module(obj):
    if isinstance(obj, property):
        obj = obj.fget
    obj = getattr(obj, "__func__", obj)
    return getattr(obj, "__module__", None) or ""


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only what skcalib defines: the methods inherited from
    scikit-learn (``get_params``, ``set_output``, ``set_fit_request``, ...)
    are listed on the API page and described in scikit-learn's documentation."""
    if skip or what != "class":
        return skip
    if not _defining_module(obj).startswith("skcalib"):
        return True
    return None


# -- Gallery ----------------------------------------------------------------
#: Gallery examples that need a module that may not be there yet, and whether
#: it is.
EXAMPLE_NEEDS_MET = {
    "plot_compare_calibrators.py": HAVE_DATASETS,
    "plot_reliability_cifar10.py": HAVE_DATASETS,
}


def _runnable_examples():
    """The regex of the examples to execute (sphinx-gallery's filename_pattern).

    An example whose needs are not met (a module not written yet) is still
    rendered, with its code, but not run.
    """
    skipped = sorted(name for name, ok in EXAMPLE_NEEDS_MET.items() if not ok)
    if not skipped:
        return r"/plot_"
    print(f"skcalib docs: not executing {', '.join(skipped)} (missing inputs)")
    names = "|".join(name.replace(".", r"\.") for name in skipped)
    return rf"/(?!(?:{names})$)plot_[^/]*$"


sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": _runnable_examples(),
    "within_subsection_order": "skcalib_docs.ExampleOrder",
    "doc_module": ("skcalib",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"skcalib": None},
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    # matplotlib's scraper at 150 dpi (skcalib_docs.GALLERY_DPI)
    "image_scrapers": ("skcalib_docs.gallery_scraper",),
    "matplotlib_animations": False,
    "show_signature": False,
    # the execution-times pages load jQuery and DataTables from a CDN
    "write_computation_times": False,
}

# -- Copy button --------------------------------------------------------------
# Code blocks only: not what a runblock or an example printed, nor prompts.
copybutton_selector = (
    "div:not(.runblock-output):not(.sphx-glr-script-out) > div.highlight pre"
)
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

# -- HTML -------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skcalib {release}"
html_static_path = ["_static"]
html_theme_options = {
    "navbar_align": "left",
    "navbar_end": ["theme-switcher"],
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": {"**": ["page-toc"], "index": []},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
# an explicit default colour mode: with none the theme logs a console error
# ("Got invalid theme mode") on a reader's first visit
html_context = {"default_mode": "auto"}
html_sidebars = {"index": [], "getting_started": [], "changelog": []}
html_show_sourcelink = False
html_copy_source = False


def _check_api_page(app):
    """Warn about a public name (in a package's ``__all__``) that the API
    page does not list, so that a new function cannot go undocumented."""
    import importlib
    import re

    from sphinx.util import logging

    pages = [DOC_DIR / "api.rst"] + ([DOC_DIR / "_api_datasets.rst"] * HAVE_DATASETS)
    text = "\n".join(page.read_text() for page in pages)
    listed = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    packages = ["skcalib", "skcalib.metrics", "skcalib.plotting", "skcalib.export"]
    packages += ["skcalib.datasets"] if HAVE_DATASETS else []
    for package in packages:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", []):
            if not name.startswith("__") and name not in listed:
                logging.getLogger(__name__).warning(
                    "api.rst does not list the public name %s.%s", package, name
                )


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)
    app.connect("builder-inited", _check_api_page)
