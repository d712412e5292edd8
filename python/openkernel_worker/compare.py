"""Output comparison with per-dtype tolerances.

A value passes when |candidate - expected| <= atol_eff + rtol * |expected| elementwise, NaNs match
NaNs and infinities match exactly, and the relative L2 error ||c - e|| / ||e|| is at most rtol.
atol_eff = atol * max(rms(expected), 1e-6): the absolute tolerance follows the output's
scale, so outputs that are all tiny (softmax over 400k columns is ~2.5e-6 per element) cannot
pass by being near zero. Integer and boolean outputs must be equal. Errors are reported as
max_abs_error and max_rel_error = max(|c - e| / max(|e|, atol_eff)).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Tighter than KernelBench's 1e-2 for float32: the reference runs in full fp32 (TF32 off), so a
# candidate that silently drops precision shows up as incorrect rather than as a speedup.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-3, 1e-3),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
CHUNK = 1 << 27  # elements compared per slice, to bound temporary memory


def dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def tolerance_for(dtype: Any) -> tuple[float, float]:
    return TOLERANCES.get(dtype_name(dtype), (0.0, 0.0))


@dataclass
class Comparison:
    ok: bool = True
    reasons: list[str] = field(default_factory=list)
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)

    def fail(self, reason: str) -> None:
        self.ok = False
        if reason not in self.reasons:
            self.reasons.append(reason)


def flatten(value: Any) -> list[Any]:
    """The list of outputs a forward returned: one tensor, or the items of a tuple or list."""
    if isinstance(value, (tuple, list)):
        return list(value)
    return [value]


def compare_values(expected: Any, actual: Any, where: str, result: Comparison) -> None:
    """Compares one expected tensor with one candidate tensor already in the worker's memory."""
    import torch

    if not isinstance(expected, torch.Tensor):
        if isinstance(actual, torch.Tensor) and actual.numel() == 1:
            actual = actual.item()
        if isinstance(expected, float) and isinstance(actual, (int, float)):
            if not abs(actual - expected) <= 1e-6 * max(1.0, abs(expected)):
                result.fail(f"{where}: expected {expected!r}, got {actual!r}")
        elif actual != expected:
            result.fail(f"{where}: expected {expected!r}, got {actual!r}")
        return
    if not isinstance(actual, torch.Tensor):
        result.fail(f"{where}: expected a tensor, got {type(actual).__name__}")
        return
    if tuple(actual.shape) != tuple(expected.shape):
        result.fail(f"{where}: shape {tuple(actual.shape)} differs from the reference's "
                    f"{tuple(expected.shape)}")
        return
    if actual.dtype != expected.dtype:
        result.fail(f"{where}: dtype {dtype_name(actual.dtype)} differs from the reference's "
                    f"{dtype_name(expected.dtype)}")
        return
    atol, rtol = tolerance_for(expected.dtype)
    e = expected.reshape(-1)
    a = actual.reshape(-1)
    if a.device != e.device:
        a = a.to(e.device)
    sq_e = 0.0
    if expected.is_floating_point():
        for start in range(0, e.numel(), CHUNK):
            ec = e[start:start + CHUNK].double()
            ec = ec[torch.isfinite(ec)]
            sq_e += float((ec * ec).sum())
        rms = (sq_e / max(e.numel(), 1)) ** 0.5
        atol = atol * max(rms, 1e-6)
    entry = result.tolerance.setdefault(dtype_name(expected.dtype), {
        "atol": tolerance_for(expected.dtype)[0], "rtol": rtol, "atol_effective": atol})
    entry["atol_effective"] = min(entry["atol_effective"], atol)
    sq_diff = 0.0
    bad_total = 0
    first_bad = None
    for start in range(0, e.numel(), CHUNK):
        ec = e[start:start + CHUNK]
        ac = a[start:start + CHUNK]
        if not expected.is_floating_point():
            neq = ac != ec
            bad = int(neq.sum())
            if bad:
                diff = (ac.double() - ec.double()).abs()
                result.max_abs_error = max(result.max_abs_error, float(diff.max()))
        else:
            ef = ec.float() if ec.dtype in (torch.float16, torch.bfloat16) else ec
            af = ac.float() if ac.dtype in (torch.float16, torch.bfloat16) else ac
            close = torch.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=True)
            bad = int((~close).sum())
            finite = torch.isfinite(ef) & torch.isfinite(af)
            diff = torch.where(finite, (af - ef).abs(), torch.zeros_like(ef))
            sq_diff += float((diff.double() ** 2).sum())
            if diff.numel():
                result.max_abs_error = max(result.max_abs_error, float(diff.max()))
                rel = diff / ef.abs().clamp_min(max(atol, 1e-12))
                result.max_rel_error = max(result.max_rel_error, float(rel.max()))
            mismatch_nonfinite = (~finite) & ~close
            if bool(mismatch_nonfinite.any()):
                result.max_abs_error = float("inf")
        if bad and first_bad is None:
            idx = int((~close).nonzero()[0]) if expected.is_floating_point() else int(neq.nonzero()[0])
            first_bad = (start + idx, float(a[start + idx]), float(e[start + idx]))
        bad_total += bad
    if not bad_total and sq_e > 0 and (sq_diff / sq_e) ** 0.5 > rtol:
        # Every element may sit inside atol + rtol while the whole output is systematically off
        # (lower precision, a constant bias): the aggregate error must stay within rtol.
        result.fail(f"{where}: relative L2 error {(sq_diff / sq_e) ** 0.5:.3g} exceeds rtol={rtol:g}")
    if bad_total:
        i, got, want = first_bad  # type: ignore[misc]
        result.fail(f"{where}: {bad_total} of {e.numel()} elements outside tolerance "
                    f"(atol={atol:g}, rtol={rtol:g}); first at flat index {i}: got {got:.6g}, "
                    f"expected {want:.6g}")
