"""A real ``redis-server`` for the store tests (Debian's ``redis-server``; ``.ci/run`` installs
it): started on a free port in a temporary directory, without persistence."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["RedisServer", "free_port", "have_redis", "killable_store", "require_redis"]


def have_redis() -> bool:
    """``redis-server`` is on the PATH and the ``redis`` package imports."""
    try:
        import redis  # noqa: F401
    except ImportError:
        return False
    return shutil.which("redis-server") is not None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port`` in ``directory``; :meth:`start`, :meth:`kill`."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory, self.port = directory, port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += [
            "--dir",
            str(self.directory),
            "--logfile",
            str(self.directory / "redis.log"),
            "--enable-debug-command",
            "local",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None


def require_redis() -> None:
    """Skip the calling test module without ``redis-server`` and the ``redis`` package, or raise
    when ``LOOPGUARD_REQUIRE_REDIS`` is set (``.ci/run`` sets it: there the tests must run)."""
    import os

    import pytest

    if have_redis():
        return
    if os.environ.get("LOOPGUARD_REQUIRE_REDIS"):
        raise RuntimeError("LOOPGUARD_REQUIRE_REDIS is set but redis-server or the redis package is missing")
    pytest.skip("needs redis-server and the redis package (pip install loopguard[redis])", allow_module_level=True)


def killable_store(directory: Path) -> tuple[RedisServer, Any]:
    """A ``redis-server`` of the test's own in ``directory`` (to kill and restart) and a
    :class:`loopguard.RedisStore` on it with the fault settings the fault tests use: the store is
    asked again 0.05 s after an error, warns at most once a minute and waits 0.25 s for a reply."""
    from loopguard import RedisStore

    srv = RedisServer(directory).start()
    return srv, RedisStore(srv.url, retry_interval=0.05, warn_interval=60, socket_timeout=0.25)
