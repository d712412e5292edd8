"""The worker's side of cached `load_inline` builds (inline_build.py; docs/evaluation.md,
"Compile caches").

The worker is trusted, the candidate is not. For each build request the worker:
1. copies build.ninja and the sources out of the candidate's directories into a private snapshot
   (inside a sandbox that sees only those directories, so a symlink cannot make the worker read
   its own secrets);
2. per unit, looks the unit up in the direct cache (key: compiler identity, exact command, build
   directory, source bytes; valid while every header it read is unchanged: size and mtime);
3. on a miss preprocesses the unit in a build sandbox (bwrap, no network, no GPU, writable only a
   fresh output directory, the snapshot bound read-only at the build directory's own path) and
   looks up the object by the preprocessed text (line markers naming the build directory
   normalised), the command and the compiler identity;
4. on a miss compiles it in a build sandbox: C++ units that start with torch/extension.h through a
   precompiled header (built once per flag set, in a build sandbox, checked with -Winvalid-pch);
   CUDA units as nvcc's own steps (`--dryrun`) run in parallel where independent;
5. moves the object into the cache under the key it computed itself. The cache is bound read-only
   into candidate sandboxes; nothing a candidate writes is ever stored or trusted as a key.
The compile commands are the candidate's own shell text: only the build sandbox protects. What
the worker itself runs (a compiler's --version, the driver's -print-*) runs in a build sandbox
too, and only for a program that inline_safety accepts; what it reads back from a build's output
directory is opened without following links and must be a regular file (inline_safety).
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Sequence

from . import inline_link, inline_nvcc, inline_safety
from .inline_build import Job, Unit, Unsupported, parse_ninja, unsafe_flag

CACHE_ENV = "OPENKERNEL_INLINE_CACHE"
PCH_HEADER = "#include <torch/extension.h>"
SOURCE_SUFFIXES = (".cpp", ".cu", ".cc", ".cxx", ".c")
EXTENSION_NAME = re.compile(r"(?<=\s)-DTORCH_EXTENSION_NAME=\S+(\s|$)")
LINE_MARKER = re.compile(rb'^(# ?(?:line )?\d+ ")([^"\n]*)(")', re.M)
_IDENTITY: dict[tuple[str, int, int], str] = {}
_LINKERS: dict[str, tuple[str, list[str]]] = {}


class CompileFailed(Exception):
    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(tempfile.gettempdir(),
                                                            "openkernel-cache")
    return os.environ.get(CACHE_ENV) or os.path.join(base, "inline")


def _sha(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else json.dumps(p, sort_keys=True).encode())
        h.update(b"\0")
    return h.hexdigest()


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass
class Run:
    code: int
    output: str


# The dependency-file flags torch puts in build.ninja, dropped from every command we run: g++'s
# `-MMD -MF $out.d`, nvcc's `--generate-dependencies-with-compile --dependency-output $out.d` (torch
# 1.13 and 2.0-2.5) and `-MD -MF $out.d` (torch 2.11 with CUDA 13's nvcc; without this form every
# CUDA unit on the H200 fell back to torch's own build).
DEPFILE_FLAGS = re.compile(r"(?<!\S)(?:-MM?D\s+-MF\s+@OUT@\.d|--generate-dependencies-with-compile"
                           r"\s+--dependency-output\s+@OUT@\.d)(?!\S)")


class Builder:
    """Serves build requests for one worker; `sandboxed` False only with --no-sandbox."""

    def __init__(self, cache_dir: str, env: dict[str, str], *, sandboxed: bool = True,
                 timeout_s: float = 600.0, jobs: int = 0) -> None:
        self.cache = os.path.abspath(cache_dir)
        # Work directories (snapshots of candidates' sources, builds in progress) live beside the
        # cache, not in it: the cache is visible (read-only) to every candidate, these are not.
        self.work = self.cache + ".work"
        for sub in ("objects", "direct", "pch", "libs"):
            os.makedirs(os.path.join(self.cache, sub), exist_ok=True)
        os.makedirs(self.work, exist_ok=True)
        self.env = dict(env)
        self.sandboxed = sandboxed
        self.timeout_s = timeout_s
        self.jobs = jobs or max(2, os.cpu_count() or 2)

    # -- running commands -------------------------------------------------------------------

    def run(self, command: str, out_dir: str, binds: Sequence[tuple[str, str]] = (),
            cwd: str | None = None) -> Run:
        """`sh -c command` in a build sandbox: `binds` (src, dest) read-only, the cache
        read-only, out_dir the only writable place."""
        from . import sandbox

        env = sandbox.scrub_env(self.env)
        if not self.sandboxed:
            argv = ["/bin/sh", "-c", command]
        else:
            pr = sandbox.probe("cpu")
            if not pr.ok or pr.bwrap is None:
                raise sandbox.SandboxUnavailable(pr.reason)
            args = sandbox.bwrap_args("cpu", scratch=out_dir, env=self.env)
            tail = ["--remount-ro", "/", "--chdir", out_dir]
            assert args[-4:] == tail, "sandbox.bwrap_args changed its tail"
            extra = ["--ro-bind", self.cache, self.cache]
            for src, dest in binds:
                extra += ["--ro-bind", src, dest]
            extra += ["--bind", out_dir, out_dir]  # again after the binds above: writable
            limits = json.dumps({"CORE": 0, "NPROC": 4096, "CPU": int(self.timeout_s * 4)})
            env["PYTHONPATH"] = sandbox.PKG_ROOT
            env.update({"TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
            argv = [pr.bwrap, *args[:-4], *extra, "--remount-ro", "/", "--chdir",
                    cwd or out_dir, "--", sys.executable, "-m", "openkernel_worker.sandbox",
                    "--limits", limits, "--", "/bin/sh", "-c", command]
        try:
            r = subprocess.run(argv, cwd=out_dir if not self.sandboxed else None, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=self.timeout_s,
                               start_new_session=True)
        except subprocess.TimeoutExpired:
            return Run(124, f"timed out after {self.timeout_s:g} s: {command}")
        return Run(r.returncode, r.stdout.decode(errors="replace"))

    def forbidden(self, roots: Sequence[str]) -> list[str]:
        """Where no program the worker runs may come from: the candidate's directories, the
        caches (all of the cache root: candidates write torch_extensions and triton there)
        and the build caches the environment names."""
        from .sandbox import CACHE_VARS

        return [*roots, os.path.dirname(self.cache), self.cache, self.work,
                *(self.env[v] for v in CACHE_VARS if self.env.get(v))]

    def program(self, name: str, roots: Sequence[str]) -> str:
        """The real path of a program a build command names, if the worker may run it
        (inline_safety.trusted_program)."""
        return inline_safety.trusted_program(name, self.env.get("PATH"), self.forbidden(roots))

    def probe(self, argv: Sequence[str]) -> Run:
        """A program's own report (--version, -print-*) run in a build sandbox, not here."""
        out = tempfile.mkdtemp(prefix="probe-", dir=self.work)
        try:
            return self.run(shlex.join(argv), out)
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def identity(self, command: str, roots: Sequence[str]) -> str:
        """The compiler's path, size, mtime and --version (what it is, not what it is called);
        a program the worker may not run, or whose --version fails in the build sandbox, is
        Unsupported (torch's own build then runs in the candidate's sandbox)."""
        real = self.program(shlex.split(command)[0], roots)
        st = os.stat(real)
        key = (real, st.st_size, st.st_mtime_ns)
        if key not in _IDENTITY:
            r = self.probe([real, "--version"])
            if r.code != 0:
                raise Unsupported(f"{real} --version failed in the build sandbox: "
                                  f"{r.output[-300:]}")
            _IDENTITY[key] = _sha(list(key), r.output.encode())
        return _IDENTITY[key]

    # -- snapshot ---------------------------------------------------------------------------

    def snapshot(self, build_dir: str, roots: Sequence[str], snap: str) -> Job:
        """Copies build.ninja and the units' sources into snap (unit i's as snap/src/<i>) from
        inside a sandbox that sees only `roots`; returns the job parsed from the copy, its
        objects, output and link command naming the build directory again."""
        build_dir = os.path.abspath(build_dir)
        if not any(_inside(os.path.realpath(build_dir), os.path.realpath(r)) for r in roots):
            raise Unsupported(f"build directory {build_dir} is outside the candidate's "
                              f"directories")
        # One sandbox start for build.ninja and the sources beside it (load_inline's main.cpp,
        # cuda.cu): a start costs about 0.25 s, most of a warm build.
        try:
            names = sorted(n for n in os.listdir(build_dir) if n.endswith(SOURCE_SUFFIXES))
        except OSError:
            names = []
        first = [os.path.join(build_dir, n) for n in ["build.ninja", *names]]
        self._copy(first, roots, snap, "ninja", required=1)
        shutil.copyfile(os.path.join(snap, "ninja", "0"), os.path.join(snap, "build.ninja"))
        job = parse_ninja(snap)
        job.build_dir = build_dir
        for u in job.units:  # objects were resolved against the snapshot; restore
            real = os.path.join(build_dir, os.path.relpath(u.obj, snap))
            job.link = job.link.replace(shlex.quote(u.obj), shlex.quote(real))
            u.obj = real
        real = os.path.join(build_dir, os.path.relpath(job.output, snap))
        job.link, job.output = job.link.replace(shlex.quote(job.output), shlex.quote(real)), real
        have = {p: os.path.join(snap, "ninja", str(i)) for i, p in enumerate(first)
                if i and os.path.isfile(os.path.join(snap, "ninja", str(i)))}
        rest = [u.source for u in job.units if u.source not in have]
        if rest:
            self._copy(rest, roots, snap, "more")
        os.makedirs(os.path.join(snap, "src"))
        for i, u in enumerate(job.units):
            got = have.get(u.source) or os.path.join(snap, "more", str(rest.index(u.source)))
            shutil.copyfile(got, os.path.join(snap, "src", str(i)))
        return job

    def _copy(self, paths: list[str], roots: Sequence[str], snap: str, sub: str,
              required: int | None = None) -> None:
        """Copies paths[i] to snap/sub/i from inside a sandbox that sees only `roots`; the first
        `required` (all by default) must be readable, the others are skipped when not."""
        dest = os.path.join(snap, sub)
        os.makedirs(dest, exist_ok=True)
        script = "; ".join(f"{{ cat -- {shlex.quote(p)} > {shlex.quote(os.path.join(dest, str(i)))}"
                           f" || rm -f {shlex.quote(os.path.join(dest, str(i)))}; }}"
                           for i, p in enumerate(paths)) + "; true"
        if self.sandboxed:
            r = self.run(script, dest, binds=[(r, r) for r in roots if os.path.exists(r)])
        else:
            for p in paths:
                real = os.path.realpath(p)
                if not any(_inside(real, os.path.realpath(r)) for r in roots):
                    raise Unsupported(f"source {p} is outside the candidate's directories")
            r = Run(subprocess.run(["/bin/sh", "-c", script], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT).returncode, "")
        for i, p in enumerate(paths[:len(paths) if required is None else required]):
            if r.code != 0 or not os.path.isfile(os.path.join(dest, str(i))):
                raise Unsupported(f"could not read {p}: {r.output.strip()[-300:]}")

    # -- one request ------------------------------------------------------------------------

    def serve(self, request: dict[str, Any], roots: Sequence[str]) -> dict[str, Any]:
        """A build request from a candidate: {"build_dir"}. `roots` are the directories the
        candidate may name (its scratch and extensions directories)."""
        t0 = time.monotonic()
        snap = tempfile.mkdtemp(prefix="snap-", dir=self.work)
        try:
            job = self.snapshot(str(request.get("build_dir", "")), roots, snap)
            units: list[dict[str, Any]] = []
            objects: dict[str, str] = {}
            with concurrent.futures.ThreadPoolExecutor(len(job.units)) as pool:
                futures = [pool.submit(self.unit, job, u, os.path.join(snap, "src", str(i)),
                                       roots) for i, u in enumerate(job.units)]
                for u, f in zip(job.units, futures):
                    path, info = f.result()
                    objects[u.obj] = path
                    units.append(info)
            reply = {"ok": True, "objects": objects, "units": units}
            library, reply["link"] = self.link(job, objects, roots)
            if library:
                reply["library"] = library
            reply["seconds"] = round(time.monotonic() - t0, 3)
            return reply
        except CompileFailed as e:
            return {"ok": False, "compile_error": True, "output": e.output[-20000:]}
        except (Unsupported, OSError) as e:
            return {"ok": False, "message": str(e)}
        finally:
            shutil.rmtree(snap, ignore_errors=True)

    def linker(self, command: str, roots: Sequence[str]) -> tuple[str, list[str]]:
        """(identity, library directories) of a link command's driver and the ld it runs; the
        driver's reports come from the build sandbox, and ld must pass as the driver did."""
        ident = self.identity(command, roots)
        if ident not in _LINKERS:
            exe = self.program(shlex.split(command)[0], roots)
            name = inline_link.linker_name(self.probe([exe, "-print-prog-name=ld"]).output)
            ld = self.program(name, roots)
            dirs = inline_link.parse_search_dirs(self.probe([exe, "-print-search-dirs"]).output)
            _LINKERS[ident] = (_sha(ident, self.identity(shlex.quote(ld), roots), dirs), dirs)
        return _LINKERS[ident]

    def link(self, job: Job, objects: dict[str, str], roots: Sequence[str]
             ) -> tuple[str | None, dict[str, Any]]:
        """The cached library for the job's link (path, what happened); (None, why) when the
        candidate links it itself: a link this cannot key, or one that failed here (the
        candidate's own link then reports it as torch does)."""
        t0 = time.monotonic()
        try:
            bad = inline_link.unsafe_link_flag(job.link)
            if bad:
                raise inline_link.NotCacheable(f"{bad} changes the linker")
            ident, dirs = self.linker(job.link, roots)
            holders = {shlex.quote(u.obj): "@OBJ:" + os.path.basename(objects[u.obj])[:-2] + "@"
                       for u in job.units}
            template, libs = inline_link.link_inputs(job.link, holders, job.output,
                                                     job.build_dir, list(roots), dirs)
        except (inline_link.NotCacheable, Unsupported, OSError, ValueError) as e:
            return None, {"result": "not cached", "reason": str(e)[:300]}
        lkey = _sha("link", ident, template, libs)
        lib = os.path.join(self.cache, "libs", lkey + ".so")
        if os.path.isfile(lib):
            return lib, {"result": "hit", "seconds": round(time.monotonic() - t0, 3)}
        out = tempfile.mkdtemp(prefix="link-", dir=self.work)
        try:
            paths = {holders[shlex.quote(u.obj)]: objects[u.obj] for u in job.units}
            r = self.run(inline_link.substitute(template, paths, f"{out}/lib.so"), out)
            if r.code != 0 or not os.path.isfile(os.path.join(out, "lib.so")):
                return None, {"result": "failed here", "reason": r.output[-300:]}
            self._store(os.path.join(out, "lib.so"), lib)
            return lib, {"result": "built", "seconds": round(time.monotonic() - t0, 3)}
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def unit(self, job: Job, unit: Unit, copy: str, roots: Sequence[str]
             ) -> tuple[str, dict[str, Any]]:
        """The cached object for one unit: (path in the cache, what happened)."""
        t0 = time.monotonic()
        bad = unsafe_flag(unit.command)
        if bad:
            raise Unsupported(f"{bad} loads code into the compiler: not built through the cache")
        ident = self.identity(unit.command, roots)
        if unit.kind == "cuda":  # nvcc runs a host compiler too: -ccbin's, else c++
            words = shlex.split(unit.command)
            host = words[words.index("-ccbin") + 1] if "-ccbin" in words[:-1] else "c++"
            ident = _sha(ident, self.identity(shlex.quote(host), roots))
        with open(copy, "rb") as f:
            source = f.read()
        info: dict[str, Any] = {"source": os.path.basename(unit.source), "kind": unit.kind}
        dkey = _sha("direct", ident, unit.command, unit.source, job.build_dir, source)
        hit = self._direct(dkey)
        if hit:
            info.update(result="hit_direct", seconds=round(time.monotonic() - t0, 3))
            return hit, info
        out = tempfile.mkdtemp(prefix="build-", dir=self.work)
        try:
            binds = [(copy, unit.source)]
            ii, deps = self._preprocess(unit, out, binds)
            # CUDA: -E shows the host side only (no __CUDA_ARCH__ branches): the source too.
            okey = _sha("object", ident, unit.command.replace(job.build_dir, "@DIR@"),
                        source if unit.kind == "cuda" else b"",
                        LINE_MARKER.sub(lambda m: m.group(1) + m.group(2).replace(
                            job.build_dir.encode(), b"@DIR@") + m.group(3), ii))
            info["preprocess_s"] = round(time.monotonic() - t0, 3)
            obj = os.path.join(self.cache, "objects", okey + ".o")
            if os.path.isfile(obj):
                info["result"] = "hit"
            else:
                t1 = time.monotonic()
                if unit.kind == "cxx" and source.lstrip().startswith(PCH_HEADER.encode()):
                    self._compile_pch(unit, out, binds, info, roots)
                elif unit.kind == "cuda":
                    self._compile_cuda(unit, out, binds, info, okey)
                else:
                    self._check(self.run(self._cmd(unit, "-c", f"{out}/unit.o"), out, binds),
                                unit)
                self._store(os.path.join(out, "unit.o"), obj)
                info.update(result="built", compile_s=round(time.monotonic() - t1, 3))
            self._record(dkey, okey, deps, unit.source)
            info["seconds"] = round(time.monotonic() - t0, 3)
            return obj, info
        finally:
            shutil.rmtree(out, ignore_errors=True)

    # -- steps ------------------------------------------------------------------------------

    @staticmethod
    def _cmd(unit: Unit, mode: str, target: str, extra: str = "") -> str:
        """The unit's command with its dependency-file flags dropped, `mode` ("-c", "-E", "-M")
        in place of -c and `target` as the output."""
        cmd = DEPFILE_FLAGS.sub("", unit.command)
        core = "-c @IN@ -o @OUT@"
        if core not in cmd or "@OUT@" in cmd.replace(core, "") or "@IN@" in cmd.replace(core, ""):
            raise Unsupported(f"unexpected compile command: {unit.command}")
        return cmd.replace(core, f"{extra} {mode} {shlex.quote(unit.source)} -o "
                                 f"{shlex.quote(target)}")

    def _check(self, r: Run, unit: Unit) -> None:
        if r.code != 0:
            raise CompileFailed(f"FAILED: {os.path.basename(unit.obj)}\n"
                                f"{self._cmd(unit, '-c', unit.obj)}\n{r.output}")

    def _preprocess(self, unit: Unit, out: str, binds: list[tuple[str, str]]
                    ) -> tuple[bytes, list[str] | None]:
        """The unit's preprocessed text and the files it read (from a -M run alongside)."""
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            e = pool.submit(self.run, self._cmd(unit, "-E", f"{out}/unit.ii"), out, binds)
            m = pool.submit(self.run, self._cmd(unit, "-M", f"{out}/unit.d"), out, binds)
            re_, rm = e.result(), m.result()
        if re_.code != 0:  # cheap to repeat: torch's own build reports it as torch does
            raise Unsupported(f"preprocessing failed in the build sandbox: {re_.output[-500:]}")
        ii = inline_safety.read_regular(os.path.join(out, "unit.ii"))
        deps: list[str] | None = None  # unknown: no direct entry
        if rm.code == 0 and os.path.lexists(os.path.join(out, "unit.d")):
            text = inline_safety.read_regular(os.path.join(out, "unit.d")).decode(
                errors="replace").replace("\\\n", " ")
            deps = [d for d in text.partition(":")[2].split() if d != unit.source]
        return ii, deps

    def _record(self, dkey: str, okey: str, deps: list[str] | None, source: str) -> None:
        """The direct entry: valid while every dependency keeps its size and mtime. Only when
        every dependency lies outside the candidate's reach (not under a build or scratch
        directory: absolute paths in system or Python directories)."""
        if deps is None:
            return
        entries = []
        for d in deps:
            d = os.path.abspath(d)
            if _inside(d, os.path.dirname(source)):
                return
            try:
                st = os.stat(d)
            except OSError:
                return
            entries.append([d, st.st_size, st.st_mtime_ns])
        self._write_json(os.path.join(self.cache, "direct", dkey + ".json"),
                         {"object": okey, "deps": entries})

    def _direct(self, dkey: str) -> str | None:
        try:
            with open(os.path.join(self.cache, "direct", dkey + ".json")) as f:
                entry = json.load(f)
            for path, size, mtime in entry["deps"]:
                st = os.stat(path)
                if st.st_size != size or st.st_mtime_ns != mtime:
                    return None
            obj = os.path.join(self.cache, "objects", str(entry["object"]) + ".o")
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return obj if re.fullmatch(r"[0-9a-f]{64}", str(entry["object"])) and os.path.isfile(
            obj) else None

    def _write_json(self, path: str, value: Any) -> None:
        inline_safety.replace_atomically(path, lambda f: f.write(json.dumps(value).encode()))

    def _store(self, built: str, dest: str) -> None:
        """Copies a build's output into the cache: a regular file only, no link followed (a
        rule that links its output to a secret must not get the secret cached)."""
        if not os.path.lexists(built):
            raise CompileFailed(f"the compiler wrote no object ({os.path.basename(dest)})")
        inline_safety.copy_regular(built, dest, 0o444)

    def _compile_pch(self, unit: Unit, out: str, binds: list[tuple[str, str]],
                     info: dict[str, Any], roots: Sequence[str]) -> None:
        """A C++ unit that starts with torch/extension.h, with that header precompiled once per
        flag set (and compiler); -Winvalid-pch makes an unusable header visible in the log."""
        pdir = self._pch(unit, info, roots)
        extra = f"-include {shlex.quote(os.path.join(pdir, 'pch.h'))} -Winvalid-pch" if pdir else ""
        r = self.run(self._cmd(unit, "-c", f"{out}/unit.o", extra), out, binds)
        if "invalid-pch" in r.output or "not using" in r.output:
            info["pch_warning"] = r.output[-500:]
        self._check(r, unit)

    def _pch(self, unit: Unit, info: dict[str, Any], roots: Sequence[str]) -> str | None:
        """The precompiled header for the unit's flags without -DTORCH_EXTENSION_NAME, so one
        serves every extension name: torch/extension.h does not reference that macro, and GCC
        accepts a header built without a macro the unit defines when the header never used it
        (one built with another value it refuses: "not used because `TORCH_EXTENSION_NAME'
        defined as ..."). Should a header ever use it, -Winvalid-pch reports the refusal and the
        unit compiles from the text, correct either way."""
        command = EXTENSION_NAME.sub("", unit.command)
        pkey = _sha("pch", self.identity(command, roots),
                    command.replace(os.path.dirname(unit.source), "@DIR@"))
        pdir = os.path.join(self.cache, "pch", pkey)
        meta = os.path.join(pdir, "deps.json")
        if os.path.isfile(meta):
            try:
                with open(meta) as f:
                    deps = json.load(f)
                if all(os.stat(p).st_size == s and os.stat(p).st_mtime_ns == m
                       for p, s, m in deps):
                    info["pch"] = "hit"
                    return pdir
            except (OSError, ValueError, TypeError):
                pass
        t0 = time.monotonic()
        out = tempfile.mkdtemp(prefix="pch-", dir=self.work)
        try:
            header = os.path.join(out, "pch.h")
            with open(header, "w") as f:
                f.write(PCH_HEADER + "\n")
            hunit = Unit("cxx", header, header + ".gch", command)
            cmd = self._cmd(hunit, "-x c++-header", header + ".gch",
                            f"-MD -MF {shlex.quote(out)}/pch.d")
            r = self.run(cmd, out)
            if r.code != 0 or not os.path.lexists(header + ".gch"):
                info["pch"] = f"failed: {r.output[-300:]}"
                return None
            text = inline_safety.read_regular(os.path.join(out, "pch.d")).decode(errors="replace")
            names = text.replace("\\\n", " ").partition(":")[2].split()
            deps = [[p, os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in names
                    if os.path.isabs(p) and not _inside(p, out)]
            os.remove(os.path.join(out, "pch.d"))
            self._publish_pch(out, pdir, deps)
            info["pch"] = "built"
            info["pch_build_s"] = round(time.monotonic() - t0, 3)
            return pdir
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def _publish_pch(self, out: str, pdir: str, deps: list[list[Any]]) -> None:
        """Copies the header's build (directories and regular files only) to a unique staging
        name beside `pdir`, writes deps.json there (not in `out`, where the build could have
        planted a link) and renames it into place; a stale `pdir` is renamed away first."""
        stage = tempfile.mkdtemp(dir=os.path.dirname(pdir), prefix=os.path.basename(pdir) + ".")
        try:
            inline_safety.copy_tree_regular(out, os.path.join(stage, "pch"))
            self._write_json(os.path.join(stage, "pch", "deps.json"), deps)
            if os.path.isdir(pdir):
                os.replace(pdir, os.path.join(stage, "old"))
            try:
                os.replace(os.path.join(stage, "pch"), pdir)
            except OSError:  # another build published it meanwhile: theirs serves as well
                pass
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def _compile_cuda(self, unit: Unit, out: str, binds: list[tuple[str, str]],
                      info: dict[str, Any], okey: str) -> None:
        """nvcc's steps from --dryrun as a graph (inline_nvcc.py): the module id pinned from the
        object's key, so the host and device chains run in parallel; the plain nvcc command
        when the dry run cannot be read."""
        keep = os.path.join(out, "keep")
        os.makedirs(keep)
        dry = self.run(self._cmd(unit, "-c", f"{out}/unit.o",
                                 f"--dryrun --keep --keep-dir {shlex.quote(keep)}"), out, binds)
        steps = inline_nvcc.plan(dry.output, inline_nvcc.module_id_for(unit.source, okey)) \
            if dry.code == 0 else None
        if not steps:
            info["cuda_chains"] = "serial"
            self._check(self.run(self._cmd(unit, "-c", f"{out}/unit.o"), out, binds), unit)
            return
        info["cuda_chains"] = f"{len(steps.commands)} steps" + (
            ", module id pinned" if steps.module_id else "")
        try:
            failed = inline_nvcc.run_plan(steps, lambda c: self.run(c, out, binds), self.jobs,
                                          out)
        except OSError as e:  # the module id file's path (the candidate's text) was refused
            info["cuda_chains"] = f"serial ({e})"
            failed = self.run(self._cmd(unit, "-c", f"{out}/unit.o"), out, binds)
        if failed is not None and os.path.basename(unit.source) not in failed.output:
            info["cuda_chains"] = "serial (a step failed without a diagnostic on the source)"
            failed = self.run(self._cmd(unit, "-c", f"{out}/unit.o"), out, binds)
        if failed is not None:
            self._check(Run(failed.code, failed.output), unit)



_LOCAL: dict[str, Builder] = {}


def local_build(request: dict[str, Any]) -> dict[str, Any]:
    """A build in this process (no worker to ask): the bench and runs without a channel."""
    from . import sandbox

    cache = default_cache_dir()
    if cache not in _LOCAL:
        _LOCAL[cache] = Builder(cache, dict(os.environ), sandboxed=sandbox.probe("cpu").ok)
    build_dir = str(request.get("build_dir", ""))
    return _LOCAL[cache].serve(request, [build_dir])
