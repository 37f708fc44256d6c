"""An HTTPS server for bessd's IEEE 2030.5 HTTP client tests (Tests/Sep2LinkTests): TLS 1.2 only,
ECDHE-ECDSA-AES128-CCM8 only, a client certificate that chains to --ca required, as a 2030.5 server
is. Python's ssl over the system OpenSSL 3 (pyenv's Python >= 3.12, Package.sep2Python).

Each path is one behaviour:
  /dcap           200, a sep+xml body with Content-Length, the connection kept alive
  /chunked        200, the same body in chunks with an extension and a trailer
  /busy           429 with Retry-After: 120
  /down           503 with an HTTP-date Retry-After
  /huge           200 announcing 300000 bytes (more than the client's 262144)
  /huge-chunked   200, chunked, 64 KiB chunks without end
  /garbage        a status line that is not HTTP
  /close-after    200, then the server closes the connection (no Connection: close said)
  /stall          the head of a 200 whose body never comes
  POST /rsps      201 with Location: /rsps/1/rsp/7, the request body echoed
Every answer carries X-Connection: the number of the TLS connection it went on (1, 2, …) and
X-Request-Accept: the request's Accept header.

Prints "PORT <n>" once it listens on 127.0.0.1 (port 0: the kernel's choice), "HANDSHAKE-FAILED
<reason>" for each refused client, and serves until its standard input closes, it is killed or
--seconds (600) pass.
"""
import argparse
import os
import socket
import ssl
import sys
import threading

BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<DeviceCapability xmlns="urn:ieee:std:2030.5:ns" href="/dcap" pollRate="300">'
        b'<TimeLink href="/tm"/><EndDeviceListLink href="/edev" all="1"/></DeviceCapability>')


def say(line):
    print(line, flush=True)


def read_request(stream):
    """The request line, headers (lower-case names) and body; None when the client closed."""
    line = stream.readline(8192)
    if not line:
        return None
    method, path, _ = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers = {}
    while True:
        field = stream.readline(8192).decode("latin-1").rstrip("\r\n")
        if not field:
            break
        name, _, value = field.partition(":")
        headers[name.strip().lower()] = value.strip()
    body = stream.read(int(headers.get("content-length", "0") or "0"))
    return method, path, headers, body


def answer(status, reason, headers, body=b""):
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode() + b"\r\n" + body


def serve(connection, number):
    stream = connection.makefile("rb")
    while True:
        request = read_request(stream)
        if request is None:
            return
        method, path, headers, body = request
        common = [("X-Connection", str(number)), ("X-Request-Accept", headers.get("accept", ""))]
        if method == "POST" and path == "/rsps":
            connection.sendall(answer(201, "Created", common + [("Location", "/rsps/1/rsp/7"),
                                      ("Content-Length", str(len(body)))], body))
        elif path == "/dcap":
            connection.sendall(answer(200, "OK", common + [("Content-Type", "application/sep+xml"),
                                      ("Content-Length", str(len(BODY)))], BODY))
        elif path == "/chunked":
            chunks = [BODY[:40], BODY[40:41], BODY[41:]]
            data = b"".join(b"%x;note=1\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\nX-Trailer: yes\r\n\r\n"
            connection.sendall(answer(200, "OK", common + [("Content-Type", "application/sep+xml"),
                                      ("Transfer-Encoding", "chunked")], data))
        elif path == "/busy":
            connection.sendall(answer(429, "Too Many Requests", common + [("Retry-After", "120"), ("Content-Length", "0")]))
        elif path == "/down":
            connection.sendall(answer(503, "Service Unavailable", common + [
                ("Retry-After", "Fri, 27 Nov 2026 23:00:00 GMT"), ("Content-Length", "0")]))
        elif path == "/huge":
            connection.sendall(answer(200, "OK", common + [("Content-Length", "300000")], b"x" * 1000))
        elif path == "/huge-chunked":
            connection.sendall(answer(200, "OK", common + [("Transfer-Encoding", "chunked")]))
            try:
                while True:
                    connection.sendall(b"10000\r\n" + b"y" * 65536 + b"\r\n")
            except OSError:
                return
        elif path == "/garbage":
            connection.sendall(b"HTXP/1.1 200 \x1b[31mOK\r\nContent-Length: 0\r\n\r\n")
        elif path == "/close-after":
            connection.sendall(answer(200, "OK", common + [("Content-Length", "2")], b"ok"))
            return
        elif path == "/stall":
            connection.sendall(answer(200, "OK", common + [("Content-Length", "10")]))
            threading.Event().wait()
        else:
            connection.sendall(answer(404, "Not Found", common + [("Content-Length", "0")]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=600)
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers("ECDHE-ECDSA-AES128-CCM8")
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(args.ca)
    context.load_cert_chain(args.cert, args.key)

    # Gone with the test process: its end of standard input closes; --seconds is the backstop.
    def watch_input():
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=watch_input, daemon=True).start()
    threading.Timer(args.seconds, lambda: os._exit(0)).start()
    listener = socket.create_server(("127.0.0.1", args.port))
    say(f"PORT {listener.getsockname()[1]}")
    count = 0
    lock = threading.Lock()

    def handle(raw):
        nonlocal count
        try:
            connection = context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError) as error:
            say(f"HANDSHAKE-FAILED {error.__class__.__name__}")
            raw.close()
            return
        with lock:
            count += 1
            number = count
        say(f"CONNECTION {number} {connection.cipher()[0]}")
        try:
            serve(connection, number)
        except (OSError, ValueError):
            pass
        finally:
            try:
                connection.close()
            except OSError:
                pass

    while True:
        raw, _ = listener.accept()
        threading.Thread(target=handle, args=(raw,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
