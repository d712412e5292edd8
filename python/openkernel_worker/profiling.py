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
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import time
from typing import Any

from . import ncu_report, private_json, proton_report
from .profile_forward import EXIT_CANDIDATE, EXIT_NO_PROFILER
from .profile_run import (SECTIONS, Limit, ProfileScratch, Target, classify, find_ncu,
                          ncu_command, ncu_import_command, run_bounded, sandboxed, tool_roots)
from .sandbox import SandboxUnavailable

TIERS = ("basic", "proton", "deep")
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


def _profiled(scratch: ProfileScratch, target: Target, command: list[str], tool_dirs: list[str],
              timeout_s: float, tool: str) -> tuple[Any, Limit | None]:
    """`command` run in the sandbox in `scratch`, time-boxed: (its RunResult, why it gave no
    profile or None)."""
    try:
        argv, env = sandboxed(command, scratch.path, target, tool_dirs)
    except SandboxUnavailable as e:
        return None, Limit("sandbox_unavailable", str(e))
    run = run_bounded(argv, env, scratch.path, timeout_s, tool)
    return run, _failed_run(run, tool)


def run_deep(target: Target, timeout_s: float) -> tuple[dict[str, Any] | None, Limit | None]:
    """(the deep tier's additions, None) or (None, why not)."""
    ncu = find_ncu()
    if ncu is None:
        return None, Limit("profiler_missing", "Nsight Compute (ncu) is not on PATH nor in "
                                               "/usr/local/cuda/bin; set OPENKERNEL_NCU")
    scratch = ProfileScratch(target, "ncu", "profile.ncu-rep")
    try:
        run, limit = _profiled(scratch, target, ncu_command(ncu, scratch.output, scratch.entry()),
                               tool_roots(ncu), timeout_s, "ncu")
        if limit is not None:
            return None, limit
        if not os.path.isfile(scratch.output):
            return None, Limit("no_kernels_profiled", "ncu wrote no report: "
                               + run.output.strip()[-600:])
        imported = run_bounded(ncu_import_command(ncu, scratch.output), dict(os.environ),
                               scratch.path, timeout_s, "ncu --import")
        limit = imported.limit or classify(imported.output, imported.returncode, "ncu --import")
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
        if target.keep_report and os.path.isfile(scratch.output):
            _keep(scratch.output, target.keep_report)
        scratch.close()


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
        run, limit = _profiled(scratch, target, scratch.entry(), [], timeout_s, "Proton")
        if limit is not None:
            return None, limit
        try:
            with open(scratch.output) as f:
                kernels = proton_report.parse_hatchet(json.load(f))
        except (OSError, ValueError) as e:
            return None, Limit("profile_unreadable", f"Proton's output could not be read: {e}")
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
            "overrides": sorted(target.overrides.items()), "gpu": gpu,
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
    if not target.device.startswith("cuda"):
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
    if ev.out.verdict != "correct":
        profile.update({"tier": "basic", "requested_tier": ev.opts.profile_tier, "flags": [
            Limit("not_correct", "only correct candidates get a deeper profile").describe()]})
        return
    target = Target(reference=ev.ref.path, candidate=ev.opts.candidate,
                    overrides=dict(ev.opts.overrides), init_seed=ev.init_seed,
                    seed=ev.rng.getrandbits(31), device=ev.device,
                    env=ev.candidate_env() if ev.device.startswith("cuda") else {},
                    opts=ev.opts, extensions_dir=ev.extensions_dir())
    gpu = ""
    if ev.device.startswith("cuda"):
        import torch

        gpu = torch.cuda.get_device_name(torch.device(ev.device))

    def key_of(tier: str) -> dict[str, Any]:
        return cache_key(tier, target, ev.candidate_hash, ev.ref.source_hash, gpu)

    added = run_tiers(ev.opts.profile_tier, target, ev.opts.timeout_s, ev.cache_root(), key_of)
    ev.phases["profile_tier"] = added.get("seconds", 0.0)
    profile.update(added)
