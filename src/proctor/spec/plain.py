"""A plain reader for what a valid spec's run needs: a suite, its tasks and their
assertions' check configs (and the common subset of a scenario), read without building a
pydantic validator (start-up time: the first validation of a model builds its schema,
~30 ms for a suite's four models).

It accepts only what it is sure of and returns None at the first thing it is not (a
number where text is expected, a service, a check config with its own validator, any
mistake): the caller then validates the same data with the pydantic models, which accept
it or word the error exactly as they always have. So this reader decides nothing a model
would decide differently: `tests/spec/test_plain.py` holds every example and fixture to
that (the same TaskDefs either way).
"""

from __future__ import annotations

import re
from typing import Any

from proctor.durations import parse_duration

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # (spec.base gives it to the models)
ENV_NAME_RULE = "letters, digits and _, not starting with a digit"


class Plain:
    """A spec model's fields as attributes, like the model read them; `given` names the
    keys the spec set (pydantic's `model_fields_set`)."""

    def __init__(self, values: dict[str, Any], given: set[str]) -> None:
        self.__dict__.update(values)
        self.given = given

    def __getattr__(self, name: str) -> Any:  # only for mypy: every field is set
        raise AttributeError(name)


def limits_def(under: Any, over: Any) -> Any:
    """model.Limits: `over`'s keys over `under`'s, key by key (a key set to null lifts
    `under`'s); each a spec Limits model, a Plain one, or None."""
    from proctor.model import Limits

    return Limits(**{**_given(under), **_given(over)})


def limits_given(under: Any) -> dict[str, Any]:
    """`under`'s part of limits_def, for limits_over (worked out once for many `over`s)."""
    return _given(under)


def limits_over(given: dict[str, Any], over: Any) -> Any:
    """limits_def(under, over) from limits_given(under)."""
    from proctor.model import Limits

    return Limits(**{**given, **_given(over)}) if over is not None else Limits(**given)


def _given(limits: Any) -> dict[str, Any]:
    if limits is None:
        return {}
    if isinstance(limits, Plain):
        return {k: getattr(limits, k) for k in limits.given}
    return dict(limits.model_dump(exclude_unset=True))


class _No(Exception):
    """Not accepted here: the models decide."""


def _str(v: Any, min_length: int = 0) -> str:
    if type(v) is not str or len(v) < min_length:
        raise _No
    return v


def _opt_str(v: Any) -> str | None:
    return None if v is None else _str(v)


def _int(v: Any, lo: int | None = None, hi: int | None = None) -> int:
    if type(v) is not int or (lo is not None and v < lo) or (hi is not None and v > hi):
        raise _No
    return v


def _opt_int(v: Any, lo: int | None = None, hi: int | None = None) -> int | None:
    return None if v is None else _int(v, lo, hi)


def _float(v: Any) -> float:
    if type(v) not in (int, float):
        raise _No
    return float(v)


def _strs(v: Any) -> list[str]:
    if type(v) is not list or any(type(x) is not str for x in v):
        raise _No
    return list(v)


def _regexes(v: Any) -> list[str]:
    out = _strs(v)
    for p in out:
        try:
            re.compile(p)
        except re.error:
            raise _No from None
    return out


def _choice(v: Any, choices: tuple[str, ...]) -> str:
    if type(v) is not str or v not in choices:
        raise _No
    return v


def _env(v: Any) -> dict[str, str]:
    if type(v) is not dict:
        raise _No
    out = {}
    for k, x in v.items():
        if type(k) is not str or not ENV_NAME.match(k):
            raise _No
        if type(x) is bool:
            out[k] = "true" if x else "false"
        elif type(x) in (int, float):
            out[k] = str(x)
        elif x is None:
            out[k] = ""
        else:
            out[k] = _str(x)
    return out


def _seconds(v: Any) -> float:
    try:
        s = parse_duration(v)
    except ValueError:
        raise _No from None
    if type(s) is not float or not s > 0:
        raise _No
    return s


_ABSENT = object()


def _read(data: Any, fields: dict[str, tuple[Any, Any]]) -> Plain:
    """Each field read by its reader from `data` (or its default when absent); unknown
    keys, missing required fields (default `_ABSENT`) and wrong values are _No."""
    if type(data) is not dict or not data.keys() <= fields.keys():
        raise _No
    values = {}
    for key, (read, default) in fields.items():
        name = "assert_" if key == "assert" else key
        if key in data:
            values[name] = read(data[key])
        elif default is _ABSENT:
            raise _No
        else:
            values[name] = default() if callable(default) else default
    return Plain(values, {("assert_" if k == "assert" else k) for k in data})


def _limits(v: Any) -> Plain | None:
    if v is None:
        return None
    return _read(v, {"turns": (lambda x: _opt_int(x, 1), None),
                     "tokens": (lambda x: _opt_int(x, 1), None), "cost_usd": (_cost, None)})


def _cost(v: Any) -> float | None:
    if v is None:
        return None
    f = _float(v)
    if not f > 0:
        raise _No
    return f


def _percent(v: Any) -> float:
    f = _float(v)
    if not 0 <= f <= 100:
        raise _No
    return f


def _percents(v: Any) -> dict[str, float]:
    if type(v) is not dict or any(type(k) is not str for k in v):
        raise _No
    return {k: _percent(x) for k, x in v.items()}


def _thresholds(v: Any) -> Plain | None:
    if v is None:
        return None
    return _read(v, {"default": (lambda x: None if x is None else _percent(x), None),
                     "models": (_percents, dict), "tolerance": (_percent, 0),
                     "behavior": (lambda x: _choice(x, ("error", "informational")), "error")})


def _providers(v: Any) -> list[str]:
    out = _strs(v)
    if any("/" not in p.strip("/") for p in out):
        raise _No
    return out


def _help_modes(v: Any) -> list[str]:
    out = [_choice(x, ("injected", "discoverable", "none")) for x in _strs(v)]
    if not out or len(set(out)) != len(out):
        raise _No
    return out


def _nonempty_list(v: Any) -> list[Any]:
    if type(v) is not list or not v:
        raise _No
    return list(v)


def _no_services(v: Any) -> list[Any]:
    if v != [] or type(v) is not list:
        raise _No  # a service is for the Service model to read
    return []


SUITE = {
    "cli": (lambda x: _str(x, 1), _ABSENT),
    "display_name": (_opt_str, None), "category": (_opt_str, None),
    "website_url": (_opt_str, None), "github_url": (_opt_str, None),
    "version_command": (_opt_str, None),
    "providers": (_providers, list), "help_modes": (_help_modes, lambda: ["injected"]),
    "system_prompt": (_opt_str, None), "concurrency": (lambda x: _int(x, 1, 1024), 3),
    "workdir": (_opt_str, None), "repeat": (lambda x: _int(x, 1, 100), 1),
    "thresholds": (_thresholds, None), "limits": (_limits, None), "env": (_env, dict),
    "setup": (_strs, list), "ignore_commands": (_regexes, list), "scaffold": (_opt_str, None),
    "redact_env": (_strs, list), "redact_patterns": (_regexes, list),
    "upload": (lambda x: None if x is None else _choice(x, ("auto", "never", "on_failure",
                                                            "always")), None),
    "services": (_no_services, list), "tasks": (_nonempty_list, _ABSENT),
}

TASK = {
    "id": (lambda x: _str(x, 1), _ABSENT), "intent": (lambda x: _str(x, 1), _ABSENT),
    "assert": (_nonempty_list, _ABSENT), "setup": (_strs, list),
    "max_turns": (lambda x: _int(x, 1, 20), 5), "limits": (_limits, None),
    "difficulty": (lambda x: None if x is None else _choice(x, ("easy", "medium", "hard")), None),
    "category": (_opt_str, None), "repeat": (lambda x: _opt_int(x, 1, 100), None),
    "env": (_env, dict), "timeout": (_seconds, 300), "solution": (_strs, list),
    "ignore_commands": (_regexes, list),
}


def suite(data: Any) -> Plain | None:
    """A suite mapping as the Suite model reads it, or None: ask the model."""
    try:
        return _read(data, SUITE)
    except _No:
        return None


def task(data: Any) -> Plain | None:
    """A task mapping as the SuiteTask model reads it, or None: ask the model."""
    try:
        return _read(data, TASK)
    except _No:
        return None


# --- check configs: declared classes (proctor/declared.py) read their own data ---

def config(declared: Any, data: Any) -> Any:
    """A check's Config read from `data` without pydantic, or None: validate it."""
    return declared.read_plain(data)


# --- the scenario dialect: the common subset (no secrets, services, network, forbidden,
# environment, matrix, memory or disk: those are for the models to read) ---

def _none(v: Any) -> None:
    if v is not None:
        raise _No


def _empty_list(v: Any) -> list[Any]:
    if type(v) is not list or v:
        raise _No
    return []


def _files(v: Any) -> dict[str, str]:
    if type(v) is not dict:
        raise _No
    out = {}
    for k, x in v.items():
        if type(k) is not str or k.startswith("/") or ".." in k.split("/"):
            raise _No
        out[k] = _str(x)
    return out


def _setup(v: Any) -> Plain:
    return _read(v, {"packages": (_strs, list), "env": (_env, dict), "commands": (_strs, list),
                     "files": (_files, dict)})


def _resources(v: Any) -> Plain:
    return _read(v, {"timeout": (lambda x: None if x is None else _seconds(x), None),
                     "memory": (_none, None), "cpu": (_cost, None), "disk": (_none, None)})


def resources_dump(r: Any) -> dict[str, Any]:
    """A plain Resources as `model_dump(exclude_none=True)` gives it (field order)."""
    return {k: getattr(r, k) for k in ("timeout", "memory", "cpu", "disk")
            if getattr(r, k) is not None}


def _version_text(v: Any) -> str | None:
    if v is None:
        return None
    if type(v) is not str or not re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", v):
        raise _No
    return v


def _agent(types_: tuple[str, ...]) -> Any:
    def read(v: Any) -> Plain:
        agent = _read(v, {
            "type": (lambda x: _choice(x, types_), "llm"), "snapshot": (_opt_str, None),
            "model": (_opt_str, None), "command": (_opt_str, None),
            "version": (_version_text, None), "ignore_commands": (_regexes, list),
            "max_turns": (lambda x: _int(x, 1, 20), 5), "timeout": (_seconds, 300),
            "limits": (_limits, None)})
        if (agent.type == "command" and not agent.command) or (
                agent.type == "snapshot" and not agent.snapshot):
            raise _No
        return agent
    return read


def _weight(v: Any) -> float:
    f = _float(v)
    if not f >= 0:
        raise _No
    return f


def _bool_field(v: Any) -> bool:
    if type(v) is not bool:
        raise _No
    return v


def _mapping(v: Any) -> dict[str, Any]:
    if type(v) is not dict or any(type(k) is not str for k in v):
        raise _No
    return dict(v)


def _invariants(v: Any) -> dict[str, Plain]:
    if type(v) is not dict or not v or any(type(k) is not str for k in v):
        raise _No
    out = {k: _read(x, {"description": (lambda s: _str(s, 1), _ABSENT),
                        "weight": (_weight, 1.0), "gate": (_bool_field, False),
                        "check": (_mapping, _ABSENT)}) for k, x in v.items()}
    if not any(i.weight > 0 for i in out.values()):
        raise _No
    return out


def _fraction(v: Any) -> float | None:
    if v is None:
        return None
    f = _float(v)
    if not 0 <= f <= 1:
        raise _No
    return f


def _scoring(v: Any) -> Plain:
    return _read(v, {"pass_threshold": (_fraction, None),
                     "replica_aggregation": (lambda x: _choice(x, ("all", "any", "majority",
                                                                   "mean")), "all")})


def _no_matrix(v: Any) -> dict[str, Any]:
    if v != {} or type(v) is not dict:
        raise _No
    return {}


def _parallelism(v: Any) -> Plain:
    return _read(v, {"replicas": (lambda x: _int(x, 1, 100), 1), "matrix": (_no_matrix, dict)})


def _version(v: Any) -> int:
    if v == "1" and type(v) is str:
        return 1
    return _int(v, 1, 1)


def _default(read: Any) -> Any:
    return lambda: read({})


def scenario(data: Any, agent_types: tuple[str, ...]) -> Plain | None:
    """A scenario mapping as the Scenario model reads it, or None: ask the model.
    `agent_types`: what `agent.type` may be (the Agent model's choices)."""
    agent = _agent(agent_types)
    try:
        return _read(data, {
            "version": (_version, _ABSENT), "id": (lambda x: None if x is None else _str(x, 1),
                                                   None),
            "description": (_str, ""), "base": (_opt_str, None), "environment": (_none, None),
            "setup": (_setup, _default(_setup)), "resources": (_resources, _default(_resources)),
            "task": (lambda x: _read(x, {"prompt": (lambda s: _str(s, 1), _ABSENT)}), _ABSENT),
            "agent": (agent, _default(agent)), "secrets": (_empty_list, list),
            "services": (_empty_list, list), "network": (_none, None),
            "audit": (_mapping, dict), "invariants": (_invariants, _ABSENT),
            "forbidden": (_none, None), "scoring": (_scoring, _default(_scoring)),
            "parallelism": (_parallelism, _default(_parallelism)), "solution": (_strs, list)})
    except _No:
        return None
