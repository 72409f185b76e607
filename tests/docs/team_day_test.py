#!/usr/bin/env python3
"""docs/team.md's "A day of a team", run as written: every fenced sh and
python block of that section, in order, against a fresh coordinator on
loopback (the doc's coord:50051 and coord:8080 become its ports), in one
bash session from a directory that holds the repository's bench/ and
examples/. Each command must succeed, except a line whose comment says
`refused`, which must fail; python blocks run as scripts with prism_client
on PYTHONPATH. Then what the day is for is checked in the output: the bill,
the queue's reasons, Bob's pause from the dashboard, Alice's seeds added
without paying twice, both experiments done.

  team_day_test.py --prism build/cli/prism --source . --stubs <stubs dir>
"""

import argparse
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

kStartSeconds = 30
kDaySeconds = 300


def day_blocks(markdown):
    """[(language, text)] of the fenced blocks of "## A day of a team"."""
    start = markdown.index("\n## A day of a team\n")
    end = markdown.find("\n## ", start + 1)
    section = markdown[start:end if end != -1 else len(markdown)]
    return re.findall(r"```(sh|python)\n(.*?)```", section, flags=re.S)


def shell_commands(text):
    """The commands of an sh block, continuation lines joined, comments and
    blank lines dropped; each with whether it must be refused."""
    commands = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        comment = full.split(" # ", 1)[1] if " # " in full else ""
        commands.append((full, "refused" in comment))
    assert not pending, "an sh block ends with a continuation line"
    return commands


def script_for(blocks, workdir):
    """One bash script that runs every command in order and stops at the
    first that does not do what the doc says."""
    lines = ["set -u", "n=0"]
    python = 0
    for language, text in blocks:
        if language == "python":
            python += 1
            path = workdir / f"notebook-{python}.py"
            path.write_text(text)
            commands = [(f"{shlex.quote(sys.executable)} "
                         f"{shlex.quote(str(path))}", False)]
        else:
            commands = shell_commands(text)
        for command, refused in commands:
            quoted = shlex.quote(command)
            lines.append(f"echo \"\\$ \"{quoted}")
            lines.append(command)
            lines.append("rc=$?")
            if refused:
                lines.append("if [ $rc -eq 0 ]; then echo \"DAY FAILED: was not "
                             f"refused: \"{quoted}; exit 1; fi")
            elif command.rstrip().endswith("&"):
                pass  # a background process: its own log says how it went
            else:
                lines.append("if [ $rc -ne 0 ]; then echo \"DAY FAILED: exit "
                             f"$rc: \"{quoted}; exit 1; fi")
    lines.append("echo DAY DONE")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prism", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--stubs", required=True)
    args = parser.parse_args()
    source = pathlib.Path(args.source).resolve()
    prism = pathlib.Path(args.prism).resolve()
    for module in ("grpc", "google.protobuf", "pandas", "tqdm"):
        try:
            __import__(module)
        except ImportError:
            print(f"SKIPPED: Python module {module} is missing "
                  "(deploy/setup.sh installs it)")
            return 77
    for tool in ("curl", "bash"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            print(f"SKIPPED: {tool} is missing (deploy/setup.sh installs it)")
            return 77

    blocks = day_blocks((source / "docs/team.md").read_text())
    assert len(blocks) >= 8, f"the day has {len(blocks)} blocks"
    with tempfile.TemporaryDirectory(prefix="prism-team-day-") as tmp:
        work = pathlib.Path(tmp)
        for name in ("bench", "examples"):
            (work / name).symlink_to(source / name)
        ready = work / "ready.json"
        coordinator = subprocess.Popen(
            [str(prism), "coordinator", "--db", str(work / "team.db"),
             "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--admin-token-file", str(work / "admin.token"),
             "--ready-file", str(ready)],
            cwd=work, stdout=open(work / "coordinator.log", "w"),
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        day = None
        try:
            deadline = time.monotonic() + kStartSeconds
            while not ready.exists():  # the coordinator's ready file
                if coordinator.poll() is not None or time.monotonic() > deadline:
                    print("FAIL: the coordinator did not start:\n" +
                          (work / "coordinator.log").read_text())
                    return 1
                time.sleep(0.05)
            endpoints = json.loads(ready.read_text())
            substituted = [
                (language, text.replace("coord:50051", endpoints["grpc"])
                               .replace("coord:8080", endpoints["http"]))
                for language, text in blocks]
            (work / "day.sh").write_text(script_for(substituted, work))
            env = dict(os.environ)
            env["PATH"] = f"{prism.parent}:{env['PATH']}"
            env["PYTHONPATH"] = os.pathsep.join(
                [str(source / "clients/python"), args.stubs])
            env.pop("PRISM_COORDINATOR", None)
            env.pop("PRISM_TOKEN_FILE", None)
            day = subprocess.Popen(["bash", str(work / "day.sh")], cwd=work,
                                   env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
            out, _ = day.communicate(timeout=kDaySeconds)
            print(out)
            failures = check_day(out, day.returncode)
        finally:
            if day is not None:
                try:  # the day's background workers
                    os.killpg(day.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            coordinator.send_signal(signal.SIGTERM)
            coordinator.wait(timeout=60)
        for f in failures:
            print(f"FAIL: {f}")
        if failures:
            print((work / "coordinator.log").read_text()[-4000:])
            return 1
        print("team day: every command ran as docs/team.md says")
        return 0


def check_day(out, returncode):
    """What the day is for, in its output; [] when all of it holds."""
    failures = []
    if returncode != 0 or "DAY DONE" not in out:
        return [f"the day stopped (exit {returncode})"]
    # What the commands printed, without the commands (their comments say
    # what to expect, so they must not count as the output).
    out = "\n".join(line for line in out.splitlines()
                    if not line.startswith("$ "))
    expect = [
        # The bill before the spend: the 3-seed grid, then the 1-seed one.
        ("plan: 360 trials", "prism plan shows the 3-seed grid's trials"),
        ("plan: 120 trials (alice: d64 grid)", "Python's plan: the 1-seed grid"),
        ("experiment 2 submitted: 360 trials", "Bob's submit"),
        ("no workers", "the queue says why nothing runs"),
        ("may not change experiments of 'alice'",
         "Bob may not pause Alice's experiment"),
        ("experiment 2: paused: `prism resume 2`",
         "the dashboard's pause shows in prism status"),
        ("queued 240 trials", "the seeds added"),
        ("reused 120 finished trials", "nothing paid twice"),
        ("experiment 1 alice: d64 grid: done, 360/360",
         "Alice's experiment done on 3 seeds"),
        ("experiment 2: active", "Bob resumes"),
    ]
    for needle, what in expect:
        if needle not in out:
            failures.append(f"{what}: {needle!r} is not in the output")
    # The results' last line ends with the command Alice pastes next.
    if not re.search(r"next: [^\n]*\n\s*prism seeds add 1 --to 3\n", out):
        failures.append("the next line does not end with prism seeds add 1 "
                        "--to 3")
    return failures


if __name__ == "__main__":
    sys.exit(main())
