"""The egress proxy's address policy (issue 25.3): only public unicast addresses, unless the
spec names the host; the address checked is the address connected to."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest

from proctor.sandbox import egress
from proctor.sandbox.egress import EgressProxy, refusal

REFUSED = ["::ffff:127.0.0.1", "::ffff:7f00:1", "::127.0.0.1", "64:ff9b::7f00:1",
           "2002:7f00:1::", "64:ff9b::a00:1", "64:ff9b:1::1", "2002:808:808::1", "2001::1",
           "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254",
           "fe80::1", "fc00::1", "fec0::1", "224.0.1.1", "ff02::1", "240.0.0.1",
           "255.255.255.255", "0.0.0.0", "::", "127.0.0.1", "::1", "192.0.2.1", "2001:db8::1"]
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450:4001::1"]


@pytest.mark.parametrize("address", REFUSED)
def test_addresses_that_are_not_public_unicast_are_refused(address):
    assert refusal(ipaddress.ip_address(address), named=False) != ""


@pytest.mark.parametrize("address", PUBLIC)
def test_public_unicast_addresses_pass(address):
    assert refusal(ipaddress.ip_address(address), named=False) == ""


def test_the_machines_own_public_address_is_refused_unless_named():
    own = frozenset({"8.8.8.8"})
    assert "an address of this machine" in refusal(ipaddress.ip_address("8.8.8.8"), False, own)
    assert refusal(ipaddress.ip_address("8.8.8.8"), True, own) == ""


def test_a_named_private_address_passes_but_loopback_never_does():
    assert refusal(ipaddress.ip_address("10.0.0.1"), named=True) == ""
    for address in ("127.0.0.1", "::ffff:127.0.0.1", "::1", "0.0.0.0", "64:ff9b::7f00:1"):
        assert refusal(ipaddress.ip_address(address), named=True) != ""


def test_a_declared_public_network_passes_but_not_loopback_nor_the_machines_own():
    """proctor.toml's `public_addresses` (a lab whose registries resolve to a gateway in a
    reserved range) lets those addresses through, and nothing else more."""
    public = (ipaddress.ip_network("203.0.113.0/24"),)
    assert refusal(ipaddress.ip_address("203.0.113.80"), False, frozenset(), public) == ""
    assert refusal(ipaddress.ip_address("198.51.100.80"), False, frozenset(), public) != ""
    assert refusal(ipaddress.ip_address("10.0.0.1"), False, frozenset(), public) != ""
    own = frozenset({"203.0.113.7"})
    assert "an address of this machine" in refusal(ipaddress.ip_address("203.0.113.7"), False,
                                                   own, public)
    loop = (ipaddress.ip_network("::ffff:0:0/96"),)
    assert refusal(ipaddress.ip_address("::ffff:127.0.0.1"), False, frozenset(), loop) != ""


def test_local_addresses_include_loopback():
    own = egress.local_addresses()
    assert "127.0.0.1" in own and "::1" in own


async def test_the_address_checked_is_the_address_connected_to(monkeypatch):
    """A name answering a public address, then loopback (DNS rebinding): proctor looks it up
    once and connects to the address it checked."""
    answers = iter(["93.184.216.34", "127.0.0.1", "127.0.0.1"])
    lookups: list[str] = []

    async def getaddrinfo(host, port, **kw):
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    connected: list[str] = []

    async def open_connection(host, port):
        connected.append(host)
        raise OSError("no network in this test")

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(egress.asyncio, "open_connection", open_connection)
    events: list[dict] = []
    proxy = EgressProxy("allow", [], events.append)
    reader = asyncio.StreamReader()
    reader.feed_data(b"GET http://rebind.test/x HTTP/1.1\r\nHost: rebind.test\r\n\r\n")
    reader.feed_eof()

    class Writer:
        def write(self, data): pass
        async def drain(self): pass
        def close(self): pass

    await proxy.handle(reader, Writer())
    assert lookups == ["rebind.test"] and connected == ["93.184.216.34"]
    assert events[0]["status"] == 502
