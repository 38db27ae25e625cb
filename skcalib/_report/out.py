"""Writing the outputs of ``skcalib report`` safely.

* Checked before the work: :func:`check_outputs` refuses every clash the
  writing would meet (``--html`` and ``--out`` alike), with a message naming
  the option, before any calibrator is fitted; writing checks again.
* Never through a symbolic link: an output name that is a link is refused
  (even with ``force``); files are created under a fresh temporary name
  (``O_CREAT | O_EXCL``, which never follows a link) and renamed into place
  with :func:`os.replace`, which replaces a directory entry, never a link's
  target.
* With the permissions of a file the user creates: the temporary file is
  created with mode ``0o666`` less the umask, as :func:`open` does (not
  ``0o600`` as :func:`tempfile.mkstemp` would: a colleague on the same host
  can read the report when the umask lets them).
* Never over an existing file without ``force``; the message names the files
  and the option that names them.
* One run's files are consistent: ``manifest.json`` (written last) lists this
  run's files with their SHA-256; with ``force`` the files of the previous
  run's manifest (and a ``best_calibrator.pkl`` that this run does not
  write) are removed first, so no stale file can pass for this run's.
"""

import hashlib
import json
import os
import secrets
import stat
from pathlib import Path

__all__ = []

MANIFEST = "manifest.json"
#: Every name a run may write in ``--out``.
KNOWN_OUTPUTS = (
    "report.json",
    "reliability.png",
    "calibration_over_time.png",
    "best_calibrator.pkl",
    MANIFEST,
)


class OutputError(Exception):
    """An output cannot be written safely: one line, exit status 3."""


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise OutputError(
            f"{path}: cannot be created, a parent is a file, not a folder"
        ) from None
    except OSError as exc:
        raise OutputError(f"{path}: cannot inspect ({exc.strerror})") from None


def prepare_dir(out):
    """Create ``out`` (and its parents) or check that it is a folder."""
    out = Path(out)
    st = _lstat(out)
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(out)
        except OSError:
            raise OutputError(f"--out {out}: a broken symbolic link") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"--out {out}: exists and is not a folder")
    if st is None:
        try:
            out.mkdir(parents=True)
        except NotADirectoryError:
            raise OutputError(
                f"--out {out}: cannot create it, a parent is a file, not a folder"
            ) from None
        except PermissionError:
            raise OutputError(
                f"--out {out}: cannot create it (permission denied)"
            ) from None
        except OSError as exc:
            raise OutputError(
                f"--out {out}: cannot create it ({exc.strerror})"
            ) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputError(f"--out {out}: not writable (permission denied)")
    return out


def check_targets(paths, force, option):
    """Refuse links always and existing files unless ``force``; ``option``
    (``"--out"``, ``"--html"``) is the one the messages say to change."""
    existing = []
    for path in paths:
        st = _lstat(path)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise OutputError(
                f"{path}: is a symbolic link; refusing to write through it "
                f"(remove it or choose another {option})"
            )
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{path}: exists and is not a regular file")
        existing.append(path)
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise OutputError(
            f"{option}: would overwrite {names}; pass --force to replace them, or "
            f"choose another {option}"
        )


def previous_outputs(out):
    """Files of ``out`` that an earlier run wrote: those its manifest lists
    (inside ``out``) and the known output names."""
    found = {out / name for name in KNOWN_OUTPUTS}
    manifest = out / MANIFEST
    st = _lstat(manifest)
    if st is not None and stat.S_ISREG(st.st_mode):
        try:
            listed = json.loads(manifest.read_text()).get("files", {})
        except (OSError, ValueError, AttributeError):
            listed = {}
        for name in listed:
            p = out / name
            if p.parent == out and name not in ("", ".", ".."):
                found.add(p)
    return sorted(p for p in found if _lstat(p) is not None)


def remove_stale(paths):
    """Remove earlier outputs (directory entries: a link is removed, never
    its target)."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OutputError(f"{path}: cannot remove ({exc.strerror})") from None


_TEMP_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
)


def _create_temp(path):
    """A new file beside ``path`` under a random name, open for writing:
    ``O_EXCL`` (never an existing file, never through a link), mode
    ``0o666`` less the umask (the kernel applies it, as for :func:`open`)."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free temporary name")  # pragma: no cover


def write_bytes(path, data):
    """Write ``data`` to a temporary file beside ``path`` and rename it in."""
    path = Path(path)
    try:
        fd, tmp = _create_temp(path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        st = _lstat(path)
        if st is not None and stat.S_ISLNK(st.st_mode):  # planted meanwhile
            raise OutputError(f"{path}: became a symbolic link; not replaced")
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror})") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return hashlib.sha256(data).hexdigest()


def write_run(out, files, force, meta):
    """Write ``{name: bytes}`` in ``out`` with a manifest; return the paths.

    Refuses (before writing anything) when a name is a link or, without
    ``force``, when any output of an earlier run is there.
    """
    out = prepare_dir(out)
    targets = [out / name for name in files]
    stale = previous_outputs(out)
    check_targets(sorted(set(targets) | set(stale)), force, "--out")
    remove_stale(stale)  # the old manifest first: no half-old, half-new run
    written, digests = [], {}
    for name, data in files.items():
        digests[name] = {"sha256": write_bytes(out / name, data), "bytes": len(data)}
        written.append(out / name)
    manifest = {**meta, "files": digests}
    write_bytes(out / MANIFEST, json.dumps(manifest, indent=2).encode())
    written.append(out / MANIFEST)
    return written


def check_single(path, force):
    """Refuse a ``--html`` target that cannot be written safely."""
    path = Path(path)
    parent = path.parent
    try:
        is_dir = stat.S_ISDIR(os.stat(parent).st_mode)
    except FileNotFoundError:
        raise OutputError(
            f"--html {path}: the folder {parent} does not exist"
        ) from None
    except OSError as exc:
        raise OutputError(
            f"--html {path}: {parent} is not usable ({exc.strerror})"
        ) from None
    if not is_dir:
        raise OutputError(f"--html {path}: {parent} is not a folder")
    check_targets([path], force, "--html")
    return path


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name one directory entry (their folders
    resolved; neither needs to exist)."""
    a, b = Path(a), Path(b)
    return a.name == b.name and os.path.realpath(a.parent) == os.path.realpath(b.parent)


def check_outputs(out, html, force):
    """Everything :func:`write_run` (``out``) and :func:`write_single`
    (``html``) would refuse, checked before the work: the ``--html`` file,
    the ``--out`` folder (created here if missing) and the files of an
    earlier run in it, and an ``--html`` file that is one of ``--out``'s.
    ``None`` skips an output. The folder comes first: ``--html`` may name a
    file in it."""
    if out:
        if html and any(_same_file(html, Path(out) / n) for n in KNOWN_OUTPUTS):
            raise OutputError(
                f"--html {html}: --out {out} writes a file of that name; "
                "choose another --html"
            )
        out = prepare_dir(out)
        check_targets(previous_outputs(out), force, "--out")
    if html:
        check_single(html, force)


def write_single(path, data, force):
    """One file (``--html``): same rules, no manifest."""
    path = check_single(path, force)
    write_bytes(path, data)
    return path
