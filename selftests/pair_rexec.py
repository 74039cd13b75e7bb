#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""pair_rexec: run a command on the other guest, as ssh would, for mpirun's
rsh launcher (the test guests have no sshd).  Plain TCP, no authentication:
for the test guests' private link only.

  pair_rexec.py --serve PORT [--bind ADDR]
      run each connection's command until killed
  pair_rexec.py [--port PORT] HOST COMMAND...
      run COMMAND (its words joined by spaces, as ssh does) with sh -c on
      HOST, its standard input, output and error forwarded; exit with its
      status (128 + the signal's number when a signal ended it, 255 when
      HOST cannot be reached)

Frames both ways: a byte for the kind, 4 for the length, then the data.
To the server: the command (C), standard input (I; empty at its end).  Back:
standard output (O), error (E), and the exit status (X, as text), last.  A
connection that ends before its X kills the command's process group.
"""
import os
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import threading

HEAD = struct.Struct("!cI")


def send(sock, lock, kind, data):
    with lock:
        sock.sendall(HEAD.pack(kind, len(data)) + data)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        try:
            got = sock.recv(n - len(buf))
        except OSError:  # the handler done, its socket closed
            got = b""
        if not got:
            return None
        buf += got
    return buf


def recv(sock):
    head = recv_exact(sock, HEAD.size)
    if head is None:
        return None, None
    kind, n = HEAD.unpack(head)
    data = recv_exact(sock, n)
    return (kind, data) if data is not None else (None, None)


def pump(src, sock, lock, kind):
    """Copy a pipe into frames of KIND until its end."""
    while True:
        data = os.read(src.fileno(), 65536)
        if not data:
            return
        send(sock, lock, kind, data)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock, lock = self.request, threading.Lock()
        kind, cmd = recv(sock)
        if kind != b"C":
            return
        proc = subprocess.Popen(["/bin/sh", "-c", cmd.decode()], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        pumps = [threading.Thread(target=pump, args=(p, sock, lock, k), daemon=True)
                 for p, k in ((proc.stdout, b"O"), (proc.stderr, b"E"))]
        for t in pumps:
            t.start()
        threading.Thread(target=self.stdin, args=(proc,), daemon=True).start()
        rc = proc.wait()
        for t in pumps:
            t.join(10)
        send(sock, lock, b"X", str(128 - rc if rc < 0 else rc).encode())

    def stdin(self, proc):
        """Standard input to the command; the client gone, the command too."""
        while True:
            kind, data = recv(self.request)
            if kind is None:
                if proc.poll() is None:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                return
            if kind == b"I" and data:
                try:
                    proc.stdin.write(data)
                    proc.stdin.flush()
                except OSError:
                    pass
            elif kind == b"I":
                proc.stdin.close()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def client(host, port, words):
    try:
        sock = socket.create_connection((host, port), timeout=30)
    except OSError as e:
        print(f"pair_rexec: {host}:{port}: {e}", file=sys.stderr)
        return 255
    sock.settimeout(None)
    lock = threading.Lock()
    send(sock, lock, b"C", " ".join(words).encode())

    def stdin():
        while True:
            data = os.read(0, 65536)
            send(sock, lock, b"I", data)
            if not data:
                return

    threading.Thread(target=stdin, daemon=True).start()
    while True:
        kind, data = recv(sock)
        if kind is None:
            print(f"pair_rexec: {host}: connection lost", file=sys.stderr)
            return 255
        if kind == b"X":
            return int(data)
        out = sys.stdout if kind == b"O" else sys.stderr
        out.buffer.write(data)
        out.flush()


def main():
    # By hand, not argparse: the command's words are anyone's (orted's
    # "-mca ..."), and mpirun puts them right after the host.
    args, port = sys.argv[1:], 7333
    if args[:1] == ["--serve"] and len(args) in (2, 4) and args[2:3] in ([], ["--bind"]):
        with Server((args[3] if len(args) == 4 else "", int(args[1])), Handler) as srv:
            srv.serve_forever()
    if args[:1] == ["--port"] and len(args) > 1:
        port, args = int(args[1]), args[2:]
    if len(args) < 2 or args[0].startswith("-"):
        sys.exit(__doc__)
    sys.exit(client(args[0], port, args[1:]))


if __name__ == "__main__":
    main()
