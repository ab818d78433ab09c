"""A seeded fuzz of the loader: ≥ 300 mutations of the bundled examples and the spec fixtures,
each through `proctor validate` (and a sample through `proctor run --agent oracle`). Every
one must end in exit 0, or exit 2 with `FILE:LINE:COL: field: message` lines (or one
`proctor:` line), in under 5 s, without a traceback."""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import subprocess
import time
from pathlib import Path

import pytest

from proctor.spec.load import validate_paths
from tests.helpers import REPO
from tests.helpers.cli import Cli

SEED = 20261124
SOURCES = sorted([*REPO.glob("examples/*/*.yaml"), *REPO.glob("tests/fixtures/specs/valid/*.yaml")])
POSITIONED = re.compile(r"^\S.*:\d+:\d+: ")
FIXED = [
    ("deep nesting", lambda t: "cli: sh\ntasks:\n  - id: t\n    intent: x\n    assert:\n"
     "      - exit_code: " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ("billion laughs", lambda t: "cli: sh\nenv:\n  a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"  {c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True))
     + "tasks: [{id: t, intent: x, assert: [{exit_code: 0}]}]\n"),
    ("self alias", lambda t: "cli: sh\ntasks:\n  - &x {id: a, intent: x, env: *x}\n"),
    ("merge scalar", lambda t: "cli: sh\ntasks:\n  - <<: 5\n    id: a\n    intent: x\n"),
    ("huge memory", lambda t: "version: 1\nid: m\ntask: {prompt: x}\nresources: {memory: 9999t}\n"
     "invariants: {a: {description: x, check: {type: command_exit, command: 'true'}}}\n"),
    ("huge matrix", lambda t: "version: 1\nid: m\ntask: {prompt: x}\nparallelism:\n  matrix:\n"
     + "".join(f"    k{i}: [0,1,2,3,4,5,6,7,8,9]\n" for i in range(7))
     + "invariants: {a: {description: x, check: {type: command_exit, command: 'true'}}}\n"),
    ("seed device", lambda t: "version: 1\nid: s\ntask: {prompt: x}\nservices:\n"
     "  - {name: db, type: postgres, seed: /dev/null}\n"
     "invariants: {a: {description: x, check: {type: command_exit, command: 'true'}}}\n"),
    ("secret device", lambda t: "version: 1\nid: s\ntask: {prompt: x}\nsecrets:\n"
     "  - {name: S, source: 'file:/dev/zero'}\n"
     "invariants: {a: {description: x, check: {type: command_exit, command: 'true'}}}\n"),
]


def _mutations(text: str, rng: random.Random) -> list[tuple[str, str | bytes]]:
    lines = text.splitlines(keepends=True)
    n = max(len(lines), 1)
    cut = rng.randrange(len(text) + 1)
    i = rng.randrange(n)
    words = re.findall(r"\b[a-z_]+:", text) or ["id:"]
    key = rng.choice(words)
    return [
        ("truncated", text[:cut]),
        ("line dropped", "".join(lines[:i] + lines[i + 1:])),
        ("line doubled", "".join(lines[:i + 1] + lines[i:])),
        ("wrong type", text.replace(key, f"{key} [1, 2]\n_x:", 1)),
        ("huge number", re.sub(r"\b\d+\b", "9" * 400, text, count=1)),
        ("unicode", text.replace(key, key[:-1] + "\u0301\U0001f600:", 1)),
        ("binary", text.encode()[:cut] + bytes(rng.randrange(256) for _ in range(64))),
        ("indent broken", "".join(("  " + ln if j == i else ln) for j, ln in enumerate(lines))),
        ("tabbed", text.replace("  ", "\t", 3)),
        ("yaml specials", text.replace(key, f"{key} !!python/object:os.system\n_y:", 1)),
        ("anchor reuse", "x: &a {b: *a}\n" + text),
        ("include glob", text.replace("tasks:", "tasks: [file://nope/**/*.yaml]\n_t:", 1)),
        ("missing file", text.replace(".sql", "-missing.sql").replace("scaffold: ",
                                                                       "scaffold: nope/")),
    ]


def _cases() -> list[tuple[str, str, str | bytes]]:
    rng = random.Random(SEED)
    cases = [(f"{name}", "fixed", make("")) for name, make in FIXED]
    for _round in range(2):  # another cut, line and key each time
        for src in SOURCES:
            text = src.read_text()
            for kind, mutant in _mutations(text, rng):
                cases.append((kind, src.name, mutant))
    return cases


CASES = _cases()


def test_the_fuzz_is_big_enough():
    assert len(CASES) >= 300, len(CASES)


def _check_output(code: int, err: str, label: str) -> None:
    assert code in (0, 2), (label, code, err[-2000:])
    assert "Traceback" not in err, (label, err[-2000:])
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(" ")]
        assert lines, label
        for line in lines:
            assert POSITIONED.match(line) or line.startswith("proctor:"), (label, line)


def _write(tmp_path: Path, mutant: str | bytes, src: str) -> Path:
    d = tmp_path / "spec"
    d.mkdir(parents=True, exist_ok=True)
    original = next((p for p in SOURCES if p.name == src), None)
    if original is not None:  # keep the neighbours (seeds, scripts) a spec refers to
        for sibling in original.parent.iterdir():
            if sibling.name != original.name and not (d / sibling.name).exists():
                os.symlink(sibling, d / sibling.name)
    path = d / "spec.yaml"
    path.write_bytes(mutant if isinstance(mutant, bytes) else mutant.encode())
    return path


@pytest.mark.parametrize("chunk", range(4))
def test_validate_never_crashes_hangs_or_loses_the_position(tmp_path, chunk):
    for n, (kind, src, mutant) in enumerate(CASES):
        if n % 4 != chunk or kind == "deep nesting":
            continue
        case_dir = tmp_path / str(n)
        case_dir.mkdir()
        path = _write(case_dir, mutant, src)
        err = io.StringIO()
        t0 = time.monotonic()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = validate_paths([str(path)])
            except SystemExit as e:  # pragma: no cover - would be a bug
                code = e.code
        assert time.monotonic() - t0 < 5, (kind, src)
        _check_output(code, err.getvalue(), f"{kind} of {src}")


def _cli(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    return Cli(cwd)(*args, timeout=timeout)


def test_crash_prone_inputs_in_a_real_process(tmp_path):
    """Deep nesting (a C stack overflow in libyaml), FIFOs, devices, symlink loops: each in a
    real `proctor validate`, with a timeout."""
    deep = _write(tmp_path / "deep", dict(FIXED)["deep nesting"](""), "fixed")
    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "spec.yaml")
    zero_dir = tmp_path / "zero"
    zero_dir.mkdir()
    os.symlink("/dev/zero", zero_dir / "spec.yaml")
    loop = tmp_path / "loop"
    (loop / "tasks" / "sub").mkdir(parents=True)
    os.symlink("..", loop / "tasks" / "sub" / "up")
    (loop / "tasks" / "t.yaml").write_text("- {id: l1, intent: x, assert: [{exit_code: 0}]}\n")
    (loop / "spec.yaml").write_text("cli: sh\ntasks: [file://tasks/**/*.yaml]\n")
    for target in (deep, fifo_dir, fifo_dir / "spec.yaml", zero_dir / "spec.yaml",
                   loop / "spec.yaml"):
        t0 = time.monotonic()
        out = _cli("validate", str(target), cwd=tmp_path)
        assert time.monotonic() - t0 < 5, target
        _check_output(out.returncode, out.stderr, str(target))
    assert "1 task(s)" in _cli("validate", str(loop / "spec.yaml"), cwd=tmp_path).stdout


@pytest.mark.slow
def test_run_with_the_oracle_on_a_sample(tmp_path):
    rng = random.Random(SEED + 1)
    sample = rng.sample([c for c in CASES if c[0] != "deep nesting"], 12)
    for n, (kind, src, mutant) in enumerate(sample):
        d = tmp_path / str(n)
        d.mkdir()
        path = _write(d, mutant, src)
        t0 = time.monotonic()
        out = _cli("run", str(path), "--agent", "oracle", "-q", "--output-dir", str(d / "run"),
                   cwd=d, timeout=120)
        assert "Traceback" not in out.stderr, (kind, src, out.stderr[-2000:])
        assert out.returncode in (0, 1, 2), (kind, src, out.returncode, out.stderr[-2000:])
        if out.returncode == 2:
            _check_output(2, out.stderr, f"run: {kind} of {src}")
        assert time.monotonic() - t0 < 60, (kind, src)
