"""nvcc's own steps (`nvcc --dryrun --keep`) run as a dependency graph (inline_cache.py;
docs/evaluation.md, "Compile caches").

What a CUDA 13 dry run of `nvcc -c x.cu` does (checked with --keep on the real tools):
  1. gcc -E (host)                        -> x.cpp4.ii
  2. cudafe++ x.cpp4.ii                   -> x.cudafe1.cpp, and x.module_id (--gen_module_id_file)
  3. gcc -E -D__CUDA_ARCH__ (device)      -> x.cpp1.ii
  4. cicc x.cpp1.ii, reads x.module_id    -> x.ptx, and x.cudafe1.stub.c, x.cudafe1.gpu
  5. ptxas -> x.cubin;  6. fatbinary -> x.fatbin, x.fatbin.c
  7. gcc -c x.cudafe1.cpp (it #includes x.cudafe1.stub.c, which #includes x.fatbin.c) -> x.o
cicc reads the module id cudafe++ writes, so as nvcc runs them the device chain (3-6) waits for
the host front end (1-2). The id is derived from the source's path and its first external
definition (or, with none, the process id): it only has to be the same in the host stub and the
device code. cudafe++ reads an existing id file when --gen_module_id_file is absent (its output
is then byte-identical to nvcc's for the same id), so `pin_module_id` writes an id first and
both chains read it: the host and device chains then run in parallel, and only the final host
compile waits for both.
"""
from __future__ import annotations

import concurrent.futures
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Protocol

# Intermediate files, by basename (conservative: a shared basename is a dependency); not a
# directory (a name followed by "/").
INTERMEDIATE = re.compile(r"([\w.+-]+\.(?:ii|cpp|c|ptx|cubin|fatbin|module_id|gpu|o))(?![\w./])")
# An argument that names a file the step neither reads nor writes: cudafe++'s --stub_file_name
# is the name its output #includes (cicc writes that file).
STUB_NAME = re.compile(r'--stub_file_name\s+("[^"]*"|\S+)')


class StepResult(Protocol):
    code: int
    output: str


@dataclass
class Plan:
    """The dry run as commands: `prefix` (nvcc's variables, exported) runs before each command;
    deps[i] are the steps command i waits for; `module_id` is the (path, id) to write before any
    step when the id is pinned."""

    prefix: str
    commands: list[str]
    deps: list[set[int]]
    module_id: tuple[str, str] | None = None
    notes: list[str] = field(default_factory=list)


def parse_dryrun(dryrun: str) -> tuple[list[str], list[str]] | None:
    """(exports, commands) of `nvcc --dryrun` output; None when it holds no command."""
    assigns, commands = [], []
    for line in dryrun.splitlines():
        if not line.startswith("#$ "):
            continue
        text = line[3:].strip()
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", text)
        if m:  # values are nvcc's own text (quotes, spaces): exported verbatim, quoted
            assigns.append(f"export {m.group(1)}={shlex.quote(m.group(2).strip())}")
        elif text:
            commands.append(text)
    return (assigns, commands) if commands else None


def module_id_for(source_name: str, seed: str) -> str:
    """An id in nvcc's own shape (_<hash>_<length>_<name>_<hash>), from `seed` (the unit's
    content key): the same source gets the same id, different sources different ids."""
    base = os.path.basename(source_name)
    return f"_{seed[:8]}_{len(base)}_{re.sub(r'[^A-Za-z0-9]', '_', base)}_{seed[8:16]}"


def pin_module_id(commands: list[str], module_id: str) -> tuple[list[str], str] | None:
    """The commands with the one `--gen_module_id_file` dropped (cudafe++ then reads the id
    file), and that file's path; None when the dry run does not have exactly one generator."""
    gens = [i for i, c in enumerate(commands) if "--gen_module_id_file" in c.split()]
    if len(gens) != 1:
        return None
    m = re.search(r'--module_id_file_name\s+("[^"]*"|\S+)', commands[gens[0]])
    if not m:
        return None
    path = shlex.split(m.group(1))[0]
    out = list(commands)
    out[gens[0]] = re.sub(r"\s--gen_module_id_file(?=\s)", "", " " + out[gens[0]] + " ").strip()
    return out, path


def plan(dryrun: str, module_id: str | None = None) -> Plan | None:
    """The step graph of a dry run. A step waits for every earlier step that names one of its
    intermediate files (the dry run's order is a valid serial order, so no step runs before its
    inputs exist); the last step (the compile of cudafe++'s output, which #includes the stub
    and the fatbinary without naming them) waits for all. With `module_id`, the id is pinned
    (written before any step) and is no dependency."""
    parsed = parse_dryrun(dryrun)
    if parsed is None:
        return None
    assigns, commands = parsed
    notes: list[str] = []
    pinned: tuple[str, str] | None = None
    if module_id is not None:
        got = pin_module_id(commands, module_id)
        if got is None:
            notes.append("module id not pinned: not exactly one --gen_module_id_file")
        else:
            commands, path = got
            pinned = (path, module_id)
    files = []
    for c in commands:
        if os.path.basename(c.split(maxsplit=1)[0].strip('"')) == "cudafe++":
            c = STUB_NAME.sub("", c)
        named = set(INTERMEDIATE.findall(c))
        if pinned is not None:
            named.discard(os.path.basename(pinned[0]))
        files.append(named)
    deps = [{j for j in range(i) if files[j] & files[i]} for i in range(len(commands))]
    deps[-1] = set(range(len(commands) - 1))
    prefix = "; ".join(assigns) + ("; " if assigns else "")
    return Plan(prefix, commands, deps, pinned, notes)


def nvcc_steps(dryrun: str, keep: str) -> tuple[str, list[str], list[set[int]]] | None:
    """(environment prefix, commands, dependencies) of a dry run, the module id not pinned
    (as nvcc runs it: cicc waits for cudafe++). `keep` is unused (kept for callers)."""
    p = plan(dryrun)
    return None if p is None else (p.prefix, p.commands, p.deps)


def write_module_id(cwd: str, path: str, ident: str) -> None:
    """Writes the pinned id at `path` (from the dry run, i.e. the candidate's command) only
    inside `cwd`: no absolute path outside it, no `..`, no link followed on the way (each
    directory opened with O_NOFOLLOW from `cwd`'s descriptor) and a fresh file (O_EXCL) in
    place of whatever had that name. Anything else is an OSError: the unit is not cached."""
    target = os.path.normpath(os.path.join(cwd, path))
    rel = os.path.relpath(target, os.path.normpath(cwd))
    parts = rel.split(os.sep)
    if rel.startswith("..") or os.path.isabs(rel) or any(x in ("", ".", "..") for x in parts):
        raise OSError(f"nvcc's module id file {path!r} lies outside the build directory")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(cwd, flags)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = nxt
        try:
            os.unlink(parts[-1], dir_fd=fd)  # a link itself, never its target
        except FileNotFoundError:
            pass
        out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                      | os.O_CLOEXEC, 0o644, dir_fd=fd)
        with os.fdopen(out, "w") as f:
            f.write(ident)  # nvcc writes it without a newline
    finally:
        os.close(fd)


def run_plan(p: Plan, run: Callable[[str], StepResult], jobs: int, cwd: str = ".") -> \
        StepResult | None:
    """Runs the steps, each once its dependencies succeeded; `run(shell text)` runs one. The
    pinned module id is written first (relative paths against `cwd`, where the steps run).
    Returns the first failed step's result (in the dry run's order), or None."""
    if p.module_id is not None:
        write_module_id(cwd, *p.module_id)
    done: dict[int, concurrent.futures.Future[StepResult]] = {}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        def step(i: int) -> StepResult:
            for d in sorted(p.deps[i]):
                r = done[d].result()
                if r.code != 0:
                    return r
            return run(p.prefix + p.commands[i])

        # Submitted in order and each waits only on earlier ones: no deadlock with a pool of
        # at least one thread, as the earliest unfinished step never waits.
        for i in range(len(p.commands)):
            done[i] = pool.submit(step, i)
        return next((done[i].result() for i in range(len(p.commands))
                     if done[i].result().code != 0), None)
