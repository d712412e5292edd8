"""analyze.py and device_info.py: the operator-graph IR of docs/graph-ir.md and device specs."""
from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from openkernel_worker.__main__ import handle
from openkernel_worker.analyze import analyze
from openkernel_worker.analyze_builder import tables
from openkernel_worker.device_info import device_info
from openkernel_worker.protocol import clean_floats

SWISH = Path(__file__).resolve().parents[2] / "examples" / "swish_chain" / "reference.py"

Write = Callable[[str, str], str]


def reference(forward: str, init: str = "", inputs: str = "[torch.randn(4, 8)]",
              init_inputs: str = "[]", params: str = "x", imports: str = "") -> str:
    """A reference whose Model has `init` in __init__ and `forward` as forward's body."""
    indent = "\n        "
    return (f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n{imports}\n\n"
            f"class Model(nn.Module):\n"
            f"    def __init__(self, *args):\n"
            f"        super().__init__(){indent}{indent.join(init.splitlines())}\n\n"
            f"    def forward(self, {params}):{indent}{indent.join(forward.splitlines())}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\n"
            f"def get_init_inputs():\n    return {init_inputs}\n")


def run(write: Write, source: str, overrides: dict[str, str] | None = None) -> dict[str, Any]:
    result = analyze(write("reference.py", source), overrides or {})
    json.dumps(clean_floats(result))  # always plain JSON
    return result


def ops(result: dict[str, Any]) -> list[str]:
    return [n["op"] for n in result["nodes"]]


def node(result: dict[str, Any], op: str) -> dict[str, Any]:
    return next(n for n in result["nodes"] if n["op"] == op)


def test_elementwise_chain_of_the_example() -> None:
    r = analyze(str(SWISH), {"batch_size": "4", "dim": "8"})
    assert r["traceable"] and r["reason"] is None
    assert r["inputs"] == [{"name": "x", "index": 0, "shape": [4, 8], "dtype": "float32"}]
    assert r["attrs"] == [] and r["module_types"] == {}
    assert r["nodes"] == [
        {"name": "sigmoid", "op": "sigmoid", "args": [{"input": "x"}], "kwargs": {},
         "shape": [4, 8], "dtype": "float32"},
        {"name": "mul", "op": "mul", "args": [{"input": "x"}, {"node": "sigmoid"}], "kwargs": {},
         "shape": [4, 8], "dtype": "float32"},
        {"name": "mul_1", "op": "mul", "args": [{"node": "mul"}, {"scalar": 1.5}], "kwargs": {},
         "shape": [4, 8], "dtype": "float32"},
        {"name": "add", "op": "add", "args": [{"node": "mul_1"}, {"scalar": 0.25}], "kwargs": {},
         "shape": [4, 8], "dtype": "float32"},
        {"name": "clamp", "op": "clamp", "args": [{"node": "add"}],
         "kwargs": {"min": -1.0, "max": 4.0}, "shape": [4, 8], "dtype": "float32"},
    ]
    assert r["outputs"] == [{"node": "clamp"}]


def test_reductions_are_normalised(write: Write) -> None:
    r = run(write, reference(
        "a = torch.sum(x, dim=1)\n"
        "b = x.mean(dim=(-1, 0), keepdim=True)\n"
        "c = torch.max(x, -1)[0]\n"
        "d = torch.argmax(x, dim=2)\n"
        "e = x.sum()\n"
        "f = x.min(dim=1).values\n"
        "return a.sum() + b.sum() + c.sum() + d.sum() + e + f.sum()",
        inputs="[torch.randn(2, 3, 4)]"))
    assert r["traceable"]
    reductions = [(n["op"], n["kwargs"], n["shape"], n["dtype"]) for n in r["nodes"]]
    for expected in [
        ("sum", {"dim": [1], "keepdim": False}, [2, 4], "float32"),
        ("mean", {"dim": [0, 2], "keepdim": True}, [1, 3, 1], "float32"),
        ("amax", {"dim": [2], "keepdim": False}, [2, 3], "float32"),
        ("argmax", {"dim": [2], "keepdim": False}, [2, 3], "int64"),
        ("sum", {"dim": None, "keepdim": False}, [], "float32"),
        ("amin", {"dim": [1], "keepdim": False}, [2, 4], "float32"),
    ]:
        assert expected in reductions
    assert "max" not in ops(r) and "min" not in ops(r) and "unknown" not in ops(r)


def test_logsumexp_is_a_reduction(write: Write) -> None:
    r = run(write, reference("return torch.logsumexp(x, dim=-1) + x.logsumexp(1, keepdim=True)"
                             ".sum() + torch.special.logsumexp(x, (0, 1)).sum()",
                             inputs="[torch.randn(2, 3, 4)]"))
    lse = [(n["op"], n["kwargs"], n["shape"]) for n in r["nodes"] if n["op"] == "logsumexp"]
    assert lse == [
        ("logsumexp", {"dim": [2], "keepdim": False}, [2, 3]),
        ("logsumexp", {"dim": [1], "keepdim": True}, [2, 1, 4]),
        ("logsumexp", {"dim": [0, 1], "keepdim": False}, [4])]


def test_clone_detach_and_eval_dropout_are_their_input(write: Write) -> None:
    r = run(write, reference("y = x.clone().detach() + torch.clone(x)\n"
                             "return self.drop(y) + F.dropout(x, 0.3, training=self.training)",
                             init="self.drop = nn.Dropout(0.2)"))
    assert ops(r) == ["contiguous", "contiguous", "contiguous", "add", "contiguous",
                      "contiguous", "add"]
    assert all(n["kwargs"] == {} for n in r["nodes"] if n["op"] == "contiguous")
    r = run(write, reference("return F.dropout(x, 0.3, training=True)"))
    assert ops(r) == ["unknown"] and "training" in r["nodes"][0]["kwargs"]["reason"]
    # Dropout's default is training=True, alpha dropout's training=False (then the identity).
    r = run(write, reference("return F.dropout(x, 0.3) + F.alpha_dropout(x, 0.2) + "
                             "F.feature_alpha_dropout(x, 0.2)"))
    assert ops(r) == ["unknown", "contiguous", "add", "contiguous", "add"]
    assert "training" in r["nodes"][0]["kwargs"]["reason"]


def test_dropout_signatures_default_as_pytorchs() -> None:
    # torch.fx records every argument of these calls, but a call bound by the table's signature
    # alone must default as PyTorch does.
    import torch.nn.functional as F

    functions = tables()[0]
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout"):
        fn = getattr(F, name)
        want = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
        got = {k: p.default for k, p in functions[fn].sig.parameters.items()}
        assert got == want, name


def test_max_indices_and_full_max(write: Write) -> None:
    r = run(write, reference("return torch.max(x, 1)[1].float() + x.max()"))
    assert ops(r)[:2] == ["argmax", "unknown"]  # .float() has no canonical op
    assert node(r, "argmax")["kwargs"] == {"dim": [1], "keepdim": False}
    assert node(r, "amax")["kwargs"] == {"dim": None, "keepdim": False}


def test_softmax_and_log_softmax_with_negative_dims(write: Write) -> None:
    r = run(write, reference(
        "a = torch.softmax(x, dim=-1)\n"
        "b = F.log_softmax(a, -2)\n"
        "return self.sm(b)",
        init="self.sm = nn.Softmax(dim=-1)", inputs="[torch.randn(2, 3, 4)]"))
    assert [(n["op"], n["kwargs"]) for n in r["nodes"]] == [
        ("softmax", {"dim": 2}), ("log_softmax", {"dim": 1}), ("softmax", {"dim": 2})]
    assert r["module_types"] == {"sm": "Softmax"}
    assert r["nodes"][2]["args"] == [{"node": r["nodes"][1]["name"]}]


def test_layer_norm_module_and_functional(write: Write) -> None:
    r = run(write, reference(
        "y = self.ln(x)\n"
        "return F.layer_norm(y, (8,), self.w, None, 1e-6)",
        init="self.ln = nn.LayerNorm(8)\nself.w = nn.Parameter(torch.ones(8))"))
    module, functional = r["nodes"]
    assert module["op"] == "layer_norm" and module["name"] == "ln"
    assert module["args"] == [{"input": "x"}, {"attr": "ln.weight"}, {"attr": "ln.bias"}]
    assert module["kwargs"] == {"normalized_shape": [8], "eps": 1e-5}
    assert functional["op"] == "layer_norm"
    assert functional["args"] == [{"node": "ln"}, {"attr": "w"}, {"value": None}]
    assert functional["kwargs"] == {"normalized_shape": [8], "eps": 1e-6}
    assert r["attrs"] == [
        {"name": "ln.weight", "shape": [8], "dtype": "float32", "kind": "parameter"},
        {"name": "ln.bias", "shape": [8], "dtype": "float32", "kind": "parameter"},
        {"name": "w", "shape": [8], "dtype": "float32", "kind": "parameter"},
    ]
    assert r["module_types"] == {"ln": "LayerNorm"}


def test_kernelbench_rmsnorm(write: Write) -> None:
    source = reference(
        "rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)\n"
        "return x / rms",
        init="self.eps = 1e-5", inputs="[torch.randn(2, 4, 3, 3)]")
    r = run(write, source)
    assert r["traceable"]
    assert [(n["name"], n["op"], n["args"], n["kwargs"], n["shape"]) for n in r["nodes"]] == [
        ("pow_1", "pow", [{"input": "x"}, {"scalar": 2}], {}, [2, 4, 3, 3]),
        ("mean", "mean", [{"node": "pow_1"}], {"dim": [1], "keepdim": True}, [2, 1, 3, 3]),
        ("add", "add", [{"node": "mean"}, {"scalar": 1e-5}], {}, [2, 1, 3, 3]),
        ("sqrt", "sqrt", [{"node": "add"}], {}, [2, 1, 3, 3]),
        ("truediv", "div", [{"input": "x"}, {"node": "sqrt"}], {}, [2, 4, 3, 3]),
    ]
    assert r["outputs"] == [{"node": "truediv"}]


def test_gelu_tanh_module_and_other_activation_modules(write: Write) -> None:
    r = run(write, reference(
        "return self.h(self.l(self.g(x)))",
        init="self.g = nn.GELU(approximate='tanh')\nself.l = nn.LeakyReLU(0.2)\n"
             "self.h = nn.Hardtanh(-2.0, 2.0)"))
    assert [(n["op"], n["kwargs"]) for n in r["nodes"]] == [
        ("gelu", {"approximate": "tanh"}), ("leaky_relu", {"negative_slope": 0.2}),
        ("hardtanh", {"min_val": -2.0, "max_val": 2.0})]
    assert r["module_types"] == {"g": "GELU", "l": "LeakyReLU", "h": "Hardtanh"}


def test_linear_module_stays_a_module_node(write: Write) -> None:
    r = run(write, reference("return torch.relu(self.fc(x))", init="self.fc = nn.Linear(8, 16)"))
    fc, relu = r["nodes"]
    assert fc == {"name": "fc", "op": "module", "args": [{"input": "x"}],
                  "kwargs": {"target": "fc", "type": "Linear"}, "shape": [4, 16], "dtype": "float32"}
    assert relu["op"] == "relu" and relu["args"] == [{"node": "fc"}]
    assert r["module_types"] == {"fc": "Linear"}
    assert {a["name"]: a["shape"] for a in r["attrs"]} == {"fc.weight": [16, 8], "fc.bias": [16]}


def test_functional_linear_is_linear(write: Write) -> None:
    r = run(write, reference("return F.linear(x, self.w)",
                             init="self.w = nn.Parameter(torch.ones(3, 8))"))
    assert r["nodes"][0]["op"] == "linear"
    assert r["nodes"][0]["args"] == [{"input": "x"}, {"attr": "w"}, {"value": None}]


def test_conv_bias_parameter_add_relu(write: Write) -> None:
    r = run(write, reference(
        "return torch.relu(self.conv(x) + self.bias)",
        init="self.conv = nn.Conv2d(3, 4, 3)\nself.bias = nn.Parameter(torch.randn(4, 1, 1))",
        inputs="[torch.randn(2, 3, 6, 6)]"))
    assert ops(r) == ["conv", "add", "relu"]
    assert r["nodes"][0]["args"] == [{"input": "x"}, {"attr": "conv.weight"},
                                     {"attr": "conv.bias"}]
    assert r["nodes"][0]["shape"] == [2, 4, 4, 4]
    assert r["nodes"][1]["args"] == [{"node": "conv"}, {"attr": "bias"}]
    bias = next(a for a in r["attrs"] if a["name"] == "bias")
    assert bias == {"name": "bias", "shape": [4, 1, 1], "dtype": "float32", "kind": "parameter"}


def test_add_with_alpha_becomes_a_mul(write: Write) -> None:
    r = run(write, reference("return torch.add(x, y, alpha=3.0).sub(x, alpha=2)", params="x, y",
                             inputs="[torch.randn(4, 8), torch.randn(4, 8)]"))
    assert [(n["op"], n["args"]) for n in r["nodes"]] == [
        ("mul", [{"input": "y"}, {"scalar": 3.0}]),
        ("add", [{"input": "x"}, {"node": "add_alpha"}]),
        ("mul", [{"input": "x"}, {"scalar": 2}]),
        ("sub", [{"node": "add"}, {"node": "sub_alpha"}]),
    ]
    assert r["nodes"][0]["name"] == "add_alpha" and r["nodes"][0]["shape"] == [4, 8]


def test_methods_clamp_and_shape_ops(write: Write) -> None:
    r = run(write, reference(
        "y = x.view(x.size(0), -1).clamp(min=0.5).pow(2)\n"
        "y = torch.clip(y, max=3.0).flatten(-2).contiguous()\n"
        "return y.relu() - 1",
        inputs="[torch.randn(4, 2, 3)]"))
    assert [(n["op"], n["kwargs"]) for n in r["nodes"]] == [
        ("reshape", {"shape": [4, 6]}), ("clamp", {"min": 0.5, "max": None}), ("pow", {}),
        ("clamp", {"min": None, "max": 3.0}), ("flatten", {"start_dim": 0, "end_dim": 1}),
        ("contiguous", {}), ("relu", {}), ("sub", {})]
    assert r["nodes"][2]["args"][1] == {"scalar": 2}


def test_shape_unpacking_and_tensor_of_a_number(write: Write) -> None:
    r = run(write, reference("b, c = x.shape\n"
                             "return torch.min(x, torch.tensor(0.5, device=x.device)).view(b * c)"))
    assert r["traceable"], r["reason"]
    assert [(n["op"], n["args"], n["kwargs"]) for n in r["nodes"]] == [
        ("minimum", [{"input": "x"}, {"scalar": 0.5}], {}),
        ("reshape", [{"node": r["nodes"][0]["name"]}], {"shape": [32]}),
    ]


def test_unknown_ops_keep_their_names(write: Write) -> None:
    # (cumsum, the example here before, is a canonical op now: `scan`.)
    r = run(write, reference("return torch.logcumsumexp(x, dim=1) + x.H.sum()"))
    unknown = r["nodes"][0]
    assert unknown["op"] == "unknown"
    assert unknown["kwargs"] == {"target": "torch.logcumsumexp", "call_kwargs": {"dim": 1}}
    assert unknown["shape"] == [4, 8]
    assert r["nodes"][1]["kwargs"]["target"] == "torch.Tensor.H"


def test_inplace_activation_on_an_input_is_not_normalised(write: Write) -> None:
    r = run(write, reference("y = x * 2\ny = F.relu(y, inplace=True)\nreturn torch.relu_(x) + y"))
    assert ops(r)[:2] == ["mul", "relu"]  # y is not read again: out of place is the same
    assert r["nodes"][2]["op"] == "unknown"  # torch.relu_(x) mutates the input


def test_data_dependent_control_flow_is_untraceable(write: Write) -> None:
    r = run(write, reference("if x.sum() > 0:\n    return x * 2\nreturn x"))
    assert r["traceable"] is False
    assert "control flow" in r["reason"]
    assert r["nodes"] == [] and r["outputs"] == []


def test_tuple_output_is_untraceable(write: Write) -> None:
    r = run(write, reference("return x + 1, x * 2"))
    assert r["traceable"] is False and "single tensor output" in r["reason"]


def test_falls_back_to_the_cpu_when_meta_cannot_run_the_model(write: Write) -> None:
    # .item() cannot run on the meta device: the analysis reruns with real CPU tensors.
    r = run(write, reference("return x * self.k", init="self.k = float(torch.ones(1).item()) + 1"))
    assert r["traceable"] and ops(r) == ["mul"]
    assert r["nodes"][0]["args"][1] == {"scalar": 2.0}


def test_overrides_reach_the_shapes(write: Write) -> None:
    source = reference("return x.exp()", inputs="[torch.randn(rows, 8)]") + "\nrows = 4\n"
    assert run(write, source, {"rows": "3"})["inputs"][0]["shape"] == [3, 8]


def test_worker_op_analyze_and_bad_reference(write: Write) -> None:
    reply = handle({"op": "analyze", "reference": str(SWISH),
                    "overrides": {"batch_size": "2", "dim": "4"}})
    assert reply["ok"] and reply["result"]["outputs"] == [{"node": "clamp"}]
    reply = handle({"op": "analyze", "reference": write("bad.py", "x = 1\n")})
    assert not reply["ok"] and reply["error"]["kind"] == "bad_input"


def test_device_info_on_cpu() -> None:
    info = device_info("cpu")
    assert info["kind"] == "cpu" and info["device"] == "cpu"
    assert info["cores"] >= 1 and isinstance(info["name"], str) and info["name"]
    assert info["measured_bandwidth"] > 1e8 and info["peak_flops"] > 1e9
    reply = handle({"op": "device_info", "device": "cpu"})
    assert reply["ok"] and reply["result"]["name"] == info["name"]
    reply = handle({"op": "device_info", "device": "tpu"})
    assert not reply["ok"] and reply["error"]["kind"] == "bad_input"


def test_device_info_cuda_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from openkernel_worker import device_info as module

    class Props:
        name, major, minor = "NVIDIA H100 80GB HBM3", 9, 0
        multi_processor_count, total_memory, L2_cache_size = 132, 80 << 30, 50 << 20
        shared_memory_per_block_optin, shared_memory_per_multiprocessor = 232448, 233472
        memory_clock_rate, memory_bus_width = 2619000, 5120

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: Props())
    monkeypatch.setattr(module, "ceilings", lambda device: {"bandwidth": 3e12, "peak_flops": 1.98e15})
    info = device_info("cuda")
    assert info["device"] == "cuda:0" and info["compute_capability"] == "9.0"
    assert info["sm_count"] == 132 and info["l2_bytes"] == 50 << 20
    assert info["shared_memory_per_block_optin"] == 232448 and info["shared_memory_per_sm"] == 233472
    assert info["theoretical_bandwidth"] == pytest.approx(3.352e12, rel=1e-3)
    assert info["measured_bandwidth"] == 3e12 and info["peak_flops"] == 1.98e15
    with pytest.raises(Exception, match="does not exist"):
        device_info("cuda:1")


FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "generate"


def _level2_more() -> list[tuple[str, ...]]:
    """The rows of the level-2 tables whose IR fixtures are the worker's analyze output."""
    text = "\n".join((FIXTURES / name).read_text()
                     for name in ("level2_more_problems.tsv", "level2_row_problems.tsv"))
    return [tuple(line.split("\t")) for line in text.splitlines()
            if line and not line.startswith("#")]


@pytest.mark.parametrize("name,fixture,ref,sets", _level2_more())
def test_level2_logsumexp_clone_dropout_and_adaptive_pool_give_their_fixtures(
        name: str, fixture: str, ref: str, sets: str) -> None:
    kernelbench = Path(os.environ.get("OPENKERNEL_KERNELBENCH_DIR")
                       or Path(__file__).resolve().parents[3] / "shared/kernelbench")
    path = kernelbench / ref.removeprefix("kb:")
    if not path.is_file():
        pytest.skip(f"no KernelBench at {kernelbench}")
    got = json.loads(json.dumps(analyze(str(path), dict(s.split("=") for s in sets.split()))))
    assert got == json.loads((FIXTURES / fixture).read_text())
    assert got["traceable"], got["reason"]
    assert "unknown" not in ops(got)
    # nn.Linear stays a `module` node (the generator makes it a GEMM); no other module is kept.
    assert all(got["module_types"][n["kwargs"]["target"]] == "Linear"
               for n in got["nodes"] if n["op"] == "module")
