"""`{{ ... }}` placeholders: {{workdir}}, {{prompt}}, {{ params.NAME }}, {{ secrets.NAME }}.

Loading checks that every params/secrets reference is declared (`references`); each trial
fills in its values (`render`). Unknown placeholders are left as they are, so shell text
such as `{{` in a jq program survives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_\-]+))?\s*\}\}")


def references(text: str) -> Iterator[tuple[str, str | None]]:
    """Yield (namespace, name) for every placeholder, e.g. ("secrets", "API_KEY")."""
    for m in PLACEHOLDER.finditer(text):
        yield m.group(1), m.group(2)


def render(
    text: str,
    *,
    params: Mapping[str, Any] | None = None,
    secrets: Mapping[str, str] | None = None,
    workdir: str | None = None,
    prompt: str | None = None,
) -> str:
    if "{{" not in text:
        return text

    def sub(m: re.Match[str]) -> str:
        ns, name = m.group(1), m.group(2)
        if name is None:
            if ns == "workdir" and workdir is not None:
                return workdir
            if ns == "prompt" and prompt is not None:
                return prompt
        elif ns == "params" and params is not None and name in params:
            return str(params[name])
        elif ns == "secrets" and secrets is not None and name in secrets:
            return secrets[name]
        return m.group(0)

    return PLACEHOLDER.sub(sub, text)


def render_data(obj: Any, **values: Any) -> Any:
    """render() applied to every string inside dicts/lists."""
    if isinstance(obj, str):
        return render(obj, **values)
    if isinstance(obj, dict):
        return {k: render_data(v, **values) for k, v in obj.items()}
    if isinstance(obj, list):
        return [render_data(v, **values) for v in obj]
    return obj
