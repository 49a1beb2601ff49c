"""A TCP link in front of a local server that a test can cut and restore.

While the link is cut its port refuses connections, exactly as a server that is down;
restoring it listens on the same port again. `cut_after(n)` lets `n` more connections
through and then cuts, to take a dependency away in the middle of a run::

    with Link(fake_slack.port) as link:
        client = WebClient(base_url=f"http://127.0.0.1:{link.port}/api/")
        link.cut()       # calls now fail with "connection refused"
        link.restore()   # and work again
"""

from __future__ import annotations

import contextlib
import socket
import threading


class Link:
    """Forwards 127.0.0.1:`port` to 127.0.0.1:`target_port`, one thread pair per connection."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()
        self._allowance: int | None = None
        self._open: set[socket.socket] = set()

    def __enter__(self) -> Link:
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def restore(self) -> None:
        """Listen (again, on the same port once one was chosen)."""
        with self._lock:
            if self._listener is not None:
                return
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(64)
            self.port = listener.getsockname()[1]
            self._listener = listener
            self._allowance = None
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and drop the open ones."""
        with self._lock:
            listener, self._listener = self._listener, None
            dropped, self._open = self._open, set()
        if listener is not None:
            _close(listener)  # shutdown first: a thread blocked in accept() keeps it open
        for sock in dropped:
            _close(sock)

    def refuse(self) -> None:
        """Refuse new connections; those open go on (a request in flight is answered)."""
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            _close(listener)

    def cut_after(self, connections: int) -> None:
        """Let `connections` more connections through, then cut."""
        with self._lock:
            self._allowance = connections
        if connections <= 0:
            self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._open.update((client, upstream))
                if self._allowance is not None:
                    self._allowance -= 1
                    last = self._allowance <= 0
                else:
                    last = False
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()
            if last:
                with self._lock:
                    if self._listener is listener:
                        self._listener = None
                _close(listener)
                return

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                _close(sock)
                with self._lock:
                    self._open.discard(sock)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
