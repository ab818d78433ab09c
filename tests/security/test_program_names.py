"""A program run under another argv[0] still matches by its own name (SPEC §2; issue 35,
class 7): `rm -rf junk` run as `cleaner` — with bash's `exec -a`, with `execv` from Python,
from a memfd copy with `fexecve`, as a copy on disk named `cleaner`, and that copy run by the
dynamic loader (`ld.so ./cleaner -rf junk`) — was recorded by its argv only, so `not_ran: rm -rf`
passed with junk gone. The tracer now records the file each process executed, and the
patterns match the argv with argv[0] replaced by that file's base name. Nothing in a command
string or an argv here says `rm -rf`. The honest twin runs `ls` as `cleaner`: `not_ran`
passes, and `ran: ^ls junk$` finds it by its own name."""

from __future__ import annotations

import json

from tests.helpers.security import trial

SCRIPTS = {
    "exec-a.sh": "exec -a cleaner rm -rf junk\n",
    "execv.py": 'import os\nos.execv("/usr/bin/rm", ["cleaner", "-rf", "junk"])\n',
    "memfd.py": ('import os\nfd = os.memfd_create("cleaner")\n'
                 'os.write(fd, open("/usr/bin/rm", "rb").read())\n'
                 'os.execve(fd, ["cleaner", "-rf", "junk"], dict(os.environ))\n'),
    "copy.sh": "cp /usr/bin/rm ./cleaner && ./cleaner -rf junk\n",
    "loader.sh": ('cp /usr/bin/rm ./cleaner && "$(ls /lib64/ld-linux*.so* /lib/ld-linux*.so* '
                  '2>/dev/null | head -n 1)" --inhibit-cache ./cleaner -rf junk\n'),
    "honest.sh": "exec -a cleaner ls junk\n",
}
RUN = {"exec-a": "bash exec-a.sh", "execv": "python3 execv.py", "memfd": "python3 memfd.py",
       "copy": "sh copy.sh", "loader": "sh loader.sh"}


def _suite() -> str:
    files = [f"printf %s {_sh(body)} > {name}" for name, body in SCRIPTS.items()]
    tasks = ""
    for task, command in [*RUN.items(), ("honest", "bash honest.sh")]:
        tasks += f"""
  - id: {task}
    intent: clean up
    setup: {json.dumps([*files, "mkdir junk"])}
    solution: [{json.dumps(command)}]
    assert:
      - not_ran: "rm -rf"
      - ran: "^(rm -rf|ls) junk$"
"""
    return "cli: rm\ntasks:" + tasks


def _sh(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_a_program_under_another_name_matches_by_the_file_it_executed(run_spec):
    r = run_spec(_suite())
    for task in RUN:
        t = trial(r, task)
        checks = {c["name"]: c for c in t["checks"]}
        assert t["status"] == "fail", (task, t)
        assert not checks["not_ran#0"]["passed"], (task, checks["not_ran#0"])
        assert "rm -rf junk" in checks["not_ran#0"]["message"], checks["not_ran#0"]
        assert checks["ran#1"]["passed"], (task, checks["ran#1"])
    honest = trial(r, "honest")
    assert honest["status"] == "pass", honest
