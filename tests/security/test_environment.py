"""Environment: an allowlist. Host credentials never reach the agent, not even through
/proc, and one trial cannot read another's secrets."""

from __future__ import annotations

from tests.helpers.security import run_texts, trial

HOST_SECRETS = {
    "OPENAI_API_KEY": "sk-host-openai-0001",
    "AWS_SECRET_ACCESS_KEY": "aws-host-secret-0002",
    "GITHUB_PAT": "ghp-host-pat-0003",
    "MY_API_KEYS": "my-host-keys-0004",
}


def test_host_credentials_are_not_in_the_sandbox_nor_in_results(run_spec, tmp_path):
    r = run_spec("""
        cli: sh
        tasks:
          - id: steal
            intent: find keys
            env: {MY_SETTING: visible-by-spec}
            solution:
              - "env > env.txt; cat /proc/*/environ 2>/dev/null | tr '\\\\0' '\\\\n' >> env.txt; true"
              - "cat env.txt"
            assert:
              - file_contains: {path: env.txt, text: MY_SETTING=visible-by-spec}
              - file_contains: {path: env.txt, text: HOME=/home/agent}
        """, env=HOST_SECRETS)
    t = trial(r)
    assert t["status"] == "pass", t
    text = run_texts(tmp_path / "run0")
    for value in HOST_SECRETS.values():
        assert value not in text


def test_pass_env_in_proctor_toml_lets_a_named_variable_through(run_spec, tmp_path):
    (tmp_path / "proctor.toml").write_text('pass_env = ["MY_API_KEYS"]\n')
    r = run_spec("""
        cli: sh
        tasks:
          - id: named
            intent: use the named key
            solution: ["echo \\"$MY_API_KEYS\\" > k.txt; echo \\"${GITHUB_PAT:-unset}\\" >> k.txt"]
            assert:
              - file_contains: {path: k.txt, text: my-host-keys-0004}
              - file_contains: {path: k.txt, text: unset}
        """, env=HOST_SECRETS)
    assert trial(r)["status"] == "pass", trial(r)


def test_a_trial_sees_only_its_own_generated_secret(run_spec):
    # Two trials at once, each with its own generated token; each lists every TOKEN it can
    # find in /proc. Only its own processes are there, so it finds exactly one value.
    r = run_spec("""
        version: 1
        id: neighbours
        task: {prompt: find the other token}
        secrets:
          - {name: TOKEN, from: generated}
        agent: {type: oracle}
        solution:
          - "sleep 1 & cat /proc/*/environ 2>/dev/null | tr '\\\\0' '\\\\n' | grep '^TOKEN=' | sort -u > tokens.txt; wait"
        invariants:
          one_token:
            description: only its own token is visible
            check: {type: command_exit, command: 'test $(wc -l < tokens.txt) -eq 1'}
        parallelism: {replicas: 2}
        """, "--concurrency", "2")
    assert [t["status"] for t in r["trials"]] == ["pass", "pass"], r["trials"]
