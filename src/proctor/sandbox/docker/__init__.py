"""The docker backend (`--backend docker`, docs/docker.md), in layers, each importing only
those below it (pyproject's import contracts):

* backend.py: the `Backend` (the registry's entry): images ready, then a container per trial;
* taskenv.py: a container that is the task's environment (a Harbor task's image);
* verifier.py: a Harbor verifier in that container, apart from what the agent left;
* container.py: a trial's container with proctor's places in it; grade.py: its checks;
  processes.py: its processes as the host sees them (its init's pidfd, cgroups, /proc);
* images.py: the images trials run in; imagemap.py: stand-ins for images no registry
  gives (with cpython.py, pins.py, trust.py, ubuntu.py: Ubuntu's archive);
* imagestore.py, build.py, host.py: the local image store, one watched `docker build`,
  the engine's machine.
"""
