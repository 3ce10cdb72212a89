#!/usr/bin/python3
"""natspub: publishes files as NATS messages, for the tests (stdlib only).

    natspub.py [--stream NAME] PORT SUBJECT FILE...

Each FILE's bytes are one message on SUBJECT, on core NATS at
127.0.0.1:PORT.  With --stream NAME, first creates the JetStream stream NAME
with subjects NAME.* (as Dynamo's NatsQueue does for its KV events) and
waits for each message's acknowledgement from the stream.  Exits 1 when the
server refuses or does not answer within 5 seconds.
"""
import json
import socket
import sys


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.line()  # INFO
        self.s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\n')

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                sys.exit("natspub: server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read(self, n):
        while len(self.buf) < n + 2:
            self.buf += self.s.recv(65536)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def pub(self, subject, data, reply=None):
        head = b"PUB " + subject.encode() + (b" " + reply.encode() if reply else b"")
        self.s.sendall(head + b" %d\r\n" % len(data) + data + b"\r\n")

    def request(self, subject, data):
        """One reply, on an inbox of our own."""
        self.s.sendall(b"SUB _INBOX.natspub 1\r\n")
        self.pub(subject, data, "_INBOX.natspub")
        while True:
            line = self.line()
            if line.startswith(b"MSG "):
                reply = self.read(int(line.split()[-1]))
                self.s.sendall(b"UNSUB 1\r\n")
                return json.loads(reply)
            if line.startswith(b"-ERR"):
                sys.exit("natspub: " + line.decode())
            if line == b"PING":
                self.s.sendall(b"PONG\r\n")

    def flush(self):
        self.s.sendall(b"PING\r\n")
        while True:
            line = self.line()
            if line == b"PONG":
                return
            if line.startswith(b"-ERR"):
                sys.exit("natspub: " + line.decode())


def main():
    args = sys.argv[1:]
    stream = None
    if args[:1] == ["--stream"]:
        stream, args = args[1], args[2:]
    port, subject, files = int(args[0]), args[1], args[2:]
    c = Conn(port)
    if stream:
        cfg = {"name": stream, "subjects": [stream + ".*"], "max_age": 600 * 10**9, "storage": "file"}
        r = c.request("$JS.API.STREAM.CREATE." + stream, json.dumps(cfg).encode())
        if "error" in r and r["error"].get("err_code") != 10058:  # already exists
            sys.exit("natspub: " + json.dumps(r["error"]))
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        if stream:
            r = c.request(subject, data)
            if "error" in r:
                sys.exit("natspub: " + json.dumps(r["error"]))
        else:
            c.pub(subject, data)
    c.flush()


main()
