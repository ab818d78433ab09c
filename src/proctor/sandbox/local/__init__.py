"""The local backend (`--backend local`): each trial's places on this machine, every command in
a namespace box (backend.py). The box itself (namespaces, spawner, pool, cgroups, tracer) is
in sandbox/, shared with the docker backend's grader boxes; nothing here imports Docker."""
