"""Suite dialect: every rule reports FILE:LINE:COL: path: message (load_specs)."""

from __future__ import annotations

from tests.helpers.spec import loads, problems, write

HEAD = """
cli: git
tasks:
  - id: t1
    intent: do it
"""


def suite(spec_dir, body: str, head: str = HEAD) -> str:
    write(spec_dir / "s.yaml", head + body)
    return "s.yaml"


def test_unknown_assertion_suggests_and_lists_valid(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - exit_code: 0\n      - file_contain: x\n"))
    assert out == [
        "s.yaml:7:9: tasks[0].assert[1]: unknown assertion 'file_contain'; did you mean "
        "'file_contains'? (valid: exit_code, output_contains, output_equals, error_contains, "
        "file_exists, file_contains, ran, not_ran, run_count, verify, ran_in_order, tool_used, "
        "budget)"
    ]


def test_invariant_type_as_assertion_says_so(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - command_exit: {command: x}\n"))
    assert out[0].startswith("s.yaml:6:9: tasks[0].assert[0]: unknown assertion 'command_exit' "
                             "(that is a scenario invariant check)")


def test_unknown_top_level_key_suggests(spec_dir):
    write(spec_dir / "s.yaml", """
        cli: git
        provider: [openai/gpt-4.1]
        tasks:
          - {id: a, intent: b, assert: [exit_code: 0]}
    """)
    out = problems("s.yaml")
    assert out[0].startswith("s.yaml:2:1: provider: unknown key 'provider'; did you mean 'providers'? (valid: cli, ")


def test_unknown_task_key_suggests(spec_dir):
    out = problems(suite(spec_dir, "    asert: [exit_code: 0]\n"))
    assert "s.yaml:3:5: tasks[0].assert: missing required field 'assert'" in out[0]
    assert out[1].startswith("s.yaml:5:5: tasks[0].asert: unknown key 'asert'; did you mean 'assert'?")


def test_max_turns_range(spec_dir):
    out = problems(suite(spec_dir, "    max_turns: 21\n    assert: [exit_code: 0]\n"))
    assert out == ["s.yaml:5:16: tasks[0].max_turns: must be at most 20, got the number 21"]
    out = problems(suite(spec_dir, "    max_turns: 0\n    assert: [exit_code: 0]\n"))
    assert out == ["s.yaml:5:16: tasks[0].max_turns: must be at least 1, got the number 0"]


def test_max_turns_default_is_5(spec_dir):
    (task,) = loads(suite(spec_dir, "    assert: [exit_code: 0]\n")).tasks
    assert task.agent.max_turns == 5 and task.timeout == 300 and task.repeat == 1


def test_repeat_range_task_and_suite(spec_dir):
    out = problems(suite(spec_dir, "    repeat: 101\n    assert: [exit_code: 0]\n"))
    assert out == ["s.yaml:5:13: tasks[0].repeat: must be at most 100, got the number 101"]
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head="repeat: 0\n" + HEAD))
    assert out == ["s.yaml:1:9: repeat: must be at least 1, got the number 0"]


def test_difficulty_enum(spec_dir):
    out = problems(suite(spec_dir, "    difficulty: hardest\n    assert: [exit_code: 0]\n"))
    assert out == ["s.yaml:5:17: tasks[0].difficulty: 'hardest' is not allowed; did you mean "
                   "'hard'? (valid: easy, medium, hard)"]


def test_help_modes_enum(spec_dir):
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n",
                         head="help_modes: [injected, discover]\n" + HEAD))
    assert out == ["s.yaml:1:24: help_modes[1]: 'discover' is not allowed; did you mean "
                   "'discoverable'? (valid: injected, discoverable, none)"]


def test_upload_every_documented_mode_is_accepted_and_none_uploads(spec_dir):
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head="upload: sometimes\n" + HEAD))
    assert out == ["s.yaml:1:9: upload: 'sometimes' is not allowed (valid: auto, never, "
                   "on_failure, always)"]
    assert loads(suite(spec_dir, "    assert: [exit_code: 0]\n", head="upload: never\n" + HEAD)).warnings == []
    for mode in ("auto", "on_failure", "always"):
        result = loads(suite(spec_dir, "    assert: [exit_code: 0]\n", head=f"upload: {mode}\n" + HEAD))
        assert [str(w) for w in result.warnings] == [
            f"s.yaml:1:9: warning: upload: proctor uploads nothing (`upload: {mode}` is accepted "
            "and has no effect); results stay in the run directory"]


def test_thresholds_rules(spec_dir):
    head = "thresholds:\n  default: 120\n  behavior: warn\n" + HEAD
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head=head))
    assert out == [
        "s.yaml:2:12: thresholds.default: must be at most 100, got the number 120",
        "s.yaml:3:13: thresholds.behavior: 'warn' is not allowed (valid: error, informational)",
    ]


def test_thresholds_that_look_like_fractions_warn(spec_dir):
    head = "thresholds: {default: 0.8}\n" + HEAD
    result = loads(suite(spec_dir, "    assert: [exit_code: 0]\n", head=head))
    assert str(result.warnings[0]).startswith("s.yaml:1:13: warning: thresholds: thresholds are percentages")
    assert result.tasks[0].thresholds.default == 0.8


def test_concurrency_default_and_minimum(spec_dir):
    assert loads(suite(spec_dir, "    assert: [exit_code: 0]\n")).tasks[0].concurrency == 3
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head="concurrency: 0\n" + HEAD))
    assert out == ["s.yaml:1:14: concurrency: must be at least 1, got the number 0"]


def test_duplicate_task_ids(spec_dir):
    body = "    assert: [exit_code: 0]\n  - id: t1\n    intent: again\n    assert: [exit_code: 0]\n"
    out = problems(suite(spec_dir, body))
    assert out == ["s.yaml:6:9: tasks[1].id: duplicate task id 't1' (first at s.yaml:3:9); task "
                   "ids must be unique across all specs loaded together"]


def test_duplicate_task_ids_across_files(spec_dir):
    suite(spec_dir, "    assert: [exit_code: 0]\n")
    write(spec_dir / "t.yaml", HEAD + "    assert: [exit_code: 0]\n")
    out = problems("s.yaml", "t.yaml")
    assert out == ["t.yaml:3:9: tasks[0].id: duplicate task id 't1' (first at s.yaml:3:9); task "
                   "ids must be unique across all specs loaded together"]


def test_at_least_one_assertion(spec_dir):
    out = problems(suite(spec_dir, "    assert: []\n"))
    assert out == ["s.yaml:5:13: tasks[0].assert: needs at least 1 entry, got 0"]


def test_missing_intent(spec_dir):
    write(spec_dir / "s.yaml", "cli: git\ntasks:\n  - id: a\n    assert: [exit_code: 0]\n")
    assert problems("s.yaml") == ["s.yaml:3:5: tasks[0].intent: missing required field 'intent' "
                                  "(What the agent is asked to do, in plain words)"]


def test_run_count_min_greater_than_max(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - run_count: {pattern: git, min: 3, max: 1}\n"))
    assert out == ["s.yaml:6:20: tasks[0].assert[0].run_count: min (3) is greater than max (1); "
                   "swap them or raise max"]


def test_invalid_regex_warns_for_ran_not_ran_run_count(spec_dir):
    body = ("    assert:\n      - ran: 'git (init'\n      - not_ran: '*rm'\n"
            "      - run_count: {pattern: '[x', min: 1}\n      - ran: 'ok.*'\n")
    result = loads(suite(spec_dir, body))
    lines = [str(w) for w in result.warnings]
    assert [w.split(": invalid regex")[0] for w in lines] == [
        "s.yaml:6:14: warning: tasks[0].assert[0].ran",
        "s.yaml:7:18: warning: tasks[0].assert[1].not_ran",
        "s.yaml:8:30: warning: tasks[0].assert[2].run_count.pattern",
    ]
    assert "matched as a literal substring" in lines[0]
    assert len(result.tasks[0].checks) == 4


def test_two_types_in_one_entry(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - exit_code: 0\n        ran: git\n"))
    assert out == ["s.yaml:6:9: tasks[0].assert[0]: one assertion per list entry, found exit_code, "
                   "ran; start each with its own `- `"]


def test_fields_not_indented_under_their_type(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - file_contains:\n        path: a\n        text: b\n"))
    assert out == ["s.yaml:6:9: tasks[0].assert[0]: path, text belong under file_contains: indent "
                   "them below `file_contains:` (one assertion per list entry)"]


def test_scalar_for_mapping_only_assertion(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - file_contains: config.json\n"))
    assert out == ["s.yaml:6:24: tasks[0].assert[0].file_contains: file_contains takes a mapping "
                   "with path, text; got 'config.json'"]


def test_unknown_key_in_assertion_mapping(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - file_contains: {path: a, txt: b}\n"))
    assert out == [
        "s.yaml:6:24: tasks[0].assert[0].file_contains.text: missing required field 'text' "
        "(Substring the file must contain)",
        "s.yaml:6:34: tasks[0].assert[0].file_contains.txt: unknown key 'txt'; did you mean "
        "'text'? (valid: path, text)",
    ]


def test_wrong_scalar_type(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - exit_code: zero\n"))
    assert out == ["s.yaml:6:20: tasks[0].assert[0].exit_code: expected a whole number, got 'zero'"]


def test_numbers_are_text_where_text_is_expected(spec_dir):
    (task,) = loads(suite(spec_dir, "    env: {PORT: 8080, DEBUG: true}\n    assert:\n"
                                    "      - output_equals: 100\n")).tasks
    assert task.checks[0].config.text == "100"
    assert task.env == {"PORT": "8080", "DEBUG": "true"}


def test_boolean_where_text_is_expected_says_quote_it(spec_dir):
    out = problems(suite(spec_dir, "    assert:\n      - output_equals: yes\n"))
    assert out == ["s.yaml:6:24: tasks[0].assert[0].output_equals: expected text, got the boolean "
                   "true; YAML read true as a boolean — quote it: 'true'"]


def test_task_entry_not_a_mapping(spec_dir):
    write(spec_dir / "s.yaml", "cli: git\ntasks:\n  - just a string\n")
    assert problems("s.yaml") == ["s.yaml:3:5: tasks[0]: a task is a mapping (id, intent, assert) "
                                  "or a `file://GLOB` include; got 'just a string'"]


def test_scaffold_must_exist_and_becomes_absolute(spec_dir):
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head="scaffold: files\n" + HEAD))
    assert out == [f"s.yaml:1:11: scaffold: scaffold directory 'files' not found (relative to {spec_dir})"]
    (spec_dir / "files").mkdir()
    (task,) = loads("s.yaml").tasks
    assert task.scaffold == str(spec_dir / "files")


def test_providers_need_a_slash(spec_dir):
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head="providers: [gpt-4.1]\n" + HEAD))
    assert out == ["s.yaml:1:12: providers: provider 'gpt-4.1' must be written provider/model, "
                   "e.g. openai/gpt-4.1"]


def test_redact_patterns_must_compile(spec_dir):
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head="redact_patterns: ['(']\n" + HEAD))
    assert out[0].startswith("s.yaml:1:18: redact_patterns: invalid regex '('")


def test_suites_have_no_secrets_or_params(spec_dir):
    body = "    setup: ['echo {{ secrets.TOKEN }}']\n    assert: [exit_code: 0]\n"
    assert problems(suite(spec_dir, body)) == [
        "s.yaml:5:13: tasks[0].setup[0]: {{ secrets.TOKEN }}: a suite has no secrets (only "
        "scenarios declare them)"]


def test_workdir_placeholder_and_unknown_braces_are_fine(spec_dir):
    body = ("    env: {OUT: '{{workdir}}/out'}\n    setup: [\"jq '{{a: 1}}' x\"]\n"
            "    assert: [exit_code: 0]\n")
    (task,) = loads(suite(spec_dir, body)).tasks
    assert task.env["OUT"] == "{{workdir}}/out"


def test_env_names_are_checked(spec_dir):
    out = problems(suite(spec_dir, "    env: {MY-VAR: 1}\n    assert: [exit_code: 0]\n"))
    assert out == ["s.yaml:5:10: tasks[0].env: 'MY-VAR' is not an environment variable name "
                   "(letters, digits and _, not starting with a digit)"]


def test_task_def_mapping(spec_dir):
    write(spec_dir / "s.yaml", """
        cli: git
        version_command: git --version
        providers: [openai/gpt-4.1, anthropic/claude-sonnet-4-5]
        help_modes: [injected, none]
        system_prompt: be brief
        concurrency: 5
        repeat: 2
        env: {A: suite, B: suite}
        setup: [suite-setup]
        redact_env: [TOKEN]
        redact_patterns: ['sk-\\w+']
        workdir: work
        tasks:
          - id: t1
            intent: do it
            category: c
            difficulty: easy
            env: {B: task}
            setup: [task-setup]
            timeout: 30
            max_turns: 7
            assert: [exit_code: 0, {ran: git}, {file_contains: {path: a, text: b}}]
            solution: [git init]
          - id: t2
            intent: again
            repeat: 4
            assert: [exit_code: 0]
    """)
    t1, t2 = loads("s.yaml").tasks
    assert (t1.id, t1.dialect, t1.prompt, t1.cli, t1.version_command) == (
        "t1", "suite", "do it", "git", "git --version")
    assert [c.name for c in t1.checks] == ["exit_code#0", "ran#1", "file_contains#2"]
    assert all(c.weight == 1 and not c.gate for c in t1.checks)
    assert t1.checks[2].config.path == "a" and t1.checks[0].config.code == 0
    assert t1.env == {"A": "suite", "B": "task"} and t1.setup == ["suite-setup", "task-setup"]
    assert t1.models == ["openai/gpt-4.1", "anthropic/claude-sonnet-4-5"]
    assert t1.help_modes == ["injected", "none"] and t1.system_prompt == "be brief"
    assert (t1.agent.type, t1.agent.max_turns, t1.agent.timeout, t1.timeout) == ("llm", 7, 30, 30)
    assert (t1.repeat, t2.repeat, t1.concurrency, t1.pass_threshold) == (2, 4, 5, None)
    assert t1.solution == ["git init"] and t1.category == "c" and t1.difficulty == "easy"
    assert t1.redact_env == ["TOKEN"] and t1.redact_patterns == ["sk-\\w+"]
    assert t1.workdir == str(spec_dir / "work") and t1.source == str(spec_dir / "s.yaml")
    assert t1.base_dir == str(spec_dir) and t1.thresholds is None


def test_duplicate_yaml_keys_are_errors(spec_dir):
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n    intent: again\n"))
    assert out == ["s.yaml:6:5: tasks[0].intent: duplicate key 'intent' (first at line 4); YAML "
                   "would keep only the last one — remove or rename one"]


def test_unknown_keys_in_services_and_routes(spec_dir):
    head = ("services:\n  - name: api\n    type: http_mock\n    routes: [{path: /x, body: ok}]\n"
            "    recrd: true\n" + HEAD)
    out = problems(suite(spec_dir, "    assert: [exit_code: 0]\n", head=head))
    assert out == [
        "s.yaml:4:25: services[0].routes[0].body: unknown key 'body' (valid: method, path, status, "
        "response, headers)",
        "s.yaml:5:5: services[0].recrd: unknown key 'recrd'; did you mean 'record'? (valid: name, "
        "type, image, seed, routes, record, default_response, wait_for, env, ports)",
    ]


def test_trajectory_assertions_and_their_rules(spec_dir):
    """ran_in_order takes its list as the value; tool_used and budget a mapping; each rule
    is one placed line."""
    body = ("    assert:\n      - ran_in_order: []\n      - ran_in_order: git\n"
            "      - tool_used: Bash\n      - tool_used: {name: Bash, min: 2, max: 1}\n"
            "      - budget: {}\n      - budget: {duration_s: forever}\n")
    assert problems(suite(spec_dir, body)) == [
        "s.yaml:6:23: tasks[0].assert[0].ran_in_order: needs at least 1 entry, got 0",
        "s.yaml:7:23: tasks[0].assert[1].ran_in_order: expected a list, got 'git'",
        "s.yaml:8:20: tasks[0].assert[2].tool_used: tool_used takes a mapping with name, args, "
        "min, max; got 'Bash'",
        "s.yaml:9:20: tasks[0].assert[3].tool_used: min (2) is greater than max (1); swap them "
        "or raise max",
        "s.yaml:10:17: tasks[0].assert[4].budget: give at least one maximum: turns, commands, "
        "tokens, cost_usd, duration_s",
        "s.yaml:11:30: tasks[0].assert[5].budget.duration_s: 'forever' is not a duration: write "
        "seconds (300) or a number with a unit: 30s, 5m, 1h, 1h30m",
    ]
    body = ("    assert:\n      - ran_in_order: [a, b]\n      - ran_in_order: {patterns: [c]}\n"
            "      - tool_used: {name: Bash, args: {command: git}}\n"
            "      - budget: {tokens: 100, duration_s: 2m}\n")
    checks = loads(suite(spec_dir, body)).tasks[0].checks
    assert [(c.name, c.config.model_dump(exclude_defaults=True)) for c in checks] == [
        ("ran_in_order#0", {"patterns": ["a", "b"]}), ("ran_in_order#1", {"patterns": ["c"]}),
        ("tool_used#2", {"name": "Bash", "args": {"command": "git"}}),
        ("budget#3", {"tokens": 100, "duration_s": 120.0})]


def test_invalid_regex_warns_for_the_trajectory_assertions(spec_dir):
    """SPEC §2: an invalid regex matches literally, and validate warns at its own place."""
    body = ("    assert:\n      - ran_in_order: [ok, 'bad(']\n"
            "      - ran_in_order: {patterns: ['(x']}\n"
            "      - tool_used: {name: 'Bash(', args: {command: 'git ['}}\n")
    result = loads(suite(spec_dir, body))
    assert [str(w).split(": invalid regex")[0] for w in result.warnings] == [
        "s.yaml:6:28: warning: tasks[0].assert[0].ran_in_order[1]",
        "s.yaml:7:35: warning: tasks[0].assert[1].ran_in_order.patterns[0]",
        "s.yaml:8:27: warning: tasks[0].assert[2].tool_used.name",
        "s.yaml:8:52: warning: tasks[0].assert[2].tool_used.args.command",
    ]
    assert len(result.tasks[0].checks) == 3


def test_references_are_found_in_included_lists_and_among_plain_tasks(spec_dir):
    # One look at a file with no `{{` stands for all its tasks; a file with one is walked
    # task by task, whether it is the suite or a list it includes.
    write(spec_dir / "more" / "a.yaml", "- id: a1\n  intent: x\n  assert: [exit_code: 0]\n"
          "- id: a2\n  intent: '{{ params.P }}'\n  assert: [exit_code: 0]\n")
    write(spec_dir / "more" / "b.yaml", "- id: b1\n  intent: x\n  assert: [exit_code: 0]\n")
    body = ("    assert: [exit_code: 0]\n  - file://more/*.yaml\n"
            "  - id: t2\n    intent: y\n    setup: ['{{ secrets.K }}']\n    assert: [exit_code: 0]\n")
    assert problems(suite(spec_dir, body)) == [
        "s.yaml:9:13: tasks[2].setup[0]: {{ secrets.K }}: a suite has no secrets (only "
        "scenarios declare them)",
        "more/a.yaml:5:11: [1].intent: {{ params.P }}: a suite has no params (only scenarios "
        "declare them)"]
    write(spec_dir / "s.yaml", HEAD + "    assert: [exit_code: 0]\n  - file://more/b.yaml\n")
    assert [t.id for t in loads("s.yaml").tasks] == ["t1", "b1"]


def test_tasks_take_the_suites_limits_and_about_each_their_own(spec_dir):
    head = ("cli: git\ndisplay_name: G\nlimits: {turns: 3, tokens: 100}\ntasks:\n"
            "  - id: t1\n    intent: do it\n    limits: {turns: null, cost_usd: 0.5}\n")
    body = "    assert: [exit_code: 0]\n  - id: t2\n    intent: x\n    assert: [exit_code: 0]\n"
    t1, t2 = loads(suite(spec_dir, body, head=head)).tasks
    assert (t1.agent.limits.turns, t1.agent.limits.tokens, t1.agent.limits.cost_usd) == (None, 100, 0.5)
    assert (t2.agent.limits.turns, t2.agent.limits.tokens, t2.agent.limits.cost_usd) == (3, 100, None)
    assert t1.about == t2.about == {"cli": "git", "display_name": "G"}
    assert t1.about is not t2.about and t1.help_modes is not t2.help_modes
    assert t1.source == t2.source and t1.base_dir == t2.base_dir == str(spec_dir)
