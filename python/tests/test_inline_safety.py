"""The build server against a hostile build.ninja (inline_safety.py, inline_cache.py,
inline_nvcc.write_module_id): each test replays an attack a review reproduced and fails without
the fix.

- Programs: a compiler, nvcc's -ccbin or the linker named by the candidate (in its own
  directories, /tmp, the caches) is never run by the worker, not even for --version; the
  programs it does accept are probed through the build sandbox (Builder.run).
- Outputs: a compile rule that links its output to a secret (or makes it a FIFO) gets nothing
  read or cached; the module id file is written only inside the output directory.
"""
from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from openkernel_worker import inline_cache, inline_nvcc, inline_safety
from openkernel_worker.inline_build import Job, Unit, Unsupported

CXX = shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler on PATH")


def _evil(where: Path) -> tuple[Path, Path]:
    """A program that leaves a marker when anything runs it (as the worker's user)."""
    where.mkdir(parents=True, exist_ok=True)
    marker = where / "ran"
    prog = where / "evil"
    prog.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\necho 'gcc 1.0'\n")
    prog.chmod(0o755)
    return prog, marker


def _builder(tmp_path: Path) -> inline_cache.Builder:
    return inline_cache.Builder(str(tmp_path / "cache" / "inline"), dict(os.environ),
                                sandboxed=False)


@pytest.mark.parametrize("where", ["scratch", "ext", "cache", "tmp"])
def test_candidate_named_compiler_is_never_run(tmp_path: Path, where: str) -> None:
    builder = _builder(tmp_path)
    place = {"scratch": tmp_path / "scratch", "ext": tmp_path / "cache" / "torch_extensions" / "x",
             "cache": tmp_path / "cache" / "inline.work", "tmp": tmp_path / "elsewhere"}[where]
    prog, marker = _evil(place)
    roots = [str(tmp_path / "scratch"), str(tmp_path / "cache" / "torch_extensions" / "x")]
    with pytest.raises(Unsupported, match="candidates can write|neither"):
        builder.identity(f"{prog} -c @IN@ -o @OUT@", roots)
    assert not marker.exists()


def test_relative_and_missing_compilers_are_refused(tmp_path: Path) -> None:
    builder = _builder(tmp_path)
    with pytest.raises(Unsupported, match="relative"):
        builder.identity("./evil -c x", [str(tmp_path)])
    with pytest.raises(Unsupported, match="not found"):
        builder.identity("no-such-compiler-okx -c x", [str(tmp_path)])


@needs_cxx
def test_ccbin_named_by_the_candidate_is_never_run(tmp_path: Path) -> None:
    builder = _builder(tmp_path)
    prog, marker = _evil(tmp_path / "scratch")
    src = tmp_path / "scratch" / "cuda.cu"
    src.write_text("int x;\n")
    unit = Unit("cuda", str(src), str(src.parent / "cuda.o"),
                f"{CXX} -ccbin {prog} -c @IN@ -o @OUT@")
    with pytest.raises(Unsupported):
        builder.unit(Job(str(src.parent), [unit]), unit, str(src), [str(src.parent)])
    assert not marker.exists()


@needs_cxx
def test_probes_go_through_the_build_sandbox(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """--version and -print-* run through Builder.run (bwrap when sandboxed), never directly;
    the ld the driver names must pass as the driver did."""
    builder = _builder(tmp_path)
    ran: list[str] = []
    evil_ld, marker = _evil(tmp_path / "scratch")

    def fake_run(command: str, out_dir: str, binds: Any = (), cwd: Any = None) -> Any:
        ran.append(command)
        if "-print-prog-name=ld" in command:
            return inline_cache.Run(0, f"{evil_ld}\n")
        return inline_cache.Run(0, "libraries: =/usr/lib\n" if "search-dirs" in command
                                else "c++ 1.0\n")

    monkeypatch.setattr(builder, "run", fake_run)
    monkeypatch.setattr(inline_cache, "_IDENTITY", {})
    monkeypatch.setattr(inline_cache, "_LINKERS", {})
    assert builder.identity(f"{CXX} -c x", [str(tmp_path / "scratch")])
    assert ran and ran[0].endswith("--version")
    with pytest.raises(Unsupported, match="candidates can write"):
        builder.linker(f"{CXX} -shared a.o -o x.so", [str(tmp_path / "scratch")])
    assert any("-print-prog-name=ld" in c for c in ran)
    assert not marker.exists()


# -- outputs -----------------------------------------------------------------------------------


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "home" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("SECRET KEY\n")
    return secret


def test_store_refuses_a_linked_output(tmp_path: Path) -> None:
    builder = _builder(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "unit.o").symlink_to(_secret(tmp_path))
    dest = Path(builder.cache, "objects", "a" * 64 + ".o")
    with pytest.raises(OSError):
        builder._store(str(out / "unit.o"), str(dest))
    assert not dest.exists() and not list(dest.parent.iterdir())


def test_store_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    builder = _builder(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "unit.o")
    dest = Path(builder.cache, "objects", "b" * 64 + ".o")
    with pytest.raises(OSError, match="not a regular file"):
        builder._store(str(out / "unit.o"), str(dest))
    assert not dest.exists()


def test_store_copies_a_regular_output_read_only(tmp_path: Path) -> None:
    builder = _builder(tmp_path)
    built = tmp_path / "unit.o"
    built.write_bytes(b"\x7fELF object")
    dest = Path(builder.cache, "objects", "c" * 64 + ".o")
    builder._store(str(built), str(dest))
    assert dest.read_bytes() == b"\x7fELF object" and (dest.stat().st_mode & 0o777) == 0o444


def _hostile_run(secret: Path, names: tuple[str, ...]) -> Any:
    """A Builder.run whose 'compile' links each output it is asked for to the secret (what
    `ln -sf <secret> $out` in a compile rule does inside the build sandbox)."""
    def run(command: str, out_dir: str, binds: Any = (), cwd: Any = None) -> Any:
        for word in shlex.split(command):
            if os.path.basename(word) in names:
                if os.path.lexists(word):
                    os.remove(word)
                os.symlink(secret, word)
        return inline_cache.Run(0, "")
    return run


def test_preprocess_refuses_linked_outputs(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    builder = _builder(tmp_path)
    monkeypatch.setattr(builder, "run", _hostile_run(_secret(tmp_path), ("unit.ii", "unit.d")))
    out = tmp_path / "out"
    out.mkdir()
    unit = Unit("cxx", str(tmp_path / "main.cpp"), str(tmp_path / "main.o"),
                "c++ -MMD -MF @OUT@.d -c @IN@ -o @OUT@")
    with pytest.raises(OSError):
        builder._preprocess(unit, str(out), [])


def test_pch_refuses_a_linked_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builder = _builder(tmp_path)
    secret = _secret(tmp_path)
    hostile = _hostile_run(secret, ("pch.h.gch",))

    def run(command: str, out_dir: str, binds: Any = (), cwd: Any = None) -> Any:
        Path(out_dir, "pch.d").write_text(f"pch.h.gch: {secret}\n")
        return hostile(command, out_dir)

    monkeypatch.setattr(builder, "run", run)
    monkeypatch.setattr(builder, "identity", lambda command, roots: "id")
    unit = Unit("cxx", str(tmp_path / "b" / "main.cpp"), str(tmp_path / "b" / "main.o"),
                "c++ -c @IN@ -o @OUT@")
    with pytest.raises(OSError, match="not a regular file"):
        builder._pch(unit, {}, [str(tmp_path / "b")])
    cached = [p for p in Path(builder.cache, "pch").rglob("*") if p.is_file()]
    assert not any(p.read_bytes() == secret.read_bytes() for p in cached), cached


@pytest.mark.parametrize("path", ["../escaped.module_id", "/ABS/escaped.module_id",
                                  "keep/../../escaped.module_id", "link/k.module_id"])
def test_module_id_file_stays_in_the_output_directory(tmp_path: Path, path: str) -> None:
    out = tmp_path / "out"
    (out / "keep").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "link").symlink_to(elsewhere)
    path = path.replace("/ABS", str(tmp_path))
    with pytest.raises(OSError):
        inline_nvcc.write_module_id(str(out), path, "_id")
    assert not (tmp_path / "escaped.module_id").exists()
    assert not list(elsewhere.iterdir())


def test_module_id_file_replaces_a_planted_link(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "keep").mkdir(parents=True)
    target = _secret(tmp_path)
    (out / "keep" / "k.module_id").symlink_to(target)
    inline_nvcc.write_module_id(str(out), "keep/k.module_id", "_id_1")
    assert target.read_text() == "SECRET KEY\n"  # the link's target untouched
    assert not (out / "keep" / "k.module_id").is_symlink()
    assert (out / "keep" / "k.module_id").read_text() == "_id_1"
    inline_nvcc.write_module_id(str(out), str(out / "keep" / "k.module_id"), "_id_2")  # absolute
    assert (out / "keep" / "k.module_id").read_text() == "_id_2"


def test_copy_tree_refuses_links(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok").write_text("x")
    (src / "bad").symlink_to(_secret(tmp_path))
    with pytest.raises(OSError):
        inline_safety.copy_tree_regular(str(src), str(tmp_path / "dest"))
