"""analyze_conv.py: nn.Conv*d / nn.ConvTranspose*d modules and F.conv*d / F.conv_transpose*d calls
become the canonical `conv` op of docs/graph-ir.md with every per-dim parameter explicit."""
from __future__ import annotations

from typing import Any

from test_analyze import Write, ops, reference, run


def conv(r: dict[str, Any]) -> dict[str, Any]:
    return next(n for n in r["nodes"] if n["op"] == "conv")


def test_conv2d_module_with_ints_and_bias(write: Write) -> None:
    r = run(write, reference("return self.c(x)",
                             init="self.c = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)",
                             inputs="[torch.randn(2, 4, 9, 10)]"))
    n = conv(r)
    assert n["args"] == [{"input": "x"}, {"attr": "c.weight"}, {"attr": "c.bias"}]
    assert n["kwargs"] == {"dims": 2, "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1],
                           "groups": 2, "transposed": False, "output_padding": [0, 0]}
    assert n["shape"] == [2, 6, 5, 5]
    assert {a["name"]: a["shape"] for a in r["attrs"]} == {"c.weight": [6, 2, 3, 3],
                                                          "c.bias": [6]}


def test_conv_transpose3d_module_without_bias(write: Write) -> None:
    r = run(write, reference(
        "return self.t(x)",
        init="self.t = nn.ConvTranspose3d(4, 2, (1, 2, 3), stride=(1, 2, 3), padding=(0, 1, 1), "
             "output_padding=(0, 1, 2), dilation=(1, 1, 1), bias=False)",
        inputs="[torch.randn(1, 4, 3, 4, 5)]"))
    n = conv(r)
    assert n["args"][2] == {"value": None}
    assert n["kwargs"] == {"dims": 3, "stride": [1, 2, 3], "padding": [0, 1, 1],
                           "dilation": [1, 1, 1], "groups": 1, "transposed": True,
                           "output_padding": [0, 1, 2]}
    assert n["shape"] == [1, 2, 3, 7, 15]


def test_functional_conv1d_same_and_valid_padding(write: Write) -> None:
    r = run(write, reference("return F.conv1d(F.conv1d(x, self.w, padding='same', dilation=2), "
                             "self.w, padding='valid')",
                             init="self.w = nn.Parameter(torch.randn(3, 3, 5))",
                             inputs="[torch.randn(2, 3, 16)]"))
    first, second = r["nodes"]
    assert first["kwargs"]["padding"] == [4] and first["shape"] == [2, 3, 16]
    assert second["kwargs"]["padding"] == [0] and second["shape"] == [2, 3, 12]
    assert second["args"][:2] == [{"node": first["name"]}, {"attr": "w"}]


def test_uneven_same_padding_and_other_padding_modes_are_not_conv(write: Write) -> None:
    r = run(write, reference("return F.conv1d(x, self.w, padding='same')",
                             init="self.w = nn.Parameter(torch.randn(3, 3, 4))",
                             inputs="[torch.randn(2, 3, 16)]"))
    assert ops(r) == ["unknown"]
    assert "pads one side more" in r["nodes"][0]["kwargs"]["reason"]
    r = run(write, reference("return self.c(x)",
                             init="self.c = nn.Conv2d(3, 3, 3, padding=1, padding_mode='reflect')",
                             inputs="[torch.randn(1, 3, 8, 8)]"))
    assert ops(r) == ["module"] and r["nodes"][0]["kwargs"]["type"] == "Conv2d"


def test_depthwise_separable_is_two_convs(write: Write) -> None:
    r = run(write, reference("return self.p(self.d(x))",
                             init="self.d = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)\n"
                                  "self.p = nn.Conv2d(4, 8, 1, bias=False)",
                             inputs="[torch.randn(2, 4, 6, 6)]"))
    assert ops(r) == ["conv", "conv"]
    assert [n["kwargs"]["groups"] for n in r["nodes"]] == [4, 1]
    assert r["nodes"][1]["shape"] == [2, 8, 6, 6]
