"""`file://GLOB` task includes."""

from __future__ import annotations

from tests.helpers.spec import loads, problems, write

TASK = "- id: {id}\n  intent: x\n  assert: [exit_code: 0]\n"


def test_globs_are_relative_to_the_including_file_and_double_star_recurses(spec_dir):
    write(spec_dir / "bench" / "cli-bench.yaml",
          "cli: x\ntasks:\n  - file://tasks/*.yaml\n  - file://deep/**/*.yml\n")
    write(spec_dir / "bench" / "tasks" / "b.yaml", TASK.format(id="b"))
    write(spec_dir / "bench" / "tasks" / "a.yaml", TASK.format(id="a"))
    write(spec_dir / "bench" / "deep" / "c.yml", TASK.format(id="c"))
    write(spec_dir / "bench" / "deep" / "x" / "y" / "d.yml", TASK.format(id="d"))
    result = loads("bench/cli-bench.yaml")
    assert [t.id for t in result.tasks] == ["a", "b", "c", "d"]
    assert result.tasks[3].source == str(spec_dir / "bench" / "deep" / "x" / "y" / "d.yml")
    assert result.files == 5


def test_included_files_are_not_specs_of_their_own_in_a_directory(spec_dir):
    write(spec_dir / "cli-bench.yaml", "cli: x\ntasks: [file://tasks/*.yaml]\n")
    write(spec_dir / "tasks" / "a.yaml", TASK.format(id="a"))
    result = loads(".")
    assert [t.id for t in result.tasks] == ["a"] and result.warnings == []


def test_a_glob_matching_nothing_is_an_error(spec_dir):
    write(spec_dir / "s.yaml", "cli: x\ntasks:\n  - file://tasks/*.yaml\n")
    assert problems("s.yaml") == [f"s.yaml:3:5: tasks[0]: file://tasks/*.yaml matched no files "
                                  f"(relative to {spec_dir})"]


def test_errors_in_an_included_file_point_into_it(spec_dir):
    write(spec_dir / "s.yaml", "cli: x\ntasks: [file://tasks/*.yaml]\n")
    write(spec_dir / "tasks" / "a.yaml", TASK.format(id="a") + "- id: b\n  intent: y\n  assert:\n    - exit_cod: 0\n")
    out = problems("s.yaml")
    assert out == [
        "tasks/a.yaml:7:7: [1].assert[0]: unknown assertion 'exit_cod'; did you mean 'exit_code'? "
        "(valid: exit_code, output_contains, output_equals, error_contains, file_exists, "
        "file_contains, ran, not_ran, run_count, verify, ran_in_order, tool_used, budget)"]


def test_an_included_file_must_be_a_list(spec_dir):
    write(spec_dir / "s.yaml", "cli: x\ntasks: [file://more.yaml]\n")
    write(spec_dir / "more.yaml", "id: a\nintent: x\n")
    assert problems("s.yaml") == ["more.yaml:1:1: <root>: an included file is a YAML list of tasks "
                                  "(`- id: ...`); got a mapping"]


def test_include_cycles_are_errors(spec_dir):
    write(spec_dir / "s.yaml", "cli: x\ntasks: [file://a.yaml]\n")
    write(spec_dir / "a.yaml", TASK.format(id="a") + "- file://b.yaml\n")
    write(spec_dir / "b.yaml", "- file://a.yaml\n")
    assert problems("s.yaml") == ["b.yaml:1:3: [0]: file://a.yaml includes "
                                  f"{spec_dir}/a.yaml, which includes this file"]


def test_duplicate_ids_across_includes(spec_dir):
    write(spec_dir / "s.yaml", "cli: x\ntasks:\n  - id: a\n    intent: x\n    assert: [exit_code: 0]\n"
          "  - file://t.yaml\n")
    write(spec_dir / "t.yaml", TASK.format(id="a"))
    assert problems("s.yaml") == ["t.yaml:1:7: [0].id: duplicate task id 'a' (first at s.yaml:3:9); "
                                  "task ids must be unique across all specs loaded together"]


def test_a_file_matched_by_two_includes_loads_once(spec_dir):
    # CLIWatch's README pattern: the basics first, then everything (basics again).
    write(spec_dir / "cli-bench.yaml",
          "cli: x\ntasks:\n  - file://tasks/basics.yaml\n  - file://tasks/**/*.yaml\n")
    write(spec_dir / "tasks" / "basics.yaml", TASK.format(id="a"))
    write(spec_dir / "tasks" / "more" / "b.yaml", TASK.format(id="b"))
    result = loads("cli-bench.yaml")
    assert [t.id for t in result.tasks] == ["a", "b"]
    assert result.warnings == [] and result.files == 3
