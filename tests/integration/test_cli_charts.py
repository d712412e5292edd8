"""`openkernel charts` on the committed H200 results (bench/results): every chart a valid PNG and
SVG, and the numbers behind each chart (DIR/chart_data.json) equal to `openkernel score`'s on the
same rows; bad inputs exit 2 with a message.

    OPENKERNEL_BIN=build/release/bin/openkernel /usr/bin/python3 -m pytest -q tests/integration/test_cli_charts.py
"""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from locations import BINARY, ROOT

pytestmark = [
    pytest.mark.skipif(not BINARY.is_file(),
                       reason=f"no openkernel binary at {BINARY}; build it or set OPENKERNEL_BIN"),
]

RESULTS = ROOT / "bench/results"
TSV = RESULTS / "h200_level1_triton_builtin_1-59.tsv"
STORES = ["h200_level1_36.db.gz", "h200_level1_47_49_23_24.db.gz", "cpu_problems.db.gz"]
CHARTS = ["fast_p_vs_published", "speedup_distribution", "scaling", "cost_frontier",
          "time_frontier", "problem_heatmap", "hardware"]
COLUMNS = ["level", "problem_id", "name", "backend", "model", "correct", "runtime_us", "eager_us",
           "compile_us", "speedup_eager", "speedup_compile", "attempts", "cost_usd", "verdict",
           "flags"]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def score(tsv: Path) -> dict:
    r = run("score", tsv, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, list[Path]]:
    if shutil.which("gnuplot") is None:
        pytest.skip("no gnuplot (scripts/setup.sh installs gnuplot-nox)")
    tmp = tmp_path_factory.mktemp("charts")
    dbs = []
    for name in STORES:
        db = tmp / name.removesuffix(".gz")
        db.write_bytes(gzip.decompress((RESULTS / "landscapes" / name).read_bytes()))
        dbs.append(db)
    out = tmp / "out"
    args: list[str | Path] = ["charts", TSV, "--out", out, "--hardware", "NVIDIA H200"]
    for db in dbs:
        args += ["--db", db]
    r = run(*args)
    assert r.returncode == 0, r.stderr
    data = json.loads((out / "chart_data.json").read_text())
    return out, data, dbs


def chart(data: dict, chart_id: str) -> dict:
    return next(c for c in data["charts"] if c["id"] == chart_id)


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    return " ".join(t for t in root.itertext())


def test_every_chart_is_a_valid_png_and_svg_naming_its_series(charts) -> None:
    out, data, _ = charts
    assert [c["id"] for c in data["charts"]] == CHARTS
    for c in data["charts"]:
        w, h = png_size(out / f"{c['id']}.png")
        assert 600 <= w <= 2000 and 300 <= h <= 2400, (c["id"], w, h)
        text = svg_text(out / f"{c['id']}.svg")
        assert c["title"] in text, c["id"]
        for s in c.get("series", []):
            if s.get("frontier"):
                continue
            # a box's tic label is its run over lines of its own
            name = s["run"] if c["kind"] == "box" else s["name"]
            assert name in text, (c["id"], name)
        for label in c.get("x", {}).get("categories", []):
            assert label in text, (c["id"], label)


def test_runs_are_the_tsv_and_the_unclaimed_sessions_of_each_store(charts) -> None:
    _, data, dbs = charts
    labels = [r["label"] for r in data["runs"]]
    assert labels == [TSV.name] + [db.name for db in dbs]
    tsv_run = data["runs"][0]
    assert tsv_run["problems"] == 59 and tsv_run["devices"] == "NVIDIA H200"
    assert data["runs"][-1]["devices"] == "cpu"  # the CPU store recorded its device


def test_published_bars_equal_compare_and_score(charts) -> None:
    _, data, _ = charts
    c = chart(data, "fast_p_vs_published")
    r = run("compare", TSV, "--json")
    assert r.returncode == 0, r.stderr
    ours = {(x["system"], x["metric"], x["published"]["as_published"]): x
            for x in json.loads(r.stdout)["comparisons"]}
    tsv_series = next(s for s in c["series"] if s["name"] == TSV.name)
    assert tsv_series["ours"] and tsv_series["hardware"] == "NVIDIA H200"
    checked = 0
    for s in c["series"]:
        if s["ours"]:
            continue
        for i, value in enumerate(s["values"]):
            if value is None:
                continue
            match = [x for (system, metric, _), x in ours.items()
                     if system == s["name"] and metric == "fast_p"
                     and x["published"]["value"] == value]
            assert match, (s["name"], value)
            assert tsv_series["values"][i] == pytest.approx(match[0]["ours"]["value"])
            checked += 1
    assert checked >= 3
    # fast_1.0 vs eager on our level-1 rows is score's figure
    i = c["categories"].index("fast_1.0 vs eager, level 1")
    assert tsv_series["values"][i] == pytest.approx(score(TSV)["fast_p"]["eager"]["1.0"])


def test_distribution_and_heatmap_are_the_tsv_rows(charts) -> None:
    _, data, _ = charts
    rows = [dict(zip(COLUMNS, line.split("\t")))
            for line in TSV.read_text().splitlines()[1:] if line]
    for baseline in ("eager", "compile"):
        expect = sorted(float(r[f"speedup_{baseline}"]) for r in rows
                        if r["correct"] == "true" and r[f"speedup_{baseline}"])
        s = next(x for x in chart(data, "speedup_distribution")["series"]
                 if x["run"] == TSV.name and x["baseline"] == baseline)
        assert s["values"] == pytest.approx(expect)
        assert s["stats"]["n"] == len(expect) == score(TSV)["correct"]
    heat = chart(data, "problem_heatmap")
    col = heat["x"]["categories"].index(TSV.name)
    for r in rows:
        y = heat["y"]["categories"].index(f"L1 {int(r['problem_id']):>3} {r['name']}")
        z = heat["z"][y][col]
        if r["correct"] == "true":
            assert z == pytest.approx(float(r["speedup_eager"]))
        else:
            assert z is None and heat["text"][y][col] == r["verdict"]


def best_so_far_rows(db: Path, k: int) -> list[list[str]]:
    """The store's sessions as TSV rows after k attempts, read with sqlite3 here (not the binary)."""
    con = sqlite3.connect(db)
    rows = []
    sessions = con.execute("SELECT id, name, backend, model, options FROM sessions "
                           "ORDER BY created_at, id").fetchall()
    for i, (sid, name, backend, model, options) in enumerate(sessions):
        o = json.loads(options)
        level, number = o.get("level") or 0, o.get("number") or 0
        if not level:
            number = i + 1
        best = None
        for correct, speedup in con.execute(
                "SELECT correct, speedup FROM attempts WHERE session=? ORDER BY number LIMIT ?",
                (sid, k)):
            if correct and speedup is not None and (best is None or speedup > best):
                best = speedup
        rows.append([str(level), str(number), name, backend, model,
                     "true" if best is not None else "false", "", "", "",
                     "" if best is None else repr(best), "", str(k), "0", "v", ""])
    con.close()
    return rows


def test_scaling_is_score_of_the_best_so_far_after_k_attempts(charts, tmp_path: Path) -> None:
    _, data, dbs = charts
    scaling = chart(data, "scaling")
    for db in dbs:
        series = {s["p"]: s for s in scaling["series"] if s["run"] == db.name}
        assert set(series) == {"0.0", "1.0", "1.2"}
        ks = series["1.0"]["x"]
        assert ks == list(range(1, len(ks) + 1)) and len(ks) > 3
        for k in sorted({1, 2, len(ks) // 2, len(ks)}):
            tsv = tmp_path / f"{db.stem}_{k}.tsv"
            tsv.write_text("\t".join(COLUMNS) + "\n" +
                           "".join("\t".join(r) + "\n" for r in best_so_far_rows(db, k)))
            s = score(tsv)
            for p in ("0.0", "1.0", "1.2"):
                assert series[p]["y"][k - 1] == pytest.approx(s["fast_p"]["eager"][p]), (db, k)
            frontier_run = next(x for x in chart(data, "time_frontier")["series"]
                                if x["name"] == db.name)
            assert frontier_run["y"][k - 1] == pytest.approx(
                s["geomean_speedup_fallback"]["eager"])


def test_hardware_cells_are_score_of_the_pooled_rows(charts, tmp_path: Path) -> None:
    _, data, dbs = charts
    hw = chart(data, "hardware")
    assert hw["categories"] == ["NVIDIA H200", "cpu"]
    triton = next(s for s in hw["series"] if s["name"] == "triton")
    cpu = next(s for s in hw["series"] if s["name"] == "cpu")
    # cpu: every session of the CPU store, at its final attempt
    cpu_db = dbs[-1]
    rows = best_so_far_rows(cpu_db, 10**6)
    tsv = tmp_path / "cpu.tsv"
    tsv.write_text("\t".join(COLUMNS) + "\n" + "".join("\t".join(r) + "\n" for r in rows))
    assert cpu["values"][1] == pytest.approx(score(tsv)["fast_p"]["eager"]["1.0"])
    assert cpu["n"][1] == len(rows) and cpu["values"][0] is None
    assert triton["n"][0] == 59 + 1 + 4  # the TSV, L1_36's store, the four-problem store


@pytest.mark.parametrize("args,message", [
    (["missing.tsv"], "missing.tsv"),
    (["BAD"], "header lacks column"),
    (["GOOD", "--format", "png,jpg"], "unknown format 'jpg'"),
    (["GOOD", "--gnuplot", "/nonexistent/gnuplot"], "gnuplot-nox"),
    (["GOOD", "--db", "missing.db"], "no such store"),
    ([], "needs a results TSV"),
])
def test_bad_inputs_exit_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "BAD").write_text("level\tname\n1\tx\n")
    shutil.copy(TSV, tmp_path / "GOOD")
    r = subprocess.run([str(BINARY), "charts", *args, "--out", "out"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert not (tmp_path / "out" / "chart_data.json").exists()
