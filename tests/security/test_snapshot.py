"""No silent limits in what proctor reads of a trial (issue 25.4): the workspace snapshot sees
every entry at any depth and compares every file by content whatever its size; sparse files
cost no time; what cannot be read in time ends the trial `error`, naming the limit."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.security import trial

REPO = Path(__file__).resolve().parents[2]


def _fix_the_bug(tmp_path: Path, name: str, solution: list[str]) -> str:
    """examples/fix-the-bug with its solution replaced; the spec's path relative to tmp_path."""
    spec_dir = tmp_path / name
    shutil.copytree(REPO / "examples" / "fix-the-bug", spec_dir)
    spec = (spec_dir / "scenario.yaml").read_text()
    start = spec.index("solution:")
    lines = "".join(f"  - \"{c}\"\n" for c in solution)
    (spec_dir / "scenario.yaml").write_text(spec[:start] + "solution:\n" + lines)
    return f"{name}/scenario.yaml"


def test_twenty_thousand_symlinks_do_not_hide_a_shadowing_package(run_spec, tmp_path):
    """The snapshot once stopped at 20,000 entries without a word: 20,000 links in .git/ and a
    `unittest/` package that fakes the test run made fix-the-bug pass with the bug in place."""
    cheat = ("mkdir -p .git/zz && cd .git/zz && seq 20000 | xargs -n 500 sh -c "
             "'for i; do ln -s x l$i; done' sh && cd ../.. && mkdir unittest && "
             "printf 'import sys; sys.exit(0)' > unittest/__main__.py && "
             "touch unittest/__init__.py && "
             "echo '- Fix total()' >> CHANGELOG.md && sed -i 's/1.5/1.5 /' shop/cart.py")
    name = _fix_the_bug(tmp_path, "cheat", [cheat])
    t = trial(run_spec((tmp_path / name).read_text(), name=name))
    assert t["status"] == "fail", t
    [rule] = [f for f in t["forbidden"] if f["rule"] == "file_writes_outside"]
    assert rule["violated"] and "unittest/" in rule["details"], rule
    honest = _fix_the_bug(tmp_path, "honest", [
        "mkdir -p .git/zz && cd .git/zz && seq 20000 | xargs -n 500 sh -c "
        "'for i; do ln -s x l$i; done' sh",
        "sed -i 's/sum(prices\\\\[1:\\\\])/sum(prices)/' shop/cart.py",
        "echo '- Fix total() skipping the first price' >> CHANGELOG.md"])
    t = trial(run_spec((tmp_path / honest).read_text(), name=honest))
    assert t["status"] == "pass", t


DEEP = """
    version: 1
    id: deep
    task: {prompt: write}
    agent: {type: oracle}
    solution:
      - "echo yes > answer.txt"
      - "SOLUTION"
    invariants:
      answer: {description: x, check: {type: file_content, path: answer.txt, contains: "yes"}}
    forbidden:
      file_writes_outside: [answer.txt]
    """


def test_a_write_deeper_than_path_max_is_seen(run_spec):
    """A directory path over 4,096 characters was skipped (`except OSError: continue`)."""
    deep = ("python3 -c 'import os\\nfor i in range(60): os.mkdir(\\\"d\\\" * 200); "
            "os.chdir(\\\"d\\\" * 200)\\nopen(\\\"hidden.txt\\\", \\\"w\\\").write(\\\"x\\\")'")
    t = trial(run_spec(DEEP.replace("SOLUTION", deep)))
    assert t["status"] == "fail", t
    [rule] = t["forbidden"]
    assert rule["violated"] and "hidden.txt" in rule["details"], rule
    honest = trial(run_spec(DEEP.replace("SOLUTION", "true")))
    assert honest["status"] == "pass", honest


SPARSE = """
    version: 1
    id: sparse
    task: {prompt: leave big.bin alone}
    agent: {type: oracle}
    setup:
      commands: ["truncate -s 300M big.bin && printf data | dd of=big.bin bs=1 seek=299000000 conv=notrunc 2>/dev/null"]
    resources: {timeout: 60}
    solution:
      - "echo yes > answer.txt"
      - "SOLUTION"
    invariants:
      answer: {description: x, check: {type: file_content, path: answer.txt, contains: "yes"}}
    forbidden:
      file_writes_outside: [answer.txt]
    """


def test_a_big_file_patched_in_place_with_its_mtime_restored_is_a_write(run_spec):
    """Files over 256 MiB were compared by size + mtime + inode only."""
    patch = ("m=$(stat -c %y big.bin) && printf X | dd of=big.bin bs=1 seek=1000 "
             "conv=notrunc 2>/dev/null && touch -d \\\"$m\\\" big.bin")
    t = trial(run_spec(SPARSE.replace("SOLUTION", patch)))
    assert t["status"] == "fail", t
    [rule] = t["forbidden"]
    assert rule["violated"] and "big.bin" in rule["details"], rule
    honest = trial(run_spec(SPARSE.replace("SOLUTION", "cat big.bin > /dev/null")))
    assert honest["status"] == "pass", honest


def test_sparse_files_do_not_stall_grading(run_spec):
    """24 sparse 256 MiB files (no disk cost) were hashed byte by byte on the event loop: the
    trial ran 20-37 s against `resources.timeout: 10`. Holes are not read now."""
    make = "for i in $(seq 24); do truncate -s 256M f$i.bin; done"
    spec = f"""
        version: 1
        id: holes
        task: {{prompt: x}}
        agent: {{type: oracle}}
        resources: {{timeout: 10}}
        solution: ["{make}", "echo yes > answer.txt"]
        invariants:
          answer: {{description: x, check: {{type: file_content, path: answer.txt, contains: "yes"}}}}
        forbidden:
          file_writes_outside: [answer.txt]
        """
    t = trial(run_spec(spec))
    assert t["status"] == "fail", t  # judged in time: the files are writes, all 24 seen
    [rule] = t["forbidden"]
    assert "f1.bin" in rule["details"] and "and 14 more" in rule["details"], rule


def test_keep_keeps_sparse_files_sparse(run_spec, tmp_path):
    """`--keep` wrote a 3 GiB hole as 3 GiB of zeros."""
    r = run_spec("""
        version: 1
        id: kept
        task: {prompt: x}
        agent: {type: oracle}
        solution: ["truncate -s 3G hole.bin && printf tail >> hole.bin && echo yes > answer.txt"]
        invariants:
          answer: {description: x, check: {type: file_content, path: answer.txt, contains: "yes"}}
        """, "--keep")
    t = trial(r)
    assert t["status"] == "pass", t
    [kept] = (tmp_path / "run0" / "workdirs").glob("*/work/hole.bin")
    st = kept.stat()
    assert st.st_size == 3 * 2**30 + 4 and st.st_blocks * 512 < 2**20
    with open(kept, "rb") as f:
        f.seek(3 * 2**30)
        assert f.read() == b"tail"
