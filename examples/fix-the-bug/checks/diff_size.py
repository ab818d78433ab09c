"""A custom invariant: how many lines of shop/ did the agent change?

proctor passes the trial's context as JSON on stdin and reads one JSON object back. The
script runs in the trial's grader box (docs/checks.md): the workspace is read-only there,
and `git` from PATH is proctor's safe git, which reads the agent's repository without
running anything its configuration names (fsmonitor, filters, hooks...).
"""

import json
import subprocess
import sys

ctx = json.load(sys.stdin)
out = subprocess.run(
    ["git", "diff", "--numstat", "HEAD", "--", "shop/"],
    cwd=ctx["workspace_path"], capture_output=True, text=True, check=True,
).stdout
changed = sum(int(a) + int(d) for a, d, _ in (line.split("\t") for line in out.splitlines()))
limit = 4
print(json.dumps({
    "passed": 0 < changed <= limit,
    # Nothing changed scores 0 (the bug is still there); past the limit, less the bigger.
    "score": 0.0 if changed == 0 else 1.0 if changed <= limit else max(0.0, 1 - (changed - limit) / 20),
    "reason": f"{changed} changed lines in shop/ (limit {limit})",
    "details": {"changed_lines": changed},
}))
