"""floor_counts.py: the physical floor's FLOP and byte counts, kept per worker and on disk, taken
while the candidate process starts; the same numbers as counting at the floor, trusted only from
this user's own files, used only for inputs shaped like the trials'."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from openkernel_worker import floor_counts as fc
from openkernel_worker import roofline
from openkernel_worker.inspect_problem import count_flops


class Lin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 8)
        self.bn = torch.nn.BatchNorm1d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.lin(x)).relu()


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fc, "_MEMO", {})


def key_of(model: Any) -> dict[str, Any]:
    return fc.key("ab" * 32, {"N": 4}, "cuda:0", model)


def test_counts_equal_counting_at_the_floor() -> None:
    model, inputs = Lin(), [torch.randn(4, 16)]
    got = fc.count(model, inputs)
    flops, outputs, _ = count_flops(model, inputs)
    assert got.flops == flops > 0
    assert fc.unavoidable_bytes(got, model) == roofline.unavoidable_bytes(model, inputs, outputs)
    assert got.input_signature == [[[4, 16], "torch.float32"]] and got.source == "counted"


def test_remembered_then_cached_on_disk(tmp_path: Path) -> None:
    model = Lin()
    k = key_of(model)
    assert fc.lookup(str(tmp_path), k) is None
    counted = fc.count(model, [torch.randn(4, 16)])
    assert fc.remember(str(tmp_path), k, counted) == ""
    path = Path(fc.entry_path(str(tmp_path), k))
    assert (path.stat().st_mode & 0o777) == 0o600 and (path.parent.stat().st_mode & 0o777) == 0o700
    assert path.name.startswith("counts-") and path.parent.name == "ceilings"
    worker = fc.lookup(str(tmp_path), k)
    assert worker is not None and worker.source == "worker" and worker.flops == counted.flops
    fc._MEMO.clear()  # a new worker: from the disk
    cached = fc.lookup(str(tmp_path), k)
    assert cached is not None and cached.source == "cached"
    assert (cached.flops, cached.input_bytes, cached.output_bytes, cached.input_signature) == (
        counted.flops, counted.input_bytes, counted.output_bytes, counted.input_signature)
    assert fc.lookup(None, key_of(Lin())) is not None  # memo only, without a cache directory


def test_the_key_names_what_the_counts_depend_on() -> None:
    model = Lin()
    base = key_of(model)
    wider = torch.nn.Linear(16, 9)
    others = [fc.key("cd" * 32, {"N": 4}, "cuda:0", model), fc.key("ab" * 32, {"N": 5}, "cuda:0",
                                                                    model),
              fc.key("ab" * 32, {"N": 4}, "cpu", model), key_of(wider)]
    assert len({fc.digest(k) for k in [base, *others]}) == 5
    assert fc.digest(fc.key("ab" * 32, {"N": 4}, "cuda:1", Lin())) == fc.digest(base)


def test_usable_only_for_inputs_of_the_same_signature() -> None:
    counted = fc.count(Lin(), [torch.randn(4, 16)])
    assert fc.usable(counted, fc.signature([torch.randn(4, 16)]))
    assert not fc.usable(counted, fc.signature([torch.randn(5, 16)]))
    assert not fc.usable(counted, fc.signature([torch.randn(4, 16, dtype=torch.float64)]))
    assert not fc.usable(counted, None) and not fc.usable(None, counted.input_signature)
    assert fc.signature([torch.ones(2), 3, 1.5]) == [[[2], "torch.float32"], "int", "float"]


def write_entry(tmp_path: Path, k: dict[str, Any], content: bytes) -> Path:
    path = Path(fc.entry_path(str(tmp_path), k))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(content)
    os.chmod(path, 0o600)
    return path


GOOD = {"flops": 100, "input_bytes": 256, "output_bytes": 128, "inputs": [[[4, 16], "x"]]}


@pytest.mark.parametrize("entry", [
    None, [], {"version": 1},
    {**GOOD, "flops": -1}, {**GOOD, "flops": 10**30}, {**GOOD, "flops": 1.5},
    {**GOOD, "flops": True}, {**GOOD, "output_bytes": "128"}, {**GOOD, "input_bytes": -5},
    {**GOOD, "inputs": "x"}, {**GOOD, "version": 2}, {**GOOD, "key": {"reference": "other"}},
])
def test_corrupt_or_foreign_entries_are_ignored(tmp_path: Path, entry: Any) -> None:
    k = key_of(Lin())
    if isinstance(entry, dict):
        entry = {"version": 1, "key": k, **entry}
    write_entry(tmp_path, k, b"not json" if entry is None else json.dumps(entry).encode())
    got, why = fc.read_entry(fc.entry_path(str(tmp_path), k), k)
    assert got is None and why.startswith("counts entry ignored"), why
    assert fc.lookup(str(tmp_path), k) is None
    ok = write_entry(tmp_path, k, json.dumps({"version": 1, "key": k, **GOOD}).encode())
    assert fc.read_entry(str(ok), k)[0] is not None  # the same entry, well formed, is used


def test_entries_others_may_write_or_links_are_not_trusted(tmp_path: Path) -> None:
    k = key_of(Lin())
    path = write_entry(tmp_path, k, json.dumps({"version": 1, "key": k, **GOOD}).encode())
    os.chmod(path, 0o666)
    assert "writable by others" in fc.read_entry(str(path), k)[1]
    os.chmod(path, 0o600)
    os.chmod(path.parent, 0o777)
    assert "not this user's alone" in fc.read_entry(str(path), k)[1]
    note = fc.remember(str(tmp_path), k, fc.count(Lin(), [torch.randn(4, 16)]))
    assert note.startswith("counts not cached") and "writable by others" in note
    os.chmod(path.parent, 0o700)
    path.unlink()
    planted = tmp_path / "planted.json"
    planted.write_text(json.dumps({"version": 1, "key": k, **GOOD}))
    path.symlink_to(planted)
    assert "not a regular file" in fc.read_entry(str(path), k)[1]


def test_the_cache_is_outside_what_the_sandbox_binds_writable(tmp_path: Path) -> None:
    from openkernel_worker.evaluate import Evaluation

    ev = Evaluation.__new__(Evaluation)
    ev.opts = type("O", (), {"cache_dir": str(tmp_path), "threads": 0})()
    ev.device = "cpu"
    entry = fc.entry_path(ev.cache_root(), key_of(Lin()))
    env = Evaluation.candidate_env(ev)
    for var in ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "OPENKERNEL_NATIVE_CACHE",
                "OPENKERNEL_INLINE_CACHE"):
        assert not entry.startswith(env[var].rstrip("/") + "/"), var


def test_early_counts_leave_the_reference_as_built(tmp_path: Path, write) -> None:
    """_early_counts runs the reference once; its buffers (BatchNorm's running statistics,
    updated by a forward in training mode) are restored, so the trials see the built model."""
    from openkernel_worker.evaluate import Evaluation, Options
    from openkernel_worker.problem import load_reference

    ref = write("ref.py", """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(8)
    def forward(self, x):
        return self.bn(x)
def get_inputs():
    return [torch.randn(4, 8) * 3 + 1]
def get_init_inputs():
    return []
""")
    ev = Evaluation.__new__(Evaluation)
    ev.opts = Options(reference=ref, candidate=ref, cache_dir=str(tmp_path), seed=7)
    ev.device, ev.counts, ev.counts_note = "cpu", None, ""
    ev.ref = load_reference(ref, {})
    model = ev.ref.module.Model()
    before = {n: b.clone() for n, b in model.named_buffers()}
    ev._early_counts(model, count=True)
    assert ev.counts is not None and ev.counts.source == "counted" and ev.counts.flops > 0
    for n, b in model.named_buffers():
        assert torch.equal(b, before[n]), n
    ev.counts = None
    ev._early_counts(model, count=False)  # a spare's evaluation: the memo only
    assert ev.counts is not None and ev.counts.source == "worker"
    fc._MEMO.clear()
    ev._early_counts(model, count=False)
    assert ev.counts is not None and ev.counts.source == "cached"


def test_evaluations_report_where_the_counts_came_from(tiny_reference: str, write,
                                                       tmp_path: Path) -> None:
    """End to end on the CPU: the first evaluation counts while its candidate process starts,
    the next one in the same worker takes the memo, with the same floor."""
    from test_evaluate import CORRECT, run

    cand = write("c.py", CORRECT)
    first = run(tiny_reference, cand, cache_dir=str(tmp_path / "cache"))
    second = run(tiny_reference, cand, cache_dir=str(tmp_path / "cache"))
    assert first["verdict"] == second["verdict"] == "correct", first["reasons"]
    a, b = first["roofline"], second["roofline"]
    assert (a["counts_source"], b["counts_source"]) == ("counted", "worker")
    assert (a["flops"], a["bytes"]) == (b["flops"], b["bytes"]) and a["bytes"] > 0
    assert len(list((tmp_path / "cache" / "ceilings").glob("counts-*.json"))) == 1
