"""One trial's budget: what its model calls used so far against its `limits` (SPEC §2).

The same object is consulted by every model-driven agent: the `llm` loop charges each
response itself, and proctor's recording model proxy charges each call of a real agent
(Claude Code, Codex, mini-swe-agent). A turn is one model response (a side call on another
model is no turn, but its tokens and cost count). The response that reaches a limit is the
last: the caller does not act on it and stops the agent, as at a timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from proctor.fieldwise import Fieldwise
from proctor.model import Limits

# The order limits are named in when one response reaches several at once.
KINDS = ("turns", "tokens", "cost_usd")


@dataclass(eq=False, repr=False)
class Budget(Fieldwise):
    """A task's model-call limits and what its calls used so far."""
    limits: Limits = field(default_factory=Limits)
    turns: int = 0
    tokens: int = 0
    cost_usd: float | None = 0.0  # None once a call's price is unknown
    hit: str | None = None  # the first limit reached ("turns" | "tokens" | "cost_usd")
    # Called once, when a limit is reached (the proxy's way to stop a program it serves).
    on_hit: Callable[[str], None] | None = None

    @property
    def limited(self) -> bool:
        return self.limits.any()

    def charge(self, tokens_in: int, tokens_out: int, cost: float | None,
               turn: bool = True) -> str | None:
        """Count one model response; the limit it reached (or None). A limit reached once
        stays reached."""
        self.turns += turn
        self.tokens += tokens_in + tokens_out
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost
        if self.hit is None and (reached := self.reached()):
            self.hit = reached
            if self.on_hit is not None:
                self.on_hit(reached)
        return self.hit

    def reached(self) -> str | None:
        lim = self.limits
        if lim.turns is not None and self.turns >= lim.turns:
            return "turns"
        if lim.tokens is not None and self.tokens >= lim.tokens:
            return "tokens"
        # An unknown price never reaches a cost limit (docs/running.md "Limits").
        if lim.cost_usd is not None and self.cost_usd is not None \
                and self.cost_usd >= lim.cost_usd - 1e-12:
            return "cost_usd"
        return None

    def describe(self) -> str:
        """The limit reached, in words: "the agent's token limit (5000) was reached"."""
        return describe(self.limits, self.hit)


def describe(limits: Limits, hit: str | None) -> str:
    value = {"turns": limits.turns, "tokens": limits.tokens, "cost_usd": limits.cost_usd}.get(
        hit or "")
    word = {"turns": "turn", "tokens": "token", "cost_usd": "cost"}.get(hit or "", "")
    shown = f"${value:g}" if hit == "cost_usd" and value is not None else f"{value}"
    return f"the agent's {word} limit ({shown}) was reached"
