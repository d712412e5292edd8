"""What the load_inline build server (inline_cache.py) may trust of a candidate's build.

A candidate's build.ninja is the candidate's own text: it names the compiler, nvcc's host
compiler (`-ccbin`) and, through the driver, the linker; its compile rules write the outputs the
worker reads back. Everything the worker itself runs or reads from there goes through here:

- a program is accepted only by its real path, found on the worker's PATH or under the system
  roots, and never inside the candidate's directories, the writable caches, /dev/shm or /tmp
  (`trusted_program`); even then the worker runs it only inside a build sandbox;
- a build output is opened without following links and without blocking (a FIFO), must be a
  regular file, and is copied from that descriptor (`open_regular`, `read_regular`,
  `copy_regular`; the profiling tiers read their reports the same way); a tree is
  copied only when it holds nothing but directories and regular files (`copy_tree_regular`);
- what the cache keeps is written to a temporary file beside its place and renamed onto it
  (`replace_atomically`).
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from typing import BinaryIO, Callable, Sequence

from .inline_build import Unsupported

SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt")
NEVER = ("/tmp", "/dev/shm", "/var/tmp")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real_dirs(paths: Sequence[str]) -> list[str]:
    return [os.path.realpath(p) for p in paths if p and os.path.isabs(p)]


def trusted_program(name: str, search_path: str | None, forbidden: Sequence[str]) -> str:
    """The real path of the program `name` (as a build command names it, looked up on
    `search_path` when it has no slash), accepted only when it lies in a directory on the
    worker's PATH or under SYSTEM_ROOTS and not under `forbidden` (the candidate's directories,
    the caches), /tmp or /dev/shm; otherwise Unsupported (torch's own build runs instead)."""
    if "/" in name:
        if not os.path.isabs(name):
            raise Unsupported(f"compiler {name!r} is a relative path: not built through the cache")
        found: str | None = name
    else:
        found = shutil.which(name, path=search_path)
    if not found or not os.path.isfile(found):
        raise Unsupported(f"compiler {name!r} not found")
    real = os.path.realpath(found)
    bad = _real_dirs([*forbidden, *NEVER, tempfile.gettempdir()])
    if any(_inside(real, b) or _inside(os.path.abspath(found), b) for b in bad):
        raise Unsupported(f"compiler {name!r} ({real}) lies in a directory the candidates can "
                          f"write: not built through the cache")
    allowed = _real_dirs([*os.environ.get("PATH", "").split(os.pathsep),
                          *(os.path.join(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH")
                            if os.environ.get(v))])
    if not (os.path.dirname(real) in allowed
            or any(_inside(real, r) for r in _real_dirs(list(SYSTEM_ROOTS)))):
        raise Unsupported(f"compiler {name!r} ({real}) is neither on the worker's PATH nor "
                          f"under {', '.join(SYSTEM_ROOTS)}: not built through the cache")
    return real


def open_regular(path: str) -> int:
    """A read descriptor of `path`, which must be a regular file and not a link (a FIFO would
    block the worker: opened non-blocking, then refused). Whatever candidate code could have
    written (a build output, a profiler's report) is read only through this."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.path.basename(path)} is not a regular file")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str) -> bytes:
    """The bytes of a build output (a regular file, no link followed)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def replace_atomically(dest: str, fill: Callable[[BinaryIO], None], mode: int | None = None
                       ) -> None:
    """Writes a fresh temporary file beside `dest` through `fill` (0600, or `mode`) and renames
    it onto `dest`: atomic, and unique per call, since threads and workers write at once. The
    temporary file is removed when anything fails."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest), prefix=os.path.basename(dest) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise


def copy_regular(src: str, dest: str, mode: int = 0o444) -> None:
    """Copies the regular file `src` (no link followed) to `dest` through replace_atomically."""
    with os.fdopen(open_regular(src), "rb") as f:
        replace_atomically(dest, lambda out: shutil.copyfileobj(f, out), mode)


def copy_tree_regular(src: str, dest: str) -> None:
    """Copies a directory the build wrote, refusing anything but directories and regular files
    (links are copied as links by copytree(symlinks=True), then refused here)."""
    shutil.copytree(src, dest, symlinks=True)
    for top, dirs, files in os.walk(dest):
        for name in dirs + files:
            st = os.lstat(os.path.join(top, name))
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise OSError(f"the build wrote {name}, not a regular file")
