"""`python -m proctor.executors.ray_reaper PID LABEL`: wait until the node's actor (PID) is
gone, however it went, then remove what its trials left under LABEL (see ray_node).
It detaches at once (the command returns while the reaper waits in the background)."""

from __future__ import annotations

import os
import select
import sys
import time

from proctor import proc


def wait_for_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfd (old kernel): poll
        while os.path.exists(f"/proc/{pid}"):
            time.sleep(0.5)
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    pid, label = int(argv[0]), argv[1]
    # Leave the actor's process tree: Ray kills a dying worker's children, this included.
    if not proc.detach():
        return 0
    wait_for_exit(pid)
    from proctor.janitor import sweep_node

    sweep_node(label)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
