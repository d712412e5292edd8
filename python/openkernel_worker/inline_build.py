"""`load_inline` / `load` builds through the worker's compile cache (docs/evaluation.md,
"Compile caches").

torch's `load_inline` writes main.cpp / cuda.cu and build.ninja itself, then calls its internal
`_run_ninja_build(build_directory, verbose, error_prefix)`. `install()` (run by the candidate
process before the candidate is imported) replaces only that function: torch still generates the
sources, flags, versions and binding code and imports the module, so the module object and its
errors are torch's own. Our replacement reads build.ninja and asks the worker (trusted) to compile
each unit in a build sandbox of its own, through a content-addressed cache; the worker answers with
paths of objects in the cache (bound read-only into the candidate's sandbox) and the candidate
links them into its own build directory. A compile error is raised exactly as torch raises it:
RuntimeError("Error building extension '<name>': <compiler output>").

Anything this path does not understand (an unknown ninja rule, a worker that cannot build, a unit
whose flags load code into the compiler) falls back to torch's own ninja build, unchanged.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

# Flags that make the compiler load or run code the source chose: never built through the cache.
# A cacheability rule only, not a security boundary: the command is the candidate's own shell
# text, and only the build sandbox protects (docs/evaluation.md, "Compile caches").
UNSAFE_FLAGS = ("-fplugin", "-B", "-specs", "--specs", "-wrapper", "-no-integrated-cpp",
                "-iplugindir", "--compiler-bindir", "@")


class Unsupported(Exception):
    """build.ninja holds something this path does not handle: torch's own build runs instead."""


@dataclass
class Unit:
    """One compile: kind "cxx" or "cuda", its source (absolute), object (absolute), and the shell
    command ninja would run with $in/$out left as placeholders."""

    kind: str
    source: str
    obj: str
    command: str


@dataclass
class Job:
    build_dir: str
    units: list[Unit] = field(default_factory=list)
    link: str = ""  # the link command (shell), objects and output already substituted
    output: str = ""  # the library (absolute)


def _unescape(path: str) -> str:
    return path.replace("$ ", " ").replace("$:", ":").replace("$$", "$")


def _expand(text: str, variables: dict[str, str]) -> str:
    """Ninja's $name / ${name} substitution (values are shell text, as ninja passes them)."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "$":
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "{":
            end = text.index("}", i)
            out.append(variables.get(text[i + 2:end], ""))
            i = end + 1
        else:
            j = i + 1
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(variables.get(text[i + 1:j], ""))
            i = j
    return "".join(out)


def parse_ninja(build_dir: str) -> Job:
    """The compile units and the link of torch's build.ninja in build_dir. Raises Unsupported."""
    path = os.path.join(build_dir, "build.ninja")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Unsupported(f"cannot read {path}: {e}") from None
    variables: dict[str, str] = {}
    rules: dict[str, str] = {}
    builds: list[tuple[str, str, list[str]]] = []
    rule = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("  ") and rule is not None:
            key, _, value = line.strip().partition("=")
            if key.strip() == "command":
                rules[rule] = value.strip()
            continue
        rule = None
        if line.startswith("rule "):
            rule = line[5:].strip()
        elif line.startswith("build "):
            outs, _, rest = line[6:].partition(": ")
            parts = rest.replace("$ ", "\0").split()
            builds.append((_unescape(outs.replace("$ ", "\0").strip().replace("\0", "$ ")),
                           parts[0], [_unescape(p.replace("\0", "$ ")) for p in parts[1:]]))
        elif line.startswith("default "):
            continue
        elif "=" in line:
            key, _, value = line.partition("=")
            variables[key.strip()] = value.strip()
        else:
            raise Unsupported(f"unexpected line in build.ninja: {line!r}")
    job = Job(build_dir=build_dir)
    for out, rule_name, ins in builds:
        if rule_name not in rules:
            raise Unsupported(f"build.ninja uses an undefined rule {rule_name!r}")
        absout = out if os.path.isabs(out) else os.path.join(build_dir, out)
        if rule_name in ("compile", "cuda_compile") and len(ins) == 1:
            kind = "cuda" if rule_name == "cuda_compile" else "cxx"
            command = _expand(rules[rule_name], {**variables, "in": "@IN@", "out": "@OUT@"})
            job.units.append(Unit(kind, ins[0], absout, command))
        elif rule_name == "link" and not job.link:
            objs = " ".join(shlex.quote(i if os.path.isabs(i) else os.path.join(build_dir, i))
                            for i in ins)
            job.link = _expand(rules[rule_name], {**variables, "in": objs,
                                                  "out": shlex.quote(absout)})
            job.output = absout
        else:
            raise Unsupported(f"build.ninja rule {rule_name!r} is not handled here")
    if not job.units or not job.link:
        raise Unsupported("build.ninja has no compile or no link step")
    return job


def unsafe_flag(command: str) -> str | None:
    """The first flag of a unit's command that loads code into the compiler, if any: such a unit
    is not cached (its object would not depend on what the key sees). Not a security check."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    for word in words[1:]:  # also inside -Xcompiler a,b and --compiler-options 'a b'
        for w in word.replace(",", " ").replace("=", " = ").split():
            if w.startswith(UNSAFE_FLAGS) and not w.startswith(("@IN@", "@OUT@")):
                return word
    return None


# ---------------------------------------------------------------------------------------------
# The candidate process's side

Requester = Callable[[dict[str, Any]], dict[str, Any]]
_STATE: dict[str, Any] = {"requester": None, "original": None, "log": []}


def install(requester: Requester | None) -> bool:
    """Replaces torch's ninja build with the cached build; `requester` sends a build request to
    the worker and returns its reply (None: build through the cache in this process, for runs
    without a worker). Returns False when this torch has no `_run_ninja_build` (then torch's own
    load_inline runs unchanged)."""
    try:
        import torch.utils.cpp_extension as cpp
    except ImportError:
        return False
    original = getattr(cpp, "_run_ninja_build", None)
    if original is None:
        return False
    if _STATE["original"] is None:
        _STATE["original"] = original
    _STATE["requester"] = requester
    cpp._run_ninja_build = _run_build
    return True


def uninstall() -> None:
    import torch.utils.cpp_extension as cpp

    if _STATE["original"] is not None:
        cpp._run_ninja_build = _STATE["original"]


def build_log() -> list[dict[str, Any]]:
    """One entry per build this process asked for (what hit, what was built, seconds)."""
    return list(_STATE["log"])


def _run_build(build_directory: str, verbose: bool, error_prefix: str) -> None:
    """Stands in for torch's _run_ninja_build (same arguments, same errors)."""
    t0 = time.monotonic()
    try:
        job = parse_ninja(build_directory)
    except Unsupported as e:
        return _fallback(build_directory, verbose, error_prefix, str(e), t0)
    requester = _STATE["requester"]
    request = {"op": "build", "build_dir": build_directory, "id": uuid.uuid4().hex}
    if requester is None:
        from .inline_cache import local_build

        reply = local_build(request)
    else:
        reply = requester(request)
    if not reply.get("ok"):
        if reply.get("compile_error"):
            raise RuntimeError(f"{error_prefix}: {reply.get('output', '')}")
        return _fallback(build_directory, verbose, error_prefix,
                         str(reply.get("message", "the worker could not build")), t0)
    library = reply.get("library")
    t1 = time.monotonic()
    how: str | None = None
    if isinstance(library, str) and library:
        try:
            how = _copy_library(library, job.output)
        except OSError:  # not visible here after all: link the objects instead
            how = None
    if how is None:
        how = _link(job, reply, build_directory, verbose, error_prefix)
        if how is None:
            return _fallback(build_directory, verbose, error_prefix, "no object for a unit", t0)
    _STATE["log"].append({"build_dir": build_directory, "path": "cache",
                          "units": reply.get("units", []), "link": how,
                          "worker_link": reply.get("link"),
                          "link_s": round(time.monotonic() - t1, 3),
                          "total_s": round(time.monotonic() - t0, 3)})
    _write_log(build_directory)
    return None


def _copy_library(library: str, output: str) -> str:
    """The worker's cached library (read-only here) copied to where torch imports it."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(output) or ".",
                               prefix=os.path.basename(output) + ".", suffix=".tmp")
    try:
        with open(library, "rb") as src, os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(tmp, 0o755)
        os.replace(tmp, output)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise
    return "cached"


def _link(job: Job, reply: dict[str, Any], build_directory: str, verbose: bool,
          error_prefix: str) -> str | None:
    """torch's link command over the cached objects, here (None: an object is missing)."""
    objects = {str(k): str(v) for k, v in (reply.get("objects") or {}).items()}
    link = job.link
    for unit in job.units:
        cached = objects.get(unit.obj)
        if cached is None:
            return None
        link = link.replace(shlex.quote(unit.obj), shlex.quote(cached))
    r = subprocess.run(["/bin/sh", "-c", link], cwd=build_directory, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    output = r.stdout.decode(errors="replace")
    if verbose and output:
        sys.stderr.write(output)
    if r.returncode != 0:
        raise RuntimeError(f"{error_prefix}: FAILED: {os.path.basename(job.output)}\n{link}\n"
                           f"{output}")
    return "linked here"


def _fallback(build_directory: str, verbose: bool, error_prefix: str, why: str,
              t0: float) -> None:
    """torch's own ninja build, in this process (its sandbox), into its own build directory."""
    if verbose:
        sys.stderr.write(f"openkernel inline build: torch's own build ({why})\n")
    try:
        _STATE["original"](build_directory, verbose, error_prefix=error_prefix)
    finally:
        _STATE["log"].append({"build_dir": build_directory, "path": "torch", "reason": why,
                              "total_s": round(time.monotonic() - t0, 3)})
        _write_log(build_directory)


def _write_log(build_directory: str) -> None:
    try:
        with open(os.path.join(build_directory, "openkernel_build.json"), "w") as f:
            json.dump(_STATE["log"][-1], f)
    except OSError:
        pass

