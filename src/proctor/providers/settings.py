"""How a `provider/model` string becomes an endpoint, a key, limits and a retry policy.

Sources, strongest first: environment (`<NAME>_BASE_URL`, the key variable), proctor.toml
`[providers.NAME]` and `[retry]`, then the built-in presets below. docs/models.md has the table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proctor.errors import UsageError
from proctor.fieldwise import FrozenFieldwise
from proctor.providers.retry import RetryPolicy

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

KINDS = ("openai", "anthropic", "mock")  # = proctor.providers.PROVIDERS
# `kind` spellings accepted in proctor.toml.
_KIND_ALIASES = {"openai-compatible": "openai", "openai_compatible": "openai"}

PRESETS: dict[str, dict[str, Any]] = {
    "openai": {"kind": "openai", "api_key_env": "OPENAI_API_KEY"},
    "anthropic": {"kind": "anthropic", "api_key_env": "ANTHROPIC_API_KEY"},
    "openrouter": {"kind": "openai", "base_url": "https://openrouter.ai/api/v1",
                   "api_key_env": "OPENROUTER_API_KEY"},
    "ollama": {"kind": "openai", "base_url": "http://localhost:11434/v1"},
    "mock": {"kind": "mock"},
}

JUDGE_ALIASES = {"paragon-fast": ("PROCTOR_JUDGE_FAST", "fast"),
                 "paragon-max": ("PROCTOR_JUDGE_MAX", "max")}


@dataclass(frozen=True, eq=False, repr=False)
class ProviderSettings(FrozenFieldwise):
    """A model provider as configured: its kind, address, key, limits and prices."""
    provider: str  # "openai", "ollama", ...
    kind: str  # openai | anthropic | mock
    base_url: str | None
    api_key_env: str | None  # the variable holding the key; None: no key needed
    api_key: str | None  # a literal key from proctor.toml (local servers), else None
    max_concurrency: int
    timeout: float  # seconds per request
    retry: RetryPolicy
    official: bool  # api.openai.com itself (not a compatible server): newer parameter names
    send_temperature: bool | None = None  # None: when the SDK has the parameter
    # False: `max_concurrency` calls in flight, whatever the provider answers (no AIMD).
    adaptive_concurrency: bool = True

    def key(self) -> str | None:
        if self.api_key:
            return self.api_key
        return os.environ.get(self.api_key_env) if self.api_key_env else None


def resolve_model(model: str, config: ProctorConfig) -> str:
    """Expand the judge aliases paragon-fast / paragon-max; other names pass through."""
    if model not in JUDGE_ALIASES:
        return model
    var, key = JUDGE_ALIASES[model]
    target = os.environ.get(var) or {"fast": config.judge.fast, "max": config.judge.max}[key]
    if not target:
        raise UsageError(f"model alias {model} is not configured: set {var}=provider/model "
                         f"or [judge] {key} = \"provider/model\" in proctor.toml")
    return str(target)


def default_model(config: ProctorConfig) -> str | None:
    """The model for llm tasks that name none: PROCTOR_MODEL, else proctor.toml `model`."""
    return os.environ.get("PROCTOR_MODEL") or config.model or None


def split_model(model: str) -> tuple[str, str]:
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise UsageError(f"model {model!r}: write it as provider/model, e.g. openai/gpt-4.1")
    return provider, name


def provider_settings(provider: str, config: ProctorConfig) -> ProviderSettings:
    conf = dict(PRESETS.get(provider, {}))
    user = config.providers.get(provider)
    if user is not None:
        conf.update(user.model_dump(exclude_unset=True))  # what the file says, over the preset
    elif not conf:
        raise UsageError(
            f"unknown provider {provider!r}: use openai/, anthropic/, openrouter/, ollama/ or "
            f"mock/, or configure [providers.{provider}] with kind = \"openai-compatible\" and "
            "base_url in proctor.toml")
    kind = _KIND_ALIASES.get(str(conf.get("kind", "openai")), str(conf.get("kind", "openai")))
    if kind not in KINDS:
        raise UsageError(f"[providers.{provider}] kind = {kind!r}: use openai-compatible, "
                         "openai or anthropic")
    env_url = os.environ.get(f"{provider.upper().replace('-', '_')}_BASE_URL")
    base_url = env_url or conf.get("base_url") or None
    retry_conf: dict[str, Any] = config.retry.model_dump(exclude_unset=True)
    retry_conf.update((k, conf[k]) for k in ("max_attempts", "base_delay", "max_delay") if k in conf)
    try:
        retry = RetryPolicy(**{k: type(getattr(RetryPolicy, k))(v) for k, v in retry_conf.items()
                               if k in ("max_attempts", "base_delay", "max_delay")})
        max_conc = int(conf.get("max_concurrency", 8))
        timeout = float(conf.get("timeout", 600))
    except (TypeError, ValueError) as e:
        raise UsageError(f"[providers.{provider}] / [retry]: {e}") from None
    return ProviderSettings(
        provider=provider, kind=kind, base_url=base_url,
        api_key_env=conf.get("api_key_env") or None, api_key=conf.get("api_key") or None,
        max_concurrency=max_conc, timeout=timeout, retry=retry,
        official=kind == "openai" and (not base_url or "api.openai.com" in base_url),
        send_temperature=conf.get("send_temperature"),
        adaptive_concurrency=bool(conf.get("adaptive_concurrency", True)),
    )
