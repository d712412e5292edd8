"""The verdict rules: what the worker concludes from what it saw of the candidate.

Each rule is a plain function over what it needs (the candidate's replies, the worker's own
measurements) that writes its flags into the Outcome and returns what the result reports: the
outputs' comparison, the profile's integrity checks, the wall-clock and CPU-time cross-checks of
the candidate's own timings, the rested series' consistency, the implausible speedups, the
physical floor, and the final verdict (strict mode, the sandbox flag). No I/O and no state of
their own; docs/evaluation.md states the rules and their thresholds.
"""
from __future__ import annotations

import os
import statistics
from typing import Any

from . import timing
from .compare import Comparison, compare_values, flatten
from .integrity import NON_COMPUTE_OPS, defined_kernel_names, is_library_kernel
from .options import (GRAPH_EAGER_RATIO, REST_MIN_RATIO, REST_REF_SLACK, STRICT_EXEMPT, Outcome,
                      TimedBlock)
from .transfer import rebuild

SPEEDUP_LIMIT = 50.0  # flag excessive_speedup: reference median / candidate median above this


# -- outputs and inputs ---------------------------------------------------------------------------

def check_outputs(descs: Any, expected: list[Any], where: str, comparison: Comparison,
                  device: str, scratch: str) -> bool:
    """The candidate's outputs (as described in its reply, rebuilt from `scratch`) against the
    reference's, each exactly a torch.Tensor on the evaluation's device type; failures go into
    `comparison`."""
    if not isinstance(descs, list):
        comparison.fail(f"{where}: the candidate returned no outputs")
        return False
    if len(descs) != len(expected):
        comparison.fail(f"{where}: the candidate returned {len(descs)} output(s), the "
                        f"reference {len(expected)}")
        return False
    for i, (desc, exp) in enumerate(zip(descs, expected)):
        label = f"{where}, output {i}"
        if isinstance(desc, dict) and desc.get("kind") == "tensor":
            if not desc.get("exact_type"):
                comparison.fail(f"{label}: returned a {desc.get('type')}, not exactly "
                                f"torch.Tensor")
                continue
            if str(desc.get("device", "")).split(":")[0] != device.split(":")[0]:
                comparison.fail(f"{label}: on device {desc.get('device')}, expected "
                                f"{device}")
                continue
        try:
            value = rebuild(desc, scratch)
        except (ValueError, KeyError, TypeError, RuntimeError) as e:
            comparison.fail(f"{label}: {e}")
            continue
        compare_values(exp, value, label, comparison)
        del value
    return comparison.ok


def check_timed_outputs(out: Outcome, descs: Any, ref_outputs: list[Any], block: int,
                        device: str, scratch: str, what: str = "timed block") -> bool:
    """The outputs of a timed block (one list per input set) against the reference's from the
    same block: a mismatch rejects (timed_output_mismatch)."""
    if not isinstance(descs, list) or len(descs) != len(ref_outputs):
        out.flag("timed_output_mismatch", "the candidate did not return its timed outputs",
                 reject=True)
        return False
    comparison = Comparison()
    for i, (d, exp) in enumerate(zip(descs, ref_outputs)):
        check_outputs(d, flatten(exp), f"{what} {block}, input set {i + 1}", comparison,
                      device, scratch)
    if not comparison.ok:
        out.flag("timed_output_mismatch", "outputs produced while timed differ from the "
                 "reference (memoisation, batching across calls, or different behaviour "
                 "when timed): " + "; ".join(comparison.reasons[:2]), reject=True)
    return comparison.ok


def same_inputs(ours: list[Any], theirs: list[Any]) -> bool:
    """Whether the inputs the candidate returned equal the ones it was given."""
    import torch

    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                return False
            b = b.to(a.device)
            # NaNs where the inputs had NaNs are unchanged inputs (NaN != NaN in torch.equal).
            if not torch.equal(a, b) and not (a.is_floating_point() and bool(
                    ((a == b) | (torch.isnan(a) & torch.isnan(b))).all())):
                return False
        elif a != b:
            return False
    return True


# -- the profiled forward (integrity.py) -----------------------------------------------------------

def kernel_table(kernels: Any) -> list[dict[str, Any]]:
    """The profiled forward's GPU kernels grouped by name: launches, device time and its share,
    longest first (at most 10); what the critic reads."""
    rows: dict[str, dict[str, Any]] = {}
    for k in kernels if isinstance(kernels, list) else []:
        if not isinstance(k, dict):
            continue
        name = str(k.get("name"))[:120]
        row = rows.setdefault(name, {"name": name, "launches": 0, "us": 0.0})
        row["launches"] += 1
        row["us"] += float(k.get("us") or 0.0)
    total = sum(r["us"] for r in rows.values()) or 1.0
    for r in rows.values():
        r["share"] = r["us"] / total
    return sorted(rows.values(), key=lambda r: -r["us"])[:10]


def judge_state(out: Outcome, reply: dict[str, Any]) -> None:
    """Global torch state the candidate changed (reported) and a raised persisting-L2 limit
    (rejected)."""
    before, after = reply.get("state_before") or {}, reply.get("state_after") or {}
    changed = sorted(k for k in before if before.get(k) != after.get(k))
    if changed:
        out.flag("global_state_changed", "the candidate changed global torch state: " +
                 ", ".join(f"{k} {before[k]} -> {after.get(k)}" for k in changed) +
                 " (it cannot affect the reference, which runs in another process)",
                 reject=False)
    # The device's default limit is not zero (11.25 MiB on an H200): only a raise counts.
    l2, l2_before = reply.get("persisting_l2_bytes"), reply.get("persisting_l2_bytes_before")
    if isinstance(l2, int) and l2 > (l2_before if isinstance(l2_before, int) else 0):
        out.flag("persisting_l2", f"the candidate raised the persisting-L2 limit from "
                 f"{l2_before} to {l2} bytes; persisting lines survive the cache flush "
                 "between timed runs", reject=True)


def judge_profile(out: Outcome, prof: dict[str, Any], device: str,
                  candidate_source: str) -> dict[str, Any]:
    """Whether the candidate's forward ran a kernel of its own (no_custom_kernel rejects) and
    what else it ran (torch_ops_in_forward); returns the result's `profile`."""
    ops = [o for o in prof.get("ops", []) if isinstance(o, dict)]
    compute = [o for o in ops if str(o.get("name")) not in NON_COMPUTE_OPS]
    names = sorted({str(o.get("name")) for o in compute})
    profile = {"torch_ops": names[:20],
               "kernels": sorted({str(k.get("name"))[:80] for k in
                                  prof.get("kernels", [])})[:20],
               "kernel_table": kernel_table(prof.get("kernels", [])),
               "op_table": sorted(({"name": str(o.get("name")),
                                    "self_cpu_us": o.get("self_cpu_us"),
                                    "count": o.get("count")} for o in compute),
                                  key=lambda o: -(o["self_cpu_us"] or 0))[:10],
               "forward_cpu_us": prof.get("forward_cpu_us")}
    if device.startswith("cuda"):
        kernels = [k for k in prof.get("kernels", []) if isinstance(k, dict)]
        defined = defined_kernel_names(candidate_source)
        custom = [k for k in kernels
                  if not is_library_kernel(str(k.get("name", "")), defined)]
        if not custom:
            out.flag("no_custom_kernel", "no custom GPU kernel ran in the candidate's "
                     "forward; it only launched PyTorch or library kernels" +
                     (f" ({', '.join(names[:5])})" if names else ""), reject=True)
        elif compute:
            out.flag("torch_ops_in_forward", "besides its own kernels the candidate runs "
                     f"PyTorch compute ops: {', '.join(names[:5])}", reject=False)
    else:
        by_torch = prof.get("outputs_by_torch") or []
        if compute and by_torch and all(by_torch):
            out.flag("no_custom_kernel", "the candidate's outputs are produced by "
                     f"PyTorch ops ({', '.join(names[:5])}), not by a custom kernel",
                     reject=True)
        elif compute:
            out.flag("torch_ops_in_forward", "besides its own kernel the candidate runs "
                     f"PyTorch compute ops: {', '.join(names[:5])}", reject=False)
    return profile


# -- the candidate's timings against the worker's clocks -------------------------------------------

def cross_check(out: Outcome, walls: list[TimedBlock], flush_us: float, device: str,
                ping_us: float | None) -> dict[str, Any]:
    """The candidate's own timings against the worker's clock around each block; returns the
    result's wall_check. Rested blocks' gaps are expected in the outside time but do not grow
    the allowance, which is a share of the claimed time.

    Each block's excess (outside time less claimed time and gaps) is set against that block's
    allowance; the median block decides, as the reported time is a median: work hidden from
    the timer in most calls shows in most blocks, while a host-side stall (another process,
    the OS) lengthens a few. A total excess over twice the total allowance also rejects."""
    per_block = 3.0 * (ping_us or 0.0) + 1000.0
    excess: list[float] = []
    allowances: list[float] = []
    for w in walls:
        allow = per_block + w.calls * (flush_us * 1.5 + 100.0) + 0.25 * w.claimed_us
        if device == "cpu":
            # The CPU-time check is the precise one there; wall time only catches gross
            # escapes, since a busy machine stretches it.
            allow = 3.0 * (w.claimed_us + allow)
        excess.append(w.outside_us - w.claimed_us - w.gaps_us)
        allowances.append(allow)
    outside = sum(w.outside_us for w in walls)
    claimed = sum(w.claimed_us for w in walls)
    n = sum(w.calls for w in walls)
    gaps = sum(w.gaps_us for w in walls)
    allowance = sum(allowances)
    over = statistics.median([e - a for e, a in zip(excess, allowances)]) if walls else 0.0
    of_gaps = f" and {gaps / 1e3:.1f} ms of gaps" if gaps else ""
    if claimed + gaps > outside * 1.05 + 1000:
        out.flag("timer_mismatch", f"the candidate's timings ({claimed / 1e3:.1f} ms"
                 f"{of_gaps}) exceed the wall time measured outside it "
                 f"({outside / 1e3:.1f} ms)", reject=True)
    elif over > 0 or outside - claimed - gaps > 2 * allowance:
        out.flag("timer_mismatch", f"wall time measured outside the candidate "
                 f"({outside / 1e3:.1f} ms for {n} runs in {len(walls)} blocks) is far "
                 f"above its own timings ({claimed / 1e3:.1f} ms{of_gaps}; the median "
                 f"block is {max(over, 0.0) / 1e3:.2f} ms over its allowance): work "
                 f"escaping the timer (another stream, a thread) or a patched timer",
                 reject=True)
    return {"claimed_us": claimed, "outside_us": outside, "runs": n, "blocks": len(walls),
            "gaps_us": gaps, "allowance_us": allowance, "median_block_over_us": over,
            "ping_us": ping_us}


def cpu_check(out: Outcome, walls: list[TimedBlock], cpu_us: float, threads: int,
              flush_cpu_us: float) -> dict[str, Any]:
    """CPU candidates: the CPU time the kernel charged to the candidate's processes (read
    from /proc by this process) cannot exceed what its claimed times allow on its threads
    (`threads`: the option, 0 for all cores). The flush's own CPU time grows with memory
    contention, so a moderate excess is only reported; three times the allowance rejects.
    Returns the result's cpu_check."""
    claimed = sum(w.claimed_us for w in walls)
    n = sum(w.calls for w in walls)
    threads = max(1, threads or (os.cpu_count() or 1))
    allowed = ((claimed * threads * 1.2 + n * (flush_cpu_us * 1.5 + 200.0)
                + len(walls) * 3000.0) * 1.5 + 50_000.0)
    message = (f"the candidate's processes used {cpu_us / 1e3:.1f} ms of CPU time for {n} "
               f"timed runs it claims took {claimed / 1e3:.1f} ms on {threads} thread(s)")
    if cpu_us > 3 * allowed:
        out.flag("timer_mismatch", message + ": a patched timer or work outside the "
                 "timed call", reject=True)
    elif cpu_us > allowed:
        out.flag("cpu_time_excess", message + " (more than expected; on a busy machine "
                 "the cache flush costs more)", reject=False)
    return {"cpu_us": cpu_us, "allowed_us": allowed, "threads": threads}


# -- rested timing ---------------------------------------------------------------------------------

def check_rests(out: Outcome, outside_us: float, got: list[float], rests: list[float],
                idle_us: float) -> bool:
    """A rested block's gaps must have happened, each at least half as long as asked:
    skipping them would leave room in the block's wall time for work hidden from the
    events."""
    n = len(got)
    short = sum(1 for r in rests if r < 0.5 * idle_us)
    if short or outside_us < sum(got) + 0.5 * n * idle_us:
        out.flag("timer_mismatch", f"the candidate's rested block took "
                 f"{outside_us / 1e3:.2f} ms for {n} calls it timed at "
                 f"{sum(got) / 1e3:.2f} ms, with {short} of its {n} gaps shorter than "
                 f"half the {idle_us:.1f} us asked for: the harness was changed",
                 reject=True)
        return False
    return True


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def rested_verdict(out: Outcome, info: dict[str, Any], ref_times: dict[str, list[float]],
                   cand_times: dict[str, list[float]], idle_us: float,
                   rest_blocks: int) -> str:
    """Which series the result reports ("rest" or "b2b"; info["rested"] says why). The rested
    one, unless the candidate gains more from the rest than power throttling explains: its
    rested / back-to-back median ratio must be at least REST_MIN_RATIO and at most
    REST_REF_SLACK below the reference's. Work that escapes the events only when the device
    idles between calls would look like that, so then both sides' back-to-back figures stand,
    with the flag rested_gap. A rested median of zero is a lie (timer_mismatch)."""
    c_rest, c_b2b = _median(cand_times["rest"]), _median(cand_times["b2b"])
    r_rest, r_b2b = _median(ref_times["rest"]), _median(ref_times["b2b"])
    ratio = c_rest / c_b2b if c_rest is not None and c_b2b else None
    ref_ratio = r_rest / r_b2b if r_rest is not None and r_b2b else None
    rest = {"ok": False, "idle_us": idle_us, "blocks": rest_blocks, "ratio": ratio,
            "ref_ratio": ref_ratio, "reason": None,
            "back_to_back": {"runtime_us": timing.stats(cand_times["b2b"]),
                             "ref_runtime_us": timing.stats(ref_times["b2b"])}}
    info["rested"] = rest
    if c_rest is None or r_rest is None:
        rest["reason"] = "no rested block finished within the timing budget"
        return "b2b"
    if c_rest <= 0:
        rest["reason"] = "the candidate's rested median is zero"
        out.flag("timer_mismatch", "the candidate's rested calls took no time by its own "
                 "events: a patched timer or work moved out of the timed call", reject=True)
        return "b2b"
    floor = max(REST_MIN_RATIO, (ref_ratio or 1.0) - REST_REF_SLACK)
    if ratio is not None and ratio < floor:
        rest["reason"] = f"rested {ratio:.2f}x of back to back, below {floor:.2f}"
        out.flag("rested_gap", f"with an idle gap before each call the candidate takes "
                 f"{c_rest:.1f} us, {ratio:.2f}x its back-to-back time ({c_b2b:.1f} us; "
                 f"the reference: {ref_ratio or 0:.2f}x): more than power throttling "
                 "explains, as if work escaped the timer while the device idled; the "
                 "back-to-back figures are reported", reject=False)
        return "b2b"
    rest["ok"] = True
    info["mode"] = "events_rested"
    return "rest"


# -- the reported figures --------------------------------------------------------------------------

def speedup(out: Outcome, ref_us: float | None, cand_us: float | None) -> float | None:
    """The reference's median over the candidate's (None without both); one above
    SPEEDUP_LIMIT is flagged excessive_speedup, reported, not rejected."""
    if not (cand_us and ref_us):
        return None
    if ref_us / cand_us > SPEEDUP_LIMIT:
        out.flag("excessive_speedup", f"a {ref_us / cand_us:.1f}x speedup over the reference is "
                 "implausibly large; check the kernel by hand", reject=False)
    return ref_us / cand_us


def graph_gain(out: Outcome, graph_us: float | None, eager_us: float | None) -> None:
    """A candidate GRAPH_EAGER_RATIO times faster replayed in a CUDA graph than timed eagerly
    is flagged graph_much_faster: reported, not rejected."""
    if graph_us and eager_us and eager_us / graph_us > GRAPH_EAGER_RATIO:
        out.flag("graph_much_faster", f"replayed in a CUDA graph the candidate takes "
                 f"{graph_us:.2f} us per forward, {eager_us / graph_us:.1f}x less than timed "
                 f"eagerly ({eager_us:.2f} us); launch overhead explains some of it, batching "
                 "work across the graph's forwards would explain more: check by hand",
                 reject=False)


def below_floor(out: Outcome, cand_us: float, floor_us: float, nbytes: int, flops: int,
                bandwidth: float, source: str = "copy", copy: float | None = None) -> None:
    """A median under 90% of the physical floor (roofline.py: bytes at the floor's bandwidth,
    `source` saying which, FLOPs at the peak rate) is impossible: rejected."""
    if cand_us < floor_us * 0.9:
        how = "the device's peak" if source == "peak" else f"the measured {source}"
        measured = (f"; copy measured {copy / 1e9:.0f} GB/s"
                    if copy is not None and source != "copy" else "")
        out.flag("below_physical_floor", f"the candidate's median {cand_us:.1f} us is below "
                 f"the physical floor of {floor_us:.1f} us ({nbytes} bytes at {how} "
                 f"{bandwidth / 1e9:.0f} GB/s{measured}, {flops} FLOP)", reject=True)


def will_settle_correct(out: Outcome, strict: bool) -> bool:
    """Whether settle() will leave `out` correct; changes nothing (the profiling tiers run
    before the reply is settled and only for a candidate that will end correct)."""
    return (out.verdict == "correct" and bool(out.correct)
            and not (strict and set(out.flags) - STRICT_EXEMPT))


def settle(out: Outcome, strict: bool, trials: int, sandbox: Any) -> bool:
    """The final verdict: a run that never got to correct is a runtime_error; --strict rejects
    any flag but those in STRICT_EXEMPT; then no_sandbox (`sandbox`: the candidate's launch,
    None without one) is added, never a rejection. Returns whether the candidate is correct."""
    if out.verdict == "correct" and not out.correct:
        out.verdict = "runtime_error"
    if strict and set(out.flags) - STRICT_EXEMPT and out.verdict == "correct":
        out.verdict = "rejected"
        out.reasons.append("strict mode rejects any flag")
    correct = out.verdict == "correct"
    if out.verdict == "correct" and not out.reasons:
        out.reasons.append(f"matched the reference on {trials} trials with fresh inputs")
    if sandbox is not None and not sandbox.enabled:  # after strict: not a rejection
        out.flag("no_sandbox", sandbox.reason, reject=False)
    return correct
