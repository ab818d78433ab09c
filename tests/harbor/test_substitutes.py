"""Installer substitutes (sandbox/substitutes.py): the egress proxy answers a covered URL
itself, over TLS with proctor's CA, with the same effect from a package registry; a URL it
does not cover still goes out (or is refused) as before. Real curl through the real proxy."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from proctor.config import SubstituteRule
from proctor.sandbox import substitutes
from proctor.sandbox.egress import EgressProxy
from proctor.sandbox.substitutes import Substitutes


async def _through_proxy(subs: Substitutes, url: str, *, egress: str = "allow",
                         allow: tuple[str, ...] = ()) -> tuple[int, str, list[dict]]:
    events: list[dict] = []
    proxy = EgressProxy(egress, list(allow), events.append, subs)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    ca = substitutes.cache_dir() / "ca.crt"
    child = await asyncio.create_subprocess_exec(
        "curl", "-sS", "--max-time", "30", "--cacert", str(ca), "-x", f"http://127.0.0.1:{port}",
        "-w", "\n%{http_code}", url, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await child.communicate()
    server.close()
    body, _, code = out.decode().rpartition("\n")
    return int(code or 0), body + err.decode(), events


@pytest.fixture
def ca(tmp_path, monkeypatch):
    monkeypatch.setenv("PROCTOR_CACHE", str(tmp_path / "cache"))
    if substitutes.ca_pem() is None:
        pytest.fail("no openssl: the substitutes CA cannot be made")


async def test_a_configured_url_is_answered_from_its_file_over_tls(ca, tmp_path):
    (tmp_path / "tool.sh").write_text("echo installed-from-a-file\n")
    subs = Substitutes(
        [SubstituteRule(url="https://tools.example.invalid/install.sh", file="tool.sh")],
        str(tmp_path))
    code, body, events = await _through_proxy(subs, "https://tools.example.invalid/install.sh")
    assert (code, body.strip()) == (200, "echo installed-from-a-file")
    assert events[0]["substituted"] is True and events[0]["host"] == "tools.example.invalid"
    code, body, _ = await _through_proxy(subs, "https://tools.example.invalid/other.sh")
    assert code == 404 and "no substitute for https://tools.example.invalid/other.sh" in body


async def test_the_policy_still_applies(ca, tmp_path):
    (tmp_path / "tool.sh").write_text("x\n")
    subs = Substitutes([SubstituteRule(url="https://tools.example.invalid/*", file="tool.sh")],
                       str(tmp_path))
    code, body, events = await _through_proxy(subs, "https://tools.example.invalid/a",
                                              egress="deny")
    assert code == 0 and events[0]["allowed"] is False and events[0]["status"] == 403
    assert events[0]["why"] == ("egress to tools.example.invalid is denied by the scenario's "
                                "network policy")


def test_the_uv_installer_stands_in_for_astrals():
    script = substitutes.uv_installer("0.9.7")
    assert 'base="https://astral.sh/uv/0.9.7"' in script
    assert '$HOME/.local/bin' in script and '"$dest/env"' in script
    assert "apt-get install -y -qq --no-install-recommends python3" in script  # uv then needs no interpreter download
    done = subprocess.run(["sh", "-n"], input=script, text=True, capture_output=True)
    assert done.returncode == 0, done.stderr
    subs = Substitutes()
    assert subs.answer("https://astral.sh/uv/0.9.7/install.sh").startswith(b"#!/bin/sh")
    assert subs.answer("https://astral.sh/uv/0.9.7/not-a-thing") is None
    assert subs.answer("https://example.com/uv/0.9.7/install.sh") is None


async def test_a_trials_proxy_makes_the_runs_substitutes_at_the_first_request(ca, tmp_path):
    """trial.py hands its proxies the run's substitutes unmade (their module is not imported
    by a trial that asks for nothing outside); the first request makes them, once a run."""
    from types import SimpleNamespace

    from proctor.config import ProctorConfig
    from proctor.trial.provision import run_substitutes

    (tmp_path / "tool.sh").write_text("echo made-on-first-use\n")
    config = ProctorConfig.model_validate({"substitutes": [
        {"url": "https://tools.example.invalid/install.sh", "file": "tool.sh"}]})
    config._source_dir = str(tmp_path)  # as load_config sets it for the file it read
    run = SimpleNamespace(options=SimpleNamespace(config=config), shared={})
    lazy = run_substitutes(run)  # type: ignore[arg-type]
    assert "substitutes" not in run.shared
    code, body, events = await _through_proxy(lazy, "https://tools.example.invalid/install.sh")
    assert (code, body.strip()) == (200, "echo made-on-first-use")
    assert events[0]["substituted"] is True
    made = run.shared["substitutes"]
    assert isinstance(made, Substitutes)
    await _through_proxy(run_substitutes(run), "https://tools.example.invalid/install.sh")
    assert run.shared["substitutes"] is made
