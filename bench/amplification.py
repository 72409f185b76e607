#!/usr/bin/env python3
"""amplification.py: what issue 40's small requests cost the coordinator.

Starts `prism coordinator` on loopback (a temp database under umask 022,
ports picked by the coordinator, readiness from its --ready-file), creates a
plain user, and as that user, one finding at a time:
  ladders  LADDERS ladders of RUNGS rungs each (d_model 128, 4 heads,
           2, 3, ... layers) sharing a budget of LOSS_TARGETS loss targets
           (about 200 KB of textproto);
  list     then, as the admin, `prism status` (ExperimentService.List) and
           the dashboard queue page's GET /api/v1/experiments, POLLS times,
           and the user's read of one experiment while 4 dashboards poll
           (and, where the ladders were refused, the same ladder with 32
           loss targets);
  grids    GRIDS grids of d_model 768, 12 layers, 16 heads, seeds 1-3
           (95,472 trials each), then GRIDS of 12 heads, 1 seed (12,376);
and without a token: a POST /api/v1/logout from another origin, a Submit
whose bytes are groups nested 200 deep, the headers of GET /, and the modes
of the files the coordinator created. Prints, per finding, what the
coordinator answered, its CPU seconds and RSS growth, the bytes stored (the
experiments' specs, the trials) and the bytes and time of the answers.

  bench/amplification.py [--build build] [--prism PATH] [--ladders 4]
                         [--rungs 2000] [--loss-targets 1000]
                         [--grids 6] [--polls 5]

--prism measures another coordinator binary (an older build) with the same
client (the CLI of --prism, so its flags must match). Traffic goes to
127.0.0.1 only. Exit status 0, or 1 if the coordinator did not start.
"""
import argparse
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import grpc

# The RSS probe and peak sampler edge_rss.py measures its edges with.
from edge_rss import Sampler, rss_kib, start_coordinator  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


class Coordinator:
    def __init__(self, prism, tmp):
        self.prism, self.tmp = prism, tmp
        self.db = os.path.join(tmp, "prism.db")
        self.admin_token_file = os.path.join(tmp, "admin.token")
        old = os.umask(0o022)
        self.proc, self.addresses = start_coordinator(prism, tmp)
        os.umask(old)
        self.pid = self.proc.pid

    def cli(self, *args, token=None):
        env = dict(os.environ, PRISM_COORDINATOR=self.addresses["grpc"])
        env.pop("PRISM_TOKEN_FILE", None)
        if token:
            env["PRISM_TOKEN"] = token
        else:
            env["PRISM_TOKEN_FILE"] = self.admin_token_file
        t0 = time.time()
        r = subprocess.run([self.prism, *args], capture_output=True, text=True,
                           env=env, cwd=self.tmp)
        return r, time.time() - t0

    def measured(self, fn):
        """Runs fn(); returns (its result, CPU s, RSS growth MiB, peak MiB)."""
        rss0, cpu0 = rss_kib(self.pid), cpu_seconds(self.pid)
        with Sampler(self.pid) as s:
            out = fn()
        return (out, cpu_seconds(self.pid) - cpu0,
                (rss_kib(self.pid) - rss0) / 1024, s.peak / 1024)

    def stored(self):
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as c:
            n, spec_bytes, largest = c.execute(
                "SELECT count(*), coalesce(sum(length(spec)), 0), "
                "coalesce(max(length(spec)), 0) FROM experiments").fetchone()
            trials = c.execute("SELECT count(*) FROM trials").fetchone()[0]
        return n, spec_bytes, largest, trials

    def http(self, path, method="GET", headers=None, token=None):
        req = urllib.request.Request(f"http://{self.addresses['http']}{path}",
                                     method=method, headers=headers or {},
                                     data=b"" if method == "POST" else None)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        t0 = time.time()
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return r.status, r.headers, len(r.read()), time.time() - t0
        except urllib.error.HTTPError as e:
            return e.code, e.headers, len(e.read()), time.time() - t0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def first_line(r):
    text = (r.stderr or r.stdout).strip().splitlines()
    return text[0][:150] if text else ""


def ladder_text(rungs, targets):
    loss_targets = ", ".join(f"{5 - i / 1000:.3f}" for i in range(targets))
    lines = ['name: "tall"', "seeds: [1]",
             f"budget {{ steps: 100 loss_targets: [{loss_targets}] }}", "ladder {"]
    for i in range(rungs):
        lines.append(f"  rungs {{ model {{ d_model: 128 base_heads: 4 context: 64 "
                     f"vocab_size: 256 layers: {i + 2} }} }}")
    lines.append("}")
    return "\n".join(lines) + "\n"


GRID = ('name: "wide"\nmodel { d_model: 768 layers: 12 base_heads: 16 '
        'context: 64 vocab_size: 256 }\nbudget { steps: 10 }\nseeds: [1, 2, 3]\n')


def nested_groups(depth):
    start, end = b"\xc3\x3e", b"\xc4\x3e"  # field 1000 as a group
    return start * depth + end * depth


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--prism", help="coordinator binary (default: BUILD/cli/prism)")
    p.add_argument("--ladders", type=int, default=4)
    p.add_argument("--rungs", type=int, default=2000)
    p.add_argument("--loss-targets", type=int, default=1000)
    p.add_argument("--grids", type=int, default=6)
    p.add_argument("--polls", type=int, default=5)
    a = p.parse_args()
    prism = os.path.abspath(a.prism or os.path.join(a.build, "cli", "prism"))
    with tempfile.TemporaryDirectory() as tmp:
        c = Coordinator(prism, tmp)
        if c.addresses is None:
            print("amplification: the coordinator did not start", file=sys.stderr)
            return 1
        try:
            admin = open(c.admin_token_file).read().strip()
            r, _ = c.cli("token", "create", "--user", "mallory", "--role", "user")
            user = r.stdout.split()[-1] if r.returncode == 0 else None
            if not user:
                print(f"amplification: token create: {first_line(r)}", file=sys.stderr)
                return 1
            print(f"coordinator {prism}; RSS {rss_kib(c.pid) / 1024:.1f} MiB at start")

            spec = os.path.join(tmp, "ladder.textproto")
            with open(spec, "w") as f:
                f.write(ladder_text(a.rungs, a.loss_targets))
            print(f"\nladders: {a.ladders} x {a.rungs} rungs "
                  f"and {a.loss_targets} loss targets ({os.path.getsize(spec) / 1024:.0f} KiB "
                  "of textproto each), as a plain user")
            for i in range(a.ladders):
                (r, took), cpu, grew, peak = c.measured(
                    lambda: c.cli("submit", spec, token=user))
                n, spec_bytes, largest, trials = c.stored()
                print(f"  {i + 1}: exit {r.returncode} in {took:.2f} s, coordinator "
                      f"CPU {cpu:.2f} s, RSS {grew:+.1f} MiB (peak {peak:.0f}); "
                      f"stored: {n} experiments, specs {spec_bytes / 1048576:.1f} MiB "
                      f"(largest {largest / 1048576:.2f})  {first_line(r)}")
            if a.ladders and c.stored()[0] == 0:
                # Refused: the same ladder within the loss-target limit, then
                # the largest ladders the limits allow, for the reads below.
                with open(spec, "w") as f:
                    f.write(ladder_text(a.rungs, 32))
                r, took = c.cli("submit", spec, token=user)
                print(f"  the same ladder with 32 loss targets: exit {r.returncode} in "
                      f"{took:.2f} s  {first_line(r)}")
                with open(spec, "w") as f:
                    f.write(ladder_text(8, 32))
                for i in range(a.ladders):
                    r, took = c.cli("submit", spec, token=user)
                n, spec_bytes, largest, trials = c.stored()
                print(f"  {a.ladders} ladders of 8 rungs and 32 loss targets (the limits): "
                      f"exit {r.returncode}; stored: {n} experiments, specs "
                      f"{spec_bytes / 1024:.1f} KiB (largest {largest / 1024:.2f})")
            for name, token in (("admin", admin), ("user", user)):
                (r, took), cpu, grew, peak = c.measured(
                    lambda: c.cli("status", token=token))
                print(f"  prism status as the {name}: exit {r.returncode} in {took:.2f} s, "
                      f"{len(r.stdout)} bytes out, coordinator CPU {cpu:.2f} s, "
                      f"peak {peak:.0f} MiB  {first_line(r) if r.returncode else ''}")
            polls = []
            for _ in range(a.polls):
                (code, _, size, took), cpu, grew, peak = c.measured(
                    lambda: c.http("/api/v1/experiments", token=admin))
                polls.append((code, size, took, cpu, peak))
            print(f"  dashboard queue poll (GET /api/v1/experiments) x {a.polls}: "
                  f"status {sorted({p[0] for p in polls})}, "
                  f"{max(p[1] for p in polls) / 1048576:.2f} MiB a poll, "
                  f"{max(p[2] for p in polls):.2f} s at most, coordinator CPU "
                  f"{sum(p[3] for p in polls) / len(polls):.2f} s a poll, "
                  f"peak {max(p[4] for p in polls):.0f} MiB")

            # Another user's read of one experiment while 4 dashboards poll.
            done, slowest = threading.Event(), [0.0]

            def poll():
                while not done.is_set():
                    c.http("/api/v1/experiments", token=admin)

            pollers = [threading.Thread(target=poll) for _ in range(4)]
            for t in pollers:
                t.start()
            for _ in range(a.polls):
                code, _, _, took = c.http("/api/v1/experiments/1", token=user)
                slowest[0] = max(slowest[0], took)
            done.set()
            for t in pollers:
                t.join()
            print(f"  the user's GET /api/v1/experiments/1 while 4 dashboards poll: "
                  f"{slowest[0]:.2f} s at most of {a.polls}")


            grids = [("d_model 768, 12 layers, 16 heads, 3 seeds: 95,472 trials", GRID),
                     ("d_model 768, 12 layers, 12 heads, 1 seed: 12,376 trials",
                      GRID.replace("base_heads: 16", "base_heads: 12")
                      .replace("[1, 2, 3]", "[1]"))]
            for title, text in grids:
                spec = os.path.join(tmp, "grid.textproto")
                with open(spec, "w") as f:
                    f.write(text)
                print(f"\ngrids: {a.grids} x ({title}), as the same user")
                t0, accepted = time.time(), 0
                for i in range(a.grids):
                    (r, took), cpu, grew, peak = c.measured(
                        lambda: c.cli("submit", spec, token=user))
                    accepted += r.returncode == 0
                    if i < 2 or i == a.grids - 1:
                        print(f"  {i + 1}: exit {r.returncode} in {took:.2f} s, "
                              f"coordinator CPU {cpu:.2f} s, RSS {grew:+.1f} MiB  "
                              f"{first_line(r)}")
                n, spec_bytes, largest, trials = c.stored()
                size = sum(os.path.getsize(c.db + x) for x in ("", "-wal")
                           if os.path.exists(c.db + x))
                print(f"  {accepted} of {a.grids} accepted in {time.time() - t0:.1f} s; "
                      f"{trials} trials stored in all; database and WAL "
                      f"{size / 1048576:.0f} MiB")

            print("\nwithout a token:")
            code, _, _, _ = c.http("/api/v1/logout", method="POST",
                                   headers={"Origin": "http://evil.example"})
            print(f"  POST /api/v1/logout from Origin http://evil.example: {code}")
            code, headers, _, _ = c.http("/")
            for h in ("Content-Security-Policy", "X-Frame-Options",
                      "X-Content-Type-Options"):
                print(f"  GET / {h}: {headers.get(h) or '(none)'}")
            with grpc.insecure_channel(c.addresses["grpc"]) as ch:
                submit = ch.unary_unary("/prism.v1.ExperimentService/Submit")
                try:
                    submit(nested_groups(200), timeout=30,
                           metadata=[("authorization", f"Bearer {admin}")])
                    print("  Submit of groups nested 200 deep: OK")
                except grpc.RpcError as e:
                    print(f"  Submit of groups nested 200 deep: {e.code().name} "
                          f"'{e.details()}'")
            for name in sorted(os.listdir(tmp)):
                path = os.path.join(tmp, name)
                if name.startswith(("prism.db", "admin.token")):
                    print(f"  {name}: {stat.filemode(os.stat(path).st_mode)}")
        finally:
            c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
