#!/usr/bin/env python3
"""deploy/systemd checked: `systemd-analyze verify` and the binary's flags.

For each unit in deploy/systemd (the worker template as instance @0):
  - `systemd-analyze verify` passes on a copy whose ExecStart points at the
    built binary (verify insists the executable exists); it needs no running
    systemd, only the systemd package;
  - ExecStart runs `prism coordinator|worker` with only flags that
    `prism <command> --help` lists;
  - the coordinator reports readiness (Type=notify, NotifyAccess=main, no
    start timeout: it may wait for a full disk);
  - the hardening holds: a dedicated non-root User=, NoNewPrivileges,
    ProtectSystem=strict, PrivateTmp, ProtectHome, an empty
    CapabilityBoundingSet, and every path the process writes (--db,
    --admin-token-file, --checkpoint-dir) is under ReadWritePaths= or the
    StateDirectory=;
  - a worker's TimeoutStopSec is at least the Slurm script's TERM lead time
    (its checkpoint-and-hand-back window);
  - a coordinator listening beyond loopback serves TLS (--tls-cert and
    --tls-key), a key given as a credential (%d/...) is loaded with
    LoadCredential=, and workers verify a CA (--tls-ca).
Exits 0 when all hold, 1 naming each failure, 77 (skip) without
systemd-analyze.
"""

import argparse
import glob
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prism_help  # noqa: E402

SKIP = 77
INSTALLED = "/usr/local/bin/prism"
REQUIRED = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "PrivateTmp": "yes",
    "ProtectHome": "yes",
    "CapabilityBoundingSet": "",
}


def service_section(text):
    """The [Service] directives as {key: [values]}, continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    section, out = None, {}
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def under(path, roots):
    path = posixpath.normpath(path)
    return any(path == r or path.startswith(r.rstrip("/") + "/")
               for r in map(posixpath.normpath, roots))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prism", required=True)
    parser.add_argument("--deploy", required=True, help="the deploy/ dir")
    a = parser.parse_args()
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("SKIP: systemd-analyze not found (Debian's systemd package)")
        return SKIP
    sbatch = open(os.path.join(a.deploy, "slurm",
                               "prism-workers.sbatch")).read()
    match = re.search(r"^#SBATCH --signal=(?:B:)?TERM@(\d+)", sbatch, re.M)
    term_lead = int(match.group(1)) if match else None
    commands = {name: prism_help.Command(a.prism, name)
                for name in ("coordinator", "worker")}
    prism = os.path.abspath(a.prism)
    failures, passed = [], 0

    def check(ok, what):
        nonlocal passed
        if ok:
            passed += 1
        else:
            failures.append(what)

    units = sorted(glob.glob(os.path.join(a.deploy, "systemd", "*.service")))
    check(len(units) >= 2, f"expected the coordinator and worker units in "
          f"{a.deploy}/systemd, found {units}")
    with tempfile.TemporaryDirectory(prefix="prism_systemd_") as tmp:
        for path in units:
            name = os.path.basename(path)
            text = open(path).read()
            check(INSTALLED in text, f"{name}: ExecStart is not {INSTALLED}")
            instance = name.replace("@.service", "@0.service")
            copy = os.path.join(tmp, instance)
            with open(copy, "w") as f:
                f.write(text.replace(INSTALLED, prism))
            out = subprocess.run([analyze, "verify", copy],
                                 capture_output=True, text=True, timeout=120)
            check(out.returncode == 0 and not out.stderr.strip(),
                  f"{name}: systemd-analyze verify exited {out.returncode}: "
                  f"{out.stdout}{out.stderr}")

            service = service_section(text)
            for key, want in REQUIRED.items():
                got = service.get(key, [None])[-1]
                check(got == want, f"{name}: {key}={got}, want {want!r}")
            user = service.get("User", [""])[-1]
            check(user not in ("", "root", "0") or
                  service.get("DynamicUser", ["no"])[-1] == "yes",
                  f"{name}: no dedicated User=")
            exec_start = service.get("ExecStart", [""])[-1]
            argv = shlex.split(exec_start)
            if len(argv) < 2 or argv[1] not in commands:
                check(False, f"{name}: ExecStart does not run prism "
                      f"coordinator|worker: {exec_start}")
                continue
            command = commands[argv[1]]
            flags, errors = prism_help.parse_args(argv[2:], command)
            for e in errors:
                check(False, f"{name}: {e}")
            writable = service.get("ReadWritePaths", [])
            writable = [p for v in writable for p in v.split()]
            writable += ["/var/lib/" + d for v in service.get(
                "StateDirectory", []) for d in v.split()]
            for flag, value in flags.items():
                if not value:
                    continue
                target = None
                if flag in prism_help.WRITTEN_FILES:
                    target = posixpath.dirname(value)
                elif flag in prism_help.WRITTEN_DIRS:
                    target = value
                if target is not None:
                    check(under(target, writable),
                          f"{name}: {flag} {value} is not under "
                          f"ReadWritePaths/StateDirectory {writable}")
            loads = {v.split(":", 1)[0]
                     for v in service.get("LoadCredential", [])}
            for flag, value in flags.items():
                if flag in prism_help.TLS_FILES and value and \
                        value.startswith("%d/"):
                    check(value[3:] in loads, f"{name}: {flag} {value} is "
                          "not loaded with LoadCredential=")
            if command.name == "coordinator":
                hosts = [(flags.get(f) or "127.0.0.1:0").rsplit(":", 1)[0]
                         for f in ("--listen", "--http")]
                public = any(not h.startswith("127.") and h != "localhost"
                             for h in hosts)
                check(not public or ("--tls-cert" in flags and
                                     "--tls-key" in flags),
                      f"{name}: listens on {hosts} without --tls-cert and "
                      "--tls-key")
                # Readiness: the coordinator speaks sd_notify (READY=1 once
                # it serves, STATUS= with /readyz's text), and a start that
                # waits for a full disk must not be killed by a timeout.
                for key, want in (("Type", "notify"), ("NotifyAccess", "main"),
                                  ("TimeoutStartSec", "infinity")):
                    got = service.get(key, [None])[-1]
                    check(got == want, f"{name}: {key}={got}, want {want!r} "
                          "(the coordinator's readiness)")
            if command.name == "worker":
                check("--tls-ca" in flags, f"{name}: the worker does not "
                      "verify the coordinator (--tls-ca)")
                stop = service.get("TimeoutStopSec", ["90"])[-1]
                check(stop.isdigit() and term_lead is not None and
                      int(stop) >= term_lead,
                      f"{name}: TimeoutStopSec={stop} is shorter than the "
                      f"Slurm script's TERM@{term_lead}")

    for f in failures:
        print(f"FAIL: {f}")
    print(f"systemd units: {passed} checks passed, {len(failures)} failed "
          f"({len(units)} units)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
