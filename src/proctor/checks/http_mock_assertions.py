"""`http_mock_assertions` — every assertion about a recording http_mock's requests holds."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from proctor.checks.base import CheckConfig, CheckContext, CheckType
from proctor.model import CheckOutcome


class HttpAssertion(CheckConfig):
    field: str = Field(
        description="request_count, last_request.body, last_request.headers, requests[N], "
        "requests[N].body or requests[N].headers."
    )
    filters: dict[str, Any] = Field(
        default_factory=dict,
        description="Which requests count: method, path, headers (map), or any KEY: VALUE matching "
        "a header or a top-level JSON body field.",
    )
    equals: Any = Field(None, description="The field equals this.")
    contains: Any = Field(None, description="The field (as text) contains this.")
    min: float | None = Field(None, description="The field (a number) is at least this.")
    max: float | None = Field(None, description="The field (a number) is at most this.")

    @model_validator(mode="after")
    def _one_comparison(self) -> HttpAssertion:
        given = [k for k in ("equals", "contains", "min", "max") if k in self.model_fields_set]
        if not given:
            raise ValueError("give a comparison: equals, contains, min or max")
        return self


class Config(CheckConfig):
    service: str = Field(description="Name of an http_mock service with `record: true`.")
    assertions: list[HttpAssertion] = Field(min_length=1, description="All must hold.")


async def evaluate(cfg: Config, ctx: CheckContext) -> CheckOutcome:
    raise NotImplementedError


CHECK = CheckType(
    name="http_mock_assertions",
    summary="every assertion on the mock's recorded requests holds",
    config=Config,
    evaluate=evaluate,
    invariant=True,
)
