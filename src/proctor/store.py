"""Run directories (SPEC §5) and the SQLite index behind `proctor runs`.

`results.jsonl` gets one line per finished trial, flushed as it finishes: a crash or a kill
loses nothing finished, and `--resume` reads it to skip what is done. A trial that `--resume`
runs again (an infrastructure error) appends a second line, which wins; reading the file with
`finished()` (at a run's start) leaves one line per trial, its last. `results.json` is
written at the end (and on Ctrl-C) from those lines, each trial exactly once: `written()`
has them as they read back, kept as each was appended, and reads the file again only if it
holds anything else (a trial stored twice, a line someone else wrote).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from proctor.errors import UsageError
from proctor.jsontext import encoder
from proctor.results import (
    InvalidRunFile,
    RunMeta,
    RunResults,
    TrialRecord,
    parse_results,
    parse_run_meta,
    trial_from_line,
)
from proctor.text import agent_model, agent_of

T = TypeVar("T")


def proctor_home() -> Path:
    """Where runs and the index live: $PROCTOR_HOME, else ./.proctor."""
    return Path(os.environ.get("PROCTOR_HOME") or ".proctor")


def shown(path: str | Path) -> str:
    """A path as messages show it: relative to the current directory when inside it (what
    one would type), else absolute."""
    p = Path(path).absolute()
    try:
        rel = p.relative_to(Path.cwd())
    except ValueError:
        return str(p)
    return str(rel) if str(rel) != "." else "."


def iso(ts: float | None = None) -> str:
    return datetime.fromtimestamp(ts or time.time(), UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def key_path(run_id: str) -> Path:
    """Where a run's signing key lives: under proctor's home, never in the run directory."""
    return proctor_home() / "keys" / f"{run_id}.key"


class RunStore:
    def __init__(self, run_dir: Path, run_id: str):
        self.dir = run_dir
        self.run_id = run_id
        self.trials_dir = run_dir / "trials"
        self.jsonl_path = run_dir / "results.jsonl"
        self._jsonl: BinaryIO | None = None
        self._key: bytes | None = None
        self._mac: tuple[bytes, Any] | None = None  # (key, an HMAC keyed with it) to copy
        self.rejected = 0  # lines of results.jsonl this run did not write (see finished())
        # What `finished()` last read, and each line appended since as it reads back (the
        # record and its results.json text), while results.jsonl holds exactly those:
        # `written()` then needs no second reading of the file at the run's end.
        self._read: dict[str, TrialRecord] = {}
        self._kept: dict[str, tuple[TrialRecord, str]] = {}
        self._size: int | None = None  # the file's size if it holds only those, else None

    # Each results.jsonl line carries an HMAC (key per run, 0600, outside the run directory)
    # over its content and the run id: a line forged or altered by anyone without the key —
    # an agent that reached the file, a daemon appending to it — is rejected and its trial
    # runs again on --resume.
    def _signing_key(self, create: bool = False) -> bytes | None:
        if self._key is None:
            path = key_path(self.run_id)
            if path.exists():
                self._key = path.read_bytes()
            elif create:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                key = secrets.token_bytes(32)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(key)
                self._key = key
        return self._key

    def _signature(self, body: str) -> str:
        key = self._signing_key(create=True)
        assert key is not None
        # surrogatepass: a file name that is not UTF-8 reaches results as lone surrogates
        # (Python's surrogateescape); signed like any other text, never an exception.
        text = f"{self.run_id}\n{body}".encode("utf-8", "surrogatepass")
        if self._mac is None or self._mac[0] != key:  # the key's own setup, once per run
            self._mac = (key, hmac.new(key, digestmod=hashlib.sha256))
        mac = self._mac[1].copy()
        mac.update(text)
        return mac.hexdigest()

    def _verified(self, line: str) -> dict[str, Any] | None:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            return None
        sig = obj.pop("sig", None)
        key = self._signing_key()
        if not isinstance(sig, str) or key is None:
            return None
        # A line as `append` wrote it is its signed body with the signature spliced in at
        # the end: that text verified as it is, not encoded again (half of reading a line).
        tail = f',"sig":"{sig}"}}'
        if line.endswith(tail) and hmac.compare_digest(
                sig, self._signature(line[:-len(tail)] + "}")):
            return obj
        expected = self._signature(_canonical(obj))
        return obj if hmac.compare_digest(sig, expected) else None

    @classmethod
    def create(cls, output_dir: str | None) -> RunStore:
        from proctor import headstart

        run_id = headstart.run_id() or new_run_id()  # its first container begun with it
        run_dir = Path(output_dir) if output_dir else proctor_home() / "runs" / run_id
        if (run_dir / "results.jsonl").exists():
            raise UsageError(f"{run_dir} already holds a run; use --resume {run_dir} to finish "
                             "it, or choose another --output-dir")
        run_dir.mkdir(parents=True, exist_ok=True)
        store = cls(run_dir.resolve(), run_id)
        store._signing_key(create=True)
        return store

    @classmethod
    def open(cls, run_dir: str) -> RunStore:
        path = Path(run_dir)
        meta = path / "run.json"
        if not meta.exists():
            raise UsageError(f"{run_dir} is not a proctor run directory (no run.json)")
        run_id = read_run_meta(meta).get("run_id")
        if not run_id:
            raise UsageError(f"{meta} names no run_id: not a proctor run directory")
        return cls(path.resolve(), run_id)

    # run.json ------------------------------------------------------------------------------
    def write_meta(self, meta: RunMeta) -> None:
        write_json(self.dir / "run.json", meta)

    def read_meta(self) -> RunMeta:
        return read_run_meta(self.dir / "run.json")

    # results.jsonl -------------------------------------------------------------------------
    def finished(self, *, repair: bool = True) -> dict[str, TrialRecord]:
        """Every trial on disk that this run wrote, by id (a trial re-run later replaces the
        earlier line). A line cut short by a kill, or not signed by this run (forged,
        altered), is dropped and counted in `rejected`; with `repair` the file is rewritten
        without them and with one line per trial (its last), so appending can go on safely
        and every reader sees each trial once."""
        self._read, self._kept, self._size = {}, {}, None
        if not self.jsonl_path.exists():
            self._size = 0
            return {}
        done: dict[str, TrialRecord] = {}
        lines: dict[str, str] = {}  # id -> its last good line, in the order of first sight
        raw = self.jsonl_path.read_text(encoding="utf-8", errors="replace")
        self.rejected = 0
        for line in raw.splitlines():
            try:
                obj = self._verified(line)
                if obj is None:
                    self.rejected += 1
                    continue
                result = trial_from_line(obj)
            except (ValueError, TypeError, KeyError):  # torn by a kill mid-write
                continue
            done[result["id"]] = result
            lines[result["id"]] = line
        good = list(lines.values())
        if repair and (len(good) != raw.count("\n") or (raw and not raw.endswith("\n"))):
            tmp = self.jsonl_path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(line + "\n" for line in good), encoding="utf-8")
            os.replace(tmp, self.jsonl_path)
        if repair:
            self._read, self._size = dict(done), self.jsonl_path.stat().st_size
        return done

    def written(self) -> dict[str, TrialRecord]:
        """What `finished()` would read now, the same records (the same results.json), read
        from memory when results.jsonl is, by its size, what `finished()` read plus the
        lines `append` wrote since, each trial once; else read from the file (a trial
        stored twice, a line someone else appended: rewritten as `finished()` does)."""
        try:
            size = self.jsonl_path.stat().st_size
        except FileNotFoundError:
            size = 0
        if self._size is None or size != self._size:
            return self.finished()
        return {**self._read, **{tid: record for tid, (record, _) in self._kept.items()}}

    def kept(self, trial_id: str) -> TrialRecord | None:
        """A trial this run stored, as `written()` gives it from memory (None if not kept)."""
        kept = self._kept.get(trial_id)
        return kept[0] if kept is not None else None

    def append(self, result: TrialRecord) -> None:
        if self._jsonl is None:
            self._jsonl = self.jsonl_path.open("ab")
        obj: Any = result  # written as it is: a record is its JSON form
        if not _plain_keys(obj):  # keys become strings first: sorted as a reader sorts them
            obj = json.loads(json.dumps(obj, default=str))
        body = _canonical(obj)
        line = body[:-1] + f',"sig":"{self._signature(body)}"}}\n'
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: written as \\udcXX escapes, lossless
            data = (json.dumps({**obj, "sig": self._signature(body)}, sort_keys=True,
                               separators=(",", ":"), default=str) + "\n").encode("utf-8")
        self._jsonl.write(data)
        self._jsonl.flush()
        if self._size is not None:
            self._size += len(data)
            self._keep(result["id"], body)

    def _keep(self, trial_id: str, body: str) -> None:
        """An appended line as `finished()` reads it back (the signed body is the line
        but its signature), with its results.json text: made while other trials run, not
        at the run's end."""
        try:
            if trial_id in self._read or trial_id in self._kept:
                raise ValueError("stored twice")  # finished() keeps one line per trial
            record = trial_from_line(json.loads(body))
            self._kept[trial_id] = (record, _text(record))
        except (ValueError, TypeError, KeyError):
            self._size = None  # read from the file as before (`written`)

    def close(self) -> None:
        if self._jsonl is not None:
            os.fsync(self._jsonl.fileno())
            self._jsonl.close()
            self._jsonl = None

    def trial_dir(self, trial_id: str) -> Path:
        return self.trials_dir / trial_id

    def write_results(self, results: RunResults) -> Path:
        path = self.dir / "results.json"
        write_json(path, results, known=self._text_of)
        return path

    def _text_of(self, item: dict[str, Any]) -> str | None:
        """The results.json text of a record `written()` gave (made by `_keep`; nothing
        changes a record after it is stored), else None."""
        kept = self._kept.get(item.get("id"))  # type: ignore[arg-type]
        return kept[1] if kept is not None and kept[0] is item else None


# What `json.dumps` writes, by encoders made once (jsontext): every trial is written with both.
_canonical_text = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_text = encoder(default=str)  # a record's results.json text: json.dumps(record, default=str)


def _canonical(obj: dict[str, Any]) -> str:
    """The text a line's signature is over: what a reader of the line gets back from it
    (anything JSON lacks written as its str)."""
    return _canonical_text(obj)


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _plain_keys(obj: Any) -> bool:
    """Whether every mapping inside has only string keys (an int key would sort otherwise
    than the string a reader of the line sees). A loop, not a recursion: a trial's record
    is checked as it is stored, ~40 values each."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if type(o) in _LEAVES:
            continue
        if isinstance(o, dict):
            for k in o:
                if type(k) is not str:
                    return False
            stack += o.values()
        elif isinstance(o, (list, tuple)):
            stack += o
    return True


def write_json(path: Path, data: Any,
               known: Callable[[dict[str, Any]], str | None] | None = None) -> None:
    """Atomically: a reader never sees half a file. A dict's lists of objects (trials, task
    rows) are written one object per line, each by the C encoder: json's indenting encoder
    is pure Python, and took a quarter of a 1,000-trial run's own time. `known`: an object's
    text, when the caller has it already (else None)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        # Streamed, not built as one string: results.json of 10,000 trials is tens of MB.
        if not isinstance(data, dict):
            json.dump(data, f, indent=2, default=str)
        else:
            f.write("{")
            for i, (key, value) in enumerate(data.items()):
                f.write(("," if i else "") + "\n  " + json.dumps(key) + ": ")
                if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                    f.write("[")
                    for j, item in enumerate(value):
                        text = known(item) if known is not None else None
                        f.write(("," if j else "") + "\n    "
                                + (text if text is not None else _text(item)))
                    f.write("\n  ]")
                else:
                    f.write(json.dumps(value, indent=2, default=str).replace("\n", "\n  "))
            f.write("\n}")
        f.write("\n")
    os.replace(tmp, path)


def read_results(path: Path) -> RunResults:
    """A results.json, checked (proctor.results): a usage error saying what is wrong."""
    return _read_checked(path, parse_results)


def read_run_meta(path: Path) -> RunMeta:
    """A run.json, checked (proctor.results): a usage error saying what is wrong."""
    return _read_checked(path, parse_run_meta)


def _read_checked(path: Path, parse: Callable[[bytes], T]) -> T:
    try:
        text = path.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    try:
        return parse(text)
    except InvalidRunFile as e:
        raise UsageError(f"{path} is not a proctor {path.name} file: {e}") from None
    except ValueError as e:  # not JSON, or not UTF-8
        raise UsageError(f"cannot read {path}: {e}") from None


# The index -------------------------------------------------------------------------------

_SCHEMA = """CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, dir TEXT NOT NULL, started_at TEXT, finished_at TEXT,
  status TEXT, specs TEXT, trials INTEGER, passed INTEGER, failed INTEGER, errored INTEGER,
  pass_rate REAL, models TEXT, by_model TEXT, suite_key TEXT, suite_version TEXT,
  suite_name TEXT, by_agent TEXT)"""
_COLUMNS = ("run_id", "dir", "started_at", "finished_at", "status", "specs", "trials",
            "passed", "failed", "errored", "pass_rate", "models", "by_model", "suite_key",
            "suite_version", "suite_name", "by_agent")
_ADDED = ("models", "by_model", "suite_key", "suite_version", "suite_name", "by_agent")
_KEPT = ("started_at", "specs", "models", "by_model", "suite_key", "suite_version",
         "suite_name", "by_agent")  # an update without them keeps what the row has


class _Index(sqlite3.Connection):
    """A connection to the index, closed at exit if it is still open (the proctor program
    ends without the interpreter's teardown: proctor/startup.py)."""

    open_ones: weakref.WeakSet[_Index] = weakref.WeakSet()


@atexit.register
def _close_indexes() -> None:
    # Closing the last one folds the write-ahead log into the file, as a teardown would.
    for db in list(_Index.open_ones):
        with contextlib.suppress(sqlite3.Error):
            db.close()


def _index() -> sqlite3.Connection:
    home = proctor_home()
    home.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(home / "index.sqlite", timeout=10, factory=_Index)
    _Index.open_ones.add(db)
    # Write-ahead log, synced at checkpoints: a run's two updates of its row cost no fsync
    # (several ms each on a busy disk, in every `proctor run`); a power cut may lose the
    # newest rows, never the file (the index is a convenience: run directories are the record).
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(_SCHEMA)
    have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for column in _ADDED:  # an index written before these columns
        if column not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
    return db


def index_run(run_id: str, run_dir: Path, *, started_at: str, status: str, specs: list[str],
              finished_at: str | None = None, summary: Mapping[str, Any] | None = None,
              models: list[str] | None = None,
              by_model: dict[str, list[int]] | None = None,
              suite: Mapping[str, Any] | None = None,
              by_agent: dict[str, dict[str, Any]] | None = None) -> None:
    """Add or update a run's row, for `proctor runs` and `proctor view`: `suite` (run.json's,
    inputs.suite_identity) and `by_agent` (label -> agent, model, passed, trials, errored:
    each agent's pass rate over time; `by_model` is what older rows have). A directory
    holds one run: an older row for the same directory (its run was deleted and
    --output-dir reused) is dropped."""
    s = summary or {}
    suite = suite or {}

    def js(value: Any) -> str | None:
        return None if value is None else json.dumps(value)

    values = (run_id, str(run_dir), started_at, finished_at, status, json.dumps(specs),
              s.get("trials"), s.get("passed"), s.get("failed"), s.get("errored"),
              s.get("pass_rate"), js(models), js(by_model), suite.get("key"),
              suite.get("version"), suite.get("name"), js(by_agent))
    updates = ", ".join(f"{c}=excluded.{c}" if c not in _KEPT else
                        f"{c}=COALESCE(excluded.{c}, {c})" for c in _COLUMNS[1:]
                        if c not in ("started_at", "specs"))
    try:
        with _index() as db:
            db.execute("DELETE FROM runs WHERE dir = ? AND run_id != ?", (str(run_dir), run_id))
            # An upsert keeps the row's rowid, which orders runs started in the same second.
            db.execute(f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES "
                       f"({', '.join('?' * len(_COLUMNS))}) ON CONFLICT(run_id) DO UPDATE SET "
                       f"{updates}", values)
    except sqlite3.Error:
        pass  # the index is a convenience; a locked or read-only home must not fail a run


def by_agent(models: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """results.json's `models` rows as the index keeps them: by agent label (the model for
    `llm`, `claude-code:MODEL`, `oracle` ...), each with its agent and model apart."""
    out: dict[str, dict[str, Any]] = {}
    for m in models:
        label = str(m.get("agent") or m.get("model") or "?")
        model = m.get("model")
        agent = agent_of(label, model)
        out[label] = {"agent": agent, "model": model, "passed": m.get("passed", 0),
                      "trials": m.get("trials", 0), "errored": m.get("errored", 0)}
    return out


def list_runs(limit: int | None = None) -> list[dict[str, Any]]:
    """The index's runs, newest first (all of them without `limit`)."""
    with _index() as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?",
                          (-1 if limit is None else limit,)).fetchall()
    return [dict(r) for r in rows]


def agents_of(row: dict[str, Any]) -> list[str]:
    """An index row's agents under test as reports name them (`claude-code · mock/solver`,
    `oracle`); a row from before `by_agent` gives its models."""
    try:
        rows = json.loads(row.get("by_agent") or "{}")
    except ValueError:
        rows = {}
    if isinstance(rows, dict) and rows:
        return [agent_model(v.get("agent"), v.get("model")) if isinstance(v, dict) else str(k)
                for k, v in rows.items()]
    return models_of(row)


def models_of(row: dict[str, Any]) -> list[str]:
    try:
        models = json.loads(row.get("models") or "[]")
    except ValueError:
        return []
    return [str(m) for m in models] if isinstance(models, list) else []


# Naming a run ----------------------------------------------------------------------------

LATEST = "latest"


def resolve_run(ref: str | None) -> Path:
    """A run as people name it: its directory (a path that exists wins over an id), its run
    id, a unique prefix of the id, or `latest` (also None: the newest run `proctor runs`
    lists; the keyword always, `./latest` is a directory).
    Ids are looked up in the index and under proctor's home (`runs/`). An unknown or
    ambiguous name is a usage error (exit 2) saying what matched."""
    if ref is not None and ref != LATEST and Path(ref).exists():
        return Path(ref)
    known = _known_runs()
    if ref is None or ref == LATEST:
        if not known:
            raise UsageError(f"no runs yet under {shown(proctor_home())} (`latest` names the "
                             "newest run `proctor runs` lists)")
        return known[0][1]
    exact = [run for run in known if run[0] == ref]
    hits = exact or [run for run in known if run[0].startswith(ref)]
    if len(hits) == 1:
        return hits[0][1]
    if not hits:
        raise UsageError(f"{ref}: no such run directory, and no run id starts with it "
                         "(`proctor runs` lists the runs)")
    names = ", ".join(run_id for run_id, _ in hits[:5])
    more = f" and {len(hits) - 5} more" if len(hits) > 5 else ""
    raise UsageError(f"{ref}: ambiguous, {len(hits)} runs start with it: {names}{more}; "
                     "give more of the id")


def _known_runs() -> list[tuple[str, Path]]:
    """(run id, directory) of every run whose directory is still there, newest first: the
    index's, then directories under `runs/` it lacks (one id, one entry)."""
    out: dict[str, Path] = {}
    try:
        rows = list_runs()
    except sqlite3.Error:
        rows = []
    for row in rows:
        if row.get("run_id") and Path(row["dir"]).is_dir():
            out.setdefault(str(row["run_id"]), Path(row["dir"]))
    runs = proctor_home() / "runs"
    try:
        stored = sorted(runs.iterdir(), reverse=True) if runs.is_dir() else []
    except OSError:
        stored = []
    for d in stored:
        if d.name not in out and (d / "run.json").is_file():
            out[d.name] = d
    return list(out.items())
