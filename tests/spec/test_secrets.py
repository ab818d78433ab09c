"""Secrets: every source resolves when the spec loads; a missing one names secret and source."""

from __future__ import annotations

from tests.helpers.spec import loads, problems, run_proctor, write

INVARIANTS = "invariants: {ok: {description: d, check: {type: file_exists, path: x}}}\n"


def scenario(spec_dir, secrets: str) -> str:
    write(spec_dir / "c.yaml", "version: 1\ntask: {prompt: p}\nsecrets:\n" + secrets + INVARIANTS)
    return "c.yaml"


def values(spec_dir, secrets: str) -> list[tuple[str, str | None, bool]]:
    (task,) = loads(scenario(spec_dir, secrets)).tasks
    return [(s.name, s.value, s.generated) for s in task.secrets]


def test_every_source(spec_dir, monkeypatch):
    monkeypatch.setenv("API_KEY", "key-from-env")
    monkeypatch.setenv("OTHER_VAR", "other-value")
    write(spec_dir / "keys" / "token.txt", "  file-value\n")
    secrets = (
        "  - name: API_KEY\n"
        "  - {name: EXPLICIT_ENV, source: env:OTHER_VAR}\n"
        "  - {name: FROM_FILE, source: 'file:keys/token.txt'}\n"
        "  - {name: FROM_COMMAND, source: 'command:printf \"cmd-value\\n\"'}\n"
        "  - {name: STATIC, from: 'static://s3cr3t'}\n"
        "  - {name: PER_TRIAL, from: generated}\n"
    )
    assert values(spec_dir, secrets) == [
        ("API_KEY", "key-from-env", False), ("EXPLICIT_ENV", "other-value", False),
        ("FROM_FILE", "file-value", False), ("FROM_COMMAND", "cmd-value", False),
        ("STATIC", "s3cr3t", False), ("PER_TRIAL", None, True),
    ]


def test_command_runs_in_the_spec_directory(spec_dir):
    write(spec_dir / "secret.txt", "here\n")
    assert values(spec_dir, "  - {name: S, source: 'command:cat secret.txt'}\n") == [("S", "here", False)]


def test_unset_env_var_names_secret_and_variable(spec_dir, monkeypatch):
    monkeypatch.delenv("MISSING_TOKEN", raising=False)
    monkeypatch.delenv("NOT_SET_EITHER", raising=False)
    out = problems(scenario(spec_dir, "  - name: MISSING_TOKEN\n"
                                      "  - {name: B, source: 'env:NOT_SET_EITHER'}\n"))
    assert out == [
        "c.yaml:4:5: secrets[0].source: secret 'MISSING_TOKEN': environment variable "
        "MISSING_TOKEN is not set; export MISSING_TOKEN=... or change `source`",
        "c.yaml:5:23: secrets[1].source: secret 'B': environment variable NOT_SET_EITHER is not "
        "set; export NOT_SET_EITHER=... or change `source`",
    ]


def test_validate_reports_unset_env_var(spec_dir, monkeypatch):
    monkeypatch.delenv("MISSING_TOKEN", raising=False)
    scenario(spec_dir, "  - name: MISSING_TOKEN\n")
    proc = run_proctor("validate", "c.yaml", cwd=spec_dir)
    assert proc.returncode == 2
    assert proc.stderr.startswith("c.yaml:4:5: secrets[0].source: secret 'MISSING_TOKEN': "
                                  "environment variable MISSING_TOKEN is not set")


def test_failing_command_and_missing_file(spec_dir):
    out = problems(scenario(spec_dir, "  - {name: A, source: 'command:echo nope >&2; exit 3'}\n"
                                      "  - {name: B, source: 'file:absent.txt'}\n"))
    assert out == [
        "c.yaml:4:23: secrets[0].source: secret 'A': command exited with 3: nope",
        f"c.yaml:5:23: secrets[1].source: secret 'B': cannot read {spec_dir}/absent.txt: No such "
        "file or directory",
    ]


def test_shape_rules(spec_dir):
    out = problems(scenario(spec_dir, "  - {name: A, source: vault:x}\n"
                                      "  - {name: B, source: env, from: generated}\n"
                                      "  - {name: C, from: 'https://x'}\n"
                                      "  - {name: bad-name, from: generated}\n"
                                      "  - {name: C, from: generated}\n"))
    assert out == [
        "c.yaml:4:23: secrets[0].source: unknown secret source 'vault:x' (valid: env, env:VAR, "
        "file:PATH, command:CMD, dashboard, dashboard:KEY)",
        "c.yaml:5:5: secrets[1]: give either `source` or `from`, not both",
        "c.yaml:6:21: secrets[2].from: unknown secret origin 'https://x' (valid: static://VALUE, "
        "generated)",
        "c.yaml:7:12: secrets[3].name: secret name 'bad-name' must be an environment variable "
        "name (letters, digits and _, not starting with a digit)",
        "c.yaml:8:12: secrets[4].name: duplicate secret name 'C'",
    ]
