"""Time the database services: server start once per run, and per-trial "ready" (a fresh
database cloned from the seed's template, plus the agent's first connection and query).

    .venv/bin/python bench/db_ready.py [--kind postgres|mysql|both] [--trials 50]
                                       [--rows 10000] [--gap 0.2]

The seed has a 10,000-row table (plus a small one). Each trial: provision() -> connect with
the trial's DATABASE_URL -> `SELECT count(*)` -> release(). Two series per kind:
  * trials `--gap` seconds apart (a trial always takes longer than that), so the databases
    proctor clones ahead are ready: what a run sees;
  * back to back (no gap): every trial waits for its own clone, the worst case.
Targets (issue 5): ready < 150 ms median, server start < 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

from proctor.model import ServiceDef
from proctor.services import ServiceContext, create


def seed_sql(rows: int) -> str:
    values = ",\n".join(f"({i}, 'customer {i}', 'c{i}@example.com', {i % 97}.50)"
                        for i in range(1, rows + 1))
    return ("CREATE TABLE customers (id integer PRIMARY KEY, name varchar(100) NOT NULL,\n"
            "  email varchar(200), balance numeric(10, 2));\n"
            f"INSERT INTO customers VALUES\n{values};\n"
            "CREATE TABLE notes (id integer PRIMARY KEY, body varchar(200));\n"
            "INSERT INTO notes VALUES (1, 'hello');\n")


async def first_query(kind: str, url: str) -> int:
    if kind == "postgres":
        import psycopg

        async with await psycopg.AsyncConnection.connect(url) as conn:
            cur = await conn.execute("SELECT count(*) FROM customers")
            return (await cur.fetchone())[0]

    def mysql() -> int:
        import pymysql

        u = urlparse(url)
        with pymysql.connect(host=u.hostname, port=u.port, user=u.username, password=u.password,
                             database=u.path.lstrip("/")) as conn, conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM customers")
            return cur.fetchone()[0]

    return await asyncio.to_thread(mysql)


async def series(svc, kind: str, trials: int, gap: float, rows: int) -> list[float]:
    times = []
    for i in range(trials):
        t0 = time.perf_counter()
        h = await svc.provision(f"bench.r{i}")
        count = await first_query(kind, h.env["DATABASE_URL"])
        times.append(time.perf_counter() - t0)
        assert count == rows, count
        await h.release()
        if gap:
            await asyncio.sleep(gap)
    return times


async def bench(kind: str, trials: int, rows: int, gap: float, tmp: Path) -> dict[str, float]:
    d = tmp / kind
    d.mkdir()
    (d / "seed.sql").write_text(seed_sql(rows))
    ctx = ServiceContext(run_id=f"bench{kind}", base_dir=d, tmp_dir=d)
    svc = create(ServiceDef("db", kind, {"seed_file": str(d / "seed.sql")}), ctx)
    t0 = time.perf_counter()
    await svc.start()
    start = time.perf_counter() - t0
    try:
        await asyncio.sleep(1)  # let the first clones-ahead finish, as during a run's setup
        warm = await series(svc, kind, trials, gap, rows)
        cold = await series(svc, kind, trials, 0, rows)
        where = "memory (/dev/shm)" if svc.server.in_memory else "disk"
    finally:
        await svc.stop()
    ms = 1000
    return {"start_s": start, "warm_median_ms": statistics.median(warm) * ms,
            "warm_p90_ms": sorted(warm)[int(0.9 * len(warm)) - 1] * ms,
            "cold_median_ms": statistics.median(cold) * ms,
            "cold_p90_ms": sorted(cold)[int(0.9 * len(cold)) - 1] * ms, "where": where}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=["postgres", "mysql", "both"], default="both")
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--gap", type=float, default=0.2)
    args = ap.parse_args()
    kinds = ["postgres", "mysql"] if args.kind == "both" else [args.kind]
    print(f"{args.trials} trials per series, seed of {args.rows:,} rows, gap {args.gap} s")
    print(f"{'kind':<9} {'server start':>12} {'ready median':>13} {'p90':>7} "
          f"{'back-to-back median':>20} {'p90':>7}  data dir")
    ok = True
    with tempfile.TemporaryDirectory(prefix="proctor-bench-") as tmp:
        for kind in kinds:
            r = asyncio.run(bench(kind, args.trials, args.rows, args.gap, Path(tmp)))
            print(f"{kind:<9} {r['start_s']:>10.2f} s {r['warm_median_ms']:>10.1f} ms "
                  f"{r['warm_p90_ms']:>4.0f} ms {r['cold_median_ms']:>17.1f} ms "
                  f"{r['cold_p90_ms']:>4.0f} ms  {r['where']}")
            ok &= r["start_s"] < 2 and r["warm_median_ms"] < 150
    print("targets (start < 2 s, ready median < 150 ms):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
