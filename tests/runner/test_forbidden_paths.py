"""`file_writes_outside` matches paths as written in the spec (docs/scoring.md): `.` is the
workdir, a relative path is relative to it, an absolute path is absolute, and a path covers
itself and what is under it by whole names. Checked against a transcription over lists of
names on generated paths (hypothesis), and on the cases that once went wrong."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from proctor.trial.forbidden import Observed, evaluate, under

settings.register_profile("proctor", max_examples=100, deadline=None)
settings.load_profile("proctor")

# Names that are prefixes of one another, so prefix confusion would show.
names = st.sampled_from(["tmp", "tmpx", "a", "ab", "app", "workspace", "usr", "bin", "x.txt"])
steps = st.one_of(names, names, names, st.sampled_from([".", ".."]))  # mostly plain names


def resolve(parts: list[str], base: list[str]) -> list[str]:
    """A path's names from `base` (a list of names under /), `.` and `..` applied."""
    out = list(base)
    for p in parts:
        if p == "..":
            out = out[:-1]
        elif p not in (".", ""):
            out.append(p)
    return out


def spec_under(path: tuple[bool, list[str]], allowed: list[tuple[bool, list[str]]],
               workdir: list[str]) -> bool:
    """The rule in words: after resolving, the allowed path's names begin the written one's."""
    p = resolve(path[1], [] if path[0] else workdir)
    return any(p[:len(a)] == a for a in
               (resolve(parts, [] if absolute else workdir) for absolute, parts in allowed))


def text(path: tuple[bool, list[str]], slash: bool = False) -> str:
    absolute, parts = path
    s = "/".join(parts) or ("" if absolute else ".")
    return ("/" if absolute else "") + s + ("/" if slash and parts else "")


paths = st.tuples(st.booleans(), st.lists(steps, max_size=4))
snapshot_paths = st.tuples(st.booleans(), st.lists(names, min_size=1, max_size=4))
workdirs = st.lists(names, min_size=1, max_size=3)


@given(snapshot_paths, st.lists(st.tuples(paths, st.booleans()), max_size=3), workdirs)
def test_a_write_is_allowed_exactly_when_it_is_under_an_allowed_path(path, allowed, workdir):
    written = [text(a, slash) for a, slash in allowed]
    assert under(text(path), written, "/" + "/".join(workdir)) == \
        spec_under(path, [a for a, _ in allowed], workdir)


@given(snapshot_paths, workdirs)
def test_dot_is_the_workdir_and_nothing_else(path, workdir):
    wd = "/" + "/".join(workdir)
    inside = not path[0] or resolve(path[1], [])[:len(workdir)] == workdir
    assert under(text(path), ["."], wd) == inside


@given(st.lists(names, min_size=1, max_size=3), names, workdirs)
def test_an_absolute_path_covers_itself_and_below_but_not_a_longer_name(parts, last, workdir):
    base = "/" + "/".join(parts)
    wd = "/" + "/".join(workdir)
    assert under(base, [base], wd) and under(base + "/" + last, [base], wd)
    assert under(base + "/" + last, [base + "/"], wd)
    assert not under(base + "x", [base], wd)


def _rule(allowed: list[str], writes: list[str], workdir: str = "/app", home: str = "") -> str:
    seen = Observed(file_writes=[{"path": p, "change": "modified", "size": 1} for p in writes],
                    workdir=workdir, home=home)
    [result] = evaluate({"file_writes_outside": allowed}, seen, {})
    return result["details"]


def test_the_gate_harbor_docs_suggest_catches_a_replaced_system_program():
    # `[., /tmp]`: the workdir and /tmp, not everything (it once allowed /usr/bin/bash)
    assert _rule([".", "/tmp"], ["out.txt", "/tmp/scratch", "sub/dir/f"]) == ""
    assert _rule([".", "/tmp"], ["/usr/bin/bash", "/tmpx/f", "/tmp"]) == (
        "file writes outside the allowed paths: modified /usr/bin/bash, modified /tmpx/f")


def test_absolute_paths_are_absolute_and_relative_ones_are_in_the_workdir():
    assert _rule(["/workspace/out"], ["out/a", "outx"], workdir="/workspace") == (
        "file writes outside the allowed paths: modified outx")
    assert _rule(["/tmp/"], ["/tmp/a/b"]) == ""  # once stripped to `tmp`, it never matched
    assert _rule(["tmp"], ["/tmp/a"]) != ""  # `tmp` is the workdir's tmp, not /tmp
    assert _rule(["../shared"], ["/shared/x", "shared/x"], workdir="/app") == (
        "file writes outside the allowed paths: modified shared/x")
    assert _rule(["/"], ["/etc/passwd", "a"]) == ""


def test_a_tilde_is_the_agents_home():
    assert _rule(["~/.cache"], ["/home/agent/.cache/x", "/home/agent/.bashrc"],
                 home="/home/agent") == "file writes outside the allowed paths: modified /home/agent/.bashrc"
    assert _rule(["~"], ["/home/agent/.bashrc"], home="/home/agent") == ""
    assert _rule(["~x"], ["~x/a"]) == ""  # only `~` and `~/...`: `~x` is a name in the workdir
