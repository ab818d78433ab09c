"""proctor.toml is validated like a spec: unknown keys and wrong types are exit-2 errors that
say FILE:LINE:COL and the key."""

from __future__ import annotations

import pytest

from proctor.config import ProctorConfig, load_config
from proctor.errors import UsageError
from proctor.model import RunOptions
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
    assert conf.providers["vllm"].kind == "openai-compatible"
    assert conf.prices["vllm/*"].input == 0.0 and conf.pass_env == ["MY_*"]


def test_the_run_gets_the_typed_model_with_its_defaults(tmp_path, monkeypatch):
    conf = load_config(write(tmp_path, '[llm]\noutput_limit = 4000\n'))
    assert isinstance(conf, ProctorConfig)
    assert (conf.llm.output_limit, conf.llm.max_tokens, conf.llm.help_limit) == (4000, 4096, 20000)
    assert conf.timeout_multiplier == 1.0 and conf.ray.max_retries == 2
    assert conf.source_dir == str(tmp_path.resolve())  # relative paths in it resolve here
    # Without a file: the same defaults, and no directory of its own.
    monkeypatch.delenv("PROCTOR_CONFIG", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    none = load_config(None)
    assert none.source_dir is None and none.llm.max_tokens == 4096 and none.model is None
    assert isinstance(RunOptions().config, ProctorConfig)


@pytest.mark.parametrize("text,where", [
    ('modle = "openai/gpt-4.1"\n', ":1:1: modle: unknown key 'modle'"),
    ('model = "x"\n\n[providers.vllm]\nkind = "openai"\nbase_ulr = "http://x"\n',
     ":5:1: providers.vllm.base_ulr: unknown key 'base_ulr'"),
    ('[llm]\nmax_tokens = "lots"\n', ":2:1: llm.max_tokens: Input should be a valid integer"),
    ('[llm]\noutput_limt = 10\n', ":2:1: llm.output_limt: unknown key 'output_limt'"),
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


def test_no_file_gives_the_validated_defaults(tmp_path, monkeypatch):
    """Without a proctor.toml the defaults are built unvalidated (start-up time): the same
    configuration, field for field and table for table, as validating nothing."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROCTOR_CONFIG", raising=False)
    conf = load_config()
    assert conf == ProctorConfig.model_validate({})
    assert conf.model_dump() == ProctorConfig.model_validate({}).model_dump()
    assert conf.model_fields_set == set() and conf.source_dir is None
    assert conf.llm.output_limit == 8000 and conf.retry.model_fields_set == set()
