"""`proctor view` at scale: a run of 10,000 tasks (one trial each, from the real scorer) in a
runs directory, served by the real server on a loopback port and read over HTTP; each page's
wall time, first (reading results.json) and again (from what the server kept).

    .venv/bin/python bench/view_at_scale.py [--tasks 10000] [--traced 50]

`--traced N`: the first N trials get a realistic trace (reports_at_scale.write_traces), so
their pages embed a trajectory; the report is rendered on the fly (no report.html), as for
a run made without `--format html`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from reports_at_scale import results_for, write_traces


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--traced", type=int, default=50)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="proctor-bench-view-"))
    os.environ["PROCTOR_HOME"] = str(root / "home")  # an empty run index: the directory only
    from proctor.report.view import make_server

    try:
        run_dir = root / "runs" / "bench"
        (run_dir / "trials").mkdir(parents=True)
        results = results_for(args.tasks)
        (run_dir / "results.json").write_text(json.dumps(results))
        (run_dir / "run.json").write_text(json.dumps({
            "run_id": "bench", "started_at": results["started_at"], "paths": ["suite.yaml"]}))
        trials = results["trials"]
        write_traces(run_dir, [t for t in trials[:args.traced] if t["status"] == "fail"])
        failing = [t["id"] for t in trials if t["status"] == "fail"]
        server = make_server(run_dir.parent, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        port = server.server_address[1]

        def get(path: str) -> tuple[float, int]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            t0 = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            conn.close()
            assert response.status == 200, (path, response.status)
            return time.perf_counter() - t0, len(body)

        mid = f"/runs/bench/trials/{trials[len(trials) // 2]['id']}/"
        pages = [("index", "/"), ("report, first (read, render)", "/runs/bench/"),
                 ("report, again", "/runs/bench/"), ("trial page", mid),
                 ("trial page, traced", f"/runs/bench/trials/{failing[0]}/"),
                 ("side by side, traced", f"/runs/bench/trials/{failing[0]}/vs/bench/"
                                          f"{failing[1]}")]
        for label, path in pages:
            seconds, size = get(path)
            print(f"{label}: {seconds:.3f} s ({size / 1e3:,.0f} kB)")
        walk = [get(f"/runs/bench/trials/{tid}/")[0] for tid in failing[:20]]
        print(f"next x20: {sum(walk) / len(walk):.3f} s a page, {max(walk):.3f} s at most")
        server.shutdown()
        server.server_close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
