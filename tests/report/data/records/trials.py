"""The trials of the byte-for-byte record test (tests/report/test_results_types.py), as the
engine's keyword arguments (keys left out take the record's defaults).

The files beside this one were written from these by proctor 4d080dd, the last with two
shapes of a result (`model.TrialResult` dataclasses and their `to_dict`): `results.json`
(`store.write_json` of the trials and the scorer's rows), `results.jsonl` (`RunStore.append`
with the key b"k" * 32 under run id `golden`) and `resumed.json` (results.json from those
lines read back, as `--resume` makes it). The records of today must write the same bytes."""

CHECKS = [
    {"name": "exit_code#0", "type": "exit_code", "passed": True, "score": 1.0, "weight": 1.0,
     "gate": False, "message": ""},
    {"name": "judge", "type": "llm_as_judge", "passed": False, "score": 0.4, "weight": 2.0,
     "gate": False, "message": "score 0.40 < 0.5\nthe reply was rude — «non-ASCII»"},
    {"name": "file#1", "type": "file_contains", "passed": False, "score": 0.0, "weight": 1.0,
     "gate": True, "message": "", "error": "could not read /work/out.txt"},
]

TRIALS = [
    {"id": "alpha.openai-gpt-4.1.injected.r0", "task_id": "alpha", "model": "openai/gpt-4.1",
     "help_mode": "injected", "replica": 0, "params": {"db": "pg"}, "status": "pass",
     "composite_score": 1.0, "checks": CHECKS[:1], "turns": 3,
     "tokens": {"input": 5200, "output": 410}, "cost_usd": 0.0031, "duration_s": 4.2,
     "agent": "llm", "category": "sql", "started_at": "2026-03-02T10:15:00Z",
     "output": "done ✓"},
    {"id": "alpha.openai-gpt-4.1.injected.r1", "task_id": "alpha", "model": "openai/gpt-4.1",
     "help_mode": "injected", "replica": 1, "params": {"db": "pg"}, "status": "fail",
     "composite_score": 0.3333, "checks": CHECKS[:2], "reason": "failed: judge: score 0.40",
     "timed_out": True, "limit_hit": "timeout", "turns": 11,
     "tokens": {"input": None, "output": None}, "duration_s": 300.5, "agent": "llm",
     "forbidden": [{"rule": "no_force_push", "violated": True, "details": "git push -f"}],
     "tampering": [{"path": "tests/test_x.py", "change": "modified"}]},
    {"id": "beta.r0", "task_id": "beta", "status": "error", "error": "check file#1 errored",
     "error_kind": "check", "checks": CHECKS, "agent": "oracle", "node": "host/0123abcd",
     "params": {7: {"nested": [1, 2.5, None, True]}},
     "forbidden": [{"rule": "http_except", "violated": False}]},
    {"id": "gamma.r0", "task_id": "gamma", "status": "error", "model": "mock/solver",
     "error": "agent error: a name that was not UTF-8: bad\udcff", "error_kind": "provider",
     "limit_hit": "tokens", "cost_usd": 12.5, "category": None},
]
