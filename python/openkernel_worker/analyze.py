"""`analyze`: a reference's forward as the operator graph of docs/graph-ir.md.

The Model is traced with torch.fx, shapes are propagated with the problem's inputs (after --set
overrides) and every call is normalised to a canonical op with explicit arguments. Shapes are
propagated on the meta device first (no memory, no arithmetic, so the problem's full size costs
nothing); when something in the model or its inputs does not work on meta, the real inputs are used
on the CPU instead.
"""
from __future__ import annotations

import contextlib
import inspect as pyinspect
import math
import operator
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .compare import dtype_name
from .problem import BadInput, Reference, build_model, load_reference, make_init_inputs, make_inputs

# Parameters that never change a result's values: dropped silently.
IGNORED = frozenset({"_stacklevel", "cudnn_enable", "memory_format"})
# Parameters the canonical forms cannot express: a call is only normalised while they keep their
# default (a `dtype=` cast inside a reduction, `rounding_mode=`, `round(decimals=)`).
DEFAULT_ONLY = frozenset({"dtype", "rounding_mode", "decimals", "out"})
# Tensor methods and attributes that only read a shape: their results are folded into constants.
SHAPE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement"})
SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "layout"})
# Tensor methods that reshape without touching data: all become `reshape` with the output shape.
VIEW_METHODS = ("view", "reshape", "squeeze", "unsqueeze")


class _Unsupported(Exception):
    """A recognised call whose arguments the canonical form cannot express (the message says why)."""


class _MetaFailed(Exception):
    """Building the model, drawing its inputs or running the graph failed on the meta device."""


@dataclass(frozen=True)
class TensorInfo:
    shape: list[int]
    dtype: str


@dataclass(frozen=True)
class AttrRef:
    """A module weight handed to a normalised op (nn.LayerNorm's weight becomes an attr arg)."""
    path: str


@dataclass(frozen=True)
class Spec:
    """How one callable becomes a canonical op: its signature (self first for methods), the family
    that turns bound arguments into args and kwargs, and kwargs the callable implies."""
    op: str
    sig: pyinspect.Signature
    family: str
    fixed: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# The tables: which callables and modules are which canonical op.
# ---------------------------------------------------------------------------------------------

def _resolve(dotted: str) -> Any:
    """`torch.nn.functional.relu` -> the object, or None where this torch version lacks it."""
    import importlib

    parts = dotted.split(".")
    obj: Any = importlib.import_module(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def _signature(fn: Callable[..., Any]) -> pyinspect.Signature:
    return pyinspect.signature(fn)


UNARY = ("relu", "sigmoid", "tanh", "exp", "log", "log1p", "expm1", "abs", "neg", "sqrt", "rsqrt",
         "sin", "cos", "erf", "reciprocal", "square", "sign", "floor", "ceil", "silu", "mish",
         "selu", "softsign", "hardsigmoid", "hardswish")
# Unary ops whose torch.nn.functional form takes `inplace=`.
FUNCTIONAL_INPLACE = ("relu", "silu", "mish", "selu", "hardsigmoid", "hardswish")


def _table_entries() -> Iterator[tuple[list[str], Spec]]:
    """(callables by dotted name, method names prefixed `Tensor.`) -> Spec."""
    u = _signature(lambda input: None)
    u_inplace = _signature(lambda input, inplace=False: None)
    for name in UNARY:
        yield [f"torch.{name}", f"torch.special.{name}", f"Tensor.{name}"], Spec(name, u, "unary")
        functional = u_inplace if name in FUNCTIONAL_INPLACE else u
        yield [f"torch.nn.functional.{name}"], Spec(name, functional, "unary")
    yield ["torch.negative", "Tensor.negative", "operator.neg"], Spec("neg", u, "unary")
    yield ["torch.absolute", "Tensor.absolute", "operator.abs"], Spec("abs", u, "unary")
    yield ["torch.special.expit"], Spec("sigmoid", u, "unary")
    yield (["torch.round", "Tensor.round"],
           Spec("round", _signature(lambda input, decimals=0: None), "unary"))
    yield (["torch.nn.functional.gelu", "torch._C._nn.gelu"],
           Spec("gelu", _signature(lambda input, approximate="none": None), "unary"))
    yield (["torch.nn.functional.softplus", "torch._C._nn.softplus"],
           Spec("softplus", _signature(lambda input, beta=1.0, threshold=20.0: None), "unary"))
    yield (["torch.nn.functional.elu"],
           Spec("elu", _signature(lambda input, alpha=1.0, inplace=False: None), "unary"))
    yield (["torch.nn.functional.leaky_relu", "torch._C._nn.leaky_relu"],
           Spec("leaky_relu", _signature(lambda input, negative_slope=0.01, inplace=False: None),
                "unary"))
    yield (["torch.nn.functional.hardtanh", "torch._C._nn.hardtanh"],
           Spec("hardtanh", _signature(lambda input, min_val=-1.0, max_val=1.0, inplace=False: None),
                "unary"))
    yield (["torch.nn.functional.relu6"],
           Spec("hardtanh", u_inplace, "unary", {"min_val": 0.0, "max_val": 6.0}))
    yield (["torch.clamp", "torch.clip", "Tensor.clamp", "Tensor.clip"],
           Spec("clamp", _signature(lambda input, min=None, max=None: None), "unary"))
    yield (["torch.clamp_min", "Tensor.clamp_min"],
           Spec("clamp", _signature(lambda input, min: None), "unary", {"max": None}))
    yield (["torch.clamp_max", "Tensor.clamp_max"],
           Spec("clamp", _signature(lambda input, max: None), "unary", {"min": None}))
    yield (["torch.nn.functional.threshold"],
           Spec("threshold", _signature(lambda input, threshold, value, inplace=False: None), "unary"))
    yield (["torch.threshold"],
           Spec("threshold", _signature(lambda input, threshold, value: None), "unary"))

    with_alpha = _signature(lambda input, other, alpha=1: None)
    plain = _signature(lambda input, other: None)
    yield ["torch.add", "Tensor.add"], Spec("add", with_alpha, "binary")
    yield (["torch.sub", "torch.subtract", "Tensor.sub", "Tensor.subtract"],
           Spec("sub", with_alpha, "binary"))
    yield ["operator.add"], Spec("add", plain, "binary")
    yield ["operator.sub"], Spec("sub", plain, "binary")
    yield (["torch.mul", "torch.multiply", "Tensor.mul", "Tensor.multiply", "operator.mul"],
           Spec("mul", plain, "binary"))
    yield (["torch.div", "torch.divide", "Tensor.div", "Tensor.divide"],
           Spec("div", _signature(lambda input, other, rounding_mode=None: None), "binary"))
    yield ["torch.true_divide", "Tensor.true_divide", "operator.truediv"], Spec("div", plain, "binary")
    yield (["torch.pow", "Tensor.pow", "operator.pow"],
           Spec("pow", _signature(lambda input, exponent: None), "binary"))
    yield ["torch.maximum", "Tensor.maximum"], Spec("maximum", plain, "binary")
    yield ["torch.minimum", "Tensor.minimum"], Spec("minimum", plain, "binary")
    yield ["torch.where"], Spec("where", _signature(lambda condition, input, other: None), "where")

    sig = _signature
    with_dtype = sig(lambda input, dim=None, keepdim=False, dtype=None: None)
    for name in ("sum", "mean", "prod"):
        yield [f"torch.{name}", f"Tensor.{name}"], Spec(name, with_dtype, "reduce")
    for name in ("amax", "amin"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim=(), keepdim=False: None), "reduce"))
    for name in ("argmax", "argmin"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim=None, keepdim=False: None), "reduce"))
    for name in ("var", "std"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim=None, unbiased=None, keepdim=False, correction=None:
                              None), "var"))
    for name in ("max", "min"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, *args, **kwargs: None), "maxmin"))
    yield (["torch.norm", "Tensor.norm"],
           Spec("norm", sig(lambda input, p="fro", dim=None, keepdim=False, out=None, dtype=None:
                            None), "norm"))
    yield (["torch.linalg.vector_norm"],
           Spec("norm", sig(lambda input, ord=2, dim=None, keepdim=False, dtype=None: None), "norm"))
    yield (["torch.linalg.norm"],
           Spec("norm", sig(lambda input, ord=None, dim=None, keepdim=False, dtype=None: None),
                "norm"))

    for name in ("softmax", "log_softmax"):
        yield ([f"torch.nn.functional.{name}"],
               Spec(name, sig(lambda input, dim=None, _stacklevel=3, dtype=None: None), "softmax"))
        yield ([f"torch.{name}", f"torch.special.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, dim, dtype=None: None), "softmax"))
    yield (["torch.nn.functional.layer_norm", "torch.layer_norm"],
           Spec("layer_norm", sig(lambda input, normalized_shape, weight=None, bias=None, eps=1e-5,
                                  cudnn_enable=True: None), "layer_norm"))

    yield ["torch.reshape"], Spec("reshape", sig(lambda input, shape: None), "reshape")
    yield ([f"Tensor.{m}" for m in VIEW_METHODS] + ["torch.squeeze", "torch.unsqueeze"],
           Spec("reshape", sig(lambda input, *shape, **kwargs: None), "reshape"))
    yield (["torch.flatten", "Tensor.flatten"],
           Spec("flatten", sig(lambda input, start_dim=0, end_dim=-1: None), "flatten"))
    yield (["Tensor.contiguous"],
           Spec("contiguous", sig(lambda input, memory_format=None: None), "unary"))

    yield (["torch.nn.functional.linear", "torch._C._nn.linear"],
           Spec("linear", sig(lambda input, weight, bias=None: None), "vendor"))
    yield ["torch.matmul", "Tensor.matmul", "operator.matmul"], Spec("matmul", plain, "vendor")
    for name in ("mm", "bmm"):
        yield ([f"torch.{name}", f"Tensor.{name}"],
               Spec(name, sig(lambda input, mat2: None), "vendor"))


_FUNCTIONS: dict[Any, Spec] = {}
_METHODS: dict[str, Spec] = {}


def _tables() -> tuple[dict[Any, Spec], dict[str, Spec]]:
    """Functions by identity and Tensor methods by name, built once."""
    if not _FUNCTIONS:
        for names, spec in _table_entries():
            for dotted in names:
                if dotted.startswith("Tensor."):
                    _METHODS.setdefault(dotted[len("Tensor."):], spec)
                    continue
                fn = _resolve(dotted)
                if fn is not None:
                    _FUNCTIONS.setdefault(fn, spec)
    return _FUNCTIONS, _METHODS


def _module_form(mod: Any, path: str) -> tuple[Any, dict[str, Any]] | None:
    """A module that is one of the canonical ops -> (the functional it equals, its arguments but
    the input), or None for every other module (kept as op `module`)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    kind = type(mod)
    inplace = {"inplace": bool(getattr(mod, "inplace", False))}
    plain = {nn.Sigmoid: torch.sigmoid, nn.Tanh: torch.tanh, nn.Softsign: F.softsign}
    with_inplace = {nn.ReLU: F.relu, nn.SiLU: F.silu, nn.Mish: F.mish, nn.SELU: F.selu,
                    nn.Hardsigmoid: F.hardsigmoid, nn.Hardswish: F.hardswish}
    if kind in plain:
        return plain[kind], {}
    if kind in with_inplace:
        return with_inplace[kind], inplace
    if kind is nn.GELU:
        return F.gelu, {"approximate": getattr(mod, "approximate", "none")}
    if kind is nn.Softplus:
        return F.softplus, {"beta": mod.beta, "threshold": mod.threshold}
    if kind is nn.ELU:
        return F.elu, {"alpha": mod.alpha, **inplace}
    if kind is nn.LeakyReLU:
        return F.leaky_relu, {"negative_slope": mod.negative_slope, **inplace}
    if kind in (nn.Hardtanh, nn.ReLU6):
        return F.hardtanh, {"min_val": mod.min_val, "max_val": mod.max_val, **inplace}
    if kind is nn.Threshold:
        return F.threshold, {"threshold": mod.threshold, "value": mod.value, **inplace}
    if kind is nn.Softmax:
        return F.softmax, {"dim": mod.dim}
    if kind is nn.LogSoftmax:
        return F.log_softmax, {"dim": mod.dim}
    if kind is nn.Flatten:
        return torch.flatten, {"start_dim": mod.start_dim, "end_dim": mod.end_dim}
    if kind is nn.LayerNorm:
        weight = AttrRef(f"{path}.weight") if getattr(mod, "weight", None) is not None else None
        bias = AttrRef(f"{path}.bias") if getattr(mod, "bias", None) is not None else None
        return F.layer_norm, {"normalized_shape": list(mod.normalized_shape), "weight": weight,
                              "bias": bias, "eps": mod.eps}
    return None


# ---------------------------------------------------------------------------------------------
# Small helpers.
# ---------------------------------------------------------------------------------------------

def _qualname(node: Any) -> str:
    """A call's qualified name: `torch.cumsum`, `torch.Tensor.cumsum`, `operator.getitem`."""
    if node.op == "call_method":
        return f"torch.Tensor.{node.target}"
    if node.op == "call_module":
        return str(node.target)
    try:
        from torch.fx.node import _get_qualified_name

        name = _get_qualified_name(node.target)
    except Exception:  # noqa: BLE001 - any name is better than none
        name = getattr(node.target, "__qualname__", repr(node.target))
    return name.replace("_operator.", "operator.", 1) if name.startswith("_operator.") else name


def _summary(value: Any) -> Any:
    """A propagated value without its storage: TensorInfo, a tuple of summaries, or the value."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorInfo([int(s) for s in value.shape], dtype_name(value.dtype))
    if isinstance(value, (tuple, list)) and any(_holds_tensor(v) for v in value):
        return tuple(_summary(v) for v in value)
    return value


def _holds_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, (torch.Tensor, TensorInfo)):
        return True
    return isinstance(value, (tuple, list)) and any(_holds_tensor(v) for v in value)


def _first_tensor(value: Any) -> TensorInfo | None:
    if isinstance(value, TensorInfo):
        return value
    if isinstance(value, tuple):
        for v in value:
            found = _first_tensor(v)
            if found is not None:
                return found
    return None


def _json(value: Any) -> Any:
    """A constant as plain JSON: dtypes by name, slices as {"slice": [start, stop, step]}."""
    import torch

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, slice):
        return {"slice": [_json(value.start), _json(value.stop), _json(value.step)]}
    if value is Ellipsis:
        return "..."
    return repr(value)


def _dims(dim: Any, rank: int) -> list[int] | None:
    """A reduction's dim as a sorted list of non-negative ints; None (or empty) = every dim."""
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise _Unsupported(f"dim {dim!r} is not a constant int or list of ints")
    return sorted({d % max(rank, 1) for d in dims})


def _one_dim(dim: Any, rank: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise _Unsupported(f"dim {dim!r} is not a constant int")
    return dim % max(rank, 1)


def _inplace_safe(node: Any, src: Any, order: dict[Any, int]) -> bool:
    """Whether computing `node` out of place equals doing it in place on `src`: nothing reads
    `src` (or what it is a view of) afterwards and it is not a forward input or a weight."""
    from torch.fx import Node

    here = order[node]
    current = src
    while isinstance(current, Node):
        if current.op in ("placeholder", "get_attr"):
            return False
        if any(order[u] > here for u in current.users if u is not node):
            return False
        viewish = current.op == "call_method" and current.target in VIEW_METHODS + ("flatten",)
        current = current.args[0] if viewish and current.args else None
    return True


@contextlib.contextmanager
def _factories_on(device: str) -> Iterator[None]:
    """Creates tensors made by torch's factory functions on `device` (meta: no storage at all).
    torch >= 2.0 has `with torch.device(...)`; on 1.13 a TorchFunctionMode does the same."""
    import torch

    if device == "cpu":
        yield
        return
    if hasattr(torch.device(device), "__enter__"):
        with torch.device(device):
            yield
        return
    from torch.overrides import TorchFunctionMode

    names = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "tensor",
             "as_tensor", "arange", "range", "linspace", "logspace", "eye", "empty_strided",
             "normal", "scalar_tensor", "tril_indices", "triu_indices")
    factories = {getattr(torch, n) for n in names if hasattr(torch, n)}

    class OnDevice(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = dict(kwargs or {})
            if func in factories and kwargs.get("device") is None:
                kwargs["device"] = device
            return func(*args, **kwargs)

    with OnDevice():
        yield


def _module_on_cpu(mod: Any, args: Any, kwargs: Any) -> Any:
    """Runs a torch.nn module that has no meta kernel (MaxPool3d on torch 1.13) on CPU zeros of
    its inputs' shapes and returns meta tensors: only that module's memory is touched, not the
    whole model's. torch.nn modules' output shapes do not depend on the data."""
    import copy

    import torch
    from torch.fx.node import map_aggregate

    def to_cpu(v: Any) -> Any:
        return torch.zeros(v.shape, dtype=v.dtype) if isinstance(v, torch.Tensor) and v.is_meta else v

    cpu_mod = copy.deepcopy(mod).to_empty(device="cpu")  # weights' values do not matter here
    with torch.no_grad():
        out = cpu_mod(*map_aggregate(args, to_cpu), **map_aggregate(kwargs, to_cpu))
    return map_aggregate(out, lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v)


def _recorder(gm: Any, device: str) -> Any:
    """An fx Interpreter that keeps every node's value summary (tensor shapes and dtypes, Python
    values). ShapeProp does the same but prints a traceback for every failing node, and a failure
    on meta is expected and retried on the CPU."""
    from torch.fx import Interpreter

    class Recorder(Interpreter):
        def __init__(self, module: Any) -> None:
            super().__init__(module)
            self.values: dict[str, Any] = {}

        def run_node(self, n: Any) -> Any:
            result = super().run_node(n)
            self.values[n.name] = _summary(result)
            return result

        def call_module(self, target: Any, args: Any, kwargs: Any) -> Any:
            try:
                return super().call_module(target, args, kwargs)
            except Exception:  # noqa: BLE001 - a kernel missing on meta, most likely
                mod = self.fetch_attr(target)
                if device != "meta" or not type(mod).__module__.startswith("torch.nn"):
                    raise
                return _module_on_cpu(mod, args, kwargs)

    return Recorder(gm)


def _unpack_by_offset(self: Any) -> Any:
    """Proxy.__iter__ finding the caller's UNPACK_SEQUENCE by byte offset, as torch 2 does."""
    import dis

    frame = pyinspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is not None:
        for inst in dis.get_instructions(caller.f_code):
            if inst.offset == caller.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
    return self.tracer.iter(self)


@contextlib.contextmanager
def _tracing_patches() -> Iterator[None]:
    """Two gaps in torch.fx, closed while tracing only:
    - `torch.tensor(v, device=x.device)` (common in KernelBench) raises because the device is a
      Proxy; such calls are recorded as graph nodes instead.
    - `b, c, h, w = x.shape` under torch 1.13 on Python >= 3.11: fx finds the UNPACK_SEQUENCE by
      instruction index, which 3.11's inline caches shift (IndexError); find it by byte offset."""
    import torch
    from torch.fx.node import map_aggregate
    from torch.fx.proxy import Proxy

    make_tensor = torch.tensor

    def tensor(*args: Any, **kwargs: Any) -> Any:
        proxies: list[Any] = []
        map_aggregate((args, kwargs), lambda v: proxies.append(v) if isinstance(v, Proxy) else v)
        if proxies:
            return proxies[0].tracer.create_proxy("call_function", make_tensor, args, kwargs)
        return make_tensor(*args, **kwargs)

    old_iter = Proxy.__iter__
    if int(torch.__version__.split(".")[0]) < 2 and sys.version_info >= (3, 11):
        Proxy.__iter__ = _unpack_by_offset  # type: ignore[method-assign]
    torch.tensor = tensor
    try:
        yield
    finally:
        torch.tensor = make_tensor
        Proxy.__iter__ = old_iter  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------------------
# Normalising the traced graph.
# ---------------------------------------------------------------------------------------------

class _Builder:
    """Walks the traced graph once, in order, and collects the IR's nodes, attrs and types."""

    def __init__(self, gm: Any, values: dict[str, Any]) -> None:
        self.gm = gm
        self.values = values
        self.graph_nodes = list(gm.graph.nodes)
        self.order = {n: i for i, n in enumerate(self.graph_nodes)}
        self.nodes: list[dict[str, Any]] = []
        self.attrs: dict[str, dict[str, Any]] = {}
        self.module_types: dict[str, str] = {}
        self.used_names = {n.name for n in self.graph_nodes}
        # max(x, dim) / min(x, dim) nodes read through [0] or [1]: name -> (op, x, dim, keepdim)
        self.pending: dict[str, tuple[str, Any, int, bool]] = {}
        self.static = self._static_nodes()
        self.scalars = self._scalar_tensors()
        params = dict(gm.named_parameters())
        buffers = dict(gm.named_buffers())
        self.attr_kind = {**{k: "buffer" for k in buffers}, **{k: "parameter" for k in params}}

    # -- values and argument forms --------------------------------------------------------------

    def _static_nodes(self) -> set[str]:
        """Non-tensor nodes computed from shapes alone (x.size(0), x.shape[1] * 2): folded."""
        static: set[str] = set()
        for n in self.graph_nodes:
            if n.op not in ("call_function", "call_method") or n.name not in self.values:
                continue
            if _holds_tensor(self.values[n.name]):
                continue
            reads_shape = ((n.op == "call_method" and n.target in SHAPE_METHODS)
                           or (n.op == "call_function" and n.target is getattr
                               and len(n.args) > 1 and n.args[1] in SHAPE_ATTRS))
            if reads_shape or all(a.name in static for a in n.all_input_nodes):
                static.add(n.name)
        return static

    def _scalar_tensors(self) -> dict[str, Any]:
        """`torch.tensor(0.5, device=x.device)` -> 0.5: a 0-dim tensor of a Python number of its
        own kind (float in a floating dtype, int in an integer one) promotes like the number."""
        import torch

        kinds = {bool: ("bool",), int: ("int", "uint"), float: ("float", "bfloat", "half", "double")}
        scalars: dict[str, Any] = {}
        for n in self.graph_nodes:
            if n.op != "call_function" or n.target is not torch.tensor or len(n.args) != 1:
                continue
            value, info = n.args[0], self.values.get(n.name)
            if (type(value) in kinds and isinstance(info, TensorInfo) and info.shape == []
                    and info.dtype.startswith(kinds[type(value)])
                    and set(n.kwargs) <= {"device", "dtype", "requires_grad"}):
                scalars[n.name] = value
        return scalars

    def is_tensor(self, value: Any) -> bool:
        from torch.fx import Node

        if isinstance(value, AttrRef):
            return True
        return isinstance(value, Node) and isinstance(self.values.get(value.name), TensorInfo)

    def tensor_info(self, value: Any) -> TensorInfo:
        from torch.fx import Node

        if isinstance(value, AttrRef):
            t = self._fetch(value.path)
            return TensorInfo([int(s) for s in t.shape], dtype_name(t.dtype))
        assert isinstance(value, Node)
        info = self.values[value.name]
        assert isinstance(info, TensorInfo)
        return info

    def python(self, value: Any) -> Any:
        """Static nodes inside an argument replaced by their values; other nodes kept."""
        from torch.fx.node import map_arg

        return map_arg(value, lambda n: self.values[n.name] if n.name in self.static else n)

    def _fetch(self, path: str) -> Any:
        obj = self.gm
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def _record_attr(self, path: str) -> None:
        import torch

        if path in self.attrs:
            return
        t = self._fetch(path)
        if isinstance(t, torch.Tensor):
            self.attrs[path] = {"name": path, "shape": [int(s) for s in t.shape],
                                "dtype": dtype_name(t.dtype),
                                "kind": self.attr_kind.get(path, "constant")}

    def form(self, value: Any) -> dict[str, Any]:
        """An argument in one of the IR's forms (docs/graph-ir.md, "Argument forms")."""
        from torch.fx import Node

        if isinstance(value, AttrRef):
            self._record_attr(value.path)
            return {"attr": value.path}
        if isinstance(value, Node):
            if value.op == "placeholder":
                return {"input": str(value.target).lstrip("*")}
            if value.op == "get_attr":
                self._record_attr(str(value.target))
                return {"attr": str(value.target)}
            if value.name in self.static:
                return self.form(self.values[value.name])
            if value.name in self.scalars:
                return self.form(self.scalars[value.name])
            return {"node": value.name}
        if isinstance(value, (bool, int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                return {"value": str(value)}
            return {"scalar": value}
        if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool)
                                                    for v in value):
            return {"ints": [int(v) for v in value]}
        return {"value": self.plain(value)}

    def plain(self, value: Any) -> Any:
        """A kwarg value as JSON; nodes inside it become their argument forms."""
        from torch.fx import Node

        if isinstance(value, (Node, AttrRef)):
            return self.form(value)
        if isinstance(value, (list, tuple)):
            return [self.plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.plain(v) for k, v in value.items()}
        return _json(value)

    def constant(self, value: Any, what: str) -> Any:
        """A kwarg that must be known now (a dim, a slope): not a tensor or a runtime value."""
        from torch.fx import Node
        from torch.fx.node import map_aggregate

        found: list[Any] = []
        map_aggregate(value, lambda v: found.append(v) if isinstance(v, (Node, AttrRef)) else v)
        if found:
            raise _Unsupported(f"{what} is computed at run time, not a constant")
        return value

    # -- emitting -------------------------------------------------------------------------------

    def emit(self, name: str, op: str, args: list[dict[str, Any]], kwargs: dict[str, Any],
             like: Any) -> None:
        """Appends one IR node; `like` is the fx node (or value) whose output it has."""
        from torch.fx import Node

        info = _first_tensor(self.values.get(like.name) if isinstance(like, Node) else like)
        self.nodes.append({"name": name, "op": op, "args": args, "kwargs": kwargs,
                           "shape": info.shape if info else None,
                           "dtype": info.dtype if info else None})

    def fresh_name(self, base: str) -> str:
        name, i = base, 1
        while name in self.used_names:
            name, i = f"{base}_{i}", i + 1
        self.used_names.add(name)
        return name

    def unknown(self, node: Any, reason: str | None = None) -> None:
        target = _qualname(node)
        if node.target is getattr and len(node.args) > 1 and isinstance(node.args[1], str):
            owner = "torch.Tensor" if self.is_tensor(node.args[0]) else "builtins.getattr"
            target = f"{owner}.{node.args[1]}"  # x.T -> torch.Tensor.T
        kwargs: dict[str, Any] = {"target": target}
        if node.kwargs:
            kwargs["call_kwargs"] = {k: self.plain(self.python(v)) for k, v in node.kwargs.items()}
        if reason:
            kwargs["reason"] = reason
        self.emit(node.name, "unknown", [self.form(self.python(a)) for a in node.args], kwargs, node)

    def module(self, node: Any, mod: Any) -> None:
        kwargs: dict[str, Any] = {"target": str(node.target), "type": type(mod).__name__}
        if node.kwargs:
            kwargs["call_kwargs"] = {k: self.plain(v) for k, v in node.kwargs.items()}
        for name, _ in list(mod.named_parameters()) + list(mod.named_buffers()):
            self._record_attr(f"{node.target}.{name}")
        self.emit(node.name, "module", [self.form(a) for a in node.args], kwargs, node)

    # -- one fx node ----------------------------------------------------------------------------

    def convert(self, node: Any) -> None:
        if node.name in self.static or node.name in self.scalars:
            return
        if node.op == "call_module":
            self.convert_module(node)
            return
        if node.op == "call_function" and node.target in (operator.getitem, getattr):
            self.convert_getitem(node)
            return
        spec, inplace = self.lookup(node)
        if spec is None:
            self.unknown(node)
            return
        args = [self.python(a) for a in node.args]
        kwargs = {k: self.python(v) for k, v in node.kwargs.items()}
        try:
            bound = spec.sig.bind(*args, **kwargs)
        except TypeError as e:
            self.unknown(node, f"arguments do not match {spec.op}: {e}")
            return
        bound.apply_defaults()
        try:
            self.apply(node, spec, dict(bound.arguments), inplace)
        except _Unsupported as e:
            self.unknown(node, str(e))

    def lookup(self, node: Any) -> tuple[Spec | None, bool]:
        """The node's Spec and whether it is a Tensor method's in-place form (x.relu_())."""
        functions, methods = _tables()
        if node.op == "call_function":
            try:
                return functions.get(node.target), False
            except TypeError:  # an unhashable target
                return None, False
        if node.op == "call_method":
            name = str(node.target)
            if name in methods:
                return methods[name], False
            if name.endswith("_") and not name.startswith("_") and name[:-1] in methods:
                return methods[name[:-1]], True
        return None, False

    def convert_module(self, node: Any) -> None:
        mod = self.gm.get_submodule(str(node.target))
        self.module_types[str(node.target)] = type(mod).__name__
        found = _module_form(mod, str(node.target))
        if found is not None and len(node.args) == 1 and not node.kwargs:
            fn, params = found
            spec = _tables()[0][fn]
            first = next(iter(spec.sig.parameters))
            bound = spec.sig.bind_partial(**{first: node.args[0], **params})
            bound.apply_defaults()
            try:
                self.apply(node, spec, dict(bound.arguments), False)
                return
            except _Unsupported:
                pass  # an unsafe in-place module, say: kept as the module call
        self.module(node, mod)

    def convert_getitem(self, node: Any) -> None:
        """`max(x, dim)[0]` / `.values` -> amax, `[1]` / `.indices` -> argmax; shape reads were
        folded already; anything else (slicing, tuple elements) is `unknown`."""
        src, key = node.args[0], node.args[1]
        if getattr(src, "name", None) in self.pending:
            which = {0: 0, 1: 1, "values": 0, "indices": 1}.get(key)
            if which is not None:
                op, x, dim, keepdim = self.pending[src.name]
                canonical = ("amax", "argmax") if op == "max" else ("amin", "argmin")
                self.emit(node.name, canonical[which], [self.form(x)],
                          {"dim": [dim], "keepdim": keepdim}, node)
                return
        self.unknown(node)

    # -- families -------------------------------------------------------------------------------

    def apply(self, node: Any, spec: Spec, b: dict[str, Any], inplace: bool) -> None:
        """Emits the canonical node(s) for `node` from its bound arguments `b`."""
        if b.pop("inplace", False) or inplace:
            first = next(iter(spec.sig.parameters))
            if not _inplace_safe(node, b.get(first), self.order):
                raise _Unsupported("in place on a value that is read afterwards or is a forward "
                                   "input or weight")
        for name in list(b):
            if name in IGNORED:
                del b[name]
            elif name in DEFAULT_ONLY:
                default = spec.sig.parameters[name].default
                if b.pop(name) != default:
                    raise _Unsupported(f"{name}= is not expressible in {spec.op}")
        family = getattr(self, f"family_{spec.family}")
        family(node, spec, b)

    def tensor_arg(self, value: Any, what: str) -> dict[str, Any]:
        if not self.is_tensor(value):
            raise _Unsupported(f"{what} is not a tensor")
        return self.form(value)

    def rank(self, value: Any) -> int:
        return len(self.tensor_info(value).shape)

    def family_unary(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        x = b.pop("input")
        kwargs = {k: _json(self.constant(v, k)) for k, v in b.items()}
        kwargs.update(spec.fixed)
        self.emit(node.name, spec.op, [self.tensor_arg(x, "the input")], kwargs, node)

    def family_binary(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        names = list(spec.sig.parameters)[:2]
        a, other = b[names[0]], b[names[1]]
        alpha = self.constant(b.get("alpha", 1), "alpha")
        if not (self.is_tensor(a) or self.is_tensor(other)):
            raise _Unsupported("neither operand is a tensor")
        if alpha != 1:
            if self.is_tensor(other):
                scaled = self.fresh_name(f"{node.name}_alpha")
                self.emit(scaled, "mul", [self.form(other), self.form(alpha)], {},
                          self.tensor_info(other))
                self.emit(node.name, spec.op, [self.form(a), {"node": scaled}], {}, node)
                return
            other = self.constant(other, "the second operand") * alpha
        self.emit(node.name, spec.op, [self.form(a), self.form(other)], {}, node)

    def family_where(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        self.emit(node.name, "where", [self.form(b["condition"]), self.form(b["input"]),
                                       self.form(b["other"])], {}, node)

    def family_reduce(self, node: Any, spec: Spec, b: dict[str, Any], **extra: Any) -> None:
        x = b["input"]
        arg = self.tensor_arg(x, "the input")
        dim = _dims(self.constant(b.get("dim"), "dim"), self.rank(x))
        keepdim = self.constant(b.get("keepdim", False), "keepdim")
        self.emit(node.name, spec.op, [arg], {"dim": dim, "keepdim": bool(keepdim), **extra}, node)

    def family_var(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        dim, unbiased = b.get("dim"), b.get("unbiased")
        if isinstance(dim, bool):  # var(x, False): the old unbiased-only overload
            dim, unbiased = None, dim
        correction = b.get("correction")
        if correction is None:
            correction = 0 if unbiased is False else 1
        b["dim"] = dim
        self.family_reduce(node, spec, b, correction=self.constant(correction, "correction"))

    def family_norm(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        p = self.constant(b.pop("p", b.pop("ord", None)), "p")
        dim = self.constant(b.get("dim"), "dim")
        if p is None:  # linalg.norm without ord: the 2-norm of the entries
            p = 2.0
        elif p == "fro":
            p = 2.0
        elif isinstance(p, str):
            raise _Unsupported(f"norm p={p!r} is not an entrywise norm")
        elif node.target is _resolve("torch.linalg.norm") and not (
                isinstance(dim, int) or (dim is None and self.rank(b["input"]) == 1)):
            raise _Unsupported("linalg.norm with ord over a matrix is a matrix norm")
        self.family_reduce(node, spec, b, p=_json(float(p)))

    def family_maxmin(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        """max(x) -> amax over all dims; max(x, y) -> maximum; max(x, dim) -> a (values,
        indices) pair, emitted where [0]/[1] read it."""
        x, rest, kw = b["input"], list(b.get("args", ())), dict(b.get("kwargs", {}))
        other, dim, keepdim = kw.pop("other", None), kw.pop("dim", None), kw.pop("keepdim", False)
        if kw or len(rest) > 2:
            raise _Unsupported(f"unexpected arguments to {spec.op}: {sorted(kw)}")
        if rest:
            if self.is_tensor(rest[0]):
                other = rest[0]
            else:
                dim = rest[0]
                keepdim = rest[1] if len(rest) > 1 else keepdim
        arg = self.tensor_arg(x, "the input")
        if other is not None:
            op = "maximum" if spec.op == "max" else "minimum"
            self.emit(node.name, op, [arg, self.form(other)], {}, node)
            return
        if dim is None:
            self.emit(node.name, "a" + spec.op, [arg], {"dim": None, "keepdim": False}, node)
            return
        dim = _one_dim(self.constant(dim, "dim"), self.rank(x))
        keepdim = bool(self.constant(keepdim, "keepdim"))
        readers_ok = all(u.op == "call_function" and u.target in (operator.getitem, getattr)
                         and len(u.args) > 1 and u.args[1] in (0, 1, "values", "indices")
                         for u in node.users)
        if not readers_ok:
            raise _Unsupported(f"the (values, indices) pair of {spec.op}(x, dim) is used whole")
        self.pending[node.name] = (spec.op, x, dim, keepdim)

    def family_softmax(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        x = b["input"]
        rank = self.rank(x)
        dim = self.constant(b.get("dim"), "dim")
        if dim is None:  # torch's legacy implicit dim
            dim = 0 if rank in (0, 1, 3) else 1
        self.emit(node.name, spec.op, [self.tensor_arg(x, "the input")],
                  {"dim": _one_dim(dim, rank)}, node)

    def family_layer_norm(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        shape = self.constant(b["normalized_shape"], "normalized_shape")
        shape = [shape] if isinstance(shape, int) else [int(s) for s in shape]
        args = [self.tensor_arg(b["input"], "the input")]
        for name in ("weight", "bias"):
            args.append(self.form(b[name]) if b[name] is not None else {"value": None})
        self.emit(node.name, "layer_norm", args,
                  {"normalized_shape": shape, "eps": float(self.constant(b["eps"], "eps"))}, node)

    def family_reshape(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        import torch

        from torch.fx.node import map_aggregate

        x = b["input"]
        dtypes: list[Any] = []
        map_aggregate([v for k, v in b.items() if k != "input"],
                      lambda v: dtypes.append(v) if isinstance(v, torch.dtype) else v)
        if dtypes:
            raise _Unsupported("view(dtype) reinterprets the bytes")
        info = _first_tensor(self.values.get(node.name))
        if info is None:
            raise _Unsupported("the result is not a tensor")
        self.emit(node.name, "reshape", [self.tensor_arg(x, "the input")],
                  {"shape": list(info.shape)}, node)

    def family_flatten(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        x = b["input"]
        rank = self.rank(x)
        start = _one_dim(self.constant(b["start_dim"], "start_dim"), rank)
        end = _one_dim(self.constant(b["end_dim"], "end_dim"), rank)
        self.emit(node.name, "flatten", [self.tensor_arg(x, "the input")],
                  {"start_dim": start, "end_dim": end}, node)

    def family_vendor(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        args = [self.form(v) if v is not None else {"value": None} for v in b.values()]
        self.emit(node.name, spec.op, args, {}, node)


# ---------------------------------------------------------------------------------------------
# The op.
# ---------------------------------------------------------------------------------------------

def _untraceable(reason: str) -> dict[str, Any]:
    return {"traceable": False, "reason": reason, "inputs": [], "attrs": [], "nodes": [],
            "outputs": [], "module_types": {}}


def _first_line(e: BaseException) -> str:
    """`Type: first line of the message` (torch's messages run to pages)."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:300]}" if text else type(e).__name__


def _trace_reason(e: Exception) -> str:
    if "control flow" in str(e):
        return (f"data-dependent control flow in Model.forward: torch.fx cannot trace it "
                f"({_first_line(e)})")
    return f"torch.fx cannot trace Model.forward: {_first_line(e)}"


def _attempt(device: str, ref: Reference, what: str, fn: Callable[[], Any]) -> Any:
    """Runs one step of the reference's own code; on meta a failure means "retry on the CPU",
    on the CPU it is the reference's fault."""
    try:
        with _factories_on(device):
            return fn()
    except Exception as e:  # noqa: BLE001 - user code can raise anything
        if device == "meta":
            raise _MetaFailed(f"{what}: {_first_line(e)}") from e
        raise BadInput(f"reference {ref.path}: {what} failed: {type(e).__name__}: {e}") from None


def _analyze_on(ref: Reference, device: str) -> dict[str, Any]:
    """The whole analysis with the model and inputs on `device` ("meta" or "cpu")."""
    import torch
    from torch.fx import symbolic_trace

    init = _attempt(device, ref, "get_init_inputs()", lambda: make_init_inputs(ref.module, 0))
    model = _attempt(device, ref, "building Model",
                     lambda: build_model(ref.module.Model, init, 0, device))
    if not isinstance(model, torch.nn.Module):
        return _untraceable("Model is not a torch.nn.Module")
    try:
        with _tracing_patches():
            gm = symbolic_trace(model)
    except Exception as e:  # noqa: BLE001 - fx raises many kinds
        return _untraceable(_trace_reason(e))
    inputs = _attempt(device, ref, "get_inputs()", lambda: make_inputs(ref.module, 0, device))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (ph, value) in enumerate(zip(placeholders, inputs)):
        if not isinstance(value, torch.Tensor):
            return _untraceable(f"forward argument {i} ({str(ph.target).lstrip('*')}) is a "
                                f"{type(value).__name__}, not a tensor; the graph takes tensors only")
    if len(inputs) != len(placeholders):
        return _untraceable(f"get_inputs() returns {len(inputs)} values but forward takes "
                            f"{len(placeholders)} arguments")
    recorder = _recorder(gm, device)
    try:
        with torch.no_grad():
            recorder.run(*inputs)
    except Exception as e:  # noqa: BLE001 - the graph runs user code
        if device == "meta":
            raise _MetaFailed(f"running the graph: {_first_line(e)}") from e
        return _untraceable(f"the traced graph failed to run: {_first_line(e)}")
    return _describe(gm, recorder.values, placeholders)


def _describe(gm: Any, values: dict[str, Any], placeholders: list[Any]) -> dict[str, Any]:
    """The IR from the traced graph and its propagated values."""
    builder = _Builder(gm, values)
    inputs = []
    for i, ph in enumerate(placeholders):
        info = values[ph.name]
        inputs.append({"name": str(ph.target).lstrip("*"), "index": i, "shape": info.shape,
                       "dtype": info.dtype})
    result = None
    for node in builder.graph_nodes:
        if node.op in ("call_function", "call_method", "call_module"):
            builder.convert(node)
        elif node.op == "output":
            result = node.args[0]
    reason = None
    outputs: list[dict[str, Any]] = []
    if isinstance(result, (tuple, list)):
        reason = (f"forward returns a {type(result).__name__} of {len(result)} values; the graph "
                  f"expresses a single tensor output")
    elif not builder.is_tensor(result):
        reason = "forward does not return a single tensor"
    else:
        outputs = [builder.form(result)]
    return {"traceable": reason is None, "reason": reason, "inputs": inputs,
            "attrs": list(builder.attrs.values()), "nodes": builder.nodes, "outputs": outputs,
            "module_types": builder.module_types}


def analyze(path: str, overrides: dict[str, str]) -> dict[str, Any]:
    """The `analyze` op (docs/graph-ir.md): shapes on meta when possible, else on the CPU."""
    ref = load_reference(path, overrides)
    try:
        return _analyze_on(ref, "meta")
    except _MetaFailed as e:
        sys.stderr.write(f"analyze: shapes on the meta device failed ({e}); using the CPU\n")
        return _analyze_on(ref, "cpu")
