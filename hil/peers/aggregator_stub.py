#!/usr/bin/env python3
"""A minimal aggregator for uplink tests (Python standard library only): stores records per site by
seq (duplicates ignored), answers acked_seq = the highest contiguous seq held, and hands out queued
commands. Behaviour is switched through /admin:
  POST /admin/mode      {"mode": "ok" | "error" (500) | "slow" (answers after 12 s) | "garbage" (2xx, not JSON) | "drop" (closes)}
  POST /admin/command   a DispatchCommand to hand out with the next answer
  GET  /admin/state     {"seqs": {site: [...]}, "acks": [...], "auth": [...], "bad_batches": n,
                         "posts": {mode: batches posted while in that mode}}
Prints "PORT <n>" once listening. Usage: aggregator_stub.py [SECONDS] [CERT KEY] (HTTPS with CERT and KEY)"""
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"mode": "ok", "seqs": {}, "acks": [], "auth": [], "commands": [], "bad_batches": 0, "posts": {}}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/admin/state":
            with lock:
                self.reply(200, {k: state[k] for k in ("seqs", "acks", "auth", "bad_batches", "mode", "posts")})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        if self.path == "/admin/mode":
            with lock:
                state["mode"] = json.loads(body)["mode"]
            return self.reply(200, {"ok": True})
        if self.path == "/admin/command":
            with lock:
                state["commands"].append(json.loads(body))
            return self.reply(200, {"ok": True})
        if not (self.path.startswith("/v1/sites/") and self.path.endswith("/records")):
            return self.reply(404, {"error": "not found"})
        site = self.path.split("/")[3]
        if len(body) < length:
            # The sender died mid-request (the test SIGKILLs it): a cut transfer, not a malformed batch.
            self.close_connection = True
            return
        with lock:
            mode = state["mode"]
            state["posts"][mode] = state["posts"].get(mode, 0) + 1
        if mode == "drop":
            self.close_connection = True
            return
        if mode == "error":
            return self.reply(500, {"error": "down for maintenance"})
        if mode == "slow":
            time.sleep(12)
        try:
            batch = json.loads(body)
            assert batch["protocol_version"] == 1 and batch["site"] == site
        except Exception:
            with lock:
                state["bad_batches"] += 1
            return self.reply(400, {"error": "bad batch"})
        with lock:
            state["auth"].append(self.headers.get("Authorization"))
            held = state["seqs"].setdefault(site, [])
            have = set(held)
            for record in batch["records"]:
                if record["seq"] not in have:
                    held.append(record["seq"])
                    have.add(record["seq"])
            held.sort()
            state["acks"].extend(batch.get("acks", []))
            acked = 0
            for seq in held:
                if seq == acked + 1:
                    acked = seq
                elif seq > acked + 1:
                    break
            commands, state["commands"] = state["commands"], []
        if mode == "garbage":
            return self.reply(200, b"<html>not json</html>", "text/html")
        self.reply(200, {"acked_seq": acked, "commands": commands})


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if len(sys.argv) > 3:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    time.sleep(seconds)
    server.shutdown()


if __name__ == "__main__":
    main()
