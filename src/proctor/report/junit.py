"""junit.xml: the run as JUnit XML, the one test format every CI system reads.

Layout (valid against the Jenkins JUnit schema, junit-10.xsd, that CI tools validate with):

* one <testsuite> per task variant: task × model × help mode × params. Its <properties> say
  which (the schema has no properties on a testcase, so they live on the suite);
* one <testcase> per trial: classname "TASK_ID/MODEL" (just TASK_ID without a model), name the
  trial id, time its duration;
* a failed trial has one <failure>: message names each failed check (and violated forbidden
  rule), the body gives every message; an errored trial has an <error> with the error;
* <system-out> holds the agent's output, cut.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from proctor.report import data
from proctor.report.labels import gist
from proctor.results import RunResults, TrialRecord

OUTPUT_LIMIT = 4000  # characters of agent output per testcase
MESSAGE_LIMIT = 2000  # characters per check message in a failure body
ATTR_LIMIT = 500  # characters of a failure's message attribute

# Characters XML 1.0 cannot carry at all, even escaped (control chars go in data.clean).
_XML_ILLEGAL = re.compile("[\ud800-\udfff\ufffe\uffff]")


def text(value: Any, limit: int | None = None) -> str:
    s = data.clean(value) if limit is None else data.cut(value, limit)
    return _XML_ILLEGAL.sub("\ufffd", s)


def _xml(s: str) -> str:
    return _XML_ILLEGAL.sub("\ufffd", s)


# One line already: words separated by single spaces, nothing to clean or replace.
_WORD = "[^\\s\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]+"
_ONE_LINE = re.compile(f"(?:{_WORD}(?: {_WORD})*)?")


def attr(value: Any, limit: int = ATTR_LIMIT) -> str:
    if isinstance(value, str) and len(value) <= limit and _ONE_LINE.fullmatch(value):
        return value  # most names and ids: tens of thousands of them in a large run
    return _XML_ILLEGAL.sub("\ufffd", data.one_line(value, limit))


def _timestamp(iso: Any) -> str | None:
    """ISO 8601 as xs:dateTime without fractions (what JUnit consumers parse), or None."""
    if not iso:
        return None
    try:
        dt = datetime.fromisoformat(str(iso).replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt.replace(microsecond=0).isoformat()


def _hostname(run: Mapping[str, Any] | None) -> str | None:
    host = (run or {}).get("host")
    if isinstance(host, dict):
        host = host.get("hostname") or host.get("name")
    return attr(host, 200) if host else None


def _variant(t: Mapping[str, Any]) -> tuple[Any, ...]:
    return (t.get("task_id"), data.who(t), t.get("help_mode"),
            tuple(sorted((k, str(v)) for k, v in (t.get("params") or {}).items())))


def _suite_name(t: Mapping[str, Any], several: bool = False) -> str:
    """`task [agent · model, help mode, params]`; the agent alone (`oracle`) is named only
    when the run has more than one agent under test."""
    who = data.row_label(t) if t.get("model") or several else None
    extra = [x for x in (who, t.get("help_mode"), data.params_text(t.get("params"))) if x]
    return f"{t.get('task_id')} [{', '.join(extra)}]" if extra else str(t.get("task_id"))


def _failure(t: Mapping[str, Any]) -> tuple[str, str, str]:
    """(message, type, body) of a failed trial."""
    checks = [c for c in t.get("checks") or [] if not c.get("passed")]
    rules = data.violated_rules(t)
    body = [f"why: {t['reason']}"] if t.get("reason") else []
    named = [(str(c.get("name")), c.get("message") or "failed") for c in checks]
    named += [(f"forbidden {f.get('rule')}", f.get("details") or "violated") for f in rules]
    heads = _heads(named)
    for c in checks:
        gate = ", gate" if c.get("gate") else ""
        body.append(f"{c.get('name')} ({c.get('type')}, weight {c.get('weight', 1)}{gate}, "
                    f"score {float(c.get('score') or 0):.2f}):\n"
                    f"{data.cut(c.get('message') or 'failed', MESSAGE_LIMIT, keep='both')}")
    for f in rules:
        body.append(f"forbidden rule {f.get('rule')} violated:\n"
                    f"{data.cut(f.get('details') or '', MESSAGE_LIMIT, keep='both')}")
    score = float(t.get("composite_score") or 0.0)
    if not heads:  # partial scores below the pass threshold, nothing failed outright
        heads.append(f"composite score {score:.2f} below the pass threshold")
    kinds = {c.get("type") for c in checks} | ({"forbidden"} if rules else set())
    kind = kinds.pop() if len(kinds) == 1 else "checks"
    body.append(f"composite score: {score:.2f}")
    return "; ".join(heads), kind or "checks", "\n\n".join(body)


def _heads(named: list[tuple[str, str]]) -> list[str]:
    """`name: message` per failure, sharing the message attribute's ATTR_LIMIT: a short
    message leaves its unused share to the long ones, and each long one keeps its first
    line and its end (labels.gist), where a test runner or a traceback says what went wrong."""
    whole = [gist(m, 10 * ATTR_LIMIT) for _, m in named]
    room = ATTR_LIMIT - sum(len(n) + 4 for n, _ in named)  # `name: ` and `; `
    limits = [0] * len(named)
    for k, i in enumerate(sorted(range(len(named)), key=lambda i: len(whole[i]))):
        limits[i] = max(40, min(len(whole[i]), room // (len(named) - k)))
        room -= limits[i]
    return [f"{n}: {gist(m, lim)}" for (n, m), lim in zip(named, limits, strict=True)]


_PLAIN = re.compile(r'[^&<>"\n\r\t]*')


def _a(value: str) -> str:
    """An attribute value, escaped as XML wants it inside double quotes."""
    if _PLAIN.fullmatch(value):
        return value
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;")
            .replace("\t", "&#09;"))


def _t(value: str) -> str:
    """Element text, escaped."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _element(tag: str, attrs: dict[str, str], body: str | None, pad: str) -> str:
    head = f"{pad}<{tag}" + "".join(f' {k}="{_a(v)}"' for k, v in attrs.items())
    return f"{head} />" if body is None else f"{head}>{_t(body)}</{tag}>"


def _testcase(t: Mapping[str, Any]) -> str:
    """One <testcase>, written directly (ElementTree's serializer took most of the time of
    a 10,000-trial junit.xml)."""
    model = t.get("model")
    attrs = {"name": attr(t.get("id")),
             "classname": attr(f"{t.get('task_id')}/{data.row_label(t)}" if model
                               else t.get("task_id")),
             "time": f"{float(t.get('duration_s') or 0.0):.3f}"}
    inner: list[str] = []
    status = data.status_of(t)
    if status == "error":
        err = t.get("error") or "the trial errored"
        kind = t.get("error_kind")  # infra | provider | check (SPEC §5); older runs: none
        inner.append(_element("error", {"message": attr(gist(err, ATTR_LIMIT)),
                                        "type": attr(kind, 100) if kind else "error"},
                              _xml(data.cut(err, MESSAGE_LIMIT, keep="both")), "      "))
    elif status == "fail":
        message, kind, body = _failure(t)
        inner.append(_element("failure", {"message": attr(message), "type": attr(kind, 100)},
                              text(body), "      "))
    output = t.get("output")
    if output:
        inner.append(_element("system-out", {}, text(output, OUTPUT_LIMIT), "      "))
    if not inner:
        return _element("testcase", attrs, None, "    ")
    return (_element("testcase", attrs, None, "    ")[:-3] + ">\n" + "\n".join(inner)
            + "\n    </testcase>")


def _properties(first: Mapping[str, Any], entry: dict[str, Any] | None,
                isolation: str = "", incomplete: str = "") -> dict[str, str]:
    props = {"run_incomplete": incomplete or None, "not_isolated": isolation or None,
             "task_id": first.get("task_id"), "model": first.get("model"),
             "help_mode": first.get("help_mode"), "agent": first.get("agent"),
             "agent_model": data.row_label(first), "category": first.get("category")}
    for k, v in sorted((first.get("params") or {}).items()):
        props[f"param.{k}"] = v
    if entry:
        props["task_status"] = entry.get("status")
        props["task_pass_rate"] = entry.get("pass_rate")
    return {k: attr(v, 300) for k, v in props.items() if v is not None}


def render_junit(results: RunResults, run: Mapping[str, Any] | None = None,
                 run_dir: Any = None) -> str:
    """The whole junit.xml document."""
    trials = results.get("trials") or []
    groups: dict[tuple[Any, ...], list[TrialRecord]] = {}
    for t in trials:
        groups.setdefault(_variant(t), []).append(t)
    rows = data.rows_by_condition(results)
    hostname = _hostname(run)
    several = len({data.who(t) for t in trials}) > 1
    # An interrupted run's finished trials may all pass: CI must not read it as a green run.
    incomplete = ""
    if data.headline(results)["incomplete"]:
        why = "interrupted" if results.get("interrupted") else "trials are missing"
        incomplete = (f"{why}: only the trials that finished are here; finish it with "
                      "proctor run --resume")

    suites: list[str] = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "time": 0.0}
    for i, group in enumerate(groups.values()):
        first = group[0]
        failures = sum(data.status_of(t) == "fail" for t in group)
        errors = sum(data.status_of(t) == "error" for t in group)
        duration = sum(float(t.get("duration_s") or 0.0) for t in group)
        suite_attrs = {"name": attr(_suite_name(first, several)), "tests": str(len(group)),
                       "failures": str(failures), "errors": str(errors), "skipped": "0",
                       "time": f"{duration:.3f}", "id": str(i)}
        stamp = _timestamp(min((t.get("started_at") or "" for t in group), default="")
                           or results.get("started_at"))
        if stamp:
            suite_attrs["timestamp"] = stamp
        if hostname:
            suite_attrs["hostname"] = hostname
        parts = [_element("testsuite", suite_attrs, None, "  ")[:-3] + ">"]
        # The task verdict (flaky etc.) comes from the `tasks` entry that covers these trials.
        props = _properties(first, rows.get(data.condition(first)), data.not_isolated(results),
                            incomplete)
        if props:
            parts.append("    <properties>")
            # _element's text, written inline: eight per task, 80,000 in a large run
            parts += [f'      <property name="{_a(k)}" value="{_a(v)}" />'
                      for k, v in props.items()]
            parts.append("    </properties>")
        parts += [_testcase(t) for t in group]
        parts.append("  </testsuite>")
        suites.append("\n".join(parts))
        totals["tests"] += len(group)
        totals["failures"] += failures
        totals["errors"] += errors
        totals["time"] += duration
    root = {"name": attr(f"proctor {results.get('run_id', '')}".strip()
                         + (f" (incomplete: {incomplete.split(':')[0]})" if incomplete else "")),
            "tests": str(totals["tests"]), "failures": str(totals["failures"]),
            "errors": str(totals["errors"]), "time": f"{totals['time']:.3f}"}
    head = _element("testsuites", root, None, "")
    if not suites:
        return f'<?xml version="1.0" encoding="UTF-8"?>\n{head}\n'
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + head[:-3] + ">\n"
            + "\n".join(suites) + "\n</testsuites>\n")
