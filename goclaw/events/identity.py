"""Who a queue worker is: ``host:pid:token`` ids, and whether a pid on this host still runs
(used by :meth:`goclaw.events.queue.EventQueue.recover_orphans`)."""

from __future__ import annotations

import os
import socket
import uuid


def host_name() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def new_worker_id() -> str:
    """``host:pid:token``: the host and pid let a restarted process on the same host reclaim
    the deliveries of a dead one at once instead of waiting for the lease."""
    return f"{host_name()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
