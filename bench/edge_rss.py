#!/usr/bin/env python3
"""edge_rss.py: the coordinator's resident memory under issue 32's attacks.

Starts `prism coordinator` on loopback (a temp database, ports picked by the
coordinator, readiness from its --ready-file), then, without a token:
  http   N connections each sending `GET /` and then 150 MiB with no line
         end, N sending a GET announcing a 100 MB body, N sending a GET
         followed by 100 MB it does not announce (all at once);
  grpc   16 ExperimentService.Submit calls of 60 MB each, 8 on connections
         of their own and 8 on one (tests/server/grpc_flood, a process of
         its own).
Samples the coordinator's VmRSS every 5 ms and prints, per attack, the RSS
before, the peak and the RSS 2 s after, and how many bytes each kind of
connection got in before it was closed.

  bench/edge_rss.py [--build build] [--connections 4]

Traffic goes to 127.0.0.1 only. Exit status 0, or 1 if the coordinator did
not start.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

CHUNK = b"a" * (64 << 10)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Sampler:
    def __init__(self, pid):
        self.pid, self.peak, self.done = pid, rss_kib(pid), False
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.done:
            self.peak = max(self.peak, rss_kib(self.pid))
            time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done = True
        self.thread.join()


def start_coordinator(prism, tmp, *flags):
    """Starts `prism coordinator` on loopback in `tmp` (database prism.db,
    admin token admin.token, log coordinator.log) with `flags` added, and
    waits up to 60 s for its --ready-file. Returns (process, addresses: the
    ready file's JSON, None if it did not start)."""
    ready = os.path.join(tmp, "ready.json")
    log = open(os.path.join(tmp, "coordinator.log"), "w")
    proc = subprocess.Popen(
        [prism, "coordinator", "--db", os.path.join(tmp, "prism.db"),
         "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
         "--admin-token-file", os.path.join(tmp, "admin.token"),
         "--ready-file", ready, *flags], stdout=log, stderr=log)
    deadline, addresses = time.time() + 60, None
    while addresses is None and proc.poll() is None and time.time() < deadline:
        try:
            addresses = json.load(open(ready))
        except (OSError, ValueError):  # not there, or still being written
            time.sleep(0.05)
    return proc, addresses


def flood(port, prefix, total, out, key):
    sent = 0
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(prefix)
            while sent < total:
                sent += s.send(CHUNK)
    except OSError:
        pass
    out.setdefault(key, []).append(sent)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--connections", type=int, default=4)
    a = p.parse_args()
    prism = os.path.join(a.build, "cli", "prism")
    flood_bin = os.path.join(a.build, "tests", "server", "grpc_flood")
    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready.json")
        log = open(os.path.join(tmp, "coordinator.log"), "w")
        proc = subprocess.Popen(
            [prism, "coordinator", "--db", os.path.join(tmp, "prism.db"),
             "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--admin-token-file", os.path.join(tmp, "admin.token"),
             "--ready-file", ready], stdout=log, stderr=log)
        try:
            deadline = time.time() + 60
            while not os.path.exists(ready) and proc.poll() is None:
                if time.time() > deadline:
                    break
                time.sleep(0.05)
            if not os.path.exists(ready):
                print("edge_rss: the coordinator did not start", file=sys.stderr)
                return 1
            addresses = None
            while addresses is None and time.time() < deadline:
                try:
                    addresses = json.load(open(ready))
                except ValueError:  # still being written
                    time.sleep(0.05)
            http_port = int(addresses["http"].rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", http_port)) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\n\r\n")
                s.recv(4096)
            time.sleep(1)

            before = rss_kib(proc.pid)
            sent = {}
            attacks = [
                ("long line", b"GET /", 150 << 20),
                ("GET + Content-Length 100 MB",
                 b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n",
                 100_000_000),
                ("GET + unannounced 100 MB", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                 100_000_000),
            ]
            t0 = time.time()
            with Sampler(proc.pid) as sampler:
                threads = [threading.Thread(target=flood,
                                            args=(http_port, pre, total, sent, name))
                           for name, pre, total in attacks
                           for _ in range(a.connections)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            took = time.time() - t0
            time.sleep(2)
            print(f"http: {3 * a.connections} connections ({a.connections} of each), "
                  f"{took:.2f} s; RSS before {before / 1024:.1f} MiB, peak "
                  f"{sampler.peak / 1024:.1f} MiB (+{(sampler.peak - before) / 1024:.1f}), "
                  f"2 s after {rss_kib(proc.pid) / 1024:.1f} MiB")
            for name, _, total in attacks:
                got = sent.get(name, [])
                print(f"  {name}: at most {max(got) / 1048576:.1f} MiB "
                      f"of {total / 1048576:.0f} MiB left the client (kernel buffers included) before the server closed")

            before = rss_kib(proc.pid)
            t0 = time.time()
            with Sampler(proc.pid) as sampler:
                out = subprocess.run([flood_bin, addresses["grpc"], "9", "8", "60000000"],
                                     capture_output=True, text=True, check=True).stdout
            took = time.time() - t0
            time.sleep(2)
            codes = {}
            for c in out.split():
                codes[c] = codes.get(c, 0) + 1
            print(f"grpc: 16 x 60 MB Submits, {took:.2f} s; status codes {codes}; "
                  f"RSS before {before / 1024:.1f} MiB, peak {sampler.peak / 1024:.1f} MiB "
                  f"(+{(sampler.peak - before) / 1024:.1f}), 2 s after "
                  f"{rss_kib(proc.pid) / 1024:.1f} MiB")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
