"""The builder of `analyze`: walks a traced graph once, in order, and normalises every call to the
canonical ops of docs/graph-ir.md (analyze_ops.py says which call is which op), with explicit
arguments in the IR's argument forms.
"""
from __future__ import annotations

import math
import operator
from typing import Any

from .analyze_attention import AttentionFamilies
from .analyze_conv import ConvFamilies
from .analyze_einsum import einsum_as_matmul
from .analyze_ops import (DEFAULT_ONLY, IGNORED, VIEW_METHODS, AttrRef, Spec, module_form, resolve,
                          tables)
from .analyze_trace import TensorInfo, holds_tensor
from .analyze_norms import NormFamilies
from .analyze_window import WindowFamilies
from .compare import dtype_name

# Tensor methods and attributes that only read a shape: their results are folded into constants.
SHAPE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement"})
SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "layout"})


class Unsupported(Exception):
    """A recognised call whose arguments the canonical form cannot express (the message says why)."""


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
        raise Unsupported(f"dim {dim!r} is not a constant int or list of ints")
    return sorted({d % max(rank, 1) for d in dims})


def _one_dim(dim: Any, rank: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise Unsupported(f"dim {dim!r} is not a constant int")
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


class Builder(WindowFamilies, NormFamilies, ConvFamilies, AttentionFamilies):
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
            if holds_tensor(self.values[n.name]):
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
            raise Unsupported(f"{what} is computed at run time, not a constant")
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
        except Unsupported as e:
            self.unknown(node, str(e))

    def lookup(self, node: Any) -> tuple[Spec | None, bool]:
        """The node's Spec and whether it is a Tensor method's in-place form (x.relu_())."""
        functions, methods = tables()
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
        x = node.args[0] if node.args else None
        found = module_form(mod, str(node.target), self.rank(x) if self.is_tensor(x) else None)
        if found is not None and len(node.args) >= 1 and not node.kwargs:
            fn, params = found
            spec = tables()[0][fn]
            try:  # the module's inputs (a loss module has several) by position, then its params
                bound = spec.sig.bind_partial(*node.args, **params)
                bound.apply_defaults()
                self.apply(node, spec, dict(bound.arguments), False)
                return
            except (Unsupported, TypeError):
                pass  # an unsafe in-place module, say: kept as the module call
        self.module(node, mod)

    def convert_getitem(self, node: Any) -> None:
        """`max(x, dim)[0]` / `.values` -> amax, `[1]` / `.indices` -> argmax; shape reads were
        folded already; anything else (slicing, tuple elements) is `unknown`."""
        src, key = node.args[0], node.args[1]
        if node.target is getattr and key in ("T", "mT") and self.is_tensor(src):
            rank = self.rank(src)
            dims = list(range(rank))
            if key == "T":
                dims.reverse()
            elif rank >= 2:
                dims[-2], dims[-1] = dims[-1], dims[-2]
            self.emit(node.name, "permute", [self.form(src)], {"dims": dims}, node)
            return
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
                raise Unsupported("in place on a value that is read afterwards or is a forward "
                                   "input or weight")
        for name in list(b):
            if name in IGNORED:
                del b[name]
            elif name in DEFAULT_ONLY:
                default = spec.sig.parameters[name].default
                if b.pop(name) != default:
                    raise Unsupported(f"{name}= is not expressible in {spec.op}")
        family = getattr(self, f"family_{spec.family}")
        family(node, spec, b)

    def tensor_arg(self, value: Any, what: str) -> dict[str, Any]:
        if not self.is_tensor(value):
            raise Unsupported(f"{what} is not a tensor")
        return self.form(value)

    def rank(self, value: Any) -> int:
        return len(self.tensor_info(value).shape)

    def family_unary(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        x = b.pop("input")
        kwargs = {k: _json(self.constant(v, k)) for k, v in b.items()}
        kwargs.update(spec.fixed)
        self.emit(node.name, spec.op, [self.tensor_arg(x, "the input")], kwargs, node)

    def family_dropout(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        """Dropout outside training (the evaluator runs the model in eval()) is its input."""
        if bool(self.constant(b["training"], "training")):
            raise Unsupported("dropout in training mode is random")
        self.emit(node.name, spec.op, [self.tensor_arg(b["input"], "the input")], {}, node)

    def family_binary(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        names = list(spec.sig.parameters)[:2]
        a, other = b[names[0]], b[names[1]]
        alpha = self.constant(b.get("alpha", 1), "alpha")
        if not (self.is_tensor(a) or self.is_tensor(other)):
            raise Unsupported("neither operand is a tensor")
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
            raise Unsupported(f"norm p={p!r} is not an entrywise norm")
        elif node.target is resolve("torch.linalg.norm") and not (
                isinstance(dim, int) or (dim is None and self.rank(b["input"]) == 1)):
            raise Unsupported("linalg.norm with ord over a matrix is a matrix norm")
        self.family_reduce(node, spec, b, p=_json(float(p)))

    def family_maxmin(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        """max(x) -> amax over all dims; max(x, y) -> maximum; max(x, dim) -> a (values,
        indices) pair, emitted where [0]/[1] read it."""
        x, rest, kw = b["input"], list(b.get("args", ())), dict(b.get("kwargs", {}))
        other, dim, keepdim = kw.pop("other", None), kw.pop("dim", None), kw.pop("keepdim", False)
        if kw or len(rest) > 2:
            raise Unsupported(f"unexpected arguments to {spec.op}: {sorted(kw)}")
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
            raise Unsupported(f"the (values, indices) pair of {spec.op}(x, dim) is used whole")
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
            raise Unsupported("view(dtype) reinterprets the bytes")
        info = _first_tensor(self.values.get(node.name))
        if info is None:
            raise Unsupported("the result is not a tensor")
        self.emit(node.name, "reshape", [self.tensor_arg(x, "the input")],
                  {"shape": list(info.shape)}, node)

    def family_flatten(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        x = b["input"]
        rank = self.rank(x)
        start = _one_dim(self.constant(b["start_dim"], "start_dim"), rank)
        end = _one_dim(self.constant(b["end_dim"], "end_dim"), rank)
        self.emit(node.name, "flatten", [self.tensor_arg(x, "the input")],
                  {"start_dim": start, "end_dim": end}, node)

    def family_permute(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        """t(), transpose(d0, d1), swapaxes, permute(*dims), .T and .mT: `permute {dims}`, the
        output's dim i being the input's dims[i]."""
        x = b["input"]
        rank = self.rank(x)
        dims = list(range(rank))
        if "dim0" in b:
            d0 = _one_dim(self.constant(b["dim0"], "dim0"), rank)
            d1 = _one_dim(self.constant(b["dim1"], "dim1"), rank)
            dims[d0], dims[d1] = dims[d1], dims[d0]
        elif "dims" in b:
            given = self.constant(b["dims"], "dims")
            if len(given) == 1 and isinstance(given[0], (list, tuple)):
                given = given[0]
            dims = [_one_dim(d, rank) for d in given]
            if sorted(dims) != list(range(rank)):
                raise Unsupported(f"permute dims {given!r} are not a permutation")
        else:
            dims = dims[::-1] if rank == 2 else dims
        self.emit(node.name, "permute", [self.tensor_arg(x, "the input")], {"dims": dims}, node)

    def family_einsum(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        """A two-operand einsum that is a (batched) matrix product, as `permute` nodes of the
        operands where needed and a `matmul`; any other equation is `unknown`."""
        equation = self.constant(b["equation"], "the equation")
        operands = list(b["operands"])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
        if not isinstance(equation, str) or len(operands) != 2:
            raise Unsupported("einsum other than of two operands")
        plan = einsum_as_matmul(equation.replace(" ", ""))
        if plan is None:
            raise Unsupported(f"einsum {equation!r} is not a matrix product")
        args = []
        for which, (value, perm) in enumerate(zip(operands, plan)):
            arg = self.tensor_arg(value, f"operand {which}")
            if perm != sorted(perm):
                name = self.fresh_name(f"{node.name}_operand{which}")
                info = self.tensor_info(value)
                shape = [info.shape[d] for d in perm]
                self.emit(name, "permute", [arg], {"dims": perm}, TensorInfo(shape, info.dtype))
                arg = {"node": name}
            args.append(arg)
        self.emit(node.name, "matmul", args, {}, node)

    def family_vendor(self, node: Any, spec: Spec, b: dict[str, Any]) -> None:
        args = [self.form(v) if v is not None else {"value": None} for v in b.values()]
        self.emit(node.name, spec.op, args, {}, node)
