"""What the Python client's tests share (prism_client_test.py,
prism_client_steer_test.py): their command line, the import of prism_client
as a user's PYTHONPATH would find it, the replay fixture's recorded curves,
and Cluster, the coordinators and workers a test starts on loopback and
stops at the end, pass or fail.
"""

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

kSkip = 77
kStartSeconds = 30


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prism", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--stubs", required=True)
    args, rest = parser.parse_known_args()
    args.prism = os.path.abspath(args.prism)
    args.source = pathlib.Path(args.source).resolve()
    return args, rest


def import_client(args):
    """Imports prism_client the way a user's PYTHONPATH would; exits 77 when
    a module deploy/setup.sh installs is missing."""
    for module, package in [("grpc", "python3-grpcio"),
                            ("google.protobuf", "python3-protobuf"),
                            ("pandas", "python3-pandas"),
                            ("matplotlib", "python3-matplotlib"),
                            ("tqdm", "python3-tqdm")]:
        try:
            __import__(module)
        except ImportError:
            print(f"SKIPPED: Python module {module} is missing "
                  f"(deploy/setup.sh installs {package})")
            sys.exit(kSkip)
    if not (pathlib.Path(args.stubs) / "prism/v1/prism_pb2_grpc.py").is_file():
        print(f"FAIL: no generated stubs in {args.stubs}: build the "
              "prism_python_stubs target (part of `all`)")
        sys.exit(1)
    sys.path.insert(0, args.stubs)
    sys.path.insert(0, str(args.source / "clients/python"))
    import prism_client
    return prism_client


def read_fixture_val_curves(path):
    """{(schedule, seed): {step: val loss}} from a replay fixture's text
    (worker/replay_launcher.h): the independent record the client's curves
    must reproduce."""
    curves = {}
    current = None
    for line in pathlib.Path(path).read_text().splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "trial":
            current = curves.setdefault((fields[1], int(fields[2])), {})
        elif fields[0] == "v":
            current[int(fields[1])] = float(fields[2])
    return curves


class Cluster:
    """The processes the test starts, their logs, and their teardown."""

    def __init__(self, prism):
        self.prism = prism
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="prism-python-"))
        self.children = []

    def start(self, name, argv):
        log = open(self.tmp / f"{name}.log", "ab")
        # Under setpriv the child gets SIGTERM if this test dies (ctest's
        # timeout), so no coordinator or worker outlives it.
        prefix = (["/usr/bin/setpriv", "--pdeathsig", "SIGTERM", "--"]
                  if os.path.exists("/usr/bin/setpriv") else [])
        child = subprocess.Popen(prefix + [self.prism] + argv, cwd=self.tmp,
                                 stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        log.close()
        self.children.append((name, child))
        return child

    def check_alive(self, what):
        for name, child in self.children:
            if child.poll() is not None:
                raise RuntimeError(f"{name} exited ({child.returncode}) "
                                   f"while waiting for {what}\n"
                                   f"{self.logs()}")

    def wait_for(self, what, seconds, probe):
        """Returns probe()'s first truthy value; probes the signal (a file,
        a state) every 50 ms and fails once `seconds` pass or a child
        exits."""
        deadline = time.monotonic() + seconds
        while True:
            self.check_alive(what)
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {seconds} s waiting for "
                                   f"{what}\n{self.logs()}")
            time.sleep(0.05)

    def start_coordinator(self, name, extra=()):
        """Returns (gRPC address, admin token file) once it serves."""
        ready = self.tmp / f"{name}.ready.json"
        token_file = self.tmp / f"{name}.admin.token"
        self.start(name, ["coordinator", "--db", str(self.tmp / f"{name}.db"),
                          "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
                          "--ready-file", str(ready), "--admin-token-file",
                          str(token_file), *extra])
        endpoints = self.wait_for(f"{name}'s ready file", kStartSeconds,
                                  lambda: ready.exists() and
                                  json.loads(ready.read_text()))
        return endpoints["grpc"], str(token_file)

    def run_prism(self, argv):
        return subprocess.run([self.prism] + argv, cwd=self.tmp, check=True,
                              capture_output=True, text=True,
                              timeout=kStartSeconds).stdout

    def logs(self):
        out = []
        for name, _ in self.children:
            text = (self.tmp / f"{name}.log").read_text(errors="replace")
            out.append(f"--- {name}.log (last lines)\n" +
                       "\n".join(text.splitlines()[-20:]))
        return "\n".join(out)

    def stop(self):
        if hasattr(self, "client"):
            self.client.close()
        for _, child in reversed(self.children):
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for _, child in reversed(self.children):
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextlib.contextmanager
def environment(**values):
    """Sets (a str) or unsets (None) environment variables for a block."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


kNoClientEnv = dict(PRISM_COORDINATOR=None, PRISM_TOKEN=None,
                    PRISM_TOKEN_FILE=None, PRISM_TLS_CA=None,
                    PRISM_TLS_CERT=None, PRISM_TLS_KEY=None)

