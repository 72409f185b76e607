"""What the built `prism` binary accepts, read off its --help, for the tests
that check deploy/ against it (k8s_manifests_test.py, systemd_units_test.py).
"""

import re
import subprocess

_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_ENV = re.compile(r"\bPRISM_[A-Z0-9_]+\b")

# Flags whose value is a file the process writes (its directory must be
# writable where it runs), and flags naming a file it only reads.
WRITTEN_FILES = {"--db", "--admin-token-file", "--ready-file"}
WRITTEN_DIRS = {"--checkpoint-dir"}
READ_FILES = {"--token-file", "--web-root"}
# Flags naming a TLS file (PEM), which a pod reads from a mounted secret.
TLS_FILES = {"--tls-cert", "--tls-key", "--tls-ca", "--tls-client-ca"}


class Command:
    """One subcommand's --help: its flags and the PRISM_* variables it names."""

    def __init__(self, prism, name):
        self.name = name
        out = subprocess.run([prism, name, "--help"], check=True,
                             capture_output=True, text=True, timeout=60)
        self.text = out.stdout + out.stderr
        self.flags = set(_FLAG.findall(self.text))
        self.env = set(_ENV.findall(self.text))
        if not self.flags:
            raise RuntimeError(f"`prism {name} --help` lists no flags")


def parse_args(args, command):
    """Splits a command line after the subcommand into {flag: value}.

    Returns (flags, errors): a flag the binary does not know, a positional
    argument or a flag given twice is an error naming it.
    """
    flags, errors = {}, []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            errors.append(f"positional argument {arg!r}: "
                          f"`prism {command.name}` takes none")
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if not eq:
            # A flag without a value is followed by it unless the next
            # argument is another flag (a boolean flag).
            if i + 1 < len(args) and not args[i + 1].startswith("--"):
                value = args[i + 1]
                i += 1
            else:
                value = None
        if name not in command.flags:
            errors.append(f"{name}: `prism {command.name} --help` has no such "
                          "flag")
        if name in flags:
            errors.append(f"{name} given twice")
        flags[name] = value
        i += 1
    return flags, errors


def port_of(address):
    """The port of HOST:PORT, or None."""
    if address is None or ":" not in address:
        return None
    port = address.rsplit(":", 1)[1]
    return int(port) if port.isdigit() else None
