"""Open the built documentation in a headless browser, with no network.

Usage::

    python .ci/check_docs_site.py BUILD_DIR [--jobs 2] [--timeout 120]

``BUILD_DIR`` is Sphinx's HTML output. The landing page, the user-guide
index, every user-guide page and every gallery page (``auto_examples/*.html``)
are opened in headless Chromium (Debian's ``chromium`` package) from
``file://`` URLs with every host name unresolvable and a dead proxy, so a
page that needs the network fails here as it would for a reader offline.
A page fails, with a line naming it and the problem, on

* a script, stylesheet or font loaded from the network (``http(s)://``);
* an ``<img>`` whose file does not exist, or that the browser cannot load;
* an error: an uncaught exception, ``console.error``, a failed load of a
  script or stylesheet, or an error the browser logs on its console;
* unrendered maths: a ``.math`` element (Sphinx's output for ``:math:`` and
  ``.. math::``) without a MathJax container once MathJax has run, or a raw
  ``\\(``, ``\\[`` or ``$$`` left in the text outside code;
* a table wider than the text column (at the 1280 px window), on every
  page checked, the benchmark details included (their report tables are
  split to fit, ``doc/_ext/_report_tables.py``).

Every HTML page of the build (the API pages and indexes too) is also read,
without the browser, for dead internal links: a link to a page of the site
that does not exist, or whose ``#fragment`` names no ``id`` (nor ``<a
name>``) of the page it points to, fails with a line naming the page, the
link and the missing target (:func:`dead_links`; the Sphinx build runs the
same check when it finishes, ``doc/_ext/skcalib_docs.py``).

Only the standard library and the ``chromium`` executable are used. Each page
gets its own browser process, ``--jobs`` at a time. Exit status: 0 when every
page passes, 1 when one fails, 2 when the pages or the browser are missing.
"""

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: Inserted right after ``<head>`` of a copy of each page: records errors from
#: the start, and once the page (and MathJax, if any) is done writes what it
#: found as JSON into ``<pre id="skcalib-check">``, which ``--dump-dom``
#: prints.
CHECK_SCRIPT = r"""<script>
(function () {
  const errors = [];
  const consoleError = console.error.bind(console);
  console.error = function (...args) {
    errors.push("console.error: " + args.map(String).join(" "));
    consoleError(...args);
  };
  window.addEventListener("error", (e) => {
    const t = e.target;
    if (t && t !== window && (t.src || t.href)) {
      if (t.tagName !== "IMG") errors.push("failed to load " + (t.src || t.href));
    } else {
      errors.push("uncaught error: " + e.message);
    }
  }, true);
  window.addEventListener("unhandledrejection",
    (e) => errors.push("unhandled rejection: " + String(e.reason)));
  function loads(src) {
    return new Promise((done) => {
      const img = new Image();
      img.onload = () => done(img.naturalWidth > 0);
      img.onerror = () => done(false);
      img.src = src;
    });
  }
  async function check() {
    const mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) {
      try { await mj.startup.promise; } catch (e) { errors.push("MathJax: " + e); }
    }
    const images = Array.from(document.images);
    const broken = [];
    for (const img of images) {
      const src = img.currentSrc || img.src;
      if (!src || (img.complete && img.naturalWidth > 0)) continue;
      if (!(await loads(src))) broken.push(src);
    }
    const maths = Array.from(document.querySelectorAll(".math"));
    const unrendered = maths.filter((m) => !m.querySelector("mjx-container"))
      .map((m) => m.textContent.trim().slice(0, 60));
    const body = document.body.cloneNode(true);
    body.querySelectorAll("pre, code, script, style, textarea, mjx-container")
      .forEach((n) => n.remove());
    const text = body.textContent;
    const raw = [];
    for (const token of ["\\(", "\\[", "$$"]) {
      const at = text.indexOf(token);
      if (at >= 0) raw.push(text.slice(Math.max(0, at - 20), at + 40).trim());
    }
    // tables wider than the text column (they overflow it or scroll)
    const column = document.querySelector("article.bd-article")
      || document.querySelector("main") || document.body;
    const width = column.clientWidth;
    const wide = Array.from(column.querySelectorAll("table"))
      .map((t) => Math.round(t.scrollWidth))
      .filter((w) => w > width + 2);
    const out = document.createElement("pre");
    out.id = "skcalib-check";
    out.textContent = JSON.stringify({
      images: images.length, broken, maths: maths.length, unrendered, raw, errors,
      wide, width,
    });
    document.body.appendChild(out);
  }
  window.addEventListener("load", () => { check(); });
})();
</script>"""

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--mute-audio",
    # no network: no host name resolves, and any proxied request goes nowhere
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=15000",
    "--window-size=1280,900",
]

#: What the browser logs on stderr for a console message of level error (or
#: a resource it could not load), as opposed to info and warnings.
_CONSOLE_ERROR = re.compile(
    r"ERROR:CONSOLE|CONSOLE[:(]\d+\)?\] \"(?:Uncaught|Failed to load|Access to .*"
    r"blocked|Refused to)"
)
#: Problems printed per page.
MAX_SHOWN = 8
_NETWORK = re.compile(r"^(?:https?:)?//", re.IGNORECASE)


def find_chromium():
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def pages_to_check(build_dir):
    """The landing page, the user-guide pages and the gallery pages."""
    build_dir = Path(build_dir).resolve()  # file:// URLs need absolute paths
    pages = [build_dir / "index.html"]
    pages += sorted((build_dir / "user_guide").glob("*.html"))
    pages += sorted((build_dir / "auto_examples").glob("*.html"))
    return [p for p in pages if not p.name.startswith(".skcalib-check")]


class _Resources(HTMLParser):
    """The images, scripts, stylesheets and fonts a page refers to."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.images, self.loaded = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])
        elif tag == "script" and attrs.get("src"):
            self.loaded.append(attrs["src"])
        elif tag == "link" and attrs.get("href"):
            rel = (attrs.get("rel") or "").lower()
            if any(word in rel for word in ("stylesheet", "preload", "icon")):
                self.loaded.append(attrs["href"])


class _Anchors(HTMLParser):
    """The ids (and ``<a name>``) a page defines and the links it holds."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href") is not None:
            self.links.append(attrs["href"])


#: Fragments a browser resolves without an element of that id (HTML: an
#: empty fragment and ``#top`` scroll to the top of the page).
_FRAGMENTS_WITHOUT_ID = {"", "top"}
#: Build folders that hold no pages of the site (the theme's templates, the
#: reStructuredText sources).
_NOT_PAGES = {"_static", "_sources"}


def site_pages(build_dir):
    """Every HTML page of the build, but the theme's static files."""
    build_dir = Path(build_dir).resolve()
    return sorted(
        p
        for p in build_dir.rglob("*.html")
        if not _NOT_PAGES.intersection(p.relative_to(build_dir).parts[:1])
        and not p.name.startswith(".skcalib-check")
    )


def dead_links(build_dir):
    """Internal links of the built site that lead nowhere.

    A link is internal when it has no scheme and no host (``page.html#x``,
    ``../api.html``, ``#x``); it is dead when it points to an ``.html`` file
    that does not exist, or its ``#fragment`` (URL-decoded) is not an ``id``
    of the page it points to (``#`` and ``#top`` excepted). Links into files
    that are not pages (images, downloads) are not followed.

    Returns
    -------
    list of (Path, str, str)
        The page holding the link, the link, and what is missing; sorted by
        page, in the order of the links on the page.
    """
    build_dir = Path(build_dir).resolve()
    parsed = {}
    for page in site_pages(build_dir):
        parser = _Anchors()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        parsed[page] = parser
    dead = []
    for page, parser in parsed.items():
        for href in parser.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                continue
            path = unquote(parts.path)
            target = (page.parent / path).resolve() if path else page
            if target.suffix != ".html":
                continue
            if target not in parsed:
                if not target.is_file():
                    dead.append((page, href, f"no page {path}"))
                continue
            fragment = unquote(parts.fragment)
            if fragment not in _FRAGMENTS_WITHOUT_ID | parsed[target].ids:
                where = path or "this page"
                dead.append((page, href, f"no id {fragment!r} in {where}"))
    return dead


def static_problems(page, text):
    """Problems read from the HTML itself: network resources, missing images."""
    parser = _Resources()
    parser.feed(text)
    problems = [
        f"loads {url} from the network" for url in parser.loaded if _NETWORK.match(url)
    ]
    problems += [
        f"inline style loads {url} from the network"
        for url in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", text)
    ]
    for src in parser.images:
        if _NETWORK.match(src):
            problems.append(f"image {src} comes from the network")
            continue
        parts = urlsplit(src)
        if parts.scheme == "data":
            continue
        target = (page.parent / unquote(parts.path)).resolve()
        if not target.is_file():
            problems.append(f"image {src} does not exist ({target})")
    return problems


def browser_problems(chromium, page, text, timeout):
    """Open a copy of ``page`` (next to it, so relative links resolve) with
    :data:`CHECK_SCRIPT`; return the problems it reports."""
    checked = page.with_name(f".skcalib-check-{page.name}")
    head = re.search(r"<head[^>]*>", text, re.IGNORECASE)
    at = head.end() if head else 0
    checked.write_text(text[:at] + CHECK_SCRIPT + text[at:], encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory(prefix="skcalib-chromium-") as profile:
            res = subprocess.run(
                [
                    chromium,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={profile}",
                    "--dump-dom",
                    checked.as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return [f"the browser did not finish within {timeout} s"]
    finally:
        checked.unlink(missing_ok=True)
    found = re.search(
        r'<pre id="skcalib-check"[^>]*>(.*?)</pre>', res.stdout, re.DOTALL
    )
    if not found:
        tail = res.stderr.strip().splitlines()[-3:]
        return [f"the check did not run (exit {res.returncode}): {' | '.join(tail)}"]
    report = json.loads(html.unescape(found.group(1)))
    problems = [f"image {src} does not load" for src in report["broken"]]
    problems += report["errors"]
    problems += [
        line.strip()
        for line in res.stderr.splitlines()
        if _CONSOLE_ERROR.search(line) and ".skcalib-check-" not in line
    ]
    problems += [f"maths not rendered: {t!r}" for t in report["unrendered"]]
    problems += [f"raw maths in the text: {t!r}" for t in report["raw"]]
    if report["wide"]:
        problems.append(
            f"{len(report['wide'])} table(s) wider than the {report['width']} px "
            f"text column (widest {max(report['wide'])} px)"
        )
    return problems


def check_page(chromium, page, timeout):
    """All the problems of one page."""
    text = page.read_text(encoding="utf-8")
    return static_problems(page, text) + browser_problems(chromium, page, text, timeout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--jobs", type=int, default=2, help="browsers at a time")
    parser.add_argument("--timeout", type=float, default=120, help="seconds a page")
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("check_docs_site: Chromium is not installed", file=sys.stderr)
        return 2
    args.build_dir = args.build_dir.resolve()
    pages = pages_to_check(args.build_dir)
    missing = [p for p in pages[:1] if not p.is_file()]
    if missing or not (args.build_dir / "user_guide" / "index.html").is_file():
        print(f"check_docs_site: no built site in {args.build_dir}", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda p: check_page(chromium, p, args.timeout), pages))
    by_page = {}
    for page, href, missing in dead_links(args.build_dir):
        by_page.setdefault(page, []).append(f"dead link {href}: {missing}")
    extra = [p for p in by_page if p not in pages]
    results = [r + by_page.get(p, []) for p, r in zip(pages, results, strict=True)]
    results += [by_page[p] for p in extra]
    pages = pages + extra
    n_failed = 0
    for page, problems in zip(pages, results, strict=True):
        name = page.relative_to(args.build_dir)
        if problems:
            n_failed += 1
            print(f"FAIL {name}")
            for problem in problems[:MAX_SHOWN]:
                print(f"  {problem}")
            if len(problems) > MAX_SHOWN:
                print(f"  ... and {len(problems) - MAX_SHOWN} more")
    print(f"check_docs_site: {len(pages) - n_failed}/{len(pages)} pages pass")
    return 1 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
