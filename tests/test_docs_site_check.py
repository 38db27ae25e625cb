"""``.ci/check_docs_site.py``: the headless-browser check of the built
documentation, run on a small fake site (a good one, then broken ones)."""

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

CI_DIR = Path(__file__).resolve().parents[1] / ".ci"
sys.path.insert(0, str(CI_DIR))

import check_docs_site  # noqa: E402

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>{head}</head>
<body><h1>{title}</h1>{body}</body></html>
"""


def _png(path):
    """A valid 2x2 red PNG."""

    def chunk(kind, data):
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _site(root, guide_body, guide_head=""):
    (root / "user_guide").mkdir(parents=True)
    (root / "_images").mkdir()
    _png(root / "_images" / "fig.png")
    (root / "index.html").write_text(
        PAGE.format(
            title="Home",
            head="",
            body='<p>Start.</p><img src="_images/fig.png" alt="figure">',
        )
    )
    (root / "user_guide" / "index.html").write_text(
        PAGE.format(title="Guide", head=guide_head, body=guide_body)
    )
    return root


def _run(site, cwd=None):
    return subprocess.run(
        [sys.executable, str(CI_DIR / "check_docs_site.py"), str(site)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_static_problems_missing_image_and_network(tmp_path):
    site = _site(tmp_path, "")
    page = site / "user_guide" / "index.html"
    text = (
        '<script src="https://cdn.example.org/mathjax.js"></script>'
        '<img src="../_images/fig.png"><img src="../_images/missing.png">'
    )
    problems = check_docs_site.static_problems(page, text)
    assert problems[0] == "loads https://cdn.example.org/mathjax.js from the network"
    assert len(problems) == 2
    assert problems[1].startswith("image ../_images/missing.png does not exist")


def test_pages_to_check(tmp_path):
    site = _site(tmp_path, "")
    (site / "auto_examples").mkdir()
    (site / "auto_examples" / "plot_a.html").write_text("")
    (site / "api.html").write_text("")
    names = [
        p.relative_to(site).as_posix() for p in check_docs_site.pages_to_check(site)
    ]
    assert names == ["index.html", "user_guide/index.html", "auto_examples/plot_a.html"]


needs_chromium = pytest.mark.skipif(
    check_docs_site.find_chromium() is None,
    reason="Chromium is not installed (Debian: apt-get install -y chromium); "
    "the pages were not opened in a browser",
)


@needs_chromium
def test_good_site_passes(tmp_path):
    site = _site(tmp_path, '<p>Text.</p><img src="../_images/fig.png">')
    res = _run(site)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2/2 pages pass" in res.stdout


@needs_chromium
def test_a_relative_build_dir_works(tmp_path):
    # .ci/run passes doc/_build/html, relative to the repository root
    site = _site(tmp_path, '<p>Text.</p><img src="../_images/fig.png">')
    res = _run(site.relative_to(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2/2 pages pass" in res.stdout


@needs_chromium
def test_broken_image_raw_maths_and_errors_fail(tmp_path):
    # an image that exists but is no image, raw maths with no MathJax to
    # render it, and a script error
    body = (
        '<img src="../_images/not_an_image.png">'
        '<p>The ECE <span class="math notranslate">\\(\\sum_b w_b\\)</span>.</p>'
        "<script>undefined_function();</script>"
    )
    site = _site(tmp_path, body)
    (site / "_images" / "not_an_image.png").write_text("not a png")
    res = _run(site)
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert "FAIL user_guide/index.html" in out
    assert "FAIL index.html" not in out
    assert "not_an_image.png does not load" in out
    assert "maths not rendered: '\\\\(\\\\sum_b w_b\\\\)'" in out
    assert "raw maths in the text" in out
    assert "undefined_function is not defined" in out
    assert "1/2 pages pass" in out


@needs_chromium
def test_missing_file_and_network_script_fail(tmp_path):
    site = _site(
        tmp_path,
        '<img src="../_images/gone.png">',
        guide_head='<script src="https://cdn.jsdelivr.net/npm/x.js"></script>',
    )
    out = _run(site).stdout
    assert "image ../_images/gone.png does not exist" in out
    assert "loads https://cdn.jsdelivr.net/npm/x.js from the network" in out
    # the browser could not fetch it either: the network is off
    assert "failed to load https://cdn.jsdelivr.net/npm/x.js" in out


def _linked_site(root, guide_body):
    """A site whose guide page links with ``guide_body``; the landing page
    defines the ids ``intro`` and ``a b`` and the API page ``module-x``."""
    site = _site(root, guide_body)
    (site / "index.html").write_text(
        PAGE.format(
            title="Home",
            head="",
            body='<section id="intro"><p id="a b">Start.</p></section>'
            '<a name="legacy"></a><img src="_images/fig.png" alt="figure">',
        )
    )
    (site / "api.html").write_text(
        PAGE.format(title="API", head="", body='<p id="module-x">x</p>')
    )
    return site


def test_dead_links_are_found_on_every_page(tmp_path):
    fine = (
        '<a href="../index.html#intro">a section</a>'
        '<a href="../index.html#a%20b">an encoded id</a>'
        '<a href="../index.html#legacy">an a name</a>'
        '<a href="../api.html#module-x">the API</a>'
        '<a href="../api.html">a page</a><a href="#">top</a><a href="#top">top</a>'
        '<a href="https://example.org/x.html#nowhere">the web</a>'
        '<a href="mailto:dev@skcalib.invalid">mail</a>'
        '<a href="../_images/fig.png">an image</a>'
    )
    site = _linked_site(tmp_path, fine)
    assert check_docs_site.dead_links(site) == []
    dead = (
        '<a href="../api.html#module-skcalib">gone</a>'
        '<a href="#nothing-here">same page</a>'
        '<a href="../missing.html">no page</a>'
    )
    site = _linked_site(tmp_path / "dead", fine + dead)
    # the API page (not opened in the browser) is read as well
    (site / "api.html").write_text(
        PAGE.format(title="API", head="", body='<a href="index.html#gone">x</a>')
    )
    found = [
        (page.relative_to(site.resolve()).as_posix(), href, missing)
        for page, href, missing in check_docs_site.dead_links(site)
    ]
    assert found == [
        ("api.html", "index.html#gone", "no id 'gone' in index.html"),
        (
            "user_guide/index.html",
            "../api.html#module-x",
            "no id 'module-x' in ../api.html",
        ),
        (
            "user_guide/index.html",
            "../api.html#module-skcalib",
            "no id 'module-skcalib' in ../api.html",
        ),
        (
            "user_guide/index.html",
            "#nothing-here",
            "no id 'nothing-here' in this page",
        ),
        ("user_guide/index.html", "../missing.html", "no page ../missing.html"),
    ]


def test_site_pages_skip_static_and_check_copies(tmp_path):
    site = _site(tmp_path, "")
    (site / "_static").mkdir()
    (site / "_static" / "macros.html").write_text('<a href="#x">x</a>')
    (site / "user_guide" / ".skcalib-check-index.html").write_text("")
    (site / "generated").mkdir()
    (site / "generated" / "f.html").write_text("")
    names = [p.relative_to(site).as_posix() for p in check_docs_site.site_pages(site)]
    assert names == ["generated/f.html", "index.html", "user_guide/index.html"]
    assert check_docs_site.dead_links(site) == []


@needs_chromium
def test_a_dead_link_fails_the_check(tmp_path):
    site = _linked_site(tmp_path, '<a href="../api.html#module-skcalib">API</a>')
    (site / "api.html").write_text(
        PAGE.format(title="API", head="", body='<a href="#gone">x</a>')
    )
    res = _run(site)
    assert res.returncode == 1, res.stdout + res.stderr
    out = res.stdout
    assert "FAIL user_guide/index.html" in out
    assert (
        "dead link ../api.html#module-skcalib: no id 'module-skcalib' in ../api.html"
    ) in out
    # a page outside the browser's list fails too, and is counted
    assert "FAIL api.html" in out
    assert "dead link #gone: no id 'gone' in this page" in out
    assert "1/3 pages pass" in out


def test_a_dead_link_fails_the_sphinx_build(tmp_path):
    """doc/_ext/skcalib_docs.py checks the links when the build finishes:
    under -W a fragment with no id fails the build, and a good one passes."""
    pytest.importorskip("sphinx")
    ext = CI_DIR.parent / "doc" / "_ext"
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ext)!r})\nextensions = ['skcalib_docs']\n"
    )
    (src / "other.rst").write_text(".. _there:\n\nOther\n=====\n\nText.\n")

    def build(link):
        (src / "index.rst").write_text(
            f"Home\n====\n\n`a link <{link}>`_, :ref:`there`\n\n"
            ".. toctree::\n\n   other\n"
        )
        return subprocess.run(
            [sys.executable, "-m", "sphinx", "-W", "-E", "-q", "-b", "html"]
            + [str(src), str(tmp_path / "out")],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    good = build("other.html#there")
    assert good.returncode == 0, good.stderr
    bad = build("other.html#nowhere")
    assert bad.returncode != 0
    assert "dead link other.html#nowhere in index.html" in bad.stderr
    assert "no id 'nowhere' in other.html" in bad.stderr


@needs_chromium
def test_a_table_wider_than_the_column_fails_on_every_page(tmp_path):
    # the benchmark-details page was exempt: no page is any more
    site = _site(tmp_path, "<p>Guide.</p>")
    article = (
        '<main><article class="bd-article" style="width: 600px">{}</article></main>'
    )
    narrow = "<table><tr><td>a</td><td>b</td></tr></table>"
    wide = '<table><tr><td style="min-width: 900px">wide</td></tr></table>'
    for name, table in (("choosing_benchmarks", wide), ("choosing", narrow)):
        (site / "user_guide" / f"{name}.html").write_text(
            PAGE.format(title=name, head="", body=article.format(table))
        )
    res = _run(site)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAIL user_guide/choosing_benchmarks.html" in res.stdout
    assert "1 table(s) wider than the 600 px text column" in res.stdout
    assert "FAIL user_guide/choosing.html" not in res.stdout
    assert "3/4 pages pass" in res.stdout
