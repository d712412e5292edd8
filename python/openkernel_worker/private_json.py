"""JSON files the worker keeps for itself beside its caches (the bandwidth, the floor's counts):
read only when this user alone could have written them, written atomically.

A file is trusted when it is a regular file (not a symlink) owned by this user that neither group
nor others may write, in a folder of this user that neither group nor others may write. Anything
else is refused with a reason, never read. Writes go through a temporary file in the same folder
(0600; the folder made 0700) and a rename. `read_entry` checks the version and key a cache entry
carries; callers check the rest of the content themselves (plausible values). Not thread-safe
against a concurrent writer of the same path beyond what the rename gives (the last writer wins,
whole).
"""
from __future__ import annotations

import json
import os
import stat
import tempfile
from typing import Any


def folder_problem(folder: str) -> str:
    """Why `folder` is not this user's alone, or ""."""
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return "is not a folder of this user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by others"
    return ""


def file_problem(path: str) -> str:
    """Why `path` cannot be trusted as this user's own file, or ""."""
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not {os.geteuid()}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by others"
    if folder_problem(os.path.dirname(path)):
        return "its folder is not this user's alone"
    return ""


def read(path: str, limit: int) -> tuple[Any, str]:
    """(the parsed JSON, "") for a trustworthy file of at most `limit` bytes read, else
    (None, why not): "no entry" when there is none."""
    if not os.path.lexists(path):
        return None, "no entry"
    try:
        why = file_problem(path)
        if why:
            return None, why
        with open(path, "rb") as f:
            return json.loads(f.read(limit)), ""
    except (OSError, ValueError) as e:
        return None, f"unreadable ({type(e).__name__})"


def read_entry(path: str, limit: int, version: int, key: dict[str, Any], label: str,
               other: str) -> tuple[dict[str, Any] | None, str]:
    """(the entry, "") for a trustworthy cache entry of this `version` and `key`, else (None, why
    not): "no entry" when there is none, otherwise "`label` ignored: ..." (`other` names what
    else a foreign key stands for: "another version or `other`")."""
    data, why = read(path, limit)
    if why:
        return None, why if why == "no entry" else f"{label} ignored: {why}"
    if not isinstance(data, dict) or data.get("version") != version or data.get("key") != key:
        return None, f"{label} ignored: another version or {other}"
    return data, ""


def write(path: str, payload: Any) -> str:
    """Writes `payload` as JSON atomically (file 0600, folder 0700); why it could not, or ""."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        problem = folder_problem(folder)
        if problem:
            return f"{folder} {problem}"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".entry-")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(payload, f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        return str(e)
    return ""
