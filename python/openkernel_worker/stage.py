"""The `stage` request: files the engine sends over the channel to a worker on another host.

A worker started over SSH (docs/remote.md) cannot open the engine's paths, so the engine sends each
reference and candidate once, as bytes, and uses the path this returns in its requests. Files are
kept by content: `<root>/sources/<sha256>/<name>`, where root is $OPENKERNEL_REMOTE_CACHE (set by
the engine's launch command; default the system's temporary folder), so a file staged before (by
this or an earlier worker) is not written again. Written through a temporary file and a rename,
0600 in folders of 0700; a staged file that exists is trusted only when its content still hashes
to its name. One request at a time, like every request; concurrent workers of one user race only
to rename identical bytes into place.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import tempfile
from typing import Any

from .protocol import RequestError

MAX_STAGED_BYTES = 12 << 20  # above the worker's 8 MiB source limit, below the 16 MiB line limit
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.+-]{0,199}$")


def stage_root() -> str:
    return os.environ.get("OPENKERNEL_REMOTE_CACHE") or os.path.join(tempfile.gettempdir(),
                                                                      "openkernel-cache")


def _holds(path: str, digest: str) -> bool:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read(MAX_STAGED_BYTES + 1)).hexdigest() == digest
    except OSError:
        return False


def _put(root: str, entry: Any) -> str:
    if not isinstance(entry, dict):
        raise RequestError("stage: each of files must be an object {name, sha256, data}")
    name, digest, data = entry.get("name"), entry.get("sha256"), entry.get("data")
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise RequestError(f"stage: name must be a plain file name, got {str(name)[:80]!r}")
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise RequestError("stage: sha256 must be 64 lowercase hex digits")
    if not isinstance(data, str) or len(data) > (MAX_STAGED_BYTES // 3 + 1) * 4:
        raise RequestError(f"stage: data must be base64 of at most {MAX_STAGED_BYTES >> 20} MiB")
    folder = os.path.join(root, "sources", digest)
    path = os.path.join(folder, name)
    if _holds(path, digest):
        return path
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise RequestError(f"stage: data of {name} is not base64") from None
    if hashlib.sha256(raw).hexdigest() != digest:
        raise RequestError(f"stage: the bytes of {name} do not hash to the sha256 sent")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".stage-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def stage(req: dict[str, Any]) -> dict[str, Any]:
    """{"files": [{"name", "sha256", "data" (base64)}]} -> {"cache_dir", "paths"} (one path per
    file, in order). Without files it only tells the cache folder (the engine's cache_dir there)."""
    root = stage_root()
    files = req.get("files", [])
    if not isinstance(files, list) or len(files) > 16:
        raise RequestError("stage: files must be a list of at most 16 objects")
    try:
        paths = [_put(root, entry) for entry in files]
    except OSError as e:
        from .options import EnvironmentProblem

        raise EnvironmentProblem(f"cannot keep a staged file under {root}: {e}") from None
    return {"cache_dir": root, "paths": paths}
