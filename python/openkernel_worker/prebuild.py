"""Pre-builds: a candidate's `load_inline` builds run before its evaluation, in a build worker
that sees no GPU (docs/search.md, "Pre-builds"; docs/worker-protocol.md, `prebuild`).

`openkernel optimize` hands each generated candidate that calls torch's C++ extension builder to a
second worker process (CUDA_VISIBLE_DEVICES empty, low priority) while the candidate waits for the
device. That worker imports the candidate in a candidate process under the CPU sandbox profile (no
GPU device nodes), so its load_inline calls are served by inline_cache.Builder into the shared
object cache, with the same build directory (TORCH_EXTENSIONS_DIR per candidate source hash), the
same environment and TORCH_CUDA_ARCH_LIST set to the evaluation device's architecture: the
evaluation later finds every unit in the cache (its `inline_build` counts say so). A pre-build
reports no verdict: whatever fails there, the evaluation meets it again and reports it.

One build per candidate source at a time: `BuildLock` is an flock on
`<cache>/prebuild.locks/<key>.lock` (outside every candidate's sandbox). The pre-build holds it
from before its candidate process starts until the process is gone and torch's stale build
batons are removed; an evaluation of the same source takes it (waiting, `phases_s.prebuild_wait`)
before it loads the candidate, so it never builds a second time beside a pre-build. A pre-build
that finds the lock taken does nothing (`busy`).
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import re
import shutil
import tempfile
import time
from typing import Any

from .problem import BadInput, SourceDefect, read_source
from .protocol import req_str

LOCK_DIR = "prebuild.locks"
ARCH_LIST = re.compile(r"^[0-9]+\.[0-9]+[a-z]?(\+PTX)?([ ;][0-9]+\.[0-9]+[a-z]?(\+PTX)?)*$")
BUILD_MARKERS = ("load_inline", "cpp_extension")


def wants_build(source: str) -> bool:
    """Whether the candidate may build a C++/CUDA extension (the engine applies the same rule
    before it asks for a pre-build)."""
    return any(m in source for m in BUILD_MARKERS)


def source_key(source: str) -> str:
    """The candidate's build key: its extensions directory's name."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def extensions_dir(cache_root: str, source: str) -> str:
    """torch's extension builds for one candidate source (TORCH_EXTENSIONS_DIR at "load")."""
    return os.path.join(cache_root, "torch_extensions", source_key(source))


class BuildLock:
    """An exclusive flock per candidate source, shared by the evaluation and the pre-build."""

    def __init__(self, cache_root: str, key: str) -> None:
        folder = os.path.join(cache_root, LOCK_DIR)
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, key + ".lock")
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self, timeout_s: float) -> float | None:
        """Waits up to timeout_s: the seconds waited (0.0 when free at once), or None when the
        lock was still taken then (the caller goes on without it)."""
        t0 = time.monotonic()
        while not self.try_acquire():
            if time.monotonic() - t0 >= timeout_s:
                return None
            time.sleep(0.05)
        return time.monotonic() - t0

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def summarize_builds(served: list[dict[str, Any]]) -> dict[str, Any]:
    """What the worker's build server did for one candidate: requests, units per result
    (hit_direct, hit, built), failed requests with why (the candidate then ran torch's own
    build), seconds."""
    units: dict[str, int] = {}
    failed = 0
    reasons: list[str] = []
    seconds = 0.0
    for reply in served:
        if not reply.get("ok"):
            failed += 1
            why = str(reply.get("message") or reply.get("output") or "no reason given")
            reasons.append(why[-400:])
            continue
        seconds += float(reply.get("seconds") or 0.0)
        for u in reply.get("units") or []:
            result = str(u.get("result", "unknown"))
            units[result] = units.get(result, 0) + 1
    summary: dict[str, Any] = {"requests": len(served), "failed": failed, "units": units,
                               "seconds": round(seconds, 3)}
    if reasons:
        summary["failures"] = reasons[:4]
    return summary


def remove_stale_batons(ext_dir: str) -> int:
    """torch's FileBaton `lock` files left in the build directories by a killed process (a
    later load_inline of the same source would wait on them forever). Call it only while holding
    the source's BuildLock: every worker builds a source only under it, so a baton found then
    belongs to a process that is gone (a pre-build or an evaluation killed by Ctrl-C, whose
    cleanup never ran)."""
    removed = 0
    for path in glob.glob(os.path.join(ext_dir, "*", "lock")):
        try:
            os.remove(path)
            removed += 1
        except OSError:
            pass
    return removed


def prebuild(req: dict[str, Any]) -> dict[str, Any]:
    """The `prebuild` request: the fields of `evaluate` (reference, candidate, backend, overrides,
    timeout_s, threads, cache_dir, no_sandbox, ...) plus `cuda_arch` (TORCH_CUDA_ARCH_LIST for the
    evaluation's device). Replies {"status", "seconds", "builds"?, "message"?}; status is
    `built` (the candidate loaded), `compile_error`, `load_failed`, `timeout`, `died`,
    `unavailable` (no sandbox here), `busy` (the source is being built elsewhere) or `skipped`
    (nothing to build). Bad request fields are bad input."""
    from .options import Options, cache_root_of

    t0 = time.monotonic()
    opts = Options.from_request(req)
    arch = req_str(req, "cuda_arch")
    if arch is not None and (len(arch) > 200 or not ARCH_LIST.match(arch)):
        raise BadInput(f"cuda_arch must look like TORCH_CUDA_ARCH_LIST (e.g. 9.0), not {arch!r:.80}")
    if not os.path.isfile(opts.reference):
        raise BadInput(f"reference {opts.reference} is not a file")
    try:
        source = read_source(opts.candidate, "candidate")
    except SourceDefect as e:
        return {"status": "skipped", "message": str(e), "seconds": 0.0}
    if not wants_build(source):
        return {"status": "skipped", "message": "the candidate builds no extension",
                "seconds": 0.0}
    root = cache_root_of(opts)
    lock = BuildLock(root, source_key(source))
    if not lock.try_acquire():
        return {"status": "busy", "seconds": round(time.monotonic() - t0, 3)}
    try:
        out = _build(opts, root, source, arch)
    finally:
        lock.release()
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def _build(opts: Any, root: str, source: str, arch: str | None) -> dict[str, Any]:
    """Imports the candidate once in a CPU-sandboxed candidate process whose builds the cache
    serves; the process is gone and the batons cleaned when this returns."""
    from .candidate_process import CandidateDied, CandidateProcess, CandidateTimeout
    from .options import EnvironmentProblem, candidate_env_of

    env = candidate_env_of(opts, root)
    env["CUDA_VISIBLE_DEVICES"] = ""  # no GPU, whatever the worker was started with
    if arch and "TORCH_CUDA_ARCH_LIST" not in env:
        env["TORCH_CUDA_ARCH_LIST"] = arch  # as the evaluation sets it for its device
    ext = extensions_dir(root, source)
    remove_stale_batons(ext)  # left by a process killed mid-build (Ctrl-C kills this worker too)
    scratch = tempfile.mkdtemp(prefix="openkernel-prebuild-")
    cand: CandidateProcess | None = None
    out: dict[str, Any] = {"status": "died"}
    try:
        cand = CandidateProcess(scratch, env, opts, "cpu", gpu_later=True)
        cand.receive(opts.timeout_s)  # the "cpu" warm stage's reply (imports)
        staged = []
        for role, src in (("candidate", opts.candidate), ("reference", opts.reference)):
            os.makedirs(os.path.join(scratch, role), exist_ok=True)
            staged.append(os.path.join(scratch, role, os.path.basename(src)))
            shutil.copyfile(src, staged[-1])
        if os.environ.get("OPENKERNEL_INLINE_BUILD", "0") == "1":  # opt-in, as in evaluate
            from .inline_cache import Builder

            cand.build_roots = [ext, scratch]
            cand.builder = Builder(os.path.join(root, "inline"), env,
                                   sandboxed=not opts.no_sandbox, timeout_s=opts.timeout_s)
        reply = cand.request({"op": "load", "candidate": staged[0], "reference": staged[1],
                              "overrides": opts.overrides, "device": "cpu", "init_seed": 0,
                              "threads": opts.threads, "extensions_dir": ext,
                              "inline_build": cand.builder is not None}, opts.timeout_s)
        if reply.get("ok"):
            out = {"status": "built"}
        else:
            out = {"status": "compile_error" if reply.get("compile") else "load_failed",
                   "message": str(reply.get("message", ""))[:500]}
    except CandidateTimeout:
        out = {"status": "timeout", "message": f"no reply within {opts.timeout_s:g} s"}
    except CandidateDied as e:
        out = {"status": "died", "message": str(e)[:500]}
    except EnvironmentProblem as e:
        out = {"status": "unavailable", "message": str(e)[:500]}
    finally:
        if cand is not None:
            cand.kill()  # waits: nothing of it may outlive the lock
            cand.close()
            out["builds"] = summarize_builds(cand.served)
        remove_stale_batons(ext)
        shutil.rmtree(scratch, ignore_errors=True)
    return out
