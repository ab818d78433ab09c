"""file_exists, file_absent, file_contains, file_content: the workdir after the agent finished."""

from __future__ import annotations

import os

import pytest

from proctor.checks import _common
from proctor.checks.file_content import Config as FileContentConfig
from proctor.checks.file_content import evaluate as file_content
from tests.checks.helpers import LONG, assert_cut


def write(ctx, rel: str, content: str | bytes = "") -> None:
    p = ctx.workdir / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)


# --- file_exists -------------------------------------------------------------------------

async def test_file_exists_relative_to_the_workdir(check, ctx):
    write(ctx, "build/dist/bundle.js", "x")
    out = await check("file_exists", ctx, path="build/dist/bundle.js")
    assert out.passed
    assert out.message == "build/dist/bundle.js exists (file)"


async def test_file_exists_accepts_a_directory(check, ctx):
    (ctx.workdir / "out").mkdir()
    out = await check("file_exists", ctx, path="out")
    assert out.passed
    assert "directory" in out.message


async def test_file_exists_absolute_path(check, ctx, tmp_path):
    (tmp_path / "abs.txt").write_text("x")
    assert (await check("file_exists", ctx, path=str(tmp_path / "abs.txt"))).passed


async def test_file_exists_renders_workdir_placeholder(check, ctx):
    write(ctx, "a.txt")
    assert (await check("file_exists", ctx, path="{{workdir}}/a.txt")).passed


async def test_file_exists_missing_file_fails_with_a_listing(check, ctx):
    write(ctx, "output.txt")
    (ctx.workdir / "src").mkdir()
    out = await check("file_exists", ctx, path="output.json")
    assert not out.passed and out.error is None
    assert out.message.startswith("file not found: output.json")
    assert "output.txt, src/" in out.message


async def test_file_exists_missing_nested_path_lists_nearest_directory(check, ctx):
    write(ctx, "build/other.js")
    out = await check("file_exists", ctx, path="build/dist/bundle.js")
    assert out.message.startswith("file not found: build/dist/bundle.js")
    assert "other.js" in out.message


async def test_file_exists_failure_listing_is_cut(check, ctx):
    names = [f"{i:02d}" + "n" * 200 for i in range(15)]
    for n in names:
        write(ctx, n)
    out = await check("file_exists", ctx, path="missing")
    assert not out.passed
    assert_cut(out.message, ", ".join(names))


async def test_file_exists_dangling_symlink_does_not_exist(check, ctx):
    os.symlink(ctx.workdir / "nowhere", ctx.workdir / "link")
    assert not (await check("file_exists", ctx, path="link")).passed


# --- file_absent -------------------------------------------------------------------------

async def test_file_absent_passes_when_missing(check, ctx):
    out = await check("file_absent", ctx, path=".tmp/cache")
    assert out.passed
    assert out.message == ".tmp/cache does not exist"


async def test_file_absent_fails_on_a_file(check, ctx):
    write(ctx, ".tmp/cache", "12345")
    out = await check("file_absent", ctx, path=".tmp/cache")
    assert not out.passed and out.error is None
    assert out.message == ".tmp/cache exists (a file, 5 bytes)"


async def test_file_absent_fails_on_a_directory_and_lists_it(check, ctx):
    write(ctx, ".tmp/a")
    (ctx.workdir / ".tmp" / "sub").mkdir()
    out = await check("file_absent", ctx, path=".tmp")
    assert not out.passed
    assert out.message == ".tmp exists (a directory holding: a, sub/)"


async def test_file_absent_fails_on_a_dangling_symlink(check, ctx):
    os.symlink(ctx.workdir / "nowhere", ctx.workdir / "link")
    out = await check("file_absent", ctx, path="link")
    assert not out.passed
    assert "dangling symlink" in out.message


async def test_file_absent_failure_listing_is_cut(check, ctx):
    names = [f"{i:02d}" + "n" * 200 for i in range(15)]
    for n in names:
        write(ctx, f"d/{n}")
    out = await check("file_absent", ctx, path="d")
    assert_cut(out.message, ", ".join(names))


# --- file_contains -----------------------------------------------------------------------

async def test_file_contains_substring(check, ctx):
    write(ctx, "config.json", '{\n  "name": "my-app",\n  "v": 1\n}\n')
    out = await check("file_contains", ctx, path="config.json", text='"name": "my-app"')
    assert out.passed


async def test_file_contains_failure_quotes_the_content(check, ctx):
    write(ctx, "config.json", '{"name": "other"}')
    out = await check("file_contains", ctx, path="config.json", text='"name": "my-app"')
    assert not out.passed
    assert "'\"name\": \"my-app\"' not found in config.json (17 bytes)" in out.message
    assert 'content:\n{"name": "other"}' in out.message


async def test_file_contains_missing_file_fails_never_errors(check, ctx):
    out = await check("file_contains", ctx, path="config.yaml", text="version: 1")
    assert out.passed is False
    assert out.error is None
    assert out.message.startswith("file not found: config.yaml")


async def test_file_contains_on_a_directory_fails(check, ctx):
    (ctx.workdir / "conf").mkdir()
    out = await check("file_contains", ctx, path="conf", text="x")
    assert not out.passed and out.error is None
    assert out.message == "conf is a directory, not a file"


async def test_file_contains_decodes_invalid_utf8_with_replacement(check, ctx):
    write(ctx, "bin.dat", b"\xff\xfeheader\x00 marker \xc3\x28")
    assert (await check("file_contains", ctx, path="bin.dat", text="marker")).passed


async def test_file_contains_reads_at_most_the_bound(check, ctx, monkeypatch):
    monkeypatch.setattr(_common, "MAX_FILE_BYTES", 10)
    write(ctx, "big.log", "0123456789" + "needle")
    assert (await check("file_contains", ctx, path="big.log", text="0123")).passed
    out = await check("file_contains", ctx, path="big.log", text="needle")
    assert not out.passed
    assert "(16 bytes, only the first 10 bytes were read)" in out.message


async def test_file_contains_failure_quotes_content_cut(check, ctx):
    write(ctx, "f.txt", LONG)
    out = await check("file_contains", ctx, path="f.txt", text="zzz")
    assert not out.passed
    assert_cut(out.message)


# --- file_content ------------------------------------------------------------------------

DRAFT = "To: finance@co\nSubject: Renewal of contract\n\nHello,\nconsole.log left here\n"


async def test_file_content_contains(check, ctx):
    write(ctx, "draft.txt", DRAFT)
    assert (await check("file_content", ctx, path="draft.txt", contains="Hello,")).passed
    out = await check("file_content", ctx, path="draft.txt", contains="Goodbye")
    assert not out.passed
    assert "does not contain 'Goodbye'" in out.message


async def test_file_content_not_contains_names_the_line(check, ctx):
    write(ctx, "draft.txt", DRAFT)
    out = await check("file_content", ctx, path="draft.txt", not_contains="console.log")
    assert not out.passed
    assert "contains 'console.log' (line 5: console.log left here)" in out.message
    assert (await check("file_content", ctx, path="draft.txt", not_contains="debugger")).passed


async def test_file_content_pattern_is_multiline(check, ctx):
    write(ctx, "draft.txt", DRAFT)
    # ^ matches at the start of the second line only with re.MULTILINE.
    out = await check("file_content", ctx, path="draft.txt", pattern=r"^Subject: Renewal\b")
    assert out.passed
    assert (await check("file_content", ctx, path="draft.txt", pattern=r"finance@co$")).passed
    out = await check("file_content", ctx, path="draft.txt", pattern=r"^Renewal")
    assert not out.passed
    assert "does not match pattern '^Renewal'" in out.message


async def test_file_content_clauses_are_anded(check, ctx):
    write(ctx, "draft.txt", DRAFT)
    ok = dict(contains="Hello", not_contains="password", pattern=r"^Subject:")
    out = await check("file_content", ctx, path="draft.txt", **ok)
    assert out.passed
    assert out.message == "draft.txt: contains, not_contains, pattern hold"
    for bad in ({"contains": "nope"}, {"not_contains": "Hello"}, {"pattern": "^nope"}):
        out = await check("file_content", ctx, path="draft.txt", **{**ok, **bad})
        assert not out.passed, bad


async def test_file_content_lists_every_failing_clause(check, ctx):
    write(ctx, "draft.txt", DRAFT)
    out = await check("file_content", ctx, path="draft.txt", contains="nope",
                      not_contains="Hello", pattern="^zzz")
    assert "does not contain 'nope'" in out.message
    assert "contains 'Hello'" in out.message
    assert "does not match pattern '^zzz'" in out.message


async def test_file_content_missing_file_fails(check, ctx):
    out = await check("file_content", ctx, path="draft.txt", not_contains="x")
    assert out.passed is False and out.error is None
    assert out.message.startswith("file not found: draft.txt")


async def test_file_content_invalid_pattern_errors_at_evaluate(ctx):
    # The loader rejects it; if one slips through, the check errors rather than fails.
    write(ctx, "draft.txt", DRAFT)
    cfg = FileContentConfig.model_construct(path="draft.txt", contains=None, not_contains=None,
                                            pattern="(unclosed")
    out = await file_content(cfg, ctx)
    assert out.error and "invalid pattern '(unclosed'" in out.error


def test_file_content_needs_a_clause():
    with pytest.raises(ValueError):
        FileContentConfig(path="x")


async def test_file_content_failure_quotes_content_cut(check, ctx):
    write(ctx, "f.txt", LONG)
    out = await check("file_content", ctx, path="f.txt", contains="zzz")
    assert not out.passed
    assert_cut(out.message)
