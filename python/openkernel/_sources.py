"""Reference and candidate programs given as paths or as source text. The worker reads programs
from files, so source text is written once to a private folder of this process (named by its hash,
so the same text is the same file and hits the worker's caches), removed when the process exits."""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from typing import Optional, Union

Code = Union[str, "os.PathLike[str]"]

_lock = threading.Lock()
_folder: Optional[str] = None


def _private_folder() -> str:
    global _folder
    with _lock:
        if _folder is None:
            _folder = tempfile.mkdtemp(prefix="openkernel-sources-")
            atexit.register(shutil.rmtree, _folder, True)
        return _folder


def as_path(code: Code, what: str) -> str:
    """The file to evaluate for ``code``: a path-like object is a path; a str holding a line
    break is the program's source text; any other str is a path. ``what`` names it in messages
    (e.g. "candidate", which also names the file written)."""
    if isinstance(code, os.PathLike):
        return os.fspath(code)
    if not isinstance(code, str):
        raise TypeError(f"{what}: expected a path or the program's source text, "
                        f"got {type(code).__name__}")
    if "\n" not in code:
        return code
    digest = hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    path = os.path.join(_private_folder(), f"{what}_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(code)
        os.replace(tmp, path)
    return path
