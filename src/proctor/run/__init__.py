"""The engine: a run planned, then executed (execute.py)."""
