"""The engine's API socket for the calls on a trial's critical path (dockercli.api): the same
answers as the client's, and the client itself wherever it is pointed elsewhere."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from proctor import dockercli


class FakeEngine:
    """An HTTP server on a unix socket answering as the engine does (chunked JSON bodies);
    it keeps every request line it was sent."""

    def __init__(self, answers: dict[str, tuple[int, object]]):
        self.answers, self.seen = answers, []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        line = head.split("\r\n")[0]
        self.seen.append(line)
        status, obj = self.answers.get(line, (404, {"message": f"no route {line}"}))
        body = json.dumps(obj).encode()
        half = len(body) // 2
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (body[:half], body[half:]) if c)
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n".encode() + chunks + b"0\r\n\r\n")
        await writer.drain()
        writer.close()


def _serve(tmp_path: Path, engine: FakeEngine, calls) -> object:
    async def main() -> object:
        server = await asyncio.start_unix_server(engine.handle, str(tmp_path / "engine.sock"))
        async with server:
            return await calls()
    return asyncio.run(main())


@pytest.fixture
def own_client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A client configuration of this test's own (no context chosen), the engine at
    tmp_path/engine.sock."""
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "config"))
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'engine.sock'}")
    return tmp_path


def test_the_calls_go_to_the_socket_the_client_would_use(own_client: Path) -> None:
    engine = FakeEngine({
        "GET /containers/abc/json HTTP/1.1": (200, {"State": {"Pid": 42, "Running": True}}),
        "GET /images/reg.example/team/img:1/json HTTP/1.1": (200, {"Config": {"User": "1000"}}),
        "DELETE /containers/abc?force=1&v=1 HTTP/1.1": (204, {}),
    })

    async def calls() -> object:
        return (await dockercli.inspect("abc"), await dockercli.image_config("reg.example/team/img:1"),
                await dockercli.remove("abc"))

    info, config, _ = _serve(own_client, engine, calls)  # type: ignore[misc]
    assert info["State"] == {"Pid": 42, "Running": True}
    assert config == {"User": "1000"}
    assert engine.seen[-1] == "DELETE /containers/abc?force=1&v=1 HTTP/1.1"  # rm -f -v


def test_the_engines_refusal_is_its_own_words(own_client: Path) -> None:
    engine = FakeEngine({"GET /containers/gone/json HTTP/1.1":
                         (404, {"message": "No such container: gone"})})

    async def calls() -> object:
        with pytest.raises(OSError) as err:
            await dockercli.inspect("gone")
        return str(err.value)

    assert _serve(own_client, engine, calls) == "docker inspect: No such container: gone"


def test_the_engines_capacity_is_asked_of_the_socket_outside_a_loop(own_client: Path) -> None:
    import socketserver
    import threading

    from proctor.sandbox.docker.host import capacity

    seen = []

    class Engine(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            seen.append(self.rfile.readline().decode().strip())
            body = json.dumps({"NCPU": 3, "MemTotal": 1 << 30}).encode()
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    with socketserver.UnixStreamServer(str(own_client / "engine.sock"), Engine) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            assert capacity() == (3.0, 1 << 30)
        finally:
            server.shutdown()
    assert seen == ["GET /info HTTP/1.1"]


@pytest.mark.parametrize("elsewhere", [{"DOCKER_HOST": "tcp://10.0.0.1:2375"},
                                       {"DOCKER_CONTEXT": "remote"}, {"context": "remote"}])
def test_a_client_pointed_elsewhere_is_run_itself(own_client: Path, monkeypatch: pytest.MonkeyPatch,
                                                  elsewhere: dict[str, str]) -> None:
    (own_client / "engine.sock").touch()  # a socket would be there: it must not be used
    for name, value in elsewhere.items():
        if name == "context":
            (own_client / "config").mkdir()
            (own_client / "config" / "config.json").write_text(json.dumps({"currentContext": value}))
        else:
            monkeypatch.setenv(name, value)
    assert dockercli.api_socket() is None
    bin_dir = own_client / "bin"
    bin_dir.mkdir()
    client = bin_dir / "docker"
    client.write_text(f'#!/bin/sh\necho "$@" >> {own_client / "argv"}\n'
                      "echo '{\"State\": {\"Pid\": 7, \"Running\": true}}'\n")
    client.chmod(client.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    info = asyncio.run(dockercli.inspect("abc"))
    asyncio.run(dockercli.remove("abc"))
    assert info["State"]["Pid"] == 7
    assert (own_client / "argv").read_text().splitlines() == [
        "inspect --format {{json .}} abc", "rm -f -v abc"]


def test_on_the_engine_the_socket_says_what_the_client_says(base_image: str) -> None:
    if dockercli.api_socket() is None:
        pytest.skip("this machine's client talks to an engine elsewhere")
    cid = subprocess.run(["docker", "run", "-d", "--label", "proctor.test=api", base_image,
                          "sleep", "60"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        info = asyncio.run(dockercli.inspect(cid))
        pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", cid],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert info["State"]["Running"] is True and str(info["State"]["Pid"]) == pid
        config = asyncio.run(dockercli.image_config(base_image))
        cli = subprocess.run(["docker", "image", "inspect", "-f", "{{json .Config}}", base_image],
                             capture_output=True, text=True, check=True).stdout
        # The client leaves out what is empty; every value it gives is the socket's.
        assert {k: v for k, v in config.items() if v} == {k: v for k, v in json.loads(cli).items() if v}
        assert config["Env"] and "WorkingDir" in config
        from proctor.sandbox.docker.host import capacity

        cpus, memory = subprocess.run(["docker", "info", "--format", "{{.NCPU}} {{.MemTotal}}"],
                                      capture_output=True, text=True, check=True).stdout.split()
        assert capacity() == (float(cpus), int(memory))
    finally:
        asyncio.run(dockercli.remove(cid))
    gone = subprocess.run(["docker", "ps", "-aq", "--filter", f"id={cid}"], capture_output=True,
                          text=True, check=True).stdout
    assert gone.strip() == ""


HOST_FIELDS = ("Binds", "CapAdd", "ExtraHosts", "SecurityOpt", "Tmpfs", "Ulimits", "Init",
               "ReadonlyRootfs", "NetworkMode", "Memory", "MemorySwap", "NanoCpus", "PidsLimit")
CONFIG_FIELDS = ("User", "WorkingDir", "Hostname", "Labels", "Entrypoint", "Cmd", "Image")


def _unordered(value: object, field: str) -> object:
    """The client lists `-v` binds in no fixed order (it walks a Go map: [rw, ro] one run,
    [ro, rw] another); their order means nothing where no bind is inside another."""
    return sorted(value) if field == "Binds" and isinstance(value, list) else value


def test_a_container_made_through_the_socket_is_the_one_the_client_makes(base_image: str,
                                                                          tmp_path: Path) -> None:
    """Every option proctor's containers use (container.py, taskenv.py), made by `docker run
    -d` and by run_detached: the engine holds the same configuration for both."""
    if dockercli.api_socket() is None:
        pytest.skip("this machine's client talks to an engine elsewhere")
    (tmp_path / "rw").mkdir()
    (tmp_path / "ro").mkdir()
    argv = ["run", "-d", "--init", "--network", "none", "--label", "proctor.test=api",
            "--label", "proctor.trial=x=y", "--user", "0:0", "--workdir", "/work", "--read-only",
            "--cap-add", "SYS_PTRACE", "--hostname", "abcdef012345", "--add-host",
            "abcdef012345:127.0.1.1", "-v", f"{tmp_path / 'rw'}:/work", "-v",
            f"{tmp_path / 'ro'}:/opt/ro:ro", "--tmpfs", "/tests:mode=0755,size=64m",
            "--security-opt", "seccomp=unconfined", "--memory", str(256 << 20),
            "--memory-swap", str(256 << 20), "--cpus", "0.5", "--pids-limit", "100",
            "--ulimit", "fsize=1000000:1000000", "--entrypoint", "sleep", base_image, "60"]
    assert dockercli.create_request(argv) is not None  # all of it goes through the socket
    ours = asyncio.run(dockercli.run_detached(argv))
    theirs = subprocess.run(["docker", *argv], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        a, b = (asyncio.run(dockercli.inspect(c)) for c in (ours, theirs))
        assert a["State"]["Running"] and b["State"]["Running"]
        for field in HOST_FIELDS:
            assert _unordered(a["HostConfig"].get(field), field) == _unordered(
                b["HostConfig"].get(field), field), field
        for field in CONFIG_FIELDS:
            assert a["Config"].get(field) == b["Config"].get(field), field
    finally:
        for c in (ours, theirs):
            asyncio.run(dockercli.remove(c))


def test_what_is_not_translated_or_refused_is_the_clients_or_the_engines_word(
        base_image: str) -> None:
    assert dockercli.create_request(["run", "-d", "--gpus", "all", base_image]) is None
    assert dockercli.create_request(["run", "-d", "--hostname", "a.example", base_image]) is None
    if dockercli.api_socket() is None:
        pytest.skip("this machine's client talks to an engine elsewhere")
    with pytest.raises(OSError, match=r"^docker run: .*CPUs"):
        asyncio.run(dockercli.run_detached(["run", "-d", "--label", "proctor.test=api",
                                            "--cpus", "512", base_image, "true"]))
    left = subprocess.run(["docker", "ps", "-aq", "--filter", "label=proctor.test=api"],
                          capture_output=True, text=True, check=True).stdout
    assert left.strip() == ""


def test_a_command_through_the_socket_gives_what_the_client_gives(base_image: str) -> None:
    """Both streams (binary, and cut at the limit), the exit code, stdin, the environment and
    the working directory, as `docker exec` gives them; a timeout is said, the command left
    to the caller to kill (as after the client)."""
    if dockercli.api_socket() is None:
        pytest.skip("this machine's client talks to an engine elsewhere")
    cid = subprocess.run(["docker", "run", "-d", "--label", "proctor.test=api", base_image,
                          "sleep", "60"], capture_output=True, text=True, check=True).stdout.strip()
    script = ('printf "%s:%s:" "$GREETING" "$PWD"; cat; printf "\\377err" >&2; '
              'head -c 3000 /dev/zero | tr "\\0" x; exit 7')
    seen: list[tuple[int, bytes]] = []

    async def both() -> tuple[Any, Any, Any]:
        ours = await dockercli.exec_in(cid, ["sh", "-c", script], env={"GREETING": "hi there"},
                                       workdir="/tmp", user="0", timeout=30, stdin=b"in\n",
                                       limit=2000, feed=lambda fd, b: seen.append((fd, b)))
        theirs = await dockercli.docker("exec", "-i", "-w", "/tmp", "-u", "0", "-e", "GREETING",
                                        cid, "sh", "-c", script, timeout=30, stdin=b"in\n",
                                        limit=2000, env={"GREETING": "hi there",
                                                         "PATH": "/usr/bin:/bin:/usr/local/bin"})
        slow = await dockercli.exec_in(cid, ["sleep", "5"], env={}, workdir="/", user="0",
                                       timeout=0.5)
        return ours, theirs, slow

    try:
        ours, theirs, slow = asyncio.run(both())
    finally:
        asyncio.run(dockercli.remove(cid))
    assert ours is not None
    for field in ("exit_code", "stdout", "stderr", "truncated", "timed_out"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert ours.exit_code == 7 and ours.stdout.startswith("hi there:/tmp:in\n") and ours.truncated
    assert b"".join(b for fd, b in seen if fd == 1).count(b"x") == 3000  # the feed sees it all
    assert slow.timed_out and slow.exit_code is None and "timed out after 0.5s" in slow.stderr


def test_an_exec_the_engine_refuses_is_left_to_the_client(own_client: Path) -> None:
    engine = FakeEngine({"POST /containers/abc/exec HTTP/1.1":
                         (409, {"message": "Container abc is not running"})})

    async def calls() -> object:
        return await dockercli.exec_in("abc", ["true"], env={}, workdir="/", user="0", timeout=5)

    assert _serve(own_client, engine, calls) is None  # the client runs, and says why
    assert engine.seen == ["POST /containers/abc/exec HTTP/1.1"]


def test_an_images_id_is_asked_of_the_socket_and_the_client_answers_what_it_cannot(
        own_client: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socketserver
    import threading

    seen = []
    answers = {"GET /images/reg.example/team/img:1/json HTTP/1.1": (200, {"Id": "sha256:ab"}),
               "GET /images/gone:1/json HTTP/1.1": (404, {"message": "No such image: gone:1"}),
               "GET /images/odd:1/json HTTP/1.1": (500, {"message": "engine trouble"})}

    class Engine(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            line = self.rfile.readline().decode().strip()
            seen.append(line)
            status, obj = answers[line]
            body = json.dumps(obj).encode()
            self.wfile.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s"
                             % (status, len(body), body))

    bin_dir = own_client / "bin"
    bin_dir.mkdir()
    client = bin_dir / "docker"  # asked only when the engine's answer is neither 200 nor 404
    client.write_text(f'#!/bin/sh\necho "$@" >> {own_client / "argv"}\necho sha256:fromclient\n')
    client.chmod(client.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with socketserver.UnixStreamServer(str(own_client / "engine.sock"), Engine) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            assert dockercli.image_id("reg.example/team/img:1") == "sha256:ab"
            assert dockercli.image_id("gone:1") is None
            assert dockercli.image_id("odd:1") == "sha256:fromclient"
        finally:
            server.shutdown()
    assert len(seen) == 3
    assert (own_client / "argv").read_text().splitlines() == ["image inspect -f {{.Id}} odd:1"]


def test_on_the_engine_an_images_id_is_the_clients(base_image: str) -> None:
    if dockercli.api_socket() is None:
        pytest.skip("this machine's client talks to an engine elsewhere")
    for name in (base_image, base_image.split(":")[0] + ":no-such-tag-proctor-test"):
        cli = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", name],
                             capture_output=True, text=True)
        assert dockercli.image_id(name) == (cli.stdout.strip() if cli.returncode == 0 else None)
    assert dockercli.image_id(base_image) is not None
