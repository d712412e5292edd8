"""Loading KernelBench-format reference programs and drawing their inputs.

A reference defines `Model` (an nn.Module), `get_inputs()` and `get_init_inputs()`. Module-level
constants can be overridden (`--set NAME=VALUE`) after the module body runs, so `get_inputs` sees
the new sizes. Inputs are drawn from a seed directly on the target device.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import random
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class BadInput(Exception):
    """A user-supplied file or value is unusable; the message says exactly why."""


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
    except (ValueError, SyntaxError):
        return text  # a bare word is a string


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
                   module_name: str = "openkernel_reference") -> Reference:
    p = Path(path)
    try:
        source = p.read_text()
    except FileNotFoundError:
        raise BadInput(f"reference not found: {path}") from None
    except OSError as e:
        raise BadInput(f"cannot read reference {path}: {e.strerror}") from None
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
        module = load_module(path, source, module_name)
    except Exception as e:  # noqa: BLE001 - any failure of user code is bad input
        tb = traceback.format_exception_only(type(e), e)[-1].strip()
        raise BadInput(f"reference {path} failed to import: {tb}") from None
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
    """Calls get_inputs() under `seed`, creating tensors on `device` where torch allows it."""
    import torch

    seed_everything(seed)
    if device != "cpu" and hasattr(torch, "device") and hasattr(torch.device(device), "__enter__"):
        with torch.device(device):
            inputs = module.get_inputs()
    else:
        inputs = module.get_inputs()
    return [_to_device(v, device) for v in inputs]


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
