"""problem.py: loading and validating references, --set overrides, inputs and models."""
from __future__ import annotations

import ast
import os

import pytest
import torch

from openkernel_worker.problem import (BadInput, build_model, load_reference, make_init_inputs,
                                       make_inputs, module_constants, parse_override_value)


def test_loads_a_valid_reference(tiny_reference: str) -> None:
    ref = load_reference(tiny_reference)
    assert ref.path == tiny_reference
    assert isinstance(ref.module.Model, type)
    assert ref.overrides == {}
    assert len(ref.source_hash) == 64
    assert ref.source_hash == load_reference(tiny_reference).source_hash


def test_missing_file_is_bad_input(tmp_path) -> None:
    path = str(tmp_path / "nope.py")
    with pytest.raises(BadInput, match="reference not found: .*nope.py"):
        load_reference(path)


def test_directory_is_bad_input(tmp_path) -> None:
    with pytest.raises(BadInput, match="cannot read reference"):
        load_reference(str(tmp_path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_bad_input(tiny_reference: str) -> None:
    os.chmod(tiny_reference, 0)
    with pytest.raises(BadInput, match="cannot read reference"):
        load_reference(tiny_reference)


@pytest.mark.parametrize("drop, missing", [
    ("class Model", "Model"),
    ("def get_inputs", "get_inputs"),
    ("def get_init_inputs", "get_init_inputs"),
])
def test_missing_definition_is_named(write, drop: str, missing: str) -> None:
    from conftest import TINY_REFERENCE

    source = TINY_REFERENCE.replace(drop, drop.split()[0] + " Renamed" + drop.split()[1])
    path = write("ref.py", source)
    with pytest.raises(BadInput) as info:
        load_reference(path)
    message = str(info.value)
    assert f"does not define {missing} " in message
    assert path in message


def test_all_missing_names_are_listed(write) -> None:
    path = write("ref.py", "import torch\nx = 1\n")
    with pytest.raises(BadInput, match="does not define Model, get_inputs, get_init_inputs"):
        load_reference(path)


def test_syntax_error_names_the_line(write) -> None:
    path = write("ref.py", "import torch\n\nclass Model(:\n    pass\n")
    with pytest.raises(BadInput, match=r"syntax error at line 3"):
        load_reference(path)


def test_import_failure_is_bad_input(write) -> None:
    path = write("ref.py", """
        import no_such_module_for_openkernel
        class Model: pass
        def get_inputs(): return []
        def get_init_inputs(): return []
        """)
    with pytest.raises(BadInput, match="failed to import: ModuleNotFoundError"):
        load_reference(path)


def test_model_must_be_a_class(write) -> None:
    path = write("ref.py", """
        Model = 3
        def get_inputs(): return []
        def get_init_inputs(): return []
        """)
    with pytest.raises(BadInput, match="Model is not a class"):
        load_reference(path)


def test_get_inputs_must_be_callable(write) -> None:
    path = write("ref.py", """
        class Model: pass
        get_inputs = [1, 2]
        def get_init_inputs(): return []
        """)
    with pytest.raises(BadInput, match="get_inputs is not a function"):
        load_reference(path)


def test_lambda_get_inputs_is_accepted(write) -> None:
    path = write("ref.py", """
        class Model: pass
        get_inputs = lambda: []
        def get_init_inputs(): return []
        """)
    load_reference(path)


def test_set_overrides_sizes_seen_by_get_inputs(tiny_reference: str) -> None:
    ref = load_reference(tiny_reference, {"rows": "3", "cols": "5"})
    assert ref.overrides == {"rows": 3, "cols": 5}
    (x,) = make_inputs(ref.module, seed=0, device="cpu")
    assert x.shape == (3, 5)


def test_set_unknown_constant_names_it_and_lists_known_ones(tiny_reference: str) -> None:
    with pytest.raises(BadInput) as info:
        load_reference(tiny_reference, {"batch_size": "4"})
    message = str(info.value)
    assert "--set batch_size" in message
    assert "no module-level constant named batch_size" in message
    assert "rows" in message and "cols" in message


def test_set_cannot_replace_functions(tiny_reference: str) -> None:
    with pytest.raises(BadInput, match="no module-level constant named get_inputs"):
        load_reference(tiny_reference, {"get_inputs": "1"})


def test_set_reaches_tuple_and_annotated_constants(write) -> None:
    path = write("ref.py", """
        import torch
        class Model: pass
        a, b = 1, 2
        c: int = 3
        _private = 4
        def get_inputs(): return [torch.zeros(a, b, c)]
        def get_init_inputs(): return []
        """)
    ref = load_reference(path, {"a": "2", "b": "3", "c": "4"})
    assert make_inputs(ref.module, 0, "cpu")[0].shape == (2, 3, 4)
    with pytest.raises(BadInput) as info:
        load_reference(path, {"zzz": "1"})
    assert "_private" not in str(info.value)


@pytest.mark.parametrize("text, value", [
    ("3", 3),
    ("-7", -7),
    ("1.5", 1.5),
    ("1e3", 1000.0),
    ("True", True),
    ("None", None),
    ("(1, 2)", (1, 2)),
    ("[4, 5]", [4, 5]),
    ("'quoted'", "quoted"),
    ("bare_word", "bare_word"),
    ("", ""),
    ("1 +", "1 +"),
])
def test_parse_override_value(text: str, value: object) -> None:
    parsed = parse_override_value(text)
    assert parsed == value
    assert type(parsed) is type(value)


def test_parse_override_value_never_evaluates_code() -> None:
    text = "__import__('os').getcwd()"
    assert parse_override_value(text) == text


def test_module_constants_lists_assignments_only() -> None:
    tree = ast.parse("a = 1\nb: int = 2\nc: int\nx, y = 1, 2\ndef f(): z = 3\nclass K: w = 4\n"
                     "obj.attr = 5\n")
    assert module_constants(tree) == ["a", "b", "x", "y"]


def test_inputs_and_models_are_deterministic_per_seed(tiny_reference: str) -> None:
    ref = load_reference(tiny_reference)
    a = make_inputs(ref.module, 123, "cpu")[0]
    b = make_inputs(ref.module, 123, "cpu")[0]
    c = make_inputs(ref.module, 124, "cpu")[0]
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert make_init_inputs(ref.module, 0) == [2.0]


def test_build_model_seeds_parameters_and_sets_eval_mode(write) -> None:
    path = write("ref.py", """
        import torch
        class Model(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.lin = torch.nn.Linear(n, n)
            def forward(self, x):
                return self.lin(x)
        def get_inputs(): return [torch.randn(2, 4)]
        def get_init_inputs(): return [4]
        """)
    ref = load_reference(path)
    m1 = build_model(ref.module.Model, [4], 7, "cpu")
    m2 = build_model(ref.module.Model, [4], 7, "cpu")
    assert torch.equal(m1.lin.weight, m2.lin.weight)
    assert not m1.training
