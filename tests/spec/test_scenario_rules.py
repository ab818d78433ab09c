"""Scenario dialect: every rule reports FILE:LINE:COL: path: message (load_specs)."""

from __future__ import annotations

from tests.helpers.spec import loads, problems, write

# Lines 1-3; what a test adds starts on line 4.
HEAD = """
version: 1
task: {prompt: do it}
invariants:
"""
OK_INVARIANT = "  ok: {description: d, check: {type: file_exists, path: x}}\n"


def scenario(spec_dir, body: str, head: str = HEAD, name: str = "c.yaml") -> str:
    write(spec_dir / name, head + body)
    return name


def test_version_must_be_1(spec_dir):
    out = problems(scenario(spec_dir, OK_INVARIANT, head=HEAD.replace("version: 1", "version: 2")))
    assert out == ["c.yaml:1:10: version: the number 2 is not allowed (valid: 1)"]


def test_version_is_required(spec_dir):
    out = problems(scenario(spec_dir, OK_INVARIANT, head=HEAD.replace("version: 1\n", "")))
    assert out == ["c.yaml:1:1: version: missing required field 'version' (Spec format version; "
                   "must be 1)"]


def test_invariant_description_required(spec_dir):
    out = problems(scenario(spec_dir, "  a:\n    check: {type: file_exists, path: x}\n"))
    assert out == ["c.yaml:5:5: invariants.a.description: missing required field 'description' "
                   "(What must hold, in words (shown in reports))"]


def test_weight_not_negative_and_one_positive(spec_dir):
    body = "  a: {description: d, weight: -1, check: {type: file_exists, path: x}}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:4:31: invariants.a.weight: must be at least 0, got the number -1"]
    body = "  a: {description: d, weight: 0, check: {type: file_exists, path: x}}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:4:3: invariants: every invariant has weight 0; give at least one a weight > 0"]


def test_at_least_one_invariant(spec_dir):
    out = problems(scenario(spec_dir, "", head=HEAD.replace("invariants:\n", "invariants: {}\n")))
    assert out == ["c.yaml:3:13: invariants: needs at least 1 entry, got 0"]


def test_unknown_check_type_suggests(spec_dir):
    out = problems(scenario(spec_dir, "  a: {description: d, check: {type: file_exist, path: x}}\n"))
    assert out == ["c.yaml:4:37: invariants.a.check.type: unknown check type 'file_exist'; did "
                   "you mean 'file_exists'? (valid: file_exists, command_exit, file_absent, "
                   "file_content, sql, http_mock_assertions, custom, llm_as_judge, ran_in_order, "
                   "tool_used, budget)"]


def test_suite_assertion_as_check_type_says_so(spec_dir):
    out = problems(scenario(spec_dir, "  a: {description: d, check: {type: exit_code, code: 0}}\n"))
    assert out[0].startswith("c.yaml:4:37: invariants.a.check.type: unknown check type "
                             "'exit_code' (that is a suite assertion)")


def test_check_without_type(spec_dir):
    out = problems(scenario(spec_dir, "  a: {description: d, check: {path: x}}\n"))
    assert out[0].startswith("c.yaml:4:30: invariants.a.check: missing `type` (valid: file_exists,")


def test_unknown_check_field_suggests(spec_dir):
    body = "  a:\n    description: d\n    check:\n      type: command_exit\n      comand: make\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:7:7: invariants.a.check.command: missing required field 'command' (Shell command "
        "run with `sh -c` in the workspace)",
        "c.yaml:8:7: invariants.a.check.comand: unknown key 'comand'; did you mean 'command'? "
        "(valid: command, exit_code, timeout)",
    ]


def test_file_content_needs_a_clause_and_a_valid_regex(spec_dir):
    body = "  a: {description: d, check: {type: file_content, path: x, pattern: '(x'}}\n"
    out = problems(scenario(spec_dir, body))
    assert out[0].startswith("c.yaml:4:69: invariants.a.check.pattern: invalid regex '(x'")
    body = "  a: {description: d, check: {type: file_content, path: x}}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:4:30: invariants.a.check: give at least one of contains, not_contains, pattern"]


SERVICES = """
version: 1
task: {prompt: do it}
services:
  - name: db
    type: postgres
  - name: mock
    type: http_mock
invariants:
"""


def test_sql_names_a_declared_database(spec_dir):
    body = "  a: {description: d, check: {type: sql, service: dbb, query: q, equals: 0}}\n"
    assert problems(scenario(spec_dir, body, head=SERVICES)) == [
        "c.yaml:9:51: invariants.a.check.service: unknown service 'dbb'; did you mean 'db'? "
        "(declared under `services:`: db, mock)"]
    body = "  a: {description: d, check: {type: sql, service: mock, query: q, equals: 0}}\n"
    assert problems(scenario(spec_dir, body, head=SERVICES)) == [
        "c.yaml:9:51: invariants.a.check.service: sql needs a postgres or mysql service; 'mock' "
        "is http_mock"]


def test_http_mock_assertions_need_record_true(spec_dir):
    body = ("  a:\n    description: d\n    check:\n      type: http_mock_assertions\n"
            "      service: mock\n      assertions: [{field: request_count, equals: 1}]\n")
    assert problems(scenario(spec_dir, body, head=SERVICES)) == [
        "c.yaml:13:16: invariants.a.check.service: service 'mock' (line 6) must have "
        "`record: true` for http_mock_assertions to see its requests"]


def test_http_mock_assertion_fields(spec_dir):
    head = SERVICES.replace("type: http_mock", "type: http_mock\n    record: true")
    body = ("  a:\n    description: d\n    check:\n      type: http_mock_assertions\n"
            "      service: mock\n      assertions:\n        - {field: last_request.bdy, contains: x}\n"
            "        - {field: request_count}\n")
    out = problems(scenario(spec_dir, body, head=head))
    assert out[0].startswith("c.yaml:16:19: invariants.a.check.assertions[0].field: unknown field "
                             "'last_request.bdy' (valid: request_count,")
    assert out[1] == ("c.yaml:17:11: invariants.a.check.assertions[1]: give a comparison: equals, "
                      "contains, min or max")


def test_judge_input_from_a_service_needs_record(spec_dir):
    body = ("  a: {description: d, check: {type: llm_as_judge, criteria: c, "
            "input_from: mock.last_request.body}}\n")
    out = problems(scenario(spec_dir, body, head=SERVICES))
    assert out == ["c.yaml:9:76: invariants.a.check.input_from: service 'mock' (line 6) must have "
                   "`record: true` for llm_as_judge to see its requests"]
    body = "  a: {description: d, check: {type: llm_as_judge, criteria: c, input_from: mail}}\n"
    out = problems(scenario(spec_dir, body, head=SERVICES))
    assert out[0].startswith("c.yaml:9:76: invariants.a.check.input_from: input_from 'mail' must "
                             "be one of agent_output, stdout, workspace or SERVICE.FIELD")


def test_custom_script_must_exist(spec_dir):
    body = "  a: {description: d, check: {type: custom, script: checks/x.py}}\n"
    assert problems(scenario(spec_dir, body)) == [
        f"c.yaml:4:53: invariants.a.check.script: script 'checks/x.py' not found (relative to {spec_dir})"]
    write(spec_dir / "checks" / "x.py", "print('{}')\n")
    assert [c.config.script for c in loads("c.yaml").tasks[0].checks] == ["checks/x.py"]


def test_service_needs_type_or_image(spec_dir):
    head = "version: 1\ntask: {prompt: p}\nservices:\n  - name: cache\ninvariants:\n"
    assert problems(scenario(spec_dir, OK_INVARIANT, head=head)) == [
        "c.yaml:4:5: services[0]: service 'cache' needs `type: postgres|mysql|http_mock` or an "
        "`image:` to run"]


def test_service_type_enum(spec_dir):
    head = "version: 1\ntask: {prompt: p}\nservices:\n  - {name: db, type: postgress}\ninvariants:\n"
    assert problems(scenario(spec_dir, OK_INVARIANT, head=head)) == [
        "c.yaml:4:22: services[0].type: 'postgress' is not allowed; did you mean 'postgres'? "
        "(valid: postgres, mysql, http_mock)"]


def test_unique_service_names(spec_dir):
    head = SERVICES.replace("name: mock", "name: db")
    assert problems(scenario(spec_dir, OK_INVARIANT, head=head)) == [
        "c.yaml:6:11: services[1].name: duplicate service name 'db' (first at line 4); rename one"]


def test_http_mock_fields_only_on_http_mock(spec_dir):
    head = SERVICES.replace("type: postgres", "type: postgres\n    routes: [{path: /x}]")
    assert problems(scenario(spec_dir, OK_INVARIANT, head=head)) == [
        "c.yaml:4:5: services[0]: routes only apply to `type: http_mock` (this is postgres)"]


def test_route_path_and_method(spec_dir):
    head = SERVICES.replace("type: http_mock", "type: http_mock\n    routes: [{method: GRT, path: x}]")
    out = problems(scenario(spec_dir, OK_INVARIANT, head=head))
    assert out == [
        "c.yaml:8:23: services[1].routes[0].method: unknown HTTP method 'GRT'; did you mean 'GET'? "
        "(valid: GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, *)",
        "c.yaml:8:34: services[1].routes[0].path: a route path starts with '/': write '/x'",
    ]


def test_seed_file_or_inline_sql(spec_dir):
    head = SERVICES.replace("type: postgres", "type: postgres\n    seed: seeds/missing.sql")
    out = problems(scenario(spec_dir, OK_INVARIANT, head=head))
    assert out == [f"c.yaml:6:11: services[0].seed: seed file 'seeds/missing.sql' not found "
                   f"(looked in {spec_dir}); fix the path or write the SQL inline"]
    write(spec_dir / "seeds" / "missing.sql", "CREATE TABLE t (id int);\n")
    (task,) = loads("c.yaml").tasks
    assert task.services[0].config["seed_file"] == str(spec_dir / "seeds" / "missing.sql")
    head = SERVICES.replace("type: postgres", "type: postgres\n    seed: |\n      CREATE TABLE t (id int);")
    (task,) = loads(scenario(spec_dir, OK_INVARIANT, head=head)).tasks
    db, mock = task.services
    assert (db.kind, mock.kind) == ("postgres", "http_mock")
    assert db.config["seed_sql"] == "CREATE TABLE t (id int);\n"
    assert db.config["seed_origin"] == "c.yaml:6:11"


def test_service_kinds_from_image(spec_dir):
    head = ("version: 1\ntask: {prompt: p}\nservices:\n  - {name: a, image: postgres:16}\n"
            "  - {name: b, image: docker.io/library/mariadb:11}\n  - {name: c, image: redis:7}\n"
            "invariants:\n")
    result = loads(scenario(spec_dir, OK_INVARIANT, head=head))
    assert [s.kind for s in result.tasks[0].services] == ["postgres", "mysql", "container"]
    assert [str(w) for w in result.warnings] == [
        "c.yaml:6:22: warning: services[2].image: service 'c' runs image 'redis:7': this needs "
        "`--backend docker`"]


def test_undeclared_secret_and_param(spec_dir):
    head = ("version: 1\ntask: {prompt: 'use {{ secrets.TOKN }} for {{ params.size }}'}\n"
            "secrets: [{name: TOKEN, from: generated}]\ninvariants:\n")
    assert problems(scenario(spec_dir, OK_INVARIANT, head=head)) == [
        "c.yaml:2:16: task.prompt: undeclared secret 'TOKN' in {{ secrets.TOKN }}; did you mean "
        "'TOKEN'? (declared in `secrets:`: TOKEN)",
        "c.yaml:2:16: task.prompt: undeclared param 'size' in {{ params.size }} (declared in the "
        "keys of `parallelism.matrix`: none)",
    ]
    body = OK_INVARIANT + "parallelism: {matrix: {size: [s, m]}}\n"
    (task,) = loads(scenario(spec_dir, body, head=head.replace("TOKN", "TOKEN"))).tasks
    assert task.matrix == {"size": ["s", "m"]}
    assert task.prompt == "use {{ secrets.TOKEN }} for {{ params.size }}"  # rendered per trial


def test_agent_rules(spec_dir):
    body = OK_INVARIANT + "agent: {type: command}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:5:8: agent: type: command needs `command:` (the program to run; {{prompt}} "
        "expands to the prompt)"]
    body = OK_INVARIANT + "agent: {type: human, max_turns: 25}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:5:15: agent.type: 'human' is not allowed (valid: llm, command, oracle, nop, "
        "claude-code, codex, mini-swe-agent, paragon, snapshot)",
        "c.yaml:5:33: agent.max_turns: must be at most 20, got the number 25",
    ]


def test_scoring_rules(spec_dir):
    body = OK_INVARIANT + "scoring:\n  pass_threshold: 85\n  replica_aggregation: most\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:6:19: scoring.pass_threshold: must be at most 1, got the number 85",
        "c.yaml:7:24: scoring.replica_aggregation: 'most' is not allowed (valid: all, any, "
        "majority, mean)",
    ]


def test_parallelism_rules(spec_dir):
    body = OK_INVARIANT + "parallelism: {replicas: 0, matrix: {size: []}}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:5:25: parallelism.replicas: must be at least 1, got the number 0",
        "c.yaml:5:36: parallelism.matrix: param 'size' needs at least one value",
    ]


def test_network_rules(spec_dir):
    body = OK_INVARIANT + "network: {egress: block, allow: ['http://x.com']}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:5:19: network.egress: 'block' is not allowed (valid: deny, allow)",
        "c.yaml:5:33: network.allow: 'http://x.com' is not a host name (e.g. api.example.com, "
        "*.example.com)",
    ]


def test_setup_files_stay_inside_the_workspace(spec_dir):
    body = OK_INVARIANT + "setup: {files: {/etc/passwd: x}}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:5:16: setup.files: file path '/etc/passwd' must be relative and stay inside the "
        "workspace"]


def test_resources(spec_dir):
    body = OK_INVARIANT + "resources: {memory: lots, cpu: 0}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:5:21: resources.memory: memory 'lots' must be a number with an optional unit, "
        "e.g. 512m or 2g",
        "c.yaml:5:32: resources.cpu: must be more than 0, got the number 0",
    ]
    body = OK_INVARIANT + "resources: {memory: 2g, cpu: 1.5, timeout: 600}\n"
    (task,) = loads(scenario(spec_dir, body)).tasks
    assert task.resources == {"timeout": 600, "memory": "2g", "memory_bytes": 2 << 30, "cpu": 1.5}
    (task,) = loads(scenario(spec_dir, OK_INVARIANT + "resources: {memory: 512}\n")).tasks
    assert task.resources == {"memory": "512m", "memory_bytes": 512 << 20}  # a plain number is MiB


def test_forbidden_rules(spec_dir):
    body = OK_INVARIANT + "forbidden: {secrets_in_logs: allow, file_writes: [x]}\n"
    out = problems(scenario(spec_dir, body))
    assert out[0] == "c.yaml:5:30: forbidden.secrets_in_logs: 'allow' is not allowed (valid: deny)"
    assert out[1].startswith("c.yaml:5:37: forbidden.file_writes: unknown key 'file_writes'; did "
                             "you mean 'file_writes_outside'?")


def test_id_defaults_to_file_stem_and_must_be_unique(spec_dir):
    scenario(spec_dir, OK_INVARIANT, name="first.yaml")
    assert loads("first.yaml").tasks[0].id == "first"
    scenario(spec_dir, OK_INVARIANT, head="id: first\n" + HEAD, name="second.yaml")
    assert problems("first.yaml", "second.yaml") == [
        "second.yaml:1:5: id: duplicate task id 'first' (first at first.yaml:1:1); task ids must "
        "be unique across all specs loaded together"]


def test_task_def_mapping(spec_dir):
    write(spec_dir / "c.yaml", """
        version: 1
        id: recon
        description: about
        base: python:3.12
        setup:
          packages: [jq]
          env: {A: "1"}
          commands: [make]
          files: {data/in.txt: hello}
        task: {prompt: go}
        agent: {type: llm, model: openai/gpt-4.1, max_turns: 9, timeout: 120}
        network: {allow: [api.example.com]}
        audit: {level: full}
        forbidden: {secrets_in_logs: deny, http_except: [smtp]}
        invariants:
          must:
            description: gate
            gate: true
            weight: 2
            check: {type: file_exists, path: out}
          nice:
            description: nice
            weight: 0.5
            check: {type: command_exit, command: "true"}
        scoring: {pass_threshold: 0.8, replica_aggregation: mean}
        parallelism: {replicas: 3, matrix: {size: [1, 2]}}
        solution: [touch out]
    """)
    (t,) = loads("c.yaml").tasks
    assert (t.id, t.dialect, t.prompt, t.description, t.base_image) == (
        "recon", "scenario", "go", "about", "python:3.12")
    assert [(c.name, c.type, c.weight, c.gate, c.description) for c in t.checks] == [
        ("must", "file_exists", 2, True, "gate"), ("nice", "command_exit", 0.5, False, "nice")]
    assert (t.agent.type, t.agent.model, t.agent.max_turns, t.agent.timeout) == (
        "llm", "openai/gpt-4.1", 9, 120)
    assert t.models == ["openai/gpt-4.1"] and t.timeout == 120
    assert t.env == {"A": "1"} and t.setup == ["make"] and t.files == {"data/in.txt": "hello"}
    assert t.packages == ["jq"] and t.network == {"egress": "deny", "allow": ["api.example.com"]}
    assert t.audit == {"level": "full"}
    assert t.forbidden == {"secrets_in_logs": "deny", "http_except": ["smtp"]}
    assert (t.repeat, t.matrix, t.pass_threshold, t.replica_aggregation) == (
        3, {"size": [1, 2]}, 0.8, "mean")
    assert t.solution == ["touch out"] and t.help_modes == ["injected"]


def test_defaults(spec_dir):
    (t,) = loads(scenario(spec_dir, OK_INVARIANT)).tasks
    assert (t.agent.type, t.agent.max_turns, t.timeout, t.repeat) == ("llm", 5, 300, 1)
    # SPEC §3: without a pass_threshold, every invariant must pass
    assert (t.pass_threshold, t.replica_aggregation, t.network, t.forbidden) == (None, "all", {}, {})
    assert t.checks[0].weight == 1.0 and t.checks[0].gate is False


def test_numeric_ids_are_text(spec_dir):
    (task,) = loads(scenario(spec_dir, OK_INVARIANT, head="id: 42\n" + HEAD)).tasks
    assert task.id == "42"


def test_trajectory_checks_as_invariants(spec_dir):
    """ran_in_order, tool_used and budget are invariant types too, with the same fields; an
    invalid regex warns as in a suite."""
    body = ('  a: {description: d, check: {type: ran_in_order, patterns: ["x", "y("]}}\n'
            '  b: {description: d, check: {type: tool_used, name: "B[", args: {cmd: "(("}}}\n'
            '  c: {description: d, check: {type: budget, turns: 3}}\n')
    result = loads(scenario(spec_dir, body))
    assert [str(w).split(": invalid regex")[0] for w in result.warnings] == [
        "c.yaml:4:67: warning: invariants.a.check.patterns[1]",
        "c.yaml:5:54: warning: invariants.b.check.name",
        "c.yaml:5:72: warning: invariants.b.check.args.cmd",
    ]
    assert [c.type for c in result.tasks[0].checks] == ["ran_in_order", "tool_used", "budget"]
    body = "  c: {description: d, check: {type: budget}}\n"
    assert problems(scenario(spec_dir, body)) == [
        "c.yaml:4:30: invariants.c.check: give at least one maximum: turns, commands, tokens, "
        "cost_usd, duration_s"]
