"""Provider configuration, preflight, prices, retries, the concurrency limit, mock scripts."""

from __future__ import annotations

import asyncio

import pytest

from proctor.config import ProctorConfig
from proctor.errors import UsageError
from proctor.model import AgentDef, CheckDef, TaskDef, Trial
from proctor.providers import get_provider, preflight, preflight_run, price_of
from proctor.providers.base import ModelResponse, ProviderError, parse_retry_after
from proctor.providers.prices import cost_usd
from proctor.providers.retry import RetryingProvider, RetryPolicy
from proctor.providers.script import Script, ScriptState, load_script
from proctor.providers.settings import provider_settings, resolve_model

C = ProctorConfig.model_validate  # a proctor.toml as the run reads it

USER = [{"role": "user", "content": "hi"}]


# --- preflight: every problem, once, before anything runs -------------------------------

def test_preflight_names_the_missing_key_variable():
    with pytest.raises(UsageError) as e:
        preflight(["openai/gpt-4.1", "anthropic/claude-sonnet-4-5", "openai/gpt-4.1"], C({}))
    msg = str(e.value)
    assert "set OPENAI_API_KEY" in msg and "set ANTHROPIC_API_KEY" in msg
    assert msg.count("OPENAI_API_KEY") == 1


def test_preflight_passes_with_keys_and_for_keyless_providers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    preflight(["openai/gpt-4.1", "mock/solver", "ollama/llama3"], C({}))
    config = C({"providers": {"vllm": {"kind": "openai-compatible", "base_url": "http://h/v1",
                                       "api_key_env": "VLLM_KEY"}}})
    with pytest.raises(UsageError, match="set VLLM_KEY"):
        preflight(["vllm/qwen"], config)
    monkeypatch.setenv("VLLM_KEY", "k")
    preflight(["vllm/qwen"], config)


def test_preflight_unknown_provider_alias_and_default(monkeypatch):
    with pytest.raises(UsageError, match=r"unknown provider 'acme'.*\[providers.acme\]"):
        preflight(["acme/x"], C({}))
    with pytest.raises(UsageError, match="PROCTOR_JUDGE_FAST"):
        preflight(["paragon-fast"], C({}))
    with pytest.raises(UsageError, match="provider/model"):
        preflight(["gpt-4.1"], C({}))
    with pytest.raises(UsageError, match="no model for the llm agent"):
        preflight([None], C({}))
    preflight([None], C({"model": "mock/done"}))


def test_preflight_run_checks_trials_judges_and_mock_scripts(tmp_path):
    from proctor.checks.llm_as_judge import Config

    (tmp_path / "s.yaml").write_text("- say: hi\n")
    judge = CheckDef("j", "llm_as_judge", Config(criteria="c", model="paragon-max"))
    task = TaskDef(id="t", dialect="scenario", source="x", base_dir=str(tmp_path), prompt="p",
                   agent=AgentDef(model="mock/s.yaml"), checks=[judge])
    trial = Trial(id="t.r0", task_id="t", agent="llm", model=None, help_mode=None, replica=0)
    with pytest.raises(UsageError) as e:
        preflight_run([task], [trial], C({}))
    assert "paragon-max" in str(e.value) and "s.yaml" not in str(e.value)
    preflight_run({"t": task}, [trial], C({"judge": {"max": "mock/done"}}))
    task.agent.model = "mock/missing.yaml"
    with pytest.raises(UsageError, match="mock script 'missing.yaml' not found"):
        preflight_run([task], [trial], C({"judge": {"max": "mock/done"}}))


def test_settings_sources(monkeypatch):
    s = provider_settings("openai", C({}))
    assert (s.kind, s.base_url, s.api_key_env, s.official) == ("openai", None, "OPENAI_API_KEY", True)
    config = C({"providers": {"openai": {"base_url": "http://conf/v1", "max_concurrency": 2,
                                         "max_attempts": 7}},
                "retry": {"base_delay": 0.5}})
    s = provider_settings("openai", config)
    assert s.base_url == "http://conf/v1" and not s.official and s.max_concurrency == 2
    assert s.retry == RetryPolicy(max_attempts=7, base_delay=0.5)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")  # the environment wins
    assert provider_settings("openai", config).base_url == "http://env/v1"
    o = provider_settings("ollama", C({}))
    assert o.kind == "openai" and o.base_url == "http://localhost:11434/v1" and o.key() is None
    with pytest.raises(UsageError, match="kind"):
        provider_settings("x", C({"providers": {"x": {"kind": "grpc"}}}))


def test_judge_aliases(monkeypatch):
    config = C({"judge": {"fast": "openai/gpt-4.1-mini", "max": "anthropic/claude-opus-4-1"}})
    assert resolve_model("paragon-fast", config) == "openai/gpt-4.1-mini"
    assert resolve_model("paragon-max", config) == "anthropic/claude-opus-4-1"
    monkeypatch.setenv("PROCTOR_JUDGE_FAST", "mock/done")
    assert resolve_model("paragon-fast", config) == "mock/done"
    assert resolve_model("openai/x", config) == "openai/x"


# --- prices ----------------------------------------------------------------------------

def test_prices_defaults_config_globs_and_unknown():
    assert price_of("openai/gpt-4.1") == (2.0, 8.0)
    assert price_of("anthropic/claude-sonnet-4-5-20250929") == (3.0, 15.0)  # snapshot suffix
    assert price_of("ollama/llama3") is None
    config = C({"prices": {"ollama/*": {"input": 0, "output": 0},
                           "openai/gpt-4.1": {"input": 1, "output": 2}}})
    assert price_of("ollama/llama3", config) == (0.0, 0.0)
    assert price_of("openai/gpt-4.1", config) == (1.0, 2.0)
    assert cost_usd(None, 100, 100) is None
    assert cost_usd((1.0, 2.0), 1_000_000, 500_000) == pytest.approx(2.0)
    assert price_of("mock/solver") == (0.0, 0.0)  # the defaults' own glob


def test_every_glob_form_is_a_pattern_and_a_plain_key_only_itself():
    config = C({"prices": {"local/m?del": {"input": 1, "output": 1},
                           "local/v[0-9]": {"input": 2, "output": 2},
                           "local/plain.name": {"input": 3, "output": 3}}})
    assert price_of("local/model", config) == (1.0, 1.0)
    assert price_of("local/v7", config) == (2.0, 2.0)
    assert price_of("local/plain.name", config) == (3.0, 3.0)
    assert price_of("local/plainXname", config) is None  # `.` is no glob
    assert price_of("local/vx", config) is None


# --- retries and the concurrency limit ---------------------------------------------------

class Flaky:
    name = "fake/flaky"

    def __init__(self, errors: list[ProviderError]):
        self.errors = list(errors)
        self.calls = 0
        self.active = self.peak = 0

    async def complete(self, *a, **kw) -> ModelResponse:
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(0.01)
            if self.errors:
                raise self.errors.pop(0)
            return ModelResponse(text="ok")
        finally:
            self.active -= 1

    async def aclose(self) -> None:
        pass


async def test_retry_then_success_and_non_retryable_errors():
    inner = Flaky([ProviderError("HTTP 529", retryable=True, status=529),
                   ProviderError("timed out", retryable=True)])
    p = RetryingProvider(inner, RetryPolicy(base_delay=0.001), limit_key="fake", limit=4)
    resp = await p.complete("", USER, [])
    assert resp.text == "ok" and resp.attempt == 3 and len(resp.retries) == 2
    inner = Flaky([ProviderError("HTTP 401: bad key", status=401)])
    p = RetryingProvider(inner, RetryPolicy(base_delay=0.001), limit_key="fake", limit=4)
    with pytest.raises(ProviderError, match="fake/flaky: HTTP 401: bad key$"):
        await p.complete("", USER, [])
    assert inner.calls == 1


async def test_retry_after_is_honoured_and_capped(monkeypatch):
    import proctor.providers.retry as retry_mod

    waits, real_sleep = [], asyncio.sleep

    async def sleep(seconds, *a, **kw):
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(retry_mod.asyncio, "sleep", sleep)
    inner = Flaky([ProviderError("HTTP 429", retryable=True, status=429, retry_after=0.2)])
    p = RetryingProvider(inner, RetryPolicy(base_delay=0.001), limit_key="fake", limit=4)
    resp = await p.complete("", USER, [])
    assert 0.2 in waits and resp.retries == ["attempt 1: HTTP 429; retried after 0.20s"], waits
    assert RetryPolicy(max_delay=5).delay(1, retry_after=120) == 5
    delays = [RetryPolicy(base_delay=1, max_delay=60).delay(3, None) for _ in range(50)]
    assert all(2.0 <= d <= 4.0 for d in delays) and len(set(delays)) > 1  # jittered


async def test_concurrency_limit_per_provider():
    inner = Flaky([])
    p = RetryingProvider(inner, RetryPolicy(), limit_key="fake-limited", limit=2)
    await asyncio.gather(*(p.complete("", USER, []) for _ in range(8)))
    assert inner.peak == 2 and inner.calls == 8


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "soon"}) is None


async def test_in_process_mock_faults_go_through_the_retries(tmp_path):
    (tmp_path / "f.yaml").write_text("- say: fine\n  fail: [429, 502, malformed]\n")
    p = get_provider("mock/f.yaml", C({"retry": {"base_delay": 0.001}}), base_dir=str(tmp_path))
    resp = await p.complete("", USER, [])
    assert resp.text == "fine" and resp.attempt == 4


# --- mock scripts ------------------------------------------------------------------------

def test_script_forms_and_conversation_routing(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("""
end: finished
conversations:
  - when: {prompt_matches: "^deploy"}
    turns:
      - run: [make, make install]
        usage: {input: 5, output: 6}
  - when: {system_contains: git}
    end: git done
  - turns: [{say: other}]
""")
    state = ScriptState(load_script(f))
    r = state.reply("", "deploy it", 0)
    assert [c.arguments["command"] for c in r.tool_calls] == ["make", "make install"]
    assert (r.usage.input, r.usage.output) == (5, 6)
    assert state.reply("", "deploy it", 1).text == "finished"
    assert state.reply("you use git", "x", 0).text == "git done"
    assert state.reply("", "x", 0).text == "other"
    assert Script.model_validate([{"say": "a"}]).conversations[0].turns[0].say == "a"


def test_script_faults_fire_once_per_conversation():
    state = ScriptState(Script.model_validate(
        [{"run": "ls", "fail": [{"status": 429, "retry_after": 1}, 500]}]))
    assert state.reply("", "a", 0).status == 429
    assert state.reply("", "b", 0).status == 429  # another conversation: its own faults
    assert state.reply("", "a", 0).status == 500
    assert state.reply("", "a", 0).tool_calls[0].name == "run_command"


@pytest.mark.parametrize(("text", "error"), [
    ("- {}\n", "needs `say`, `run` or `tool`"),
    ("- say: x\n  bogus: 1\n", "bogus"),
    ("turns: [{say: a}]\nconversations: [{turns: []}]\n", "not both"),
    ("- say: x\n  fail: teapot\n", "fail"),
    ("- [unclosed\n", "not valid YAML"),
])
def test_bad_scripts_are_one_line_usage_errors(tmp_path, text, error):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(UsageError, match=error) as e:
        load_script(f)
    assert str(f) in str(e.value) and "\n" not in str(e.value).strip()
