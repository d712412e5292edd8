"""The link of a cached `load_inline` build, cached too (inline_cache.py; docs/evaluation.md,
"Compile caches").

A library is keyed on what decides its bytes: the keys of the objects it links (content keys the
worker computed), the link command with those objects, the output and the build directory
replaced by placeholders, the linker's identity (the driver, the `ld` it runs, its search
directories) and every library the command names, as found on those directories, with its size
and mtime. A link that names anything inside the candidate's directories (a library, a linker
script) or a flag that changes the linker is not cached: the candidate links it itself, as
before.
"""
from __future__ import annotations

import os
import re
import shlex

from .inline_build import unsafe_flag

# Flags that make the linker load code or read a script the link command chose.
LINK_UNSAFE = ("-fuse-ld", "-plugin", "--plugin", "-T", "--script", "-dT", "--dynamic-linker",
               "-Wl,@")


class NotCacheable(Exception):
    """This link is done by the candidate itself (the message says why)."""


def unsafe_link_flag(command: str) -> str | None:
    """The first flag of a link command that loads code into the compiler or linker: such a link
    is not cached. A cacheability rule only: the link runs the candidate's own shell text, and
    only the build sandbox protects."""
    bad = unsafe_flag(command)
    if bad:
        return bad
    for word in shlex.split(command)[1:]:
        for w in word.replace(",", " ").replace("=", " = ").split():
            if w.startswith(LINK_UNSAFE):
                return word
    return None


def parse_search_dirs(text: str) -> list[str]:
    """The driver's library directories from its `-print-search-dirs` report (LIBRARY_PATH
    included), which the worker gets from a build sandbox (inline_cache.Builder.probe): the
    driver is the candidate's choice and never runs outside one."""
    for line in text.splitlines():
        if line.startswith("libraries: "):
            return [os.path.normpath(d) for d in line[len("libraries: "):].lstrip("=").split(":")
                    if d]
    return []


def linker_name(text: str) -> str:
    """The `ld` the driver runs, from its `-print-prog-name=ld` report (as parse_search_dirs);
    the caller resolves and vets it (inline_safety.trusted_program)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "ld"


def libraries(words: list[str], system_dirs: list[str]) -> list[str]:
    """The files a link command's -l flags and file arguments name (-L directories first, then
    the driver's, as ld searches); a -l found nowhere is refused (ld would fail)."""
    dirs: list[str] = []
    names: list[str] = []
    files: list[str] = []
    it = iter(words[1:])
    for w in it:
        if w in ("-L", "-l"):
            w += next(it, "")
        if w.startswith("-L"):
            dirs.append(w[2:])
        elif w.startswith("-l"):
            names.append(w[2:])
        elif not w.startswith("-"):
            files.append(w)
    found = []
    for name in names:
        cands = [name[1:]] if name.startswith(":") else [f"lib{name}.so", f"lib{name}.a"]
        path = next((os.path.join(d, c) for d in dirs + system_dirs for c in cands
                     if os.path.isfile(os.path.join(d, c))), None)
        if path is None:
            raise NotCacheable(f"-l{name} was not found on the search path")
        found.append(os.path.realpath(path))
    for f in files:
        if not os.path.isfile(f):
            raise NotCacheable(f"the link command names {f!r}, not a file here")
        found.append(os.path.realpath(f))
    return found


def link_inputs(command: str, objects: dict[str, str], output: str, build_dir: str,
                roots: list[str], system_dirs: list[str]) -> tuple[str, list[list[object]]]:
    """(the command with placeholders, [path, size, mtime] of every library it names).
    `objects` maps each object's quoted path in the command to its placeholder."""
    text = command
    for quoted, holder in objects.items():
        if quoted not in text:
            raise NotCacheable(f"the link command does not name {quoted}")
        text = text.replace(quoted, holder)
    text = text.replace(shlex.quote(output), "@OUT@")
    if build_dir in text:
        raise NotCacheable("the link command names a file in the build directory")
    words = [w for w in shlex.split(text) if not re.fullmatch(r"@(OBJ:[0-9a-f]{64}|OUT)@", w)]
    stats: list[list[object]] = []
    for path in libraries(words, system_dirs):
        if any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
            raise NotCacheable(f"the link command names {path}, in the candidate's directories")
        st = os.stat(path)
        stats.append([path, st.st_size, st.st_mtime_ns])
    return text, stats


def substitute(template: str, objects: dict[str, str], output: str) -> str:
    """The command to run: placeholders back to the cached objects' paths and `output`."""
    for holder, path in objects.items():
        template = template.replace(holder, shlex.quote(path))
    return template.replace("@OUT@", shlex.quote(output))

