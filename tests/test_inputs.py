"""inputs.py: the files a run reads besides its specs (what --resume fingerprints)."""

from __future__ import annotations

from pathlib import Path

from proctor import inputs
from proctor.spec.load import load_specs

SUITE = """cli: sh
tasks:
""" + "".join(f"""  - id: t{i}
    intent: Write the file.
    solution: ["echo hello > out.txt"]
    assert: [{{file_contains: {{path: out.txt, text: hello}}}}]
""" for i in range(6))


def test_a_suites_mock_scripts_are_looked_up_once_each(tmp_path, monkeypatch):
    """Its tasks share the spec's directory: each script name (--model mock/NAME) is looked
    up there (and in the current directory) once, not once a task; found or built-in
    (mock/solver), the same answer for every task."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "suite.yaml").write_text(SUITE)
    (tmp_path / "s" / "m.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    tasks = load_specs([str(tmp_path / "s" / "suite.yaml")]).tasks
    looked: list[Path] = []
    is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda p: looked.append(p) or is_file(p))
    models = ["mock/m.json", "mock/solver"]
    assert inputs.referenced(tasks, models) == {tmp_path / "s" / "m.json"}
    assert sorted(map(str, looked)) == sorted([str(tmp_path / "s" / "m.json"),
                                               str(tmp_path / "s" / "solver"), "solver"])
    assert {str(inputs.mock_scripts(t, models)) for t in tasks} == {
        str([("m.json", tmp_path / "s" / "m.json")])}
