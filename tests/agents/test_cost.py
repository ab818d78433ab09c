"""An external agent's cost: each model call priced by its own model."""

from __future__ import annotations

import pytest

from proctor.agents.external import _cost
from proctor.config import ProctorConfig

NONE = ProctorConfig()  # no proctor.toml


def test_side_calls_are_priced_by_their_own_model():
    usage = {"claude-sonnet-4-5": [1_000_000, 0], "claude-haiku-4-5": [0, 1_000_000]}
    # sonnet input $3/M, haiku output $5/M
    assert _cost(usage, "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", NONE) == \
        pytest.approx(3.0 + 5.0)


def test_an_unpriced_model_makes_the_cost_unknown_not_cheaper():
    usage = {"claude-sonnet-4-5": [1000, 10], "some-new-model": [10, 10]}
    assert _cost(usage, "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", NONE) is None
    # mock models cost nothing, as for the llm agent; so do their side calls
    assert _cost({"mock": [10, 10], "claude-haiku-4-5": [5, 5]}, "mock/x.yaml", "mock", NONE) == 0


def test_an_unpriced_model_costs_null_even_without_a_successful_call():
    """As for `llm` (cost_usd of an unknown price is None): an endpoint that failed at once
    leaves no usage, and that must not read as free."""
    assert _cost({}, "dead/some-model", "some-model", NONE) is None
    assert _cost({}, "mock/x.yaml", "mock", NONE) == 0  # a known price: known to be 0
    assert _cost({}, "dead/some-model", "some-model",
                 ProctorConfig.model_validate({"prices": {"dead/*": {"input": 1, "output": 2}}})) == 0
