"""Running a profiler around one forward of a candidate, in a profiling process of its own.

The profiler must start the process it profiles, so the command is `<sandbox> ncu ... python -m
openkernel_worker.profile_forward SPEC` (deep tier) or `<sandbox> python -m
openkernel_worker.profile_forward SPEC` with Proton inside (proton tier): the same bwrap profile
as the candidate's evaluation process (sandbox.prepare), with the profiler's installation bound
read-only into it, time-boxed (the process group is killed at the deadline), in a scratch folder
of its own that holds copies of the candidate and the reference.

What went wrong is classified into a `Limit` (a flag and a message), never an exception: no
profiler, counters not permitted (ERR_NVGPUCTRPERM), an unsupported GPU, a time-out, a failed
profiled process, no kernel profiled. Not thread-safe; one run at a time per scratch folder.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from . import sandbox

NCU_ENV = "OPENKERNEL_NCU"  # the ncu executable; default: `ncu` on PATH, then CUDA's
NCU_PATHS = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
# Sections for the curated metric set (ncu_report.METRICS): fewer than `--set full`.
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis",
            "ComputeWorkloadAnalysis", "WarpStateStats", "SpeedOfLight_RooflineChart",
            "SourceCounters")
MAX_KERNELS = 64  # launches profiled per forward (--launch-count)
OUTPUT_TAIL = 4000


@dataclass
class Limit:
    """Why a tier could not run (or ran only in part): a flag name and a message."""
    flag: str
    message: str

    def describe(self) -> dict[str, str]:
        return {"flag": self.flag, "message": self.message}


@dataclass
class RunResult:
    """A profiled run: its exit, output, wall seconds and, when it failed, the Limit."""
    returncode: int | None
    output: str
    seconds: float
    limit: Limit | None = None
    files: dict[str, str] = field(default_factory=dict)


def find_ncu() -> str | None:
    """The ncu executable: OPENKERNEL_NCU, else `ncu` on PATH, else CUDA's usual places."""
    override = os.environ.get(NCU_ENV)
    if override:
        return override if os.path.isfile(override) and os.access(override, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    return next((p for p in NCU_PATHS if os.access(p, os.X_OK)), None)


# Where CUDA's `ncu` wrapper (bin/ncu in the toolkit) looks for the Nsight Compute installation it
# runs, besides the toolkit's own nsight-compute-VERSION folders.
NSIGHT_DIRS = ("/opt/nvidia/nsight-compute", "/opt/nvidia")


def tool_roots(executable: str) -> list[str]:
    """The folders to bind read-only for a profiler executable: its real folder (ncu on PATH is
    often a link into /opt/nvidia/nsight-compute/VERSION) and, for CUDA's bin/ncu wrapper, the
    installation it starts: the toolkit's nsight-compute-* folders beside bin/ and Nsight
    Compute's own folder under /opt/nvidia (the H200 image's wrapper, with only its own folder
    bound, printed "nsight-compute directory is not found")."""
    roots: list[str] = []
    for path in (executable, os.path.realpath(executable)):
        folder = os.path.dirname(os.path.abspath(path))
        roots.append(folder)
        if os.path.basename(folder) == "bin":
            roots += sorted(glob.glob(os.path.join(os.path.dirname(folder), "nsight-compute*")))
    roots += [d for d in NSIGHT_DIRS if os.path.isdir(d)][:1]
    out: list[str] = []
    for r in (os.path.realpath(r) for r in roots):
        if os.path.isdir(r) and r not in out:
            out.append(r)
    return out


def classify(output: str, returncode: int | None, tool: str) -> Limit | None:
    """The Limit a profiler's output shows, or None when it ran and profiled something."""
    text = output or ""
    low = text.lower()
    if "ERR_NVGPUCTRPERM" in text:
        return Limit("counters_not_permitted",
                     f"{tool} may not read the GPU's performance counters (ERR_NVGPUCTRPERM): "
                     "allow them for all users (NVreg_RestrictProfilingToAdminUsers=0, see "
                     "docs/profiling.md) or run as an administrator")
    if "is not installed" in low or "directory is not found" in low:
        # CUDA's bin/ncu wrapper without the Nsight Compute installation it starts (seen on the
        # H200 when that folder was not bound into the sandbox)
        why = _error_lines(text) or text.strip()[-600:]
        return Limit("profiler_missing", f"{tool} is not usable here: {why}")
    for marker in ("device is not supported", "not supported on this device",
                   "unsupported gpu", "unsupported device", "does not support profiling",
                   "err_nvgpu_unsupported", "is not supported by this version"):
        if marker in low:
            return Limit("gpu_unsupported",
                         f"{tool} cannot profile this GPU: {_error_lines(text) or marker}")
    if returncode not in (0, None):
        return Limit("profile_failed",
                     f"{tool} exited with status {returncode}: "
                     f"{_error_lines(text) or text.strip()[-600:]}")
    if "no kernels were profiled" in low:
        return Limit("no_kernels_profiled",
                     f"{tool} profiled no kernel in the candidate's forward")
    return None


def _error_lines(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines()
             if ln.startswith(("==ERROR==", "==WARNING==")) or "Error" in ln[:40]]
    return " ".join(lines)[-600:]


def ncu_command(ncu: str, export: str, entry: list[str]) -> list[str]:
    """ncu profiling one forward: only between the entry's cudaProfilerStart/Stop, the curated
    sections, into the report file `export` (.ncu-rep)."""
    args = [ncu, "--profile-from-start", "off", "--target-processes", "all",
            "--launch-count", str(MAX_KERNELS), "--export", export, "--force-overwrite"]
    for section in SECTIONS:
        args += ["--section", section]
    return args + entry


def ncu_import_command(ncu: str, report: str) -> list[str]:
    return [ncu, "--import", report, "--csv", "--page", "raw"]


def run_bounded(argv: list[str], env: dict[str, str], cwd: str, timeout_s: float,
                tool: str) -> RunResult:
    """Runs `argv` in a session of its own, stdout and stderr together; at `timeout_s` the
    whole process group is killed and the result carries a profile_timeout Limit."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as e:
        return RunResult(None, "", time.monotonic() - t0,
                         Limit("profiler_missing", f"{tool} could not be started: {e}"))
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:  # a child that left the group may still hold the pipe: wait only a little
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out = b""
        text = out.decode(errors="replace")[-OUTPUT_TAIL:]
        return RunResult(None, text, time.monotonic() - t0,
                         Limit("profile_timeout", f"{tool} did not finish within {timeout_s:g} s "
                                                  "(the profile was stopped)"))
    text = out.decode(errors="replace")
    return RunResult(proc.returncode, text, time.monotonic() - t0)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


@dataclass
class Target:
    """What one profiled forward needs: the files, the seeds, the device, the options."""
    reference: str
    candidate: str
    overrides: dict[str, str]
    init_seed: int
    seed: int
    device: str
    env: dict[str, str]
    opts: Any  # options.Options (sandbox, limits)
    extensions_dir: str = ""
    keep_report: str = ""  # where to copy ncu's report file (in the profile cache), or ""


class ProfileScratch:
    """A scratch folder holding copies of the candidate and the reference and the entry's
    spec (SPEC.json); removed by close()."""

    def __init__(self, target: Target, mode: str, output: str) -> None:
        self.path = tempfile.mkdtemp(prefix="openkernel-profile-")
        staged = {}
        for role in ("candidate", "reference"):
            src = getattr(target, role)
            folder = os.path.join(self.path, role)
            os.makedirs(folder)
            staged[role] = os.path.join(folder, os.path.basename(src))
            shutil.copyfile(src, staged[role])
        self.output = os.path.join(self.path, output)
        self.spec = os.path.join(self.path, "spec.json")
        with open(self.spec, "w") as f:
            json.dump({"mode": mode, "reference": staged["reference"],
                       "candidate": staged["candidate"], "overrides": target.overrides,
                       "init_seed": target.init_seed, "seed": target.seed,
                       "device": target.device, "output": self.output,
                       "extensions_dir": target.extensions_dir}, f)

    def entry(self) -> list[str]:
        return [sys.executable, "-m", "openkernel_worker.profile_forward", self.spec]

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def sandboxed(command: list[str], scratch: str, target: Target,
              tool_dirs: list[str]) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of `command` in the candidate's sandbox profile, with `tool_dirs` bound
    read-only. Raises sandbox.SandboxUnavailable as the evaluation does."""
    env = dict(target.env)
    env["PYTHONPATH"] = sandbox.PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    launch = sandbox.prepare(command, scratch=scratch, env=env, device=target.device,
                             opts=target.opts, extra_readonly=tool_dirs)
    return launch.argv, launch.env
