"""Writing the outputs of ``skcalib report`` safely.

* Never through a symbolic link: an output name that is a link is refused
  (even with ``--force``); files are created under a fresh temporary name
  (``O_EXCL``, which never follows a link) and renamed into place with
  :func:`os.replace`, which replaces a directory entry, never a link's target.
* Never over an existing file without ``force``; the message names the files.
* One run's files are consistent: ``manifest.json`` (written last) lists this
  run's files with their SHA-256; with ``force`` the files of the previous
  run's manifest (and a ``best_calibrator.pkl`` that this run does not
  write) are removed first, so no stale file can pass for this run's.
"""

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

__all__ = []

MANIFEST = "manifest.json"
#: Every name a run may write in ``--out``.
KNOWN_OUTPUTS = ("report.json", "reliability.png", "best_calibrator.pkl", MANIFEST)


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


def check_targets(paths, force):
    """Refuse links always and existing files unless ``force``."""
    existing = []
    for path in paths:
        st = _lstat(path)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise OutputError(
                f"{path}: is a symbolic link; refusing to write through it "
                "(remove it or choose another --out)"
            )
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{path}: exists and is not a regular file")
        existing.append(path)
    if existing and not force:
        names = ", ".join(str(p) for p in existing)
        raise OutputError(
            f"would overwrite {names}; pass --force to replace them, or choose "
            "another --out"
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


def write_bytes(path, data):
    """Write ``data`` to a temporary file beside ``path`` and rename it in."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
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
    check_targets(sorted(set(targets) | set(stale)), force)
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
        raise OutputError(f"{path}: the folder {parent} does not exist") from None
    except OSError as exc:
        raise OutputError(f"{path}: {parent} is not usable ({exc.strerror})") from None
    if not is_dir:
        raise OutputError(f"{path}: {parent} is not a folder")
    check_targets([path], force)
    return path


def write_single(path, data, force):
    """One file (``--html``): same rules, no manifest."""
    path = check_single(path, force)
    write_bytes(path, data)
    return path
