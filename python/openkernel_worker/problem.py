"""Loading KernelBench-format reference programs and drawing their inputs.

A reference defines `Model` (an nn.Module), `get_inputs()` and `get_init_inputs()`. Module-level
constants can be overridden (`--set NAME=VALUE`) after the module body runs, so `get_inputs` sees
the new sizes. Inputs are drawn from a seed directly on the target device.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.util
import random
import signal
import sys
import threading
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

REQUIRED = ("Model", "get_inputs", "get_init_inputs")
MAX_SOURCE_BYTES = 8 << 20  # a reference or candidate beyond this is refused unread
REFERENCE_TIME_LIMIT_S = 300.0  # importing, building or drawing inputs of a reference
INPUT_TYPES = "tensors and Python int/float/bool scalars"


class BadInput(Exception):
    """A user-supplied file or value is unusable; the message says exactly why."""


class SourceDefect(BadInput):
    """A source file that was read but cannot be Python source: empty, too big, NUL bytes, not
    UTF-8. For a candidate this is a compile_error verdict, for a reference bad input.
    `preview` is printable text of its start (for the store), `sha256` the hash of its bytes."""

    def __init__(self, message: str, preview: str, sha256: str) -> None:
        super().__init__(message)
        self.preview = preview
        self.sha256 = sha256


class _OutOfTime(BaseException):
    """Raised by deadline()'s alarm; a BaseException, so user code's `except Exception` passes it."""


@contextlib.contextmanager
def deadline(seconds: float | None, what: str) -> Iterator[None]:
    """Bounds the block (user code run in this process) to `seconds`: BadInput naming `what` when
    it runs out. Needs the main thread (SIGALRM); elsewhere, or without a limit, it does nothing."""
    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _OutOfTime:
        raise BadInput(f"{what} did not finish within {seconds:g} s") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_source(path: str, role: str) -> str:
    """The text of a `role` ("reference", "candidate") file. BadInput when it cannot be read,
    SourceDefect when it is empty, bigger than MAX_SOURCE_BYTES, holds NUL bytes or is not UTF-8
    (Python's own default source encoding; a leading BOM is allowed)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SOURCE_BYTES + 1)
    except FileNotFoundError:
        raise BadInput(f"{role} not found: {path}") from None
    except OSError as e:
        raise BadInput(f"cannot read {role} {path}: {e.strerror}") from None
    except ValueError as e:  # a NUL or an unencodable character in the path
        raise BadInput(f"cannot read {role} {path!r}: {e}") from None
    digest = hashlib.sha256(raw).hexdigest()
    preview = raw[:65536].decode("utf-8", "replace").replace("\0", "\ufffd")

    def defect(why: str) -> SourceDefect:
        return SourceDefect(f"the {role} {path} {why}", preview, digest)

    if len(raw) > MAX_SOURCE_BYTES:
        raise defect(f"is larger than {MAX_SOURCE_BYTES >> 20} MiB (not read further): a "
                     f"Python source file of that size is not a kernel")
    if not raw.strip():
        raise defect("is empty" if not raw else "holds only white space")
    if b"\0" in raw:
        at = raw.index(b"\0")
        line = raw.count(b"\n", 0, at) + 1
        raise defect(f"contains NUL bytes (the first at byte {at}, line {line}): it is not "
                     f"Python source text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise defect(f"is not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}, "
                     f"line {line}): save it as UTF-8") from None


@dataclass
class Reference:
    path: str
    source: str
    module: types.ModuleType
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def source_hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()


def module_constants(tree: ast.Module) -> list[str]:
    """Names assigned at module level (the ones --set may override)."""
    names: list[str] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name):
                names.append(t.id)
            elif isinstance(t, ast.Tuple):
                names.extend(e.id for e in t.elts if isinstance(e, ast.Name))
    return names


def parse_override_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return text  # a bare word is a string


def describe(e: BaseException) -> str:
    """`Type: message` of an exception raised by user code, at most 2000 characters."""
    return traceback.format_exception_only(type(e), e)[-1].strip()[:2000]


def is_out_of_memory(e: BaseException) -> bool:
    """An allocation that the device (or the host) could not satisfy."""
    text = str(e)
    return isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError" or (
        isinstance(e, RuntimeError) and ("can't allocate memory" in text
                                         or "out of memory" in text.lower()))


def memory_message(what: str, device: str, e: BaseException) -> str:
    return (f"{what} needs more memory than the device ({device}) has: {describe(e)}; shrink the "
            f"problem with --set NAME=VALUE")


def load_module(path: str, source: str, module_name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__file__ = path
    sys.modules[module_name] = module
    code = compile(source, path, "exec")
    exec(code, module.__dict__)  # noqa: S102 - running the user's reference is the point
    return module


def load_reference(path: str, overrides: dict[str, str] | None = None,
                   module_name: str = "openkernel_reference",
                   time_limit_s: float | None = REFERENCE_TIME_LIMIT_S) -> Reference:
    """Reads, checks and imports a reference (its import bounded by `time_limit_s`). Every
    defect, of the file or of the code, is BadInput with a message naming it."""
    source = read_source(str(Path(path)), "reference")
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        raise BadInput(f"reference {path} has a syntax error at line {e.lineno}: {e.msg}") from None
    top_level = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    top_level.update(module_constants(tree))
    missing = [name for name in REQUIRED if name not in top_level]
    if missing:
        raise BadInput(f"reference {path} does not define {', '.join(missing)} "
                       f"(a KernelBench reference needs Model, get_inputs and get_init_inputs)")
    constants = module_constants(tree)
    parsed: dict[str, Any] = {}
    for name, text in (overrides or {}).items():
        if name not in constants:
            known = ", ".join(c for c in constants if not c.startswith("_")) or "none"
            raise BadInput(f"--set {name}: the reference {path} has no module-level constant "
                           f"named {name} (it has: {known})")
        parsed[name] = parse_override_value(text)
    try:
        with deadline(time_limit_s, f"importing the reference {path}"):
            module = load_module(path, source, module_name)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of user code is bad input
        raise BadInput(f"reference {path} failed to import: {describe(e)}") from None
    for name, value in parsed.items():
        setattr(module, name, value)
    if not isinstance(getattr(module, "Model", None), type):
        raise BadInput(f"reference {path}: Model is not a class")
    for fn in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(module, fn, None)):
            raise BadInput(f"reference {path}: {fn} is not a function")
    return Reference(path=path, source=source, module=module, overrides=parsed)


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % (2**32))
    except ImportError:
        pass


def _to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def make_inputs(module: types.ModuleType, seed: int, device: str) -> list[Any]:
    """Calls get_inputs() under `seed`, creating tensors on `device` where torch allows it.
    BadInput when it raises or returns anything but a list/tuple of INPUT_TYPES."""
    import torch

    seed_everything(seed)
    try:
        if device != "cpu" and hasattr(torch.device(device), "__enter__"):
            with torch.device(device):
                inputs = module.get_inputs()
        else:
            inputs = module.get_inputs()
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - the reference's own failure
        if is_out_of_memory(e):
            raise BadInput(memory_message("the reference's get_inputs()", device, e)) from None
        raise BadInput(f"the reference's get_inputs() raised {describe(e)}") from None
    check_inputs(inputs)
    return [_to_device(v, device) for v in inputs]


def check_inputs(inputs: Any) -> None:
    """get_inputs() must return a list or tuple of INPUT_TYPES (what the harness can draw afresh,
    export to the candidate and compare)."""
    import torch

    if not isinstance(inputs, (list, tuple)):
        raise BadInput(f"the reference's get_inputs() returned {type(inputs).__name__}, not a list "
                       f"of {INPUT_TYPES}")
    for i, value in enumerate(inputs):
        if not isinstance(value, (torch.Tensor, int, float, bool)):
            raise BadInput(f"the reference's get_inputs() returned a {type(value).__name__} at "
                           f"position {i}; a reference's inputs are {INPUT_TYPES}")


def refresh_inputs(pool_entry: list[Any], module: types.ModuleType, seed: int, device: str) -> None:
    """Overwrites a pool entry's tensors in place with the inputs of `seed`: same addresses, new
    contents, so neither an address-keyed nor a content-keyed cache can serve the next call."""
    import torch

    fresh = make_inputs(module, seed, device)
    for old, new in zip(pool_entry, fresh):
        if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old.shape == new.shape:
            old.copy_(new)
    del fresh


def make_init_inputs(module: types.ModuleType, seed: int) -> list[Any]:
    seed_everything(seed)
    return list(module.get_init_inputs())


def build_model(cls: type, init_inputs: list[Any], seed: int, device: str) -> Any:
    """Builds a model the way KernelBench does: same seed before construction, then to(device)."""
    import torch

    seed_everything(seed)
    model = cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        model.eval()
    return model


def build_reference(ref: Reference, init_seed: int, device: str,
                    time_limit_s: float | None = REFERENCE_TIME_LIMIT_S) -> Any:
    """The reference model, built as build_model does, after checking that the reference works:
    get_init_inputs() and Model(*...) succeed and fit the device, get_inputs() returns usable
    inputs once. All within `time_limit_s`; every failure is BadInput naming the problem."""
    path = ref.path
    with deadline(time_limit_s, f"building the reference {path} and drawing its inputs"):
        try:
            init_inputs = make_init_inputs(ref.module, init_seed)
        except Exception as e:  # noqa: BLE001 - the reference's own failure
            raise BadInput(f"the reference's get_init_inputs() raised {describe(e)}") from None
        check_fits(ref, init_inputs, device)
        try:
            model = build_model(ref.module.Model, init_inputs, init_seed, device)
        except Exception as e:  # noqa: BLE001
            if is_out_of_memory(e):
                raise BadInput(memory_message(f"the reference {path}: Model(*get_init_inputs())",
                                              device, e)) from None
            raise BadInput(f"the reference {path}: Model(*get_init_inputs()) raised "
                           f"{describe(e)}") from None
        probe = make_inputs(ref.module, init_seed, device)
        del probe
    return model


def device_capacity(device: str) -> int:
    """Bytes of memory on `device`: the GPU's total, or the host's physical memory."""
    import os

    import torch

    if device.startswith("cuda"):
        return int(torch.cuda.get_device_properties(torch.device(device)).total_memory)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_fits(ref: Reference, init_inputs: list[Any], device: str) -> None:
    """Where torch can build on the meta device (torch >= 2), sizes the reference's parameters,
    buffers and inputs before anything is allocated: BadInput when they exceed the device.
    Elsewhere (or when the reference cannot run on meta) allocation failures say it instead."""
    import torch

    meta = torch.device("meta")
    if not hasattr(meta, "__enter__"):
        return
    try:
        with meta:
            model = ref.module.Model(*init_inputs)
            inputs = ref.module.get_inputs()
        tensors = list(inputs) if isinstance(inputs, (list, tuple)) else []
        if isinstance(model, torch.nn.Module):
            tensors += list(model.parameters()) + list(model.buffers())
        need = sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
    except Exception:  # noqa: BLE001 - not every reference runs on meta; the real build decides
        return
    have = device_capacity(device)
    if need > have:
        raise BadInput(f"the reference {ref.path} needs {need / 2**30:.1f} GiB for its parameters "
                       f"and inputs, more than the device ({device}) has ({have / 2**30:.1f} "
                       f"GiB); shrink the problem with --set NAME=VALUE")
