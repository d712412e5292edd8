"""transfer.py, CPU path: tensors travel as raw bytes in files and come back as plain tensors."""
from __future__ import annotations

import os

import pytest
import torch

from openkernel_worker.transfer import Exporter, rebuild


@pytest.fixture
def exporter(tmp_path) -> Exporter:
    return Exporter(str(tmp_path))


def round_trip(exporter: Exporter, value):
    desc = exporter.describe(value)
    return desc, rebuild(desc, exporter.scratch)


@pytest.mark.parametrize("tensor", [
    torch.randn(3, 4),
    torch.randn(2, 3, dtype=torch.float64),
    torch.randn(5).to(torch.float16),
    torch.randn(5).to(torch.bfloat16),
    torch.arange(10, dtype=torch.int64),
    torch.arange(10, dtype=torch.int8),
    torch.tensor([True, False, True]),
    torch.tensor(3.25),
    torch.zeros(0, 4),
], ids=["f32", "f64", "f16", "bf16", "i64", "i8", "bool", "0d", "empty"])
def test_round_trip_is_exact(exporter: Exporter, tensor: torch.Tensor) -> None:
    desc, back = round_trip(exporter, tensor)
    assert desc["kind"] == "tensor"
    assert desc["exact_type"] is True
    assert desc["type"] == "torch.Tensor"
    assert desc["device"] == "cpu"
    assert desc["shape"] == list(tensor.shape)
    assert type(back) is torch.Tensor
    assert back.dtype == tensor.dtype
    assert back.shape == tensor.shape
    assert torch.equal(back, tensor)


def test_non_contiguous_tensor_round_trips_by_value(exporter: Exporter) -> None:
    t = torch.randn(4, 6).t()
    assert not t.is_contiguous()
    _, back = round_trip(exporter, t)
    assert torch.equal(back, t)


def test_rebuilt_tensor_does_not_alias_the_file(exporter: Exporter) -> None:
    desc, back = round_trip(exporter, torch.ones(4))
    path = os.path.join(exporter.scratch, desc["file"])
    with open(path, "wb") as f:
        f.write(torch.zeros(4).numpy().tobytes())
    assert torch.equal(back, torch.ones(4))


def test_scalars_round_trip(exporter: Exporter) -> None:
    for value in (3, 2.5, True, None):
        desc, back = round_trip(exporter, value)
        assert desc == {"kind": "scalar", "value": value}
        assert back == value


def test_other_values_are_rejected_on_rebuild(exporter: Exporter) -> None:
    desc = exporter.describe("a string")
    assert desc == {"kind": "other", "type": "str"}
    with pytest.raises(ValueError, match="returned a str value"):
        rebuild(desc, exporter.scratch)


def test_size_mismatch_is_rejected(exporter: Exporter) -> None:
    desc = exporter.describe(torch.zeros(4))
    desc["shape"] = [5]
    with pytest.raises(ValueError, match="holds 16 bytes, expected 20"):
        rebuild(desc, exporter.scratch)
    desc["shape"] = [2]
    with pytest.raises(ValueError, match="expected 8"):
        rebuild(desc, exporter.scratch)


def test_dtype_lie_is_caught_by_size(exporter: Exporter) -> None:
    desc = exporter.describe(torch.zeros(4))
    desc["dtype"] = "float64"
    with pytest.raises(ValueError):
        rebuild(desc, exporter.scratch)


@pytest.mark.parametrize("dtype", ["no_such_dtype", "Tensor", "nn", "__name__"])
def test_unknown_dtype_is_rejected(exporter: Exporter, dtype: str) -> None:
    desc = exporter.describe(torch.zeros(1))
    desc["dtype"] = dtype
    with pytest.raises(ValueError, match="unknown dtype"):
        rebuild(desc, exporter.scratch)


def test_negative_dimension_is_rejected(exporter: Exporter) -> None:
    desc = exporter.describe(torch.zeros(1))
    desc["shape"] = [-1]
    with pytest.raises(ValueError, match="negative dimension"):
        rebuild(desc, exporter.scratch)


def test_file_name_cannot_escape_scratch(tmp_path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    outside = tmp_path / "secret.bin"
    outside.write_bytes(torch.ones(2).numpy().tobytes())
    (scratch / "secret.bin").write_bytes(torch.zeros(2).numpy().tobytes())
    desc = {"kind": "tensor", "dtype": "float32", "shape": [2], "file": "../secret.bin"}
    assert torch.equal(rebuild(desc, str(scratch)), torch.zeros(2))


def test_description_without_file_or_ipc_is_rejected(exporter: Exporter) -> None:
    with pytest.raises(ValueError, match="neither file nor ipc"):
        rebuild({"kind": "tensor", "dtype": "float32", "shape": [1]}, exporter.scratch)


def test_malformed_scalar_is_rejected(exporter: Exporter) -> None:
    with pytest.raises(ValueError, match="malformed scalar"):
        rebuild({"kind": "scalar", "value": [1, 2]}, exporter.scratch)


class LyingTensor(torch.Tensor):
    def __eq__(self, other):  # type: ignore[override]
        return True


def test_subclass_is_reported_as_not_exact_and_rebuilt_plain(exporter: Exporter) -> None:
    t = torch.arange(4.0).as_subclass(LyingTensor)
    desc, back = round_trip(exporter, t)
    assert desc["exact_type"] is False
    assert desc["type"].endswith("LyingTensor")
    assert type(back) is torch.Tensor
    assert torch.equal(back, torch.arange(4.0))


def test_release_deletes_files(exporter: Exporter) -> None:
    desc = exporter.describe(torch.zeros(2))
    path = os.path.join(exporter.scratch, desc["file"])
    assert os.path.exists(path)
    exporter.release()
    assert not os.path.exists(path)
    exporter.release()  # twice is fine


def test_each_value_gets_its_own_file(exporter: Exporter) -> None:
    a = exporter.describe(torch.zeros(2))
    b = exporter.describe(torch.ones(2))
    assert a["file"] != b["file"]
    assert torch.equal(rebuild(a, exporter.scratch), torch.zeros(2))


def test_missing_file_is_a_value_error(exporter: Exporter) -> None:
    with pytest.raises(ValueError):
        rebuild({"kind": "tensor", "dtype": "float32", "shape": [2], "file": "missing.bin"},
                exporter.scratch)
