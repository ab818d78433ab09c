"""proctor.toml is validated like a spec: unknown keys and wrong types are exit-2 errors that
say FILE:LINE:COL and the key."""

from __future__ import annotations

import pytest

from proctor.config import load_config
from proctor.errors import UsageError
from tests.helpers.cli import Cli


def write(tmp_path, text):
    path = tmp_path / "proctor.toml"
    path.write_text(text)
    return str(path)


def test_a_valid_file_loads(tmp_path):
    conf = load_config(write(tmp_path, '''
model = "openai/gpt-4.1"
pass_env = ["MY_*"]

[providers.vllm]
kind = "openai-compatible"
base_url = "http://gpu:8000/v1"

[llm]
output_limit = 4000

[prices."vllm/*"]
input = 0
output = 0
'''))
    assert conf["providers"]["vllm"]["kind"] == "openai-compatible"


@pytest.mark.parametrize("text,where", [
    ('modle = "openai/gpt-4.1"\n', ":1:1: modle: unknown key 'modle'"),
    ('model = "x"\n\n[providers.vllm]\nkind = "openai"\nbase_ulr = "http://x"\n',
     ":5:1: providers.vllm.base_ulr: unknown key 'base_ulr'"),
    ('[llm]\nmax_tokens = "lots"\n', ":2:1: llm.max_tokens: Input should be a valid integer"),
    ('[retry]\nmax_attempts = 0\n', ":2:1: retry.max_attempts: Input should be greater than"),
    ('pass_env = "HOME"\n', ":1:1: pass_env: Input should be a valid list"),
    ('[judeg]\nfast = "x/y"\n', ":1:1: judeg: unknown key 'judeg'"),
    ('public_addresses = ["gateway"]\n', ":1:1: public_addresses: 'gateway' is not an address"),
    ('public_addresses = ["127.0.0.0/8"]\n', ":1:1: public_addresses: '127.0.0.0/8': loopback"),
])
def test_mistakes_are_positioned(tmp_path, text, where):
    path = write(tmp_path, text)
    with pytest.raises(UsageError) as err:
        load_config(path)
    assert f"{path}{where}" in str(err.value)


def test_the_cli_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "proctor.toml").write_text('[providers.x]\nbase_url = 3\n')
    (tmp_path / "spec.yaml").write_text(
        "cli: sh\ntasks: [{id: t, intent: x, assert: [{exit_code: 0}]}]\n")
    out = Cli(tmp_path)("run", "spec.yaml", "--agent", "nop")
    assert out.returncode == 2 and "proctor.toml:2:1: providers.x.base_url" in out.stderr
    assert "Traceback" not in out.stderr
