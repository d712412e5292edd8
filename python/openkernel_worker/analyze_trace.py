"""Tracing for `analyze`: the reference's forward under torch.fx, and every node's value summary
(tensor shapes and dtypes) from running the traced graph on the meta device or the CPU.
"""
from __future__ import annotations

import contextlib
import inspect as pyinspect
import sys
from dataclasses import dataclass
from typing import Any, Iterator

from .compare import dtype_name


@dataclass(frozen=True)
class TensorInfo:
    shape: list[int]
    dtype: str


def summary(value: Any) -> Any:
    """A propagated value without its storage: TensorInfo, a tuple of summaries, or the value."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorInfo([int(s) for s in value.shape], dtype_name(value.dtype))
    if isinstance(value, (tuple, list)) and any(holds_tensor(v) for v in value):
        return tuple(summary(v) for v in value)
    return value


def holds_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, (torch.Tensor, TensorInfo)):
        return True
    return isinstance(value, (tuple, list)) and any(holds_tensor(v) for v in value)


@contextlib.contextmanager
def factories_on(device: str) -> Iterator[None]:
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


def value_recorder(gm: Any, device: str) -> Any:
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
            self.values[n.name] = summary(result)
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
def tracing_patches() -> Iterator[None]:
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
