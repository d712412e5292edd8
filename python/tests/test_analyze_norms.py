"""analyze on the norm family and the losses (docs/graph-ir.md, "Norms and losses"): the modules
and functionals become batch_norm / instance_norm / group_norm and the loss ops with their
statistics as the module's mode uses them and their parameters as kwargs."""
from __future__ import annotations

from test_analyze import Write, node, ops, reference, run


def test_batch_norm_in_eval_mode_reads_the_running_statistics(write: Write) -> None:
    r = run(write, reference("return self.bn(x)", init="self.bn = nn.BatchNorm2d(3)",
                             inputs="[torch.randn(2, 3, 4, 5)]"))
    n = node(r, "batch_norm")
    assert n["args"] == [{"input": "x"}, {"attr": "bn.weight"}, {"attr": "bn.bias"},
                         {"attr": "bn.running_mean"}, {"attr": "bn.running_var"}]
    assert n["kwargs"] == {"eps": 1e-5, "training": False}
    assert {a["name"] for a in r["attrs"]} >= {"bn.running_mean", "bn.running_var"}


def test_batch_norm_without_running_statistics_uses_the_batch(write: Write) -> None:
    r = run(write, reference("return self.bn(x)",
                             init="self.bn = nn.BatchNorm1d(3, track_running_stats=False)",
                             inputs="[torch.randn(2, 3, 4)]"))
    assert node(r, "batch_norm")["kwargs"]["training"] is True


def test_instance_and_group_norm(write: Write) -> None:
    r = run(write, reference("return self.gn(self.inorm(x))",
                             init="self.inorm = nn.InstanceNorm2d(4)\n"
                                  "self.gn = nn.GroupNorm(2, 4, eps=1e-3)",
                             inputs="[torch.randn(2, 4, 3, 3)]"))
    assert ops(r) == ["instance_norm", "group_norm"]
    assert node(r, "instance_norm")["args"][1:] == [{"value": None}, {"value": None}]
    g = node(r, "group_norm")
    assert g["kwargs"] == {"eps": 1e-3, "num_groups": 2}
    assert g["args"][1:] == [{"attr": "gn.weight"}, {"attr": "gn.bias"}]


def test_functional_group_norm(write: Write) -> None:
    r = run(write, reference("return F.group_norm(x, 2)", inputs="[torch.randn(2, 4, 3)]"))
    assert node(r, "group_norm")["kwargs"] == {"eps": 1e-5, "num_groups": 2}


def test_losses_keep_their_parameters(write: Write) -> None:
    r = run(write, reference(
        "return F.smooth_l1_loss(x, y, beta=0.5) + F.kl_div(x, y, reduction='batchmean') "
        "+ F.mse_loss(x, y, reduction='sum') + F.huber_loss(x, y, delta=2.0)",
        params="x, y", inputs="[torch.rand(4, 8), torch.rand(4, 8)]"))
    assert node(r, "smooth_l1_loss")["kwargs"] == {"reduction": "mean", "beta": 0.5}
    assert node(r, "kl_div")["kwargs"] == {"reduction": "batchmean", "log_target": False}
    assert node(r, "mse_loss")["kwargs"] == {"reduction": "sum"}
    assert node(r, "huber_loss")["kwargs"] == {"reduction": "mean", "delta": 2.0}
    assert node(r, "mse_loss")["args"] == [{"input": "x"}, {"input": "y"}]


def test_loss_module_with_three_inputs(write: Write) -> None:
    r = run(write, reference("return self.loss(a, p, n)",
                             init="self.loss = nn.TripletMarginLoss(margin=0.5)",
                             params="a, p, n", inputs="[torch.rand(4, 8)] * 3"))
    t = node(r, "triplet_margin_loss")
    assert t["args"] == [{"input": "a"}, {"input": "p"}, {"input": "n"}]
    assert t["kwargs"] == {"margin": 0.5, "p": 2.0, "eps": 1e-6, "swap": False, "reduction": "mean"}


def test_deprecated_loss_arguments_stay_unknown(write: Write) -> None:
    r = run(write, reference("return F.mse_loss(x, y, reduce=False)", params="x, y",
                             inputs="[torch.rand(4, 8), torch.rand(4, 8)]"))
    assert ops(r) == ["unknown"]


def test_unbatched_instance_norm_keeps_the_module_call(write: Write) -> None:
    """InstanceNorm1d on [C, L] adds the batch dim itself: as F.instance_norm the channels would
    be read as the batch, so the module call stays; on [N, C, L] it is instance_norm."""
    r = run(write, reference("return self.inorm(x)", init="self.inorm = nn.InstanceNorm1d(4)",
                             inputs="[torch.randn(4, 16)]"))
    assert ops(r) == ["module"]
    r = run(write, reference("return self.inorm(x)", init="self.inorm = nn.InstanceNorm1d(4)",
                             inputs="[torch.randn(2, 4, 16)]"))
    assert ops(r) == ["instance_norm"]


def test_batch_norm_and_group_norm_of_a_matrix_are_batched(write: Write) -> None:
    """BatchNorm1d and GroupNorm read a rank-2 input as [N, C]: their functional forms."""
    r = run(write, reference("return self.gn(self.bn(x))",
                             init="self.bn = nn.BatchNorm1d(4)\nself.gn = nn.GroupNorm(2, 4)",
                             inputs="[torch.randn(5, 4)]"))
    assert ops(r) == ["batch_norm", "group_norm"]
    assert node(r, "batch_norm")["args"][0] == {"input": "x"}


def test_cross_entropy_reads_class_indices(write: Write) -> None:
    """F.cross_entropy and nn.CrossEntropyLoss: [input, target] with the integer target as an
    input of its own dtype, ignore_index, reduction and label_smoothing as kwargs; a weight is a
    third argument (the generator reports it unsupported)."""
    r = run(write, reference("return F.cross_entropy(x, t)", params="x, t",
                             inputs="[torch.rand(4, 8), torch.randint(0, 8, (4,))]"))
    c = node(r, "cross_entropy")
    assert c["args"] == [{"input": "x"}, {"input": "t"}]
    assert c["kwargs"] == {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.0}
    assert [i["dtype"] for i in r["inputs"]] == ["float32", "int64"]
    r = run(write, reference("return self.loss(x, t)",
                             init="self.loss = nn.CrossEntropyLoss(weight=torch.ones(8), "
                                  "ignore_index=3, reduction='sum')",
                             params="x, t", inputs="[torch.rand(4, 8), torch.randint(0, 8, (4,))]"))
    c = node(r, "cross_entropy")
    assert c["args"] == [{"input": "x"}, {"input": "t"}, {"attr": "loss.weight"}]
    assert c["kwargs"] == {"ignore_index": 3, "reduction": "sum", "label_smoothing": 0.0}
