#!/usr/bin/env python3
"""unknown_methods.py: what calls to made-up gRPC methods cost the coordinator.

Starts `prism coordinator --metrics-open` on loopback (a temp database, ports
picked by the coordinator, readiness from its --ready-file), scrapes
/metrics, sends 100 calls to warm up, then, without a token, CALLS calls,
each to a method of its own with a name of NAME_BYTES bytes
(tests/server/grpc_unknown_methods, a process of its own; issue #40). Prints the coordinator's VmRSS before (after the
warm-up) and after the calls, the size of a /metrics scrape at start and
after the calls, and the time and peak RSS of the scrape after.

  bench/unknown_methods.py [--build build] [--prism PATH] [--calls 10000]
                           [--name-bytes 2048] [--channels 4]

--prism measures another coordinator binary (an older build) with the same
client. Traffic goes to 127.0.0.1 only. Exit status 0, or 1 if the
coordinator did not start.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request


# The RSS probe and peak sampler edge_rss.py measures its edges with.
from edge_rss import Sampler, rss_kib, start_coordinator  # noqa: E402


def scrape(http, pid):
    """Returns (bytes, seconds, peak RSS KiB) of one GET /metrics."""
    t0 = time.time()
    with Sampler(pid) as sampler:
        with urllib.request.urlopen(f"http://{http}/metrics", timeout=600) as r:
            size = len(r.read())
    return size, time.time() - t0, sampler.peak


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--prism", help="coordinator binary (default: BUILD/cli/prism)")
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--name-bytes", type=int, default=2048)
    p.add_argument("--channels", type=int, default=4)
    a = p.parse_args()
    prism = a.prism or os.path.join(a.build, "cli", "prism")
    client = os.path.join(a.build, "tests", "server", "grpc_unknown_methods")
    with tempfile.TemporaryDirectory() as tmp:
        proc, addresses = start_coordinator(prism, tmp, "--metrics-open")
        try:
            if addresses is None:
                print("unknown_methods: the coordinator did not start", file=sys.stderr)
                return 1

            def call(n):
                return subprocess.run(
                    [client, addresses["grpc"], str(a.channels), str(n),
                     str(a.name_bytes)],
                    capture_output=True, text=True, check=True).stdout.split()

            size0, took0, _ = scrape(addresses["http"], proc.pid)
            call(100)  # opens the connections
            rss0 = rss_kib(proc.pid)
            t0 = time.time()
            codes = call(a.calls)
            took_calls = time.time() - t0
            rss1 = rss_kib(proc.pid)
            size1, took1, peak1 = scrape(addresses["http"], proc.pid)
            rss2 = rss_kib(proc.pid)
            print(f"{a.calls} calls to made-up methods ({a.name_bytes}-byte names, "
                  f"{a.channels} connections, no token): {took_calls:.2f} s, "
                  f"status code {codes[0::2]} x {codes[1::2]}")
            print(f"  RSS {rss0 / 1024:.1f} -> {rss1 / 1024:.1f} MiB "
                  f"(+{(rss1 - rss0) / 1024:.1f}) after the calls (from after "
                  f"the 100 warm-up calls)")
            print(f"  /metrics {size0} bytes at start -> {size1} bytes after all "
                  f"{a.calls + 100} calls; that scrape took {took1:.2f} s (the "
                  f"first {took0:.3f} s), peak RSS {peak1 / 1024:.1f} MiB, "
                  f"{rss2 / 1024:.1f} MiB after it")
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
