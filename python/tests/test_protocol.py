"""protocol.py and the worker's request handler (__main__.handle)."""
from __future__ import annotations

import io
import json
import math

import pytest

from openkernel_worker import PROTOCOL_VERSION
from openkernel_worker.__main__ import handle
from openkernel_worker.protocol import Channel, clean_floats


def test_clean_floats_replaces_non_finite_values_recursively() -> None:
    value = {"a": math.nan, "b": [1.0, math.inf, (-math.inf, 2)], "c": {"d": 3.5}, "e": "x"}
    assert clean_floats(value) == {"a": None, "b": [1.0, None, [None, 2]], "c": {"d": 3.5},
                                   "e": "x"}


def test_channel_round_trip() -> None:
    buf = io.BytesIO()
    Channel(io.BytesIO(), buf).send({"x": 1, "y": [1.5]})
    assert buf.getvalue() == b'{"x":1,"y":[1.5]}\n'
    reader = Channel(io.BytesIO(b'{"op":"ping"}\n'), io.BytesIO())
    assert reader.receive() == {"op": "ping"}
    assert reader.receive() is None


def test_channel_rejects_non_object_and_nan() -> None:
    with pytest.raises(ValueError):
        Channel(io.BytesIO(b"[1, 2]\n"), io.BytesIO()).receive()
    with pytest.raises(ValueError):
        Channel(io.BytesIO(b"not json\n"), io.BytesIO()).receive()
    with pytest.raises(ValueError):
        Channel(io.BytesIO(), io.BytesIO()).send({"x": math.nan})


def test_protocol_version() -> None:
    assert PROTOCOL_VERSION == 2


def test_handle_ping_and_unknown_op() -> None:
    assert handle({"op": "ping"}) == {"ok": True, "result": {}}
    reply = handle({"op": "fly"})
    assert reply["ok"] is False
    assert reply["error"]["kind"] == "bad_input"
    assert "fly" in reply["error"]["message"]


def test_handle_request_missing_fields_is_bad_input() -> None:
    reply = handle({"op": "evaluate"})
    assert reply == {"ok": False, "error": {"kind": "bad_input",
                                            "message": "request lacks 'reference'"}}


def test_handle_reports_bad_reference_as_bad_input(tmp_path) -> None:
    reply = handle({"op": "inspect", "reference": str(tmp_path / "missing.py")})
    assert reply["ok"] is False and reply["error"]["kind"] == "bad_input"
    assert "reference not found" in reply["error"]["message"]


def test_handle_reports_cuda_without_gpu_as_environment(tiny_reference: str, tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    reply = handle({"op": "evaluate", "reference": tiny_reference,
                    "candidate": tiny_reference, "backend": "cuda"})
    assert reply["ok"] is False
    assert reply["error"]["kind"] == "environment"
    assert "needs an NVIDIA GPU" in reply["error"]["message"]


def test_handle_inspect_reports_shapes_and_flops(tiny_reference: str) -> None:
    reply = handle({"op": "inspect", "reference": tiny_reference, "overrides": {"rows": "2"}})
    assert reply["ok"] is True, reply
    r = reply["result"]
    assert r["name"] == "reference"
    assert r["inputs"] == [{"shape": [2, 16], "dtype": "float32", "bytes": 128}]
    assert r["outputs"] == [{"shape": [2, 16], "dtype": "float32", "bytes": 128}]
    assert r["flops"] > 0
    assert r["bytes"] == 256
    assert r["overrides"] == {"rows": "2"}
    json.dumps(clean_floats(r))  # serialisable


def test_inspect_counts_matmul_flops(write) -> None:
    path = write("mm.py", """
        import torch
        class Model(torch.nn.Module):
            def forward(self, a, b):
                return a @ b
        M, K, N = 4, 8, 3
        def get_inputs(): return [torch.randn(M, K), torch.randn(K, N)]
        def get_init_inputs(): return []
        """)
    reply = handle({"op": "inspect", "reference": path})
    assert reply["ok"] is True, reply
    assert reply["result"]["flops"] == 2 * 4 * 8 * 3
