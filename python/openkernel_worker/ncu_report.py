"""Nsight Compute's machine-readable output (`ncu --csv --page raw`) to the deep tier's curated
metric set, one entry per profiled kernel (docs/profiling.md, "Metric set").

The raw page is CSV: a header row ("ID", "Process ID", "Process Name", "Host Name", "Kernel
Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", then one column per metric
name such as `gpu__time_duration.sum`), a row of units ("nsecond", "%", "byte", "Kbyte", ...;
empty under the identity columns), then one row per profiled kernel launch. Numbers may carry
thousands separators ("1,048,576"); "n/a" and empty cells are missing values. ncu's own log lines
("==PROF==", "==WARNING==") may precede the header and are skipped.

Every metric is read under its exact raw name (or the first present of a few alternatives that
differ between GPU generations); a metric the report lacks is null, and its name is listed in
the kernel's `missing`, never guessed. Pure functions, no I/O beyond the text given.
"""
from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
            "Block Size", "Grid Size", "Device", "CC")

# Curated metric -> raw metric names, the first present wins. Percentages stay percentages.
METRICS: dict[str, tuple[str, ...]] = {
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    "l2_throughput_pct": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "l1_throughput_pct": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "memory_throughput_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "sm_throughput_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "tensor_utilisation_pct": (
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "theoretical_occupancy_pct": ("sm__maximum_warps_per_active_cycle_pct",),
    "registers_per_thread": ("launch__registers_per_thread",),
    "l1_hit_rate_pct": ("l1tex__t_sector_hit_rate.pct",),
    "l2_hit_rate_pct": ("lts__t_sector_hit_rate.pct",),
    "waves_per_sm": ("launch__waves_per_multiprocessor",),
}
DURATION = ("gpu__time_duration.sum",)
SHARED_PER_BLOCK = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
SHARED_DRIVER = "launch__shared_mem_per_block_driver"
# Local memory (register spills and local arrays): bytes through L1 (loads, stores), else the
# SASS instruction counts.
LOCAL_BYTES = ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
               "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum")
LOCAL_INSTS = ("smsp__sass_inst_executed_op_local_ld.sum",
               "smsp__sass_inst_executed_op_local_st.sum")
DRAM_BYTES = ("dram__bytes.sum",)
DRAM_BYTES_SPLIT = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# FLOPs as the roofline section counts them: FMA counts twice.
FLOP_COUNTS = {precision: tuple((f"smsp__sass_thread_inst_executed_op_{precision}{op}_pred_on.sum",
                                 2 if op == "fma" else 1) for op in ("add", "mul", "fma"))
               for precision in ("h", "f", "d")}
# ncu's sections (what the deep tier asks for) give these counts as rates, not sums: then a count
# is a rate times the kernel's elapsed SM sub-partition cycles (instructions per cycle) or its
# duration (bytes per second), as ncu's own roofline chart derives it. On an H100 the FLOPs so
# derived for a 4096-square fp32 GEMM are 2 x 4096^3 to 0.01%.
PER_CYCLE = ".per_cycle_elapsed"
SMSP_CYCLES = "smsp__cycles_elapsed.avg"
SMSP_CLOCK = "smsp__cycles_elapsed.avg.per_second"
DRAM_RATE = "dram__bytes.sum.per_second"
# Register spills as the sections count them (SASS instructions; local arrays not included).
SPILL_INSTS = "sass__inst_executed_register_spilling"
# Occupancy limiters: blocks per SM each resource allows; the smallest limits.
LIMITERS = {"registers": "launch__occupancy_limit_registers",
            "shared_memory": "launch__occupancy_limit_shared_mem",
            "warps": "launch__occupancy_limit_warps",
            "blocks": "launch__occupancy_limit_blocks",
            "barriers": "launch__occupancy_limit_barriers"}
STALL = re.compile(r"^smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio$")
STALL_IGNORED = frozenset({"selected", "not_selected"})  # issuing or eligible, not stalled
TOP_STALLS = 3

# ncu's units: older releases spell them out ("nsecond", "Kbyte", "byte/second"), 2025.x
# abbreviates ("ns", "ms", "Gbyte/s", "Ghz") and qualifies some ("Kbyte/block", "byte/cycle").
# A unit is NUMERATOR[/DENOMINATOR]. ncu scales the whole value and writes the prefix into the
# unit wherever its byte or hertz part is: "1.591 %/Kbyte" is "1,591 %/byte" and "1.28
# Kbyte/cycle" is "1,280 byte/cycle", so a byte or hertz prefix on either side multiplies. A time
# numerator scales to seconds, a time denominator makes a rate per second ("cycle/nsecond" is
# cycles per second); any other part (block, cycle, thread, %) has no scale. Prefixes are decimal
# (1 Kbyte = 1000 bytes), Kibyte binary.
_TIME = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
         "s": 1.0, "second": 1.0}
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
           "ki": 1024.0, "mi": 1024.0**2, "gi": 1024.0**3}


def _prefix_factor(part: str) -> float:
    """The byte or hertz prefix's factor of one side of a unit; 1 without one."""
    for base in ("byte", "hz"):
        if part.endswith(base) and part[: -len(base)] in _PREFIX:
            return _PREFIX[part[: -len(base)]]
    return 1.0


def unit_factor(unit: str) -> float:
    """The factor that takes a value in `unit` to its base unit (seconds, bytes, per second,
    hertz); 1 for units without a scale ("%", "cycle", "inst", "register/thread")."""
    num, _, den = (p.strip().lower() for p in unit.partition("/"))
    factor = _TIME.get(num, _prefix_factor(num)) * _prefix_factor(den)
    return factor / _TIME[den] if den in _TIME else factor


class ReportError(ValueError):
    """The text is not an ncu raw CSV page; the message says what is wrong."""


def number(text: str) -> float | None:
    """A cell as a float: thousands separators dropped; None for "", "n/a" and non-numbers."""
    t = (text or "").strip().replace(",", "")
    if not t or t.lower() == "n/a":
        return None
    try:
        v = float(t)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def scaled(value: float | None, unit: str) -> float | None:
    """`value` in the base unit of `unit` (seconds, bytes, bytes/s, hertz); other units unchanged."""
    if value is None:
        return None
    return value * unit_factor(unit)


def _csv_start(text: str) -> str:
    """The text from the header row on (ncu's log lines before it dropped)."""
    for i, line in enumerate(text.splitlines(keepends=True)):
        if line.startswith('"ID"'):
            return "".join(text.splitlines(keepends=True)[i:])
    raise ReportError("no ncu CSV header (a line starting with \"ID\") in the output")


def read_rows(text: str) -> tuple[list[str], dict[str, str], list[dict[str, str]]]:
    """(header, units by column, one dict per kernel row) of a raw page."""
    rows = list(csv.reader(io.StringIO(_csv_start(text))))
    header = rows[0]
    missing = [c for c in ("ID", "Kernel Name") if c not in header]
    if missing:
        raise ReportError(f"the CSV header lacks {', '.join(missing)}")
    body = [r for r in rows[1:] if r and any(cell.strip() for cell in r)]
    units: dict[str, str] = {}
    if body and not body[0][header.index("ID")].strip():  # the units row: no ID
        units = dict(zip(header, body[0]))
        body = body[1:]
    kernels = []
    for r in body:
        if len(r) != len(header):
            raise ReportError(f"a row has {len(r)} cells, the header {len(header)}")
        kernels.append(dict(zip(header, r)))
    return header, units, kernels


class _Row:
    """One kernel row: metric values in base units, and the names asked for but absent."""

    def __init__(self, row: dict[str, str], units: dict[str, str]) -> None:
        self.row, self.units = row, units
        self.missing: list[str] = []

    def has(self, name: str) -> bool:
        return number(self.row.get(name, "")) is not None

    def get(self, name: str) -> float | None:
        return scaled(number(self.row.get(name, "")), self.units.get(name, ""))

    def first(self, names: tuple[str, ...]) -> float | None:
        for n in names:
            if self.has(n):
                return self.get(n)
        self.missing.append(names[0])
        return None

    def total(self, names: tuple[str, ...], note: bool = True) -> float | None:
        """The sum of `names` when all are present, else None."""
        values = [self.get(n) for n in names]
        if any(v is None for v in values):
            if note:
                self.missing.extend(n for n, v in zip(names, values) if v is None)
            return None
        return float(sum(v for v in values if v is not None))


def _triple(text: str) -> list[int] | None:
    """"(128, 1, 1)" as [128, 1, 1]."""
    nums = re.findall(r"\d+", (text or "").replace(",", "").replace(" ", ","))
    return [int(n) for n in nums] if len(nums) == 3 else None


def _limiter(r: _Row) -> dict[str, Any] | None:
    limits = {name: r.get(raw) for name, raw in LIMITERS.items() if r.has(raw)}
    if not limits:
        r.missing.append(LIMITERS["registers"])
        return None
    least = min(limits.values())
    return {"by": sorted(k for k, v in limits.items() if v == least),
            "blocks_per_sm": {k: v for k, v in sorted(limits.items())}}


def _stalls(r: _Row) -> list[dict[str, Any]]:
    found = []
    for name in r.row:
        m = STALL.match(name)
        if m and m.group(1) not in STALL_IGNORED:
            v = r.get(name)
            if v is not None and v > 0:
                found.append({"reason": m.group(1), "cycles_per_issue": v})
    found.sort(key=lambda s: -s["cycles_per_issue"])
    total = sum(s["cycles_per_issue"] for s in found)
    for s in found:
        s["share"] = s["cycles_per_issue"] / total if total else None
    if not found:
        r.missing.append("smsp__average_warps_issue_stalled_*_per_issue_active.ratio")
    return found[:TOP_STALLS]


def _smsp_cycles(r: _Row, duration_s: float | None) -> float | None:
    if r.has(SMSP_CYCLES):
        return r.get(SMSP_CYCLES)
    clock = r.get(SMSP_CLOCK)
    return clock * duration_s if clock is not None and duration_s else None


def _flops(r: _Row, duration_s: float | None) -> float | None:
    """FLOPs from the counts, else from their per-cycle rates (PER_CYCLE)."""
    total, seen = 0.0, False
    for ops in FLOP_COUNTS.values():
        for name, weight in ops:
            v = r.get(name)
            if v is not None:
                total, seen = total + weight * v, True
    if seen:
        return total
    cycles = _smsp_cycles(r, duration_s)
    if cycles is None:
        r.missing.append(SMSP_CYCLES)
        return None
    for precision, ops in FLOP_COUNTS.items():
        rates = [(r.get(name + PER_CYCLE), weight) for name, weight in ops]
        if all(rate is None for rate, _ in rates):
            # not counted (the sections have no half-precision rates): the FLOPs leave it out
            r.missing.append(ops[2][0] + PER_CYCLE)
            continue
        for rate, weight in rates:
            if rate is not None:
                total, seen = total + weight * rate * cycles, True
    return total if seen else None


def _dram_bytes(r: _Row, duration_s: float | None) -> float | None:
    """DRAM bytes from the count, its read and write parts, else its rate times the duration."""
    if any(r.has(n) for n in DRAM_BYTES):
        return r.first(DRAM_BYTES)
    split = r.total(DRAM_BYTES_SPLIT, note=False)
    if split is not None:
        return split
    rate = r.get(DRAM_RATE)
    if rate is not None and duration_s:
        return rate * duration_s
    r.missing.append(DRAM_BYTES[0] if rate is None else DURATION[0])
    return None


def _roofline(r: _Row, duration_s: float | None) -> dict[str, Any]:
    flops = _flops(r, duration_s)
    dram = _dram_bytes(r, duration_s)
    out: dict[str, Any] = {"flops": flops, "dram_bytes": dram,
                           "intensity_flop_per_byte": (flops / dram if flops is not None and dram
                                                       else None),
                           "flops_per_s": None, "dram_bytes_per_s": None}
    if duration_s:
        out["flops_per_s"] = flops / duration_s if flops is not None else None
        out["dram_bytes_per_s"] = dram / duration_s if dram is not None else None
    return out


def _shared(r: _Row) -> float | None:
    parts = [r.get(n) for n in SHARED_PER_BLOCK if r.has(n)]
    if not parts:
        r.missing.append(SHARED_PER_BLOCK[0])
        return None
    return float(sum(p for p in parts if p is not None))


def _spills(r: _Row) -> dict[str, Any]:
    by_bytes = r.total(LOCAL_BYTES, note=False)
    if by_bytes is not None:
        return {"local_bytes": by_bytes, "spilling": by_bytes > 0}
    insts = r.total(LOCAL_INSTS, note=False)
    if insts is not None:
        return {"local_instructions": insts, "spilling": insts > 0}
    spills = r.get(SPILL_INSTS)
    if spills is not None:
        return {"spill_instructions": spills, "spilling": spills > 0}
    r.missing.append(LOCAL_BYTES[0])
    return {"spilling": None}


def kernel_metrics(row: dict[str, str], units: dict[str, str]) -> dict[str, Any]:
    """The curated metric set of one kernel row (docs/profiling.md)."""
    r = _Row(row, units)
    duration_s = r.first(DURATION)
    out: dict[str, Any] = {
        "id": int(number(row.get("ID", "")) or 0),
        "name": row.get("Kernel Name", "")[:300],
        "block": _triple(row.get("Block Size", "")),
        "grid": _triple(row.get("Grid Size", "")),
        "duration_us": duration_s * 1e6 if duration_s is not None else None,
    }
    for key, names in METRICS.items():
        out[key] = r.first(names)
    out["shared_mem_per_block_bytes"] = _shared(r)
    if r.has(SHARED_DRIVER):
        out["shared_mem_driver_bytes"] = r.get(SHARED_DRIVER)
    out["occupancy_limiter"] = _limiter(r)
    out["local_memory"] = _spills(r)
    out["top_stalls"] = _stalls(r)
    out["roofline"] = _roofline(r, duration_s)
    out["missing"] = sorted(set(r.missing))
    return out


def parse_raw(text: str) -> list[dict[str, Any]]:
    """Every kernel of a raw page, in launch order; ReportError when it is not one."""
    _, units, rows = read_rows(text)
    return [kernel_metrics(row, units) for row in rows]


def raw_metric_names() -> list[str]:
    """Every raw metric the curated set reads (for `--metrics` beside the sections)."""
    names = [n for group in METRICS.values() for n in group]
    names += [*DURATION, *SHARED_PER_BLOCK, SHARED_DRIVER, *LOCAL_BYTES, *LOCAL_INSTS, *DRAM_BYTES,
              *DRAM_BYTES_SPLIT, DRAM_RATE, SMSP_CYCLES, SMSP_CLOCK, SPILL_INSTS,
              *LIMITERS.values()]
    names += [n + suffix for ops in FLOP_COUNTS.values() for n, _ in ops
              for suffix in ("", PER_CYCLE)]
    return list(dict.fromkeys(names))
