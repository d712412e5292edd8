"""compare.py: per-dtype tolerances, shape and dtype checks, NaN and infinity handling, integers."""
from __future__ import annotations

import math

import pytest
import torch

from openkernel_worker.compare import (TOLERANCES, Comparison, compare_values, dtype_name, flatten,
                                       tolerance_for)


def compare(expected, actual) -> Comparison:
    result = Comparison()
    compare_values(expected, actual, "output 0", result)
    return result


def test_tolerances_per_dtype() -> None:
    assert tolerance_for(torch.float32) == (1e-3, 1e-3)
    assert tolerance_for(torch.float16) == (1e-2, 1e-2)
    assert tolerance_for(torch.bfloat16) == (2e-2, 2e-2)
    assert tolerance_for(torch.float64) == (1e-7, 1e-7)
    assert tolerance_for(torch.int32) == (0.0, 0.0)
    assert tolerance_for(torch.bool) == (0.0, 0.0)
    assert set(TOLERANCES) == {"float64", "float32", "float16", "bfloat16"}
    assert dtype_name(torch.float32) == "float32"


def test_identical_tensors_pass_and_record_tolerance() -> None:
    x = torch.randn(4, 5)
    r = compare(x, x.clone())
    assert r.ok and r.reasons == []
    assert r.max_abs_error == 0.0 and r.max_rel_error == 0.0
    entry = r.tolerance["float32"]
    assert (entry["atol"], entry["rtol"]) == (1e-3, 1e-3)


def test_difference_inside_tolerance_passes_with_errors_reported() -> None:
    expected = torch.full((10,), 2.0)
    actual = expected + 1e-3
    r = compare(expected, actual)
    assert r.ok, r.reasons
    assert r.max_abs_error == pytest.approx(1e-3, rel=1e-3)
    assert r.max_rel_error == pytest.approx(5e-4, rel=1e-3)


def test_difference_outside_tolerance_fails_with_location() -> None:
    expected = torch.ones(6)
    actual = expected.clone()
    actual[4] = 1.5
    r = compare(expected, actual)
    assert not r.ok
    assert r.max_abs_error == pytest.approx(0.5)
    assert r.max_rel_error == pytest.approx(0.5)
    (reason,) = r.reasons
    assert "output 0: 1 of 6 elements outside tolerance" in reason
    assert "atol=0.001, rtol=0.001" in reason
    assert "first at flat index 4: got 1.5, expected 1" in reason


def test_tolerance_scales_with_magnitude() -> None:
    expected = torch.tensor([1000.0])
    assert compare(expected, torch.tensor([1000.5])).ok
    assert not compare(expected, torch.tensor([1002.5])).ok


def test_absolute_tolerance_follows_the_output_scale() -> None:
    expected = torch.randn(1000) * 1e-6
    r = compare(expected, torch.zeros(1000))
    assert not r.ok
    assert r.tolerance["float32"]["atol_effective"] < 1e-8


def test_all_zero_outputs_match() -> None:
    assert compare(torch.zeros(5), torch.zeros(5)).ok


def test_small_errors_everywhere_fail_the_relative_l2_check() -> None:
    expected = torch.ones(100)
    r = compare(expected, expected + 1.5e-3)  # each element within atol + rtol = 2e-3
    assert not r.ok
    assert r.reasons == ["output 0: relative L2 error 0.0015 exceeds rtol=0.001"]


def test_half_precision_uses_looser_tolerance() -> None:
    expected = torch.ones(8, dtype=torch.float16)
    assert compare(expected, expected + 0.005).ok
    assert not compare(expected, expected + 0.05).ok
    assert not compare(expected.float(), expected.float() + 0.005).ok
    r = compare(expected, expected + 0.005)
    assert (r.tolerance["float16"]["atol"], r.tolerance["float16"]["rtol"]) == (1e-2, 1e-2)


def test_bfloat16_compares() -> None:
    expected = torch.ones(8, dtype=torch.bfloat16)
    assert compare(expected, expected.clone()).ok
    assert not compare(expected, expected * 2).ok


def test_float64_is_strict() -> None:
    expected = torch.ones(3, dtype=torch.float64)
    assert compare(expected, expected + 1e-8).ok
    assert not compare(expected, expected + 1e-5).ok


def test_shape_mismatch_fails() -> None:
    r = compare(torch.zeros(2, 3), torch.zeros(3, 2))
    assert not r.ok
    assert r.reasons == ["output 0: shape (3, 2) differs from the reference's (2, 3)"]


def test_same_numel_different_rank_is_a_shape_mismatch() -> None:
    assert not compare(torch.zeros(6), torch.zeros(1, 6)).ok


def test_dtype_mismatch_fails() -> None:
    r = compare(torch.zeros(3), torch.zeros(3, dtype=torch.float64))
    assert not r.ok
    assert r.reasons == ["output 0: dtype float64 differs from the reference's float32"]


def test_nan_matches_nan() -> None:
    x = torch.tensor([float("nan"), 1.0])
    r = compare(x, x.clone())
    assert r.ok
    assert not math.isnan(r.max_abs_error)


def test_nan_where_a_number_is_expected_fails() -> None:
    r = compare(torch.tensor([1.0, 2.0]), torch.tensor([float("nan"), 2.0]))
    assert not r.ok
    assert r.max_abs_error == math.inf
    assert "got nan, expected 1" in r.reasons[0]


def test_number_where_nan_is_expected_fails() -> None:
    r = compare(torch.tensor([float("nan")]), torch.tensor([0.0]))
    assert not r.ok


def test_infinities_must_match_exactly() -> None:
    inf = float("inf")
    assert compare(torch.tensor([inf, -inf]), torch.tensor([inf, -inf])).ok
    r = compare(torch.tensor([inf]), torch.tensor([-inf]))
    assert not r.ok and r.max_abs_error == math.inf
    assert not compare(torch.tensor([inf]), torch.tensor([1e30])).ok


def test_integers_must_be_equal() -> None:
    expected = torch.tensor([1, 2, 3])
    assert compare(expected, expected.clone()).ok
    r = compare(expected, torch.tensor([1, 2, 4]))
    assert not r.ok
    assert r.max_abs_error == 1.0
    assert (r.tolerance["int64"]["atol"], r.tolerance["int64"]["rtol"]) == (0.0, 0.0)
    assert "first at flat index 2: got 4, expected 3" in r.reasons[0]


def test_booleans_must_be_equal() -> None:
    expected = torch.tensor([True, False])
    assert compare(expected, expected.clone()).ok
    assert not compare(expected, torch.tensor([True, True])).ok


def test_empty_tensors_are_equal() -> None:
    assert compare(torch.zeros(0, 3), torch.zeros(0, 3)).ok


def test_zero_dim_tensors_compare() -> None:
    assert compare(torch.tensor(1.0), torch.tensor(1.0)).ok
    assert not compare(torch.tensor(1.0), torch.tensor(2.0)).ok


def test_python_scalars_compare_by_value() -> None:
    assert compare(3, 3).ok
    assert not compare(3, 4).ok
    assert compare(1.0, 1.0 + 1e-9).ok
    assert compare(2.0, torch.tensor(2.0)).ok  # a one-element tensor stands for a scalar
    assert not compare(2.0, 2.1).ok


def test_failures_accumulate_without_duplicates() -> None:
    result = Comparison()
    compare_values(torch.zeros(2), torch.ones(2), "o", result)
    compare_values(torch.zeros(2), torch.ones(2), "o", result)
    assert len(result.reasons) == 1


def test_flatten() -> None:
    t = torch.zeros(1)
    assert flatten(t) == [t]
    assert flatten((t, t)) == [t, t]
    assert flatten([t]) == [t]


def test_float64_mismatch_invisible_in_float32_is_reported() -> None:
    expected = torch.tensor([1.25], dtype=torch.float64)
    actual = expected + 2.3 * 2.0**-23  # 2.3 float32 ulps; the float64 tolerance is 2.1 ulps
    assert not compare(expected, actual).ok


@pytest.mark.parametrize("actual", [None, 1.5])
def test_non_tensor_where_a_tensor_is_expected_fails(actual) -> None:
    assert not compare(torch.zeros(1), actual).ok


def test_none_where_a_float_is_expected_fails() -> None:
    assert not compare(1.0, None).ok
