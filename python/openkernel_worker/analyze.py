"""`analyze`: a reference's forward as the operator graph of docs/graph-ir.md.

The Model is traced with torch.fx, shapes are propagated with the problem's inputs (after --set
overrides) and every call is normalised to a canonical op with explicit arguments. Shapes are
propagated on the meta device first (no memory, no arithmetic, so the problem's full size costs
nothing); when something in the model or its inputs does not work on meta, the real inputs are used
on the CPU instead.

The parts: analyze_trace (tracing, value summaries, the meta device), analyze_ops (which call is
which canonical op, the IR's vocabulary in data/skills/elementwise_ops.json), analyze_builder (the
traced graph to IR nodes). This module runs them and writes the result.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

from .analyze_builder import Builder
from .analyze_trace import factories_on, tracing_patches, value_recorder
from .problem import BadInput, Reference, build_model, load_reference, make_init_inputs, make_inputs


# Python numbers forward may take besides tensors (traced as constants).
NUMBERS = (bool, int, float)


class _MetaFailed(Exception):
    """Building the model, drawing its inputs or running the graph failed on the meta device."""


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
        with factories_on(device):
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
    inputs = _attempt(device, ref, "get_inputs()", lambda: make_inputs(ref.module, 0, device))
    constants = _number_arguments(model, inputs)
    try:
        with tracing_patches():
            gm = symbolic_trace(model, concrete_args=constants or None)
    except Exception as e:  # noqa: BLE001 - fx raises many kinds
        return _untraceable(_trace_reason(e))
    _drop_specialisation_guards(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (ph, value) in enumerate(zip(placeholders, inputs)):
        if not isinstance(value, (torch.Tensor, *NUMBERS)):
            return _untraceable(f"forward argument {i} ({str(ph.target).lstrip('*')}) is a "
                                f"{type(value).__name__}, not a tensor; the graph takes tensors "
                                f"and numbers only")
    if len(inputs) != len(placeholders):
        return _untraceable(f"get_inputs() returns {len(inputs)} values but forward takes "
                            f"{len(placeholders)} arguments")
    recorder = value_recorder(gm, device)
    try:
        with torch.no_grad():
            recorder.run(*inputs)
    except Exception as e:  # noqa: BLE001 - the graph runs user code
        if device == "meta":
            raise _MetaFailed(f"running the graph: {_first_line(e)}") from e
        return _untraceable(f"the traced graph failed to run: {_first_line(e)}")
    return _describe(gm, recorder.values, placeholders, inputs, _positional_names(model))


def _positional_names(model: Any) -> list[str]:
    import inspect

    try:
        return [p.name for p in inspect.signature(model.forward).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _number_arguments(model: Any, inputs: list[Any]) -> dict[str, Any]:
    """forward's arguments that get_inputs() gives as Python numbers (level1/5's scale), by
    parameter name: traced as constants (fx's concrete_args) and listed as the IR's "constants"."""
    return {name: value for name, value in zip(_positional_names(model), inputs)
            if isinstance(value, NUMBERS)}


def _drop_specialisation_guards(gm: Any) -> None:
    """fx guards each concrete argument with `_assert(s == value)`: the generator specialises on
    the value itself (docs/graph-ir.md, "constants"), so the guards leave the graph."""
    import torch

    guards = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is torch._assert]
    for n in guards:
        cond = n.args[0] if n.args else None
        gm.graph.erase_node(n)
        if cond is not None and hasattr(cond, "users") and not cond.users:
            gm.graph.erase_node(cond)
    if guards:
        gm.recompile()


def _describe(gm: Any, values: dict[str, Any], placeholders: list[Any], inputs_given: list[Any],
              arg_names: list[str]) -> dict[str, Any]:
    """The IR from the traced graph and its propagated values."""
    builder = Builder(gm, values)
    inputs, constants = [], []
    for i, ph in enumerate(placeholders):
        name = str(ph.target).lstrip("*")
        if i < len(inputs_given) and isinstance(inputs_given[i], NUMBERS):
            name = arg_names[i] if i < len(arg_names) else name
            constants.append({"name": name, "index": i, "value": inputs_given[i]})
            continue
        info = values[ph.name]
        inputs.append({"name": name, "index": i, "shape": info.shape, "dtype": info.dtype})
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
    result_ir = {"traceable": reason is None, "reason": reason, "inputs": inputs,
                 "attrs": list(builder.attrs.values()), "nodes": builder.nodes,
                 "outputs": outputs, "module_types": builder.module_types}
    if constants:
        result_ir["constants"] = constants
    return result_ir


def analyze(path: str, overrides: dict[str, str]) -> dict[str, Any]:
    """The `analyze` op (docs/graph-ir.md): shapes on meta when possible, else on the CPU."""
    ref = load_reference(path, overrides)
    try:
        return _analyze_on(ref, "meta")
    except _MetaFailed as e:
        sys.stderr.write(f"analyze: shapes on the meta device failed ({e}); using the CPU\n")
        return _analyze_on(ref, "cpu")
