"""The engine: a run planned (prepare.py: everything that can fail on bad input, before
anything runs), then executed (execute.py: the trials through an executor, stored, scored,
reported); main.py is `proctor run`'s entry."""
