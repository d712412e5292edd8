"""The profiling tiers above the evaluation's own profile (docs/profiling.md).

- basic: the torch profiler's kernel and op tables every evaluation already has (integrity.py,
  verdicts.judge_profile); nothing more runs.
- proton: one forward under Triton's Proton in a profiling process of its own: per-kernel device
  times (and FLOPs/bytes where kernels declare them).
- deep: one forward under Nsight Compute (`ncu`, which starts the profiling process itself):
  the curated metric set per kernel (ncu_report.py), the report file kept in the cache.

`attach(evaluation)` runs the requested tier for a correct candidate after its evaluation and adds
to the result's `profile`: `tier` (the tier that ran), `requested_tier`, `kernel_metrics`, `tool`,
`flags` (each {flag, message}: why a tier did not run or fell back), `seconds` (what the tier
cost), `cached`. A limit (no profiler, counters not permitted, unsupported GPU, time-out, a failed
profiled process) degrades the tier, deep to proton to basic, and never fails the evaluation.
Results are cached by the candidate's and the reference's source hashes, the overrides, the GPU,
the tool's version and the sections (CACHE_VERSION), under the worker's cache folder.
`profile_only(request)` is the worker's `profile` op: the tier alone for a candidate the engine
already evaluated correct (optimize's deep profiles). ncu's report is read only through a private
copy, and `ncu --import` runs under the same sandbox profile as the profiled process.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any

from . import inline_safety, ncu_report, private_json, proton_report, sandbox, verdicts
from .profile_forward import EXIT_CANDIDATE, EXIT_NO_PROFILER
from .profile_run import (SECTIONS, Limit, ProfileScratch, Target, classify, find_ncu,
                          ncu_command, ncu_import_command, run_bounded, sandboxed, tool_roots)
from .sandbox import SandboxUnavailable

TIERS = ("basic", "proton", "deep")
# Set (to 1) to run the proton and deep tiers on a CPU evaluation too: ncu then sees no GPU kernel
# (no_kernels_profiled) unless the profiler is a recorded stand-in, which is what this is for (the
# CPU tests drive the real path: sandbox, profiled process, report copy, import, parse, cache).
PROFILE_ON_CPU_ENV = "OPENKERNEL_PROFILE_ON_CPU"
CACHE_VERSION = 1
FALLBACK = frozenset({"profiler_missing", "counters_not_permitted", "gpu_unsupported"})


@functools.lru_cache(maxsize=8)
def ncu_version(ncu: str) -> str:
    """The last line of `ncu --version` ("Version 2025.1.0.0 (build ...)"), or ""."""
    try:
        r = subprocess.run([ncu, "--version"], capture_output=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = r.stdout.decode(errors="replace").strip().splitlines()
    return lines[-1].strip() if r.returncode == 0 and lines else ""


def proton_available() -> bool:
    try:
        return importlib.util.find_spec("triton.profiler") is not None
    except (ImportError, ValueError):
        return False


def _failed_run(result: Any, tool: str) -> Limit | None:
    """The Limit of a profiled run that did not produce a profile."""
    if result.limit is not None:
        return result.limit
    if result.returncode == EXIT_NO_PROFILER:
        return Limit("profiler_missing", f"{tool} is not importable in the profiling process")
    if result.returncode == EXIT_CANDIDATE:
        return Limit("profile_failed", "the candidate failed in the profiling process: "
                     + result.output.strip()[-600:])
    return classify(result.output, result.returncode, tool)


def _profiled(folder: str, target: Target, command: list[str], tool_dirs: list[str],
              timeout_s: float, tool: str, profiled: bool = True) -> tuple[Any, Limit | None]:
    """`command` run in the sandbox with `folder` as its scratch, time-boxed: (its RunResult,
    why it gave no profile or None). `profiled`: the command runs profile_forward (whose exit
    statuses say what failed), else only the tool itself (ncu --import)."""
    try:
        argv, env = sandboxed(command, folder, target, tool_dirs)
    except SandboxUnavailable as e:
        return None, Limit("sandbox_unavailable", str(e))
    run = run_bounded(argv, env, folder, timeout_s, tool)
    if not profiled:
        return run, run.limit or classify(run.output, run.returncode, tool)
    return run, _failed_run(run, tool)


def run_deep(target: Target, timeout_s: float) -> tuple[dict[str, Any] | None, Limit | None]:
    """(the deep tier's additions, None) or (None, why not). ncu profiles in one sandboxed run;
    its report is copied out as a plain bounded file into a folder of the worker's own (kept in
    the cache from there), and `ncu --import` reads that copy in a second run under the same
    sandbox profile: ncu's parser never reads a file the candidate could still change, and runs
    as confined as the profiled process did."""
    ncu = find_ncu()
    if ncu is None:
        return None, Limit("profiler_missing", "Nsight Compute (ncu) is not on PATH nor in "
                                               "/usr/local/cuda/bin; set OPENKERNEL_NCU")
    scratch = ProfileScratch(target, "ncu", "profile.ncu-rep")
    private = tempfile.mkdtemp(prefix="openkernel-ncu-")  # the worker's own; the import's scratch
    tools = tool_roots(ncu)
    try:
        run, limit = _profiled(scratch.path, target,
                               ncu_command(ncu, scratch.output, scratch.entry()), tools,
                               timeout_s, "ncu")
        if limit is not None:
            return None, limit
        report, why = private_copy(scratch.output, private, MAX_REPORT_BYTES)
        if report is None:
            return None, Limit("no_kernels_profiled", f"ncu wrote no usable report ({why}): "
                               + run.output.strip()[-600:])
        if target.keep_report:
            _keep(report, target.keep_report)  # before the import, which may write its folder
        imported, limit = _profiled(private, target, ncu_import_command(ncu, report), tools,
                                    timeout_s, "ncu --import", profiled=False)
        if limit is not None:
            return None, limit
        try:
            kernels = ncu_report.parse_raw(imported.output)
        except ncu_report.ReportError as e:
            return None, Limit("profile_unreadable", f"ncu's CSV could not be read: {e}")
        if not kernels:
            return None, Limit("no_kernels_profiled", "ncu profiled no kernel in the forward")
        return {"kernel_metrics": kernels,
                "tool": {"name": "ncu", "version": ncu_version(ncu), "sections": list(SECTIONS),
                         "profile_s": round(run.seconds, 3),
                         "import_s": round(imported.seconds, 3)}}, None
    finally:
        scratch.close()
        shutil.rmtree(private, ignore_errors=True)


MAX_REPORT_BYTES = 256 << 20  # an .ncu-rep of MAX_KERNELS kernels is a few MB
MAX_HATCHET_BYTES = 64 << 20


def private_copy(path: str, folder: str, limit: int) -> tuple[str | None, str]:
    """(a copy of `path` in the worker's own `folder`, "") or (None, why not). The profiled
    process ran candidate code in the folder that holds `path`, so the file may be a link (to a
    file the candidate cannot read, or /dev/zero), a FIFO or huge: only a regular file of at most
    `limit` bytes, opened without following a link (inline_safety.open_regular), is copied;
    everything after reads the copy."""
    try:
        fd = inline_safety.open_regular(path)
    except FileNotFoundError:
        return None, "no file"
    except OSError as e:
        return None, f"not a plain file: {e.strerror or e}"
    with os.fdopen(fd, "rb") as src:
        size = os.fstat(src.fileno()).st_size
        if size > limit:
            return None, f"{size} bytes, more than {limit}"
        dest = os.path.join(folder, os.path.basename(path))
        with open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
            if out.tell() > limit:
                return None, f"grew past {limit} bytes"
    return dest, ""


# At most this many bytes of names go to one c++filt run (on its command line).
MAX_DEMANGLE_ARGS = 256 << 10


def demangle(names: list[str], target: Target, timeout_s: float = 30) -> dict[str, str]:
    """{mangled: readable} for the mangled C++ names among `names` (CUDA kernels as Proton
    reports them), by binutils' c++filt in the candidate's sandbox profile (`target`'s, as the
    ncu import: the names are the candidate's, and a crafted one may hit a demangler bug), with
    a scratch folder of its own, time-boxed; {} when c++filt is missing, the sandbox cannot start
    or c++filt fails (the names stay as they were)."""
    todo, size = [], 0
    for n in dict.fromkeys(names):
        if proton_report.is_mangled(n) and size + len(n) + 1 <= MAX_DEMANGLE_ARGS:
            todo.append(n)
            size += len(n) + 1
    cxxfilt = shutil.which("c++filt")
    if not todo or cxxfilt is None:
        return {}
    folder = tempfile.mkdtemp(prefix="openkernel-cxxfilt-")
    try:
        tools = [os.path.dirname(os.path.realpath(cxxfilt))]
        argv, env = sandboxed([cxxfilt, "--", *todo], folder, target, tools)
        run = run_bounded(argv, env, folder, timeout_s, "c++filt")
    except SandboxUnavailable:
        return {}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = run.output.splitlines()
    ok = run.limit is None and run.returncode == 0 and len(out) == len(todo)
    return dict(zip(todo, out)) if ok else {}


def _keep(report: str, dest: str) -> None:
    try:
        os.makedirs(os.path.dirname(dest), mode=0o700, exist_ok=True)
        shutil.copyfile(report, dest)
    except OSError:
        pass  # the parsed metrics stand without the file


def run_proton(target: Target, timeout_s: float) -> tuple[dict[str, Any] | None, Limit | None]:
    """(the proton tier's additions, None) or (None, why not)."""
    if not proton_available():
        return None, Limit("profiler_missing", "Proton (triton.profiler) is not installed with "
                                               "this Python's Triton")
    scratch = ProfileScratch(target, "proton", "profile.hatchet")
    try:
        run, limit = _profiled(scratch.path, target, scratch.entry(), [], timeout_s, "Proton")
        if limit is not None:
            return None, limit
        private = tempfile.mkdtemp(prefix="openkernel-proton-")
        try:
            hatchet, why = private_copy(scratch.output, private, MAX_HATCHET_BYTES)
            if hatchet is None:
                raise OSError(why)
            with open(hatchet) as f:
                kernels = proton_report.parse_hatchet(json.load(f))
            kernels = proton_report.demangled(kernels, demangle([k["name"] for k in kernels], target))
        except (OSError, ValueError, RecursionError) as e:
            return None, Limit("profile_unreadable", f"Proton's output could not be read: {e}")
        finally:
            shutil.rmtree(private, ignore_errors=True)
        if not kernels:
            return None, Limit("no_kernels_profiled", "Proton saw no kernel in the forward")
        return {"kernel_metrics": kernels,
                "tool": {"name": "proton", "profile_s": round(run.seconds, 3)}}, None
    finally:
        scratch.close()


def cache_key(tier: str, target: Target, candidate_hash: str, reference_hash: str,
              gpu: str) -> dict[str, Any]:
    ncu = find_ncu() if tier == "deep" else None
    return {"tier": tier, "candidate": candidate_hash, "reference": reference_hash,
            "overrides": [[k, str(v)] for k, v in sorted(target.overrides.items())],
            "gpu": gpu,
            "tool": ncu_version(ncu) if ncu else "", "sections": list(SECTIONS)}


def cache_path(cache_root: str, key: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return os.path.join(cache_root, "profiles", f"{key['tier']}-{digest}.json")


def run_tiers(requested: str, target: Target, timeout_s: float, cache_root: str,
              key_of: Any) -> dict[str, Any]:
    """The profile's additions for `requested` (deep falls back to proton, then basic)."""
    t0 = time.monotonic()
    out: dict[str, Any] = {"tier": "basic", "requested_tier": requested, "flags": [],
                           "cached": False}
    if requested == "basic":
        return out
    if not target.device.startswith("cuda") and os.environ.get(PROFILE_ON_CPU_ENV) != "1":
        out["flags"].append(Limit("no_gpu", f"the {requested} tier profiles GPU kernels; this "
                                            "evaluation ran on the CPU").describe())
        out["seconds"] = 0.0
        return out
    order = ["deep", "proton"] if requested == "deep" else ["proton"]
    for tier in order:
        key = key_of(tier)
        path = cache_path(cache_root, key)
        entry, _ = private_json.read_entry(path, 1 << 22, CACHE_VERSION, key, "profile", "GPU")
        if entry is not None and isinstance(entry.get("profile"), dict):
            out.update(entry["profile"], tier=tier, cached=True)
            break
        target.keep_report = path[:-len(".json")] + ".ncu-rep" if tier == "deep" else ""
        found, limit = (run_deep if tier == "deep" else run_proton)(target, timeout_s)
        if found is not None:
            if tier == "deep":
                found["report_file"] = target.keep_report
            note = private_json.write(path, {"version": CACHE_VERSION, "key": key,
                                             "profile": found})
            out.update(found, tier=tier)
            if note:
                out["cache_note"] = f"profile not cached: {note}"
            break
        assert limit is not None
        out["flags"].append(limit.describe())
        if limit.flag not in FALLBACK:
            break
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def attach(ev: Any) -> None:
    """Runs `ev.opts.profile_tier` for the evaluation `ev` (evaluate.Evaluation) of a correct
    candidate and adds the tier's keys to its result's `profile`; a tier above basic shows as
    the phase `profile_tier`."""
    profile = ev.result.get("profile")
    if not isinstance(profile, dict):
        return
    if ev.opts.profile_tier == "basic":
        profile["tier"] = "basic"
        return
    if not verdicts.will_settle_correct(ev.out, ev.opts.strict):
        profile.update({"tier": "basic", "requested_tier": ev.opts.profile_tier, "flags": [
            Limit("not_correct", "only correct candidates get a deeper profile").describe()]})
        return
    t0 = time.monotonic()
    try:
        added = _run_for(ev)
    except Exception as e:  # noqa: BLE001 - a profile never fails the evaluation
        added = {"tier": "basic", "requested_tier": ev.opts.profile_tier, "cached": False,
                 "flags": [Limit("profile_failed", f"the profiling tier failed: "
                                 f"{type(e).__name__}: {e}"[:600]).describe()],
                 "seconds": round(time.monotonic() - t0, 3)}
    ev.phases["profile_tier"] = added.get("seconds", 0.0)
    profile.update(added)


def _run_for(ev: Any) -> dict[str, Any]:
    """run_tiers for the evaluation `ev` (attach's body, which turns any exception into a flag)."""
    target = Target(reference=ev.ref.path, candidate=ev.opts.candidate,
                    overrides=dict(ev.opts.overrides), init_seed=ev.init_seed,
                    seed=ev.rng.getrandbits(31), device=ev.device,
                    env=ev.candidate_env(),
                    opts=ev.opts, extensions_dir=ev.extensions_dir())
    gpu = ""
    if ev.device.startswith("cuda"):
        import torch

        gpu = torch.cuda.get_device_name(torch.device(ev.device))

    def key_of(tier: str) -> dict[str, Any]:
        return cache_key(tier, target, ev.candidate_hash, ev.ref.source_hash, gpu)

    return run_tiers(ev.opts.profile_tier, target, ev.opts.timeout_s, ev.cache_root(), key_of)


def profile_only(req: dict[str, Any]) -> dict[str, Any]:
    """The worker's `profile` op (docs/worker-protocol.md): the tier `profile` (default deep) of
    a candidate the caller already evaluated correct, without evaluating it again: {"profile":
    the keys attach adds (tier, requested_tier, kernel_metrics, tool, flags, seconds, cached,
    report_file)}. Same request fields, seeds, sandbox, time box and cache as an evaluation's
    tier; a limit is a flag, never an error."""
    from .evaluate import Evaluation
    from .options import BadInput, Options

    opts = Options.from_request({**req, "profile": req.get("profile") or "deep"})
    if opts.profile_tier == "basic":
        raise BadInput("profile: the profile op runs proton or deep; basic comes with evaluate")
    ev = Evaluation(opts)
    if ev.candidate_defect is not None:
        raise BadInput(f"candidate: {ev.candidate_defect}")
    ev.init_seed = ev.trial_rng.getrandbits(31)  # the init seed the evaluation drew first
    t0 = time.monotonic()
    try:
        return {"profile": _run_for(ev)}
    except Exception as e:  # noqa: BLE001 - a profile's failure is a flag, as in attach
        return {"profile": {"tier": "basic", "requested_tier": opts.profile_tier,
                            "cached": False, "seconds": round(time.monotonic() - t0, 3),
                            "flags": [Limit("profile_failed", f"the profiling tier failed: "
                                            f"{type(e).__name__}: {e}"[:600]).describe()]}}
