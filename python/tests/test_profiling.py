"""The profiling tiers on the CPU: ncu's CSV parsed into the curated metric set, Proton's tree,
and every graceful limit (no ncu, ERR_NVGPUCTRPERM, an unsupported GPU, a time-out, a failed
run) with fake `ncu` executables, inside the sandbox and out (docs/profiling.md)."""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from openkernel_worker import ncu_report, profile_run, profiling, proton_report
from openkernel_worker.options import BadInput, Options
from openkernel_worker.sandbox import probe

DATA = Path(__file__).parent / "data" / "profiling"
CANDIDATE = "class ModelNew:\n    pass\n"  # staged, never run: the fake ncu runs nothing

def fake_tool(folder: Path, body: str, name: str = "ncu") -> str:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def target(tmp_path: Path, tiny_reference: str, no_sandbox: bool = True) -> profile_run.Target:
    cand = tmp_path / "candidate.py"
    cand.write_text(CANDIDATE)
    opts = Options(reference=tiny_reference, candidate=str(cand), no_sandbox=no_sandbox,
                   timeout_s=30)
    return profile_run.Target(reference=tiny_reference, candidate=str(cand), overrides={},
                              init_seed=1, seed=2, device="cuda:0", env=dict(os.environ),
                              opts=opts)


# -- ncu's raw CSV ---------------------------------------------------------------------------------

def test_raw_page_parsed_into_the_curated_metrics() -> None:
    kernels = ncu_report.parse_raw((DATA / "synthetic_raw.csv").read_text())
    assert [k["name"] for k in kernels] == ["softmax_kernel",
                                            "void relu_kernel<float>(float const*, float*, int)"]
    k = kernels[0]
    assert k["duration_us"] == pytest.approx(52.29)  # usecond
    assert k["block"] == [128, 1, 1] and k["grid"] == [4096, 1, 1]  # thousands separators
    assert (k["dram_throughput_pct"], k["l2_throughput_pct"], k["sm_throughput_pct"]) == (
        88.1, 40.2, 30.5)
    assert k["achieved_occupancy_pct"] == 81.7 and k["theoretical_occupancy_pct"] == 100
    assert k["registers_per_thread"] == 32
    assert k["shared_mem_per_block_bytes"] == pytest.approx(260.0)  # 0 B static + 0.26 KB
    assert k["occupancy_limiter"]["by"] == ["registers"]
    assert k["occupancy_limiter"]["blocks_per_sm"]["shared_memory"] == 14
    assert k["l1_hit_rate_pct"] == 12.5 and k["l2_hit_rate_pct"] == 34.0
    assert [s["reason"] for s in k["top_stalls"]] == ["long_scoreboard", "wait", "barrier"]
    assert k["top_stalls"][0]["cycles_per_issue"] == 5.5
    roof = k["roofline"]
    assert roof["flops"] == 1_048_576 + 2_097_152 + 2 * 4_194_304
    assert roof["dram_bytes"] == pytest.approx(67.11e6)  # Mbyte
    assert roof["intensity_flop_per_byte"] == pytest.approx(roof["flops"] / 67.11e6)
    assert roof["dram_bytes_per_s"] == pytest.approx(67.11e6 / 52.29e-6)
    # Not in the page: null, and named; never guessed.
    assert k["tensor_utilisation_pct"] is None
    assert "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active" in k["missing"]
    assert k["local_memory"] == {"spilling": None}


def test_missing_cells_are_null_and_listed() -> None:
    relu = ncu_report.parse_raw((DATA / "synthetic_raw.csv").read_text())[1]
    assert relu["l1_hit_rate_pct"] is None  # "n/a"
    assert "l1tex__t_sector_hit_rate.pct" in relu["missing"]
    assert relu["occupancy_limiter"]["by"] == ["warps"]
    assert relu["roofline"]["flops"] == 0 and relu["roofline"]["intensity_flop_per_byte"] == 0


@pytest.mark.parametrize("text, message", [
    ("", "no ncu CSV header"),
    ("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n",
     "no ncu CSV header"),
    ('"ID","Process ID"\n"0","1"\n', "lacks Kernel Name"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n"0","k"\n', "a row has 2"),
])
def test_malformed_pages_are_refused(text: str, message: str) -> None:
    with pytest.raises(ncu_report.ReportError, match=message):
        ncu_report.parse_raw(text)


def test_a_page_without_metrics_gives_kernels_with_everything_missing() -> None:
    kernels = ncu_report.parse_raw('"ID","Kernel Name"\n"0","k"\n')
    assert kernels[0]["name"] == "k" and kernels[0]["duration_us"] is None
    assert "gpu__time_duration.sum" in kernels[0]["missing"]


def test_units_scale_to_base_units() -> None:
    text = ('"ID","Kernel Name","gpu__time_duration.sum","dram__bytes.sum"\n'
            '"","","msecond","Gbyte"\n"0","k","1.5","2"\n')
    k = ncu_report.parse_raw(text)[0]
    assert k["duration_us"] == pytest.approx(1500.0)
    assert k["roofline"]["dram_bytes"] == pytest.approx(2e9)


@pytest.mark.parametrize("unit, factor", [
    ("ns", 1e-9), ("nsecond", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0),
    ("Kbyte", 1e3), ("Mbyte", 1e6), ("KiByte", 1024.0), ("Kbyte/block", 1e3), ("byte/block", 1.0),
    ("Gbyte/s", 1e9), ("Tbyte/second", 1e12), ("byte/ns", 1e9), ("Ghz", 1e9), ("hz", 1.0),
    ("cycle/nsecond", 1e9), ("cycle/usecond", 1e6), ("Kbyte/cycle", 1e3), ("%/Kbyte", 1e3),
    ("%/byte", 1.0), ("%", 1.0), ("cycle", 1.0), ("inst/cycle", 1.0), ("register/thread", 1.0),
    ("SM", 1.0)])
def test_ncu_unit_spellings_old_and_new(unit: str, factor: float) -> None:
    """ncu 2025.x abbreviates units ("ms", "Gbyte/s") and qualifies some ("Kbyte/block"), older
    releases spell them out: both scale to seconds, bytes, bytes/s and hertz; a prefix scales the
    whole value wherever it stands ("1.591 %/Kbyte" is "1,591 %/byte", as the pages below show)."""
    assert ncu_report.unit_factor(unit) == pytest.approx(factor)


def test_real_pages_of_one_kernel_agree() -> None:
    """Two pages recorded on an H100 (ncu 2025.3.1) for the Triton ReLU the builtin generator
    wrote for KernelBench level1/19: `ncu --import REPORT --csv --page raw` of the deep tier's
    report (units "ms", "Kbyte/block") and a separate `ncu --csv --page raw` command line on the
    same forward (units "ns", "byte/block", log lines before the header). Both parse to the same
    kernel with the same figures (within 5%, percentages within 0.01 points)."""
    report = ncu_report.parse_raw((DATA / "h100_relu_report_raw.csv").read_text())
    cli = ncu_report.parse_raw((DATA / "h100_relu_cli_raw.csv").read_text())
    assert [k["name"] for k in report] == [k["name"] for k in cli] == ["_ok_kernel_0"]
    r, c = report[0], cli[0]
    assert r["duration_us"] == pytest.approx(4255.936) and c["duration_us"] == pytest.approx(4259.488)
    assert r["shared_mem_driver_bytes"] == c["shared_mem_driver_bytes"] == 1024
    assert r["dram_throughput_pct"] > 85 and r["registers_per_thread"] == 18
    compared = 0
    for key, value in r.items():
        other = c.get(key)
        if isinstance(value, (int, float)) and isinstance(other, (int, float)):
            compared += 1
            near = abs(value - other) <= 0.01 if key.endswith("_pct") else False
            assert near or abs(value - other) <= 0.05 * max(abs(value), abs(other)), key
    assert compared >= 10


def test_roofline_and_spills_from_the_sections_rates() -> None:
    """The deep tier's sections give FLOP and DRAM counts only as rates: the roofline is derived
    from them (rate x elapsed cycles, rate x duration), checked against what the kernels must do.
    Pages recorded on an H100 (ncu 2025.3.1): the builtin Triton fp32 GEMM of KernelBench level1/1
    (4096 square: 2 x 4096^3 FLOPs, at least A, B and C through DRAM) and the ReLU of level1/19
    (4096 x 393216 fp32 read and written once, no FLOP)."""
    gemm = [ncu_report.parse_raw((DATA / f"h100_gemm_{page}_raw.csv").read_text())[0]
            for page in ("report", "cli")]
    for k in gemm:
        roof = k["roofline"]
        assert roof["flops"] == pytest.approx(2 * 4096**3, rel=1e-3)
        assert 3 * 4096 * 4096 * 4 <= roof["dram_bytes"] <= 10 * 3 * 4096 * 4096 * 4
        assert roof["intensity_flop_per_byte"] == pytest.approx(roof["flops"] / roof["dram_bytes"])
        assert roof["flops_per_s"] == pytest.approx(roof["flops"] / (k["duration_us"] * 1e-6))
        assert k["local_memory"] == {"spill_instructions": 0.0, "spilling": False}
        # the sections have no half-precision rates: said, not guessed
        assert k["missing"] == ["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed"]
    assert gemm[0]["roofline"]["dram_bytes"] == pytest.approx(gemm[1]["roofline"]["dram_bytes"],
                                                              rel=0.05)
    relu = ncu_report.parse_raw((DATA / "h100_relu_report_raw.csv").read_text())[0]
    assert relu["roofline"]["flops"] == 0.0
    assert relu["roofline"]["dram_bytes"] == pytest.approx(2 * 4096 * 393216 * 4, rel=0.01)


def test_every_raw_metric_of_the_real_pages_agrees_in_base_units() -> None:
    """All of the two H100 pages' raw metrics, scaled by their own units, agree within 5% (or
    within the command line's print precision, two decimals): the evidence for the unit rules.
    Left out: PC-sampling counts (statistical samples that differ run to run) and process ids."""
    _, u1, rows1 = ncu_report.read_rows((DATA / "h100_relu_report_raw.csv").read_text())
    _, u2, rows2 = ncu_report.read_rows((DATA / "h100_relu_cli_raw.csv").read_text())
    a, b = rows1[0], rows2[0]
    compared = 0
    for name in a.keys() & b.keys():
        if "pcsamp" in name or name.endswith(" ID"):
            continue
        x = ncu_report.scaled(ncu_report.number(a[name]), u1.get(name, ""))
        y = ncu_report.scaled(ncu_report.number(b[name]), u2.get(name, ""))
        if x is None or y is None:
            continue
        compared += 1
        assert abs(x - y) <= max(0.05 * max(abs(x), abs(y)), 0.005), (name, a[name], b[name])
    assert compared > 800


# -- Proton -----------------------------------------------------------------------------------------

def test_proton_tree_gives_per_kernel_times() -> None:
    tree = [{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"time (ns)": 0},
             "children": [
                 {"frame": {"name": "softmax_kernel", "type": "function"},
                  "metrics": {"count": 1, "device_id": "0", "device_type": "CUDA",
                              "time (ns)": 52000, "bytes": 67108864},
                  "children": []},
                 {"frame": {"name": "scope", "type": "function"}, "metrics": {},
                  "children": [{"frame": {"name": "softmax_kernel", "type": "function"},
                                "metrics": {"count": 2, "device_type": "CUDA",
                                            "time (ns)": 1000}, "children": []}]}]},
            {"CUDA": {"0": {"arch": "90"}}}]
    kernels = proton_report.parse_hatchet(tree)
    assert len(kernels) == 1
    assert kernels[0]["count"] == 3 and kernels[0]["duration_us"] == pytest.approx(53.0)
    assert kernels[0]["bytes_per_s"] == pytest.approx(67108864 / 53e-6)


MANGLED_RELU = "_Z11relu_kernelIfEvPKfPfi"  # nvcc's name for relu_kernel<float>


@pytest.mark.skipif(not shutil.which("c++filt"), reason="binutils' c++filt is not installed")
def test_proton_names_of_cuda_kernels_are_demangled(tmp_path: Path, tiny_reference: str,
                                                   monkeypatch) -> None:
    leaf = {"metrics": {"count": 1, "device_type": "CUDA", "time (ns)": 2000}, "children": []}
    odd = "_Z3foo\n$(touch /tmp/x)"  # not a plain symbol: never handed to c++filt
    tree = {"frame": {"name": "ROOT"}, "metrics": {}, "children": [
        {**leaf, "frame": {"name": MANGLED_RELU}}, {**leaf, "frame": {"name": "softmax_kernel"}},
        {**leaf, "frame": {"name": odd}}]}
    kernels = proton_report.parse_hatchet(tree)
    t = target(tmp_path, tiny_reference)
    names = profiling.demangle([k["name"] for k in kernels], t)
    assert names == {MANGLED_RELU: "void relu_kernel<float>(float const*, float*, int)"}
    kernels = proton_report.demangled(kernels, names)
    by_name = {k["name"]: k for k in kernels}
    assert by_name["void relu_kernel<float>(float const*, float*, int)"]["mangled_name"] == (
        MANGLED_RELU)
    assert "mangled_name" not in by_name["softmax_kernel"] and odd in by_name
    monkeypatch.setenv("PATH", "/nonexistent")  # no c++filt: the names stay as Proton gave them
    assert profiling.demangle([MANGLED_RELU], t) == {}


@pytest.mark.skipif(not probe("gpu").ok, reason="bwrap cannot run here")
def test_cxxfilt_runs_inside_the_candidates_sandbox(tmp_path: Path, tiny_reference: str,
                                                    monkeypatch) -> None:
    # the names come from the candidate's code: c++filt reads them in the sandbox, like the ncu
    # import; a stand-in on PATH answers only there, and only for the names after "--"
    tools = tmp_path / "binutils"
    tools.mkdir()
    fake_tool(tools, '[ "$(hostname)" = openkernel-sandbox ] || exit 1\n'
                     '[ "$1" = -- ] || exit 1\nshift\nfor n; do echo "inside:$n"; done\n',
              name="c++filt")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    t = target(tmp_path, tiny_reference, no_sandbox=False)
    names = [MANGLED_RELU, "_Z3foov", MANGLED_RELU, "softmax_kernel"]
    assert profiling.demangle(names, t) == {MANGLED_RELU: f"inside:{MANGLED_RELU}",
                                            "_Z3foov": "inside:_Z3foov"}
    # outside the sandbox the stand-in fails: the names stay
    assert profiling.demangle(names, target(tmp_path, tiny_reference)) == {}


@pytest.mark.parametrize("data", [[], {}, [1], "x", [{"metrics": {}}]])
def test_proton_malformed(data: Any) -> None:
    with pytest.raises(proton_report.ReportError):
        proton_report.parse_hatchet(data)


# -- graceful limits with fake ncu executables ---------------------------------------------------------

PERM = ("==PROF== Connected to process 77 (/usr/bin/python3)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0. For instructions on enabling permissions "
        "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n")


def test_cuda_ncu_wrapper_gets_its_nsight_installation_bound(tmp_path: Path, monkeypatch) -> None:
    # CUDA's bin/ncu is a wrapper that runs nsight-compute-VERSION beside bin/ (or under
    # /opt/nvidia): binding only the wrapper's folder failed on the H200 image
    toolkit = tmp_path / "cuda-13.0"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "nsight-compute-2025.3.1").mkdir()
    (toolkit / "nsight-systems-2025.1").mkdir()
    wrapper = toolkit / "bin" / "ncu"
    wrapper.write_text("#!/bin/sh\n")
    link_dir = tmp_path / "cuda" / "bin"
    link_dir.mkdir(parents=True)
    (link_dir / "ncu").symlink_to(wrapper)
    opt = tmp_path / "opt-nvidia"
    opt.mkdir()
    monkeypatch.setattr(profile_run, "NSIGHT_DIRS", (str(tmp_path / "absent"), str(opt)))
    roots = profile_run.tool_roots(str(link_dir / "ncu"))
    assert roots == [str(link_dir), str(toolkit / "bin"), str(toolkit / "nsight-compute-2025.3.1"),
                     str(opt)]
    monkeypatch.setattr(profile_run, "NSIGHT_DIRS", ())
    install = tmp_path / "nsight-compute" / "2025.3.1"
    install.mkdir(parents=True)
    (install / "ncu").write_text("#!/bin/sh\n")
    assert profile_run.tool_roots(str(install / "ncu")) == [str(install)]


@pytest.mark.parametrize("body, flag, words", [
    (f"cat <<'EOF'\n{PERM}EOF\nexit 1\n", "counters_not_permitted", "ERR_NVGPUCTRPERM"),
    ("echo '==ERROR== The selected device is not supported by this version of ncu.'\nexit 1\n",
     "gpu_unsupported", "cannot profile this GPU"),
    ("echo '==ERROR== Failed to connect to process'\nexit 9\n", "profile_failed", "status 9"),
    # the H200's /usr/local/cuda/bin/ncu wrapper in a sandbox without the installation it starts
    ("echo 'ERROR : nsight-compute directory is not found under /usr/local/cuda-13.0/bin/../ or "
     "/opt/nvidia. Nsight Compute is not installed on your system.'\nexit 1\n",
     "profiler_missing", "nsight-compute directory is not found"),
    ("echo '==WARNING== No kernels were profiled.'\nexit 0\n", "no_kernels_profiled",
     "no kernel"),
])
def test_ncu_limits_become_flags(tmp_path: Path, tiny_reference: str, monkeypatch,
                                 body: str, flag: str, words: str) -> None:
    monkeypatch.setenv(profile_run.NCU_ENV, fake_tool(tmp_path, body))
    found, limit = profiling.run_deep(target(tmp_path, tiny_reference), timeout_s=30)
    assert found is None and limit is not None
    assert limit.flag == flag and words in limit.message


def test_no_ncu(tmp_path: Path, tiny_reference: str, monkeypatch) -> None:
    monkeypatch.setenv(profile_run.NCU_ENV, str(tmp_path / "absent"))
    found, limit = profiling.run_deep(target(tmp_path, tiny_reference), timeout_s=30)
    assert found is None and limit is not None and limit.flag == "profiler_missing"
    assert "OPENKERNEL_NCU" in limit.message


def test_a_profile_past_its_time_box_is_stopped(tmp_path: Path, tiny_reference: str,
                                                monkeypatch) -> None:
    marker = tmp_path / "child-alive"
    # The fake leaves a grandchild behind: the whole process group must go.
    monkeypatch.setenv(profile_run.NCU_ENV, fake_tool(
        tmp_path, f"(sleep 3; touch {marker}) &\nsleep 60\n"))
    found, limit = profiling.run_deep(target(tmp_path, tiny_reference), timeout_s=0.5)
    assert found is None and limit is not None and limit.flag == "profile_timeout"
    assert "0.5 s" in limit.message
    import time

    time.sleep(3.5)
    assert not marker.exists()


def success_body(csv_path: Path, import_check: str = "") -> str:
    """A fake ncu: the profiling run records where it ran into the report file it was asked to
    export; `--import` (after the shell `import_check`) prints the recorded CSV."""
    return (f'case " $* " in *" --import "*) {import_check} cat {csv_path}; exit 0;; esac\n'
            'out=""; prev=""\n'
            'for a in "$@"; do [ "$prev" = "--export" ] && out="$a"; prev="$a"; done\n'
            'echo "host=$(hostname) args=$*" > "$out"\n'
            'echo "==PROF== Disconnected from process 1"\n')


def test_deep_tier_parses_what_ncu_reports(tmp_path: Path, tiny_reference: str,
                                           monkeypatch) -> None:
    monkeypatch.setenv(profile_run.NCU_ENV, fake_tool(tmp_path,
                                                      success_body(DATA / "synthetic_raw.csv")))
    t = target(tmp_path, tiny_reference)
    t.keep_report = str(tmp_path / "kept" / "report.ncu-rep")
    found, limit = profiling.run_deep(t, timeout_s=30)
    assert limit is None and found is not None
    assert [k["name"] for k in found["kernel_metrics"]][0] == "softmax_kernel"
    assert found["tool"]["name"] == "ncu" and found["tool"]["profile_s"] >= 0
    report = Path(t.keep_report).read_text()
    # ncu was asked for one forward between the entry's profiler start and stop.
    assert "--profile-from-start off" in report and "openkernel_worker.profile_forward" in report
    assert "--section SpeedOfLight" in report


@pytest.mark.skipif(not probe("gpu").ok, reason="bwrap cannot run here")
def test_ncu_runs_inside_the_sandbox_bound_read_only(tmp_path: Path, tiny_reference: str,
                                                     monkeypatch) -> None:
    tools = tmp_path / "nsight"
    tools.mkdir()
    # ncu's folder is bound read-only: the fake's CSV lies there, since the import runs in the
    # sandbox too (and fails outside it), reading the worker's private copy of the report
    csv = tools / "raw.csv"
    csv.write_text((DATA / "synthetic_raw.csv").read_text())
    inside = ('[ "$(hostname)" = openkernel-sandbox ] || { echo "==ERROR== import outside"; '
              'exit 1; }; case "$2" in *openkernel-ncu-*) ;; *) echo "==ERROR== not the copy"; '
              'exit 1;; esac;')
    monkeypatch.setenv(profile_run.NCU_ENV, fake_tool(tools, success_body(csv, inside)))
    t = target(tmp_path, tiny_reference, no_sandbox=False)
    t.keep_report = str(tmp_path / "report.ncu-rep")
    found, limit = profiling.run_deep(t, timeout_s=60)
    assert limit is None and found is not None
    assert "host=openkernel-sandbox" in Path(t.keep_report).read_text()


# -- the tiers together ----------------------------------------------------------------------------------

def test_deep_falls_back_to_proton_then_basic(tmp_path: Path, tiny_reference: str,
                                              monkeypatch) -> None:
    monkeypatch.setenv(profile_run.NCU_ENV, fake_tool(tmp_path, f"cat <<'EOF'\n{PERM}EOF\nexit 1\n"))
    monkeypatch.setattr(profiling, "proton_available", lambda: False)
    t = target(tmp_path, tiny_reference)
    out = profiling.run_tiers("deep", t, 30, str(tmp_path / "cache"),
                              lambda tier: {"tier": tier, "k": 1})
    assert out["tier"] == "basic" and out["requested_tier"] == "deep"
    assert [f["flag"] for f in out["flags"]] == ["counters_not_permitted", "profiler_missing"]
    assert out["seconds"] >= 0 and "kernel_metrics" not in out


def test_deep_profiles_are_cached_by_key(tmp_path: Path, tiny_reference: str,
                                         monkeypatch) -> None:
    log = tmp_path / "calls"
    body = f'case "$*" in *--export*) echo run >> {log};; esac\n' + success_body(DATA / "synthetic_raw.csv")
    monkeypatch.setenv(profile_run.NCU_ENV, fake_tool(tmp_path, body))
    t = target(tmp_path, tiny_reference)
    cache = str(tmp_path / "cache")
    first = profiling.run_tiers("deep", t, 30, cache, lambda tier: {"tier": tier, "src": "a"})
    second = profiling.run_tiers("deep", t, 30, cache, lambda tier: {"tier": tier, "src": "a"})
    assert first["tier"] == second["tier"] == "deep"
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["kernel_metrics"] == first["kernel_metrics"]
    assert os.path.isfile(first["report_file"])
    third = profiling.run_tiers("deep", t, 30, cache, lambda tier: {"tier": tier, "src": "b"})
    assert third["cached"] is False
    assert log.read_text().count("run") == 2  # the second was cached


def test_cpu_evaluation_asked_for_deep_reports_basic_with_a_flag(tiny_reference: str,
                                                                 write) -> None:
    from openkernel_worker.evaluate import evaluate

    from test_evaluate import CORRECT  # a native CPU kernel

    r = evaluate({"reference": tiny_reference, "candidate": write("c.py", CORRECT),
                  "backend": "cpu", "trials": 1, "timing_budget_s": 0.05, "no_sandbox": True,
                  "profile": "deep"})
    assert r["verdict"] == "correct"
    prof = r["profile"]
    assert prof["tier"] == "basic" and prof["requested_tier"] == "deep"
    assert prof["flags"][0]["flag"] == "no_gpu" and prof["kernel_table"] is not None
    assert "profile_tier" in r["phases_s"]
    plain = evaluate({"reference": tiny_reference, "candidate": write("d.py", CORRECT),
                      "backend": "cpu", "trials": 1, "timing_budget_s": 0.05,
                      "no_sandbox": True})
    assert plain["profile"]["tier"] == "basic" and "requested_tier" not in plain["profile"]
    assert "profile_tier" not in plain["phases_s"]


def test_unknown_tier_is_bad_input() -> None:
    with pytest.raises(BadInput, match="profile must be one of basic, proton, deep"):
        Options.from_request({"reference": "/r.py", "candidate": "/c.py", "profile": "full"})


def test_profiled_process_spec_round_trip(tmp_path: Path, tiny_reference: str) -> None:
    scratch = profile_run.ProfileScratch(target(tmp_path, tiny_reference), "ncu", "out.ncu-rep")
    try:
        spec = json.loads(Path(scratch.spec).read_text())
        assert spec["mode"] == "ncu" and os.path.isfile(spec["candidate"])
        assert spec["candidate"].startswith(scratch.path)
        assert scratch.entry()[-2:] == ["openkernel_worker.profile_forward", scratch.spec]
    finally:
        scratch.close()
    assert not os.path.exists(scratch.path)


def test_a_profilers_output_is_copied_out_only_as_a_plain_bounded_file(tmp_path: Path) -> None:
    # the profiled process ran candidate code where the output lands: a link to a file it could
    # not read, /dev/zero, a FIFO or a huge file must not be read by the worker
    scratch, private = tmp_path / "scratch", tmp_path / "private"
    scratch.mkdir()
    private.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("key")
    (scratch / "link.ncu-rep").symlink_to(secret)
    (scratch / "zero.hatchet").symlink_to("/dev/zero")
    os.mkfifo(scratch / "fifo.hatchet")
    (scratch / "big.ncu-rep").write_bytes(b"x" * 2048)
    (scratch / "ok.ncu-rep").write_bytes(b"report")
    for name in ("link.ncu-rep", "zero.hatchet", "fifo.hatchet", "missing.ncu-rep"):
        copy, why = profiling.private_copy(str(scratch / name), str(private), 1024)
        assert copy is None and why, name
    copy, why = profiling.private_copy(str(scratch / "big.ncu-rep"), str(private), 1024)
    assert copy is None and "more than 1024" in why
    copy, why = profiling.private_copy(str(scratch / "ok.ncu-rep"), str(private), 1024)
    assert why == "" and copy == str(private / "ok.ncu-rep")
    assert Path(copy).read_bytes() == b"report"
    assert sorted(os.listdir(private)) == ["ok.ncu-rep"]


def test_the_cache_key_survives_its_json_round_trip_with_overrides(tmp_path: Path,
                                                                   tiny_reference: str) -> None:
    t = target(tmp_path, tiny_reference)
    t.overrides = {"batch_size": 8, "dim": "4096"}
    key = profiling.cache_key("proton", t, "cand", "ref", "NVIDIA H200")
    assert json.loads(json.dumps(key)) == key  # else the stored key never matches: no hit


def test_only_a_candidate_that_will_settle_correct_is_profiled() -> None:
    from openkernel_worker.options import Outcome
    from openkernel_worker import verdicts

    out = Outcome()
    out.verdict, out.correct = "correct", True
    assert verdicts.will_settle_correct(out, strict=False)
    out.flag("graph_fallback", "timed with events", reject=False)
    assert verdicts.will_settle_correct(out, strict=False)
    out.flag("rested_gap", "a gap", reject=False)
    assert not verdicts.will_settle_correct(out, strict=True)  # --strict will reject it
    out2 = Outcome()
    out2.verdict, out2.correct = "correct", False  # never reached correct: runtime_error
    assert not verdicts.will_settle_correct(out2, strict=False)


def test_a_failing_tier_is_a_flag_not_a_failed_evaluation(monkeypatch) -> None:
    class Ev:  # the parts of evaluate.Evaluation that attach reads
        result = {"profile": {"kernel_table": []}}
        phases: dict[str, float] = {}

    ev = Ev()
    ev.opts = Options.from_request({"reference": "r.py", "candidate": "c.py", "profile": "deep"})
    from openkernel_worker.options import Outcome

    ev.out = Outcome()
    ev.out.verdict, ev.out.correct = "correct", True

    def boom(_: Any) -> dict[str, Any]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(profiling, "_run_for", boom)
    profiling.attach(ev)
    prof = ev.result["profile"]
    assert prof["tier"] == "basic" and prof["requested_tier"] == "deep"
    assert prof["flags"][0]["flag"] == "profile_failed"
    assert "RecursionError" in prof["flags"][0]["message"]
    assert "profile_tier" in ev.phases


# -- the profile op: the deep tier's real path on the CPU with a recorded stand-in for ncu -------------

def stand_in_ncu(tmp_path: Path, raw: str) -> Path:
    """A folder holding fake_ncu (as `ncu`) and the recorded raw page `raw`."""
    tools = tmp_path / "nsight"
    tools.mkdir(exist_ok=True)
    shutil.copy(DATA / "fake_ncu", tools / "ncu")
    shutil.copy(DATA / raw, tools / "raw.csv")
    return tools / "ncu"


@pytest.mark.parametrize("no_sandbox", [True, False])
def test_the_profile_op_runs_ncu_around_a_real_forward(tmp_path: Path, tiny_reference: str,
                                                       write, monkeypatch, no_sandbox) -> None:
    if not no_sandbox and not probe("cpu").ok:
        pytest.skip("bwrap cannot run here")
    from test_evaluate import CORRECT  # a native CPU kernel: the profiled process runs it

    monkeypatch.setenv(profile_run.NCU_ENV, str(stand_in_ncu(tmp_path, "low_occupancy_raw.csv")))
    monkeypatch.setenv(profiling.PROFILE_ON_CPU_ENV, "1")
    req = {"reference": tiny_reference, "candidate": write("c.py", CORRECT), "backend": "cpu",
           "no_sandbox": no_sandbox, "timeout_s": 120, "cache_dir": str(tmp_path / "cache")}
    prof = profiling.profile_only(req)["profile"]
    assert (prof["tier"], prof["requested_tier"], prof["cached"]) == ("deep", "deep", False)
    assert prof["flags"] == []
    k = prof["kernel_metrics"][0]
    assert k["name"] == "void swish_kernel<float>(float const*, float*, long)"
    assert k["achieved_occupancy_pct"] == 18.5 and k["occupancy_limiter"]["by"] == ["registers"]
    assert prof["tool"]["version"].endswith("(openkernel fake)")
    # the stand-in wrote the report only after the profiled forward (the candidate's) exited 0
    report = Path(prof["report_file"]).read_text()
    assert "openkernel_worker.profile_forward" in report and "--profile-from-start off" in report
    again = profiling.profile_only(req)["profile"]
    assert again["cached"] is True and again["kernel_metrics"] == prof["kernel_metrics"]


def test_the_profile_op_reports_a_failing_forward_and_a_missing_ncu(tmp_path: Path,
                                                                    tiny_reference: str, write,
                                                                    monkeypatch) -> None:
    monkeypatch.setenv(profile_run.NCU_ENV, str(stand_in_ncu(tmp_path, "low_occupancy_raw.csv")))
    monkeypatch.setenv(profiling.PROFILE_ON_CPU_ENV, "1")
    broken = write("b.py", "import torch\nclass ModelNew(torch.nn.Module):\n"
                           "    def __init__(self, *args):\n        super().__init__()\n"
                           "    def forward(self, *x):\n        raise RuntimeError('boom')\n")
    req = {"reference": tiny_reference, "candidate": broken, "backend": "cpu",
           "no_sandbox": True, "timeout_s": 120, "cache_dir": str(tmp_path / "cache")}
    prof = profiling.profile_only(req)["profile"]
    assert prof["tier"] == "basic" and prof["flags"][0]["flag"] == "profile_failed"
    assert "the candidate failed" in prof["flags"][0]["message"]
    assert "boom" in prof["flags"][0]["message"]
    monkeypatch.setenv(profile_run.NCU_ENV, str(tmp_path / "absent"))
    monkeypatch.setattr(profiling, "proton_available", lambda: False)
    prof = profiling.profile_only({**req, "candidate": write("c.py", CANDIDATE)})["profile"]
    assert [f["flag"] for f in prof["flags"]] == ["profiler_missing", "profiler_missing"]
    monkeypatch.delenv(profiling.PROFILE_ON_CPU_ENV)
    prof = profiling.profile_only(req)["profile"]  # the CPU without the switch: not profiled
    assert prof["flags"][0]["flag"] == "no_gpu"
    with pytest.raises(BadInput, match="profile op runs proton or deep"):
        profiling.profile_only({**req, "profile": "basic"})


def test_the_gpu_runs_comparison_script_on_a_stand_in_profile(tmp_path: Path, tiny_reference: str,
                                                              write, monkeypatch) -> None:
    # tests/gpu/compare_ncu.py (run_h200_profiling.sh) on a deep profile: our metrics against the
    # report file's import and a separate ncu command line, here all three from one recorded page
    import subprocess
    import sys

    from test_evaluate import CORRECT

    ncu = stand_in_ncu(tmp_path, "synthetic_raw.csv")
    monkeypatch.setenv(profile_run.NCU_ENV, str(ncu))
    monkeypatch.setenv(profiling.PROFILE_ON_CPU_ENV, "1")
    candidate = write("c.py", CORRECT)
    prof = profiling.profile_only({"reference": tiny_reference, "candidate": candidate,
                                   "backend": "cpu", "no_sandbox": True, "timeout_s": 120,
                                   "cache_dir": str(tmp_path / "cache")})["profile"]
    result = tmp_path / "result.json"
    result.write_text(json.dumps({"device": "cpu", "profile": prof}))
    script = Path(__file__).resolve().parents[2] / "tests/gpu/compare_ncu.py"
    r = subprocess.run([sys.executable, str(script), str(result), tiny_reference, candidate,
                        "--out", str(tmp_path / "cmp")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 metrics differ from the file; 0 of" in r.stdout
    summary = json.loads((tmp_path / "cmp.compare.json").read_text())
    assert summary["kernels"] == 2 and summary["cli_compared"] > 20
    assert summary["cost"]["tool"]["name"] == "ncu"
