"""`analyze`'s norm family and losses (docs/graph-ir.md, "Norms and losses"): batch_norm,
instance_norm, group_norm and the loss functionals as table entries (analyze_ops.table_entries),
module forms (analyze_ops.module_form) and the Builder's families (a mixin of
analyze_builder.Builder).
"""
from __future__ import annotations

import inspect as pyinspect
from typing import Any, Iterator

Entries = Iterator[tuple[list[str], Any]]

NORM_FUNCTIONS = ("batch_norm", "instance_norm", "group_norm")
LOSS_FUNCTIONS = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                  "triplet_margin_loss", "cross_entropy")


def norm_and_loss_entries() -> Entries:
    """torch.nn.functional's norms and losses, bound by their own signatures."""
    from .analyze_ops import Spec, resolve

    for names, family in ((NORM_FUNCTIONS, "normop"), (LOSS_FUNCTIONS, "loss")):
        for name in names:
            fn = resolve(f"torch.nn.functional.{name}")
            if fn is not None:
                yield [f"torch.nn.functional.{name}"], Spec(name, pyinspect.signature(fn), family)


def _unbatched_rank(mod: Any) -> int | None:
    """The input rank at which an InstanceNormNd adds the batch dim itself (N+1), else None."""
    from torch.nn.modules.instancenorm import _InstanceNorm

    if not isinstance(mod, _InstanceNorm):
        return None
    no_batch = getattr(mod, "_get_no_batch_dim", None)
    if no_batch is not None:
        return int(no_batch())
    for n in (1, 2, 3):
        if type(mod).__name__.endswith(f"InstanceNorm{n}d"):
            return n + 1
    return None


def norm_or_loss_module(mod: Any, path: str,
                        rank: int | None) -> tuple[Any, dict[str, Any]] | None:
    """BatchNorm*d, InstanceNorm*d, GroupNorm and the loss modules as their functionals: the
    statistics the module's forward uses in its current mode (eval: running statistics when it
    tracks them), its weights as attrs. None for an InstanceNorm*d on an unbatched input of rank
    `rank` (the module adds the batch dim; the functional would read the channels as the batch).
    BatchNorm1d on [N, C] and GroupNorm on [N, C, *] are batched and equal their functionals."""
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.modules.batchnorm import _BatchNorm
    from torch.nn.modules.instancenorm import _InstanceNorm

    def ref(name: str) -> Any:
        from .analyze_ops import AttrRef

        return AttrRef(f"{path}.{name}") if getattr(mod, name, None) is not None else None

    stats = {"running_mean": ref("running_mean"), "running_var": ref("running_var"),
             "weight": ref("weight"), "bias": ref("bias"), "eps": mod.eps} if isinstance(
                 mod, (_BatchNorm, _InstanceNorm)) else {}
    if isinstance(mod, _InstanceNorm):
        if rank is None or rank == _unbatched_rank(mod):
            return None
        return F.instance_norm, {**stats, "use_input_stats": mod.training
                                 or not mod.track_running_stats}
    if isinstance(mod, _BatchNorm):
        return F.batch_norm, {**stats, "training": mod.training or mod.running_mean is None}
    if isinstance(mod, nn.GroupNorm):
        return F.group_norm, {"num_groups": mod.num_groups, "weight": ref("weight"),
                              "bias": ref("bias"), "eps": mod.eps}
    losses: dict[type, tuple[Any, tuple[str, ...]]] = {
        nn.MSELoss: (F.mse_loss, ()), nn.L1Loss: (F.l1_loss, ()),
        nn.SmoothL1Loss: (F.smooth_l1_loss, ("beta",)), nn.HuberLoss: (F.huber_loss, ("delta",)),
        nn.KLDivLoss: (F.kl_div, ("log_target",)),
        nn.TripletMarginLoss: (F.triplet_margin_loss, ("margin", "p", "eps", "swap")),
        nn.CrossEntropyLoss: (F.cross_entropy, ("ignore_index", "label_smoothing")),
    }
    if type(mod) in losses:
        fn, names = losses[type(mod)]
        extra = {"weight": ref("weight")} if isinstance(mod, nn.CrossEntropyLoss) else {}
        return fn, {"reduction": mod.reduction, **extra, **{n: getattr(mod, n) for n in names}}
    return None


class NormFamilies:
    """The Builder's families for the norms and losses (self is an analyze_builder.Builder)."""

    def family_normop(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        """batch_norm {training, eps}: [x, weight, bias, running_mean, running_var];
        instance_norm {eps} and group_norm {num_groups, eps}: [x, weight, bias]."""
        from .analyze_builder import Unsupported

        def optional(name: str) -> dict[str, Any]:
            v = b.get(name)
            return {"value": None} if v is None else self.tensor_arg(v, name)

        args = [self.tensor_arg(b["input"], "the input"), optional("weight"), optional("bias")]
        kwargs: dict[str, Any] = {"eps": float(self.constant(b["eps"], "eps"))}
        if spec.op == "batch_norm":
            training = bool(self.constant(b["training"], "training"))
            if not training and (b.get("running_mean") is None or b.get("running_var") is None):
                raise Unsupported("batch_norm in eval mode without running statistics")
            args += [optional("running_mean"), optional("running_var")]
            kwargs["training"] = training
        elif spec.op == "instance_norm":
            if not self.constant(b["use_input_stats"], "use_input_stats"):
                raise Unsupported("instance_norm with running statistics")
        else:
            kwargs["num_groups"] = int(self.constant(b["num_groups"], "num_groups"))
        self.emit(node.name, spec.op, args, kwargs, node)

    def family_loss(self, node: Any, spec: Any, b: dict[str, Any]) -> None:
        """A loss: its tensor arguments in order, its other parameters as kwargs (reduction...);
        the deprecated size_average/reduce only when unset; cross_entropy's weight only when
        given (a tensor: an argument after the target)."""
        from .analyze_builder import Unsupported, _json

        for legacy in ("size_average", "reduce"):
            if b.pop(legacy, None) is not None:
                raise Unsupported(f"{legacy}= is not expressible in {spec.op}")
        if b.get("weight", 0) is None:
            del b["weight"]
        args, kwargs = [], {}
        for name, v in b.items():
            if self.is_tensor(v):
                args.append(self.form(v))
            else:
                kwargs[name] = _json(self.constant(v, name))
        self.emit(node.name, spec.op, args, kwargs, node)
