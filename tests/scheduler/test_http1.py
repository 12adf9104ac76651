"""scheduler.runtime.http1: the keep-alive pool the client sends whole requests through, against a raw socket server that
answers as kube-apiserver frames its answers (Content-Length up to 2 KB, chunked above)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from scheduler.runtime import http1

OK_SHORT = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
OK_CHUNKED = (b"HTTP/1.1 200 OK\r\nAudit-Id: x\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"5\r\n[1,2,\r\n3;ext=1\r\n3]\n\r\n0\r\n\r\n")


@contextmanager
def raw_server(answers: list[bytes], *, close_after: int | None = None) -> Iterator[tuple[int, list[bytes]]]:
    """Answers each request read on a connection with the next of `answers`; closes a connection after
    `close_after` answers. Yields (port, the requests received)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    received: list[bytes] = []
    connections: list[int] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            served = 0
            buf = b""
            while answers:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(buf) < length:
                    buf += conn.recv(65536)
                received.append(head + b"\r\n\r\n" + buf[:length])
                buf = buf[length:]
                conn.sendall(answers.pop(0))
                served += 1
                if close_after is not None and served >= close_after:
                    return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            connections.append(1)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield port, received
    finally:
        listener.close()
    assert connections  # the pool did connect


def _request(pool: http1.Pool, method: str = "POST", body: bytes | None = b'{"a":1}') -> tuple[int, bytes]:
    return pool.request(method, "/api/v1/x", b"Accept: application/json\r\n", body, connect_timeout=5,
                        read_timeout=5)


def test_reads_content_length_and_chunked_answers_on_one_kept_alive_connection() -> None:
    with raw_server([OK_SHORT, OK_CHUNKED]) as (port, received):
        pool = http1.Pool("127.0.0.1", port, host_header=f"127.0.0.1:{port}")
        assert _request(pool) == (201, b"{}")
        assert len(pool._idle) == 1
        assert _request(pool, "GET", None) == (200, b"[1,2,3]\n")
        assert len(pool._idle) == 1
    assert received[0].startswith(b"POST /api/v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"Content-Length: 7\r\n\r\n{\"a\":1}" in received[0]
    assert b"Content-Length" not in received[1]


def test_a_connection_the_server_closed_is_not_reused() -> None:
    with raw_server([OK_SHORT, OK_SHORT], close_after=1) as (port, _):
        pool = http1.Pool("127.0.0.1", port)
        assert _request(pool)[0] == 201
        idle = pool._idle[0]
        threading.Event().wait(0.2)  # the server's FIN arrives
        assert _request(pool)[0] == 201  # on a new connection, not an error
        assert idle not in pool._idle


def test_connection_close_answer_is_not_kept() -> None:
    answer = b"HTTP/1.1 409 Conflict\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    with raw_server([answer]) as (port, _):
        pool = http1.Pool("127.0.0.1", port)
        assert _request(pool) == (409, b"{}")
        assert pool._idle == []


def test_an_answer_cut_short_is_an_error_not_a_body() -> None:
    with raw_server([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}"], close_after=1) as (port, _):
        pool = http1.Pool("127.0.0.1", port)
        with pytest.raises(http1.ProtocolError, match="2 of 10"):
            _request(pool)
        assert pool._idle == []


def test_refused_connection_raises_oserror() -> None:
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    with pytest.raises(OSError):
        _request(http1.Pool("127.0.0.1", port))
