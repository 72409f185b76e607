#!/usr/bin/env python3
"""deploy/k8s checked against the binary, so the manifests cannot drift.

Renders deploy/k8s with `kubectl kustomize` (Debian's kubernetes-client, or
any kubectl on PATH) and checks every container of every workload:
  - args: `coordinator` or `worker`, then only flags that `prism <command>
    --help` lists; env: PRISM_* variables that help names, secrets by
    secretKeyRef to secrets the README tells operators to create;
  - ports: every --listen/--http port is a named containerPort, every
    containerPort is one of them, Services target ports that exist;
  - probes: on declared ports; an httpGet path answers 200 from a real
    coordinator started here (with TLS, from deploy/tls/make-certs.sh's
    certificates, for an HTTPS probe);
  - GPUs: --device cuda[:N] exactly when nvidia.com/gpu is requested;
  - images: built by deploy/k8s/Dockerfile{,.cuda}, whose ENTRYPOINT is
    prism, whose user is the pod's runAsUser, and which install the
    dashboard where --web-root points;
  - volumes: every mount names a volume, every claim a rendered PVC, every
    file the process writes lies on a writable mount, every secret volume
    and every TLS file flag (--tls-cert, --tls-key, --tls-ca) names a
    secret and key that deploy/README.md creates;
  - hardening: non-root, allowPrivilegeEscalation false, all capabilities
    dropped, read-only root filesystem, seccomp RuntimeDefault, a
    NetworkPolicy that selects the pods and opens the ports they use, and a
    worker grace period no shorter than the Slurm script's TERM lead time.
Exits 0 when all hold, 1 naming each failure, 77 (skip) without kubectl or
PyYAML.
"""

import argparse
import json
import os
import posixpath
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prism_help  # noqa: E402

SKIP = 77
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
# The images the manifests name, by tag: the Dockerfile that builds each.
DOCKERFILES = {"cpu": "Dockerfile", "cuda": "Dockerfile.cuda"}
# Environment a container may set that is not the binary's own.
OTHER_ENV = {"TMPDIR"}


class Checker:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
        return ok


def render(k8s_dir):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None, ("kubectl not found: install Debian's kubernetes-client "
                      "(deploy/setup.sh does)")
    out = subprocess.run([kubectl, "kustomize", k8s_dir], capture_output=True,
                         text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: kubectl kustomize {k8s_dir}: {out.stderr}")
    return out.stdout, None


def under(path, mount):
    path, mount = posixpath.normpath(path), posixpath.normpath(mount)
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def secret_keys(readme, name):
    """The keys of secret `name` as deploy/README.md's `kubectl create
    secret` commands make it (None when it makes no such secret)."""
    keys = None
    for chunk in readme.split("kubectl")[1:]:
        lines = chunk.splitlines()
        command = lines[0]
        for line in lines[1:]:
            if not command.endswith("\\"):
                break
            command = command[:-1] + line
        match = re.match(r"\s+(?:-n \S+ )?create secret (tls|generic) (\S+)",
                         command)
        if match is None or match.group(2) != name:
            continue
        keys = keys or set()
        if match.group(1) == "tls":
            keys |= {"tls.crt", "tls.key"}
        keys |= set(re.findall(r"--from-(?:literal|file)=([^=\s]+)=",
                               command))
    return keys


def start_coordinator(prism, deploy, tmp, tls):
    """A coordinator on loopback, with TLS certificates from make-certs.sh
    when `tls`; returns (process, http address, CA file or None)."""
    ready = os.path.join(tmp, "ready.json")
    log = open(os.path.join(tmp, "coordinator.log"), "w")
    args = [prism, "coordinator", "--db", os.path.join(tmp, "prism.db"),
            "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
            "--admin-token-file", os.path.join(tmp, "admin.token"),
            "--ready-file", ready]
    ca = None
    if tls:
        certs = os.path.join(tmp, "tls")
        subprocess.run([os.path.join(deploy, "tls", "make-certs.sh"), certs],
                       check=True, capture_output=True, timeout=60)
        args += ["--tls-cert", os.path.join(certs, "server.pem"),
                 "--tls-key", os.path.join(certs, "server.key")]
        ca = os.path.join(certs, "ca.pem")
    proc = subprocess.Popen(args, stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("FAIL: coordinator did not start: " +
                             open(os.path.join(tmp, "coordinator.log")).read())
        time.sleep(0.05)  # polling the ready file, not a synchronisation
    while True:
        try:
            endpoints = json.load(open(ready))
            return proc, endpoints["http"], ca
        except (ValueError, KeyError):
            time.sleep(0.05)  # the file is being written


def slurm_term_lead(sbatch):
    """The seconds of warning `#SBATCH --signal=TERM@N` gives."""
    match = re.search(r"^#SBATCH --signal=(?:B:)?TERM@(\d+)", sbatch, re.M)
    return int(match.group(1)) if match else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--prism", required=True)
    parser.add_argument("--deploy", required=True, help="the deploy/ dir")
    a = parser.parse_args()
    try:
        import yaml
    except ImportError:
        print("SKIP: PyYAML missing: install Debian's python3-yaml "
              "(deploy/setup.sh does)")
        return SKIP
    text, why = render(os.path.join(a.deploy, "k8s"))
    if text is None:
        print(f"SKIP: {why}")
        return SKIP
    docs = [d for d in yaml.safe_load_all(text) if d]
    readme = open(os.path.join(a.deploy, "README.md")).read()
    term_lead = slurm_term_lead(
        open(os.path.join(a.deploy, "slurm", "prism-workers.sbatch")).read())

    commands = {name: prism_help.Command(a.prism, name)
                for name in ("coordinator", "worker")}
    c = Checker()
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    pvcs = {d["metadata"]["name"] for d in by_kind.get(
        "PersistentVolumeClaim", [])}
    policies = by_kind.get("NetworkPolicy", [])
    c.check(all(d["metadata"].get("namespace") == "prism" for d in docs),
            "every rendered object is in namespace prism")
    http_probes = []  # (where, path)
    pod_ports = {}  # app label -> {port name: number}

    for w in (d for d in docs if d["kind"] in WORKLOADS):
        name = f'{w["kind"]}/{w["metadata"]["name"]}'
        spec = w["spec"]["template"]["spec"]
        labels = w["spec"]["template"]["metadata"].get("labels", {})
        selector = w["spec"]["selector"]["matchLabels"]
        c.check(all(labels.get(k) == v for k, v in selector.items()),
                f"{name}: selector {selector} does not match its pods")
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for t in w["spec"].get("volumeClaimTemplates", []):
            volumes[t["metadata"]["name"]] = {"persistentVolumeClaim": {}}
        for v in volumes.values():
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim is not None:
                c.check(claim in pvcs, f"{name}: claim {claim} is not rendered")
        psc = spec.get("securityContext", {})
        c.check(psc.get("runAsNonRoot") is True,
                f"{name}: pod securityContext.runAsNonRoot is not true")
        c.check(psc.get("runAsUser", 0) != 0, f"{name}: runs as uid 0")
        grace = spec.get("terminationGracePeriodSeconds", 30)

        for ct in spec["containers"]:
            where = f"{name} container {ct['name']}"
            # The image it names is built by one of our Dockerfiles, whose
            # entrypoint is prism and whose user is the pod's.
            tag = ct.get("image", "").rpartition(":")[2]
            dockerfile = DOCKERFILES.get(tag)
            if c.check(dockerfile is not None, f"{where}: image "
                       f"{ct.get('image')} is not one of {DOCKERFILES}"):
                docker = open(os.path.join(a.deploy, "k8s", dockerfile)).read()
                c.check(re.search(r'^ENTRYPOINT \["[^"]*/prism"\]', docker,
                                  re.M) is not None,
                        f"{where}: {dockerfile}'s ENTRYPOINT is not prism")
                uid = re.search(r"useradd .*--uid (\d+)", docker)
                c.check(uid is not None and
                        int(uid.group(1)) == psc.get("runAsUser"),
                        f"{where}: runAsUser {psc.get('runAsUser')} is not "
                        f"the user {dockerfile} creates")
            args = ct.get("args", [])
            if not c.check(args and args[0] in commands,
                           f"{where}: args must start with coordinator or "
                           f"worker, got {args[:1]}"):
                continue
            command = commands[args[0]]
            flags, errors = prism_help.parse_args(args[1:], command)
            for e in errors:
                c.check(False, f"{where}: {e}")
            if dockerfile is not None and flags.get("--web-root"):
                c.check(flags["--web-root"] in docker, f"{where}: "
                        f"--web-root {flags['--web-root']} is not where "
                        f"{dockerfile} installs the dashboard")
            # Hardening.
            sc = ct.get("securityContext", {})
            c.check(sc.get("allowPrivilegeEscalation") is False,
                    f"{where}: allowPrivilegeEscalation is not false")
            c.check(sc.get("readOnlyRootFilesystem") is True,
                    f"{where}: readOnlyRootFilesystem is not true")
            c.check("ALL" in sc.get("capabilities", {}).get("drop", []),
                    f"{where}: capabilities.drop lacks ALL")
            c.check(sc.get("privileged") is not True, f"{where}: privileged")
            seccomp = sc.get("seccompProfile", psc.get("seccompProfile", {}))
            c.check(seccomp.get("type") == "RuntimeDefault",
                    f"{where}: seccompProfile is not RuntimeDefault")
            # Environment and secrets.
            env = {}
            for e in ct.get("env", []):
                env[e["name"]] = e.get("value")
                known = e["name"] in command.env or e["name"] in OTHER_ENV
                c.check(known, f"{where}: env {e['name']} is neither named by "
                        f"`prism {command.name} --help` nor in {OTHER_ENV}")
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref is not None:
                    create = (f"create secret generic {ref['name']}")
                    literal = f"--from-literal={ref['key']}="
                    documented = any(
                        create in chunk and literal in chunk
                        for chunk in readme.split("kubectl")[1:])
                    c.check(documented,
                            f"{where}: secret {ref['name']} key {ref['key']} "
                            "is not created in deploy/README.md")
            # Mounts: every one names a volume; what the process writes is
            # on a writable one (the root filesystem is read-only).
            mounts = ct.get("volumeMounts", [])
            for m in mounts:
                c.check(m["name"] in volumes,
                        f"{where}: mount {m['name']} names no volume")
            writable = [m["mountPath"] for m in mounts
                        if not m.get("readOnly")]
            for flag, value in flags.items():
                if flag in prism_help.WRITTEN_FILES and value:
                    c.check(any(under(posixpath.dirname(value), p)
                                for p in writable),
                            f"{where}: {flag}={value} is not on a writable "
                            "mount")
                if flag in prism_help.WRITTEN_DIRS and value:
                    c.check(any(under(value, p) for p in writable),
                            f"{where}: {flag}={value} is not on a writable "
                            "mount")
            for v in volumes.values():
                secret = v.get("secret", {}).get("secretName")
                if secret is not None:
                    c.check(secret_keys(readme, secret) is not None,
                            f"{where}: secret {secret} is not created in "
                            "deploy/README.md")
            for flag, value in flags.items():
                if flag not in prism_help.TLS_FILES or not value:
                    continue
                mount = next((m for m in mounts
                              if under(value, m["mountPath"])), None)
                if not c.check(mount is not None,
                               f"{where}: {flag}={value} is on no mount"):
                    continue
                secret = volumes.get(mount["name"], {}).get(
                    "secret", {}).get("secretName")
                key = posixpath.relpath(value, mount["mountPath"])
                c.check(secret is not None and
                        key in (secret_keys(readme, secret) or ()),
                        f"{where}: {flag}={value} is not key {key} of a "
                        "secret deploy/README.md creates")
            for var in ("TMPDIR", "PRISM_DATA_DIR"):
                if env.get(var):
                    c.check(any(under(env[var], p) for p in writable),
                            f"{where}: {var}={env[var]} is not on a writable "
                            "mount")
            c.check(any(under("/tmp", p) for p in writable),
                    f"{where}: no writable /tmp under a read-only root")
            # Ports: exactly those the flags listen on.
            ports = {p.get("name"): p["containerPort"]
                     for p in ct.get("ports", [])}
            listens = {}
            if command.name == "coordinator":
                listens = {"grpc": prism_help.port_of(
                               flags.get("--listen", "0.0.0.0:50051")),
                           "http": prism_help.port_of(flags.get("--http"))}
                listens = {k: v for k, v in listens.items() if v is not None}
            c.check(ports == listens,
                    f"{where}: containerPorts {ports} are not the ports its "
                    f"flags listen on {listens}")
            pod_ports.setdefault(labels.get("app"), {}).update(ports)
            if command.name == "coordinator":
                c.check("readinessProbe" in ct,
                        f"{where}: the coordinator has no readinessProbe")
            for probe_name in ("readinessProbe", "livenessProbe",
                               "startupProbe"):
                probe = ct.get(probe_name)
                if probe is None:
                    continue
                handler = probe.get("tcpSocket") or probe.get("httpGet")
                if not c.check(handler is not None,
                               f"{where}: {probe_name} is neither tcpSocket "
                               "nor httpGet"):
                    continue
                port = handler["port"]
                c.check(port in ports or port in ports.values(),
                        f"{where}: {probe_name} port {port} is not declared")
                if "httpGet" in probe:
                    c.check(ports.get(port, port) == listens.get("http"),
                            f"{where}: {probe_name} is not on the --http port")
                    scheme = handler.get("scheme", "HTTP")
                    c.check((scheme == "HTTPS") == ("--tls-cert" in flags),
                            f"{where}: {probe_name} scheme {scheme} is not "
                            "what its TLS flags serve")
                    http_probes.append((f"{where} {probe_name}",
                                        handler.get("path", "/"), scheme))
                # Readiness reflects storage (/readyz), liveness never does:
                # a restart frees no disk space.
                if command.name == "coordinator":
                    path = handler.get("path", "/")
                    if probe_name == "readinessProbe":
                        c.check(path == "/readyz",
                                f"{where}: readinessProbe is {path}, not "
                                "/readyz (storage faults would go unseen)")
                    else:
                        c.check(path != "/readyz",
                                f"{where}: {probe_name} is /readyz: a full "
                                "disk would restart the pod")
            # GPUs: a cuda device exactly when the pod holds GPUs.
            limits = ct.get("resources", {}).get("limits", {})
            gpus = int(limits.get("nvidia.com/gpu", 0))
            device = flags.get("--device", "auto")
            if device.startswith("cuda"):
                index = int(device.split(":")[1]) if ":" in device else 0
                c.check(index < gpus, f"{where}: --device={device} but "
                        f"nvidia.com/gpu is {gpus}")
            else:
                c.check(gpus == 0, f"{where}: holds {gpus} GPU(s) but "
                        f"--device={device}")
            threads = flags.get("--threads")
            cpu = ct.get("resources", {}).get("requests", {}).get("cpu")
            if threads and cpu:
                c.check(int(threads) <= float(cpu), f"{where}: --threads "
                        f"{threads} above its cpu request {cpu}")
            if command.name == "worker":
                c.check("--checkpoint-dir" in flags,
                        f"{where}: no --checkpoint-dir on a shared volume")
                c.check(term_lead is not None and grace >= term_lead,
                        f"{where}: terminationGracePeriodSeconds {grace} is "
                        f"shorter than the Slurm script's TERM@{term_lead}")
        # A NetworkPolicy selects these pods.
        selected = [p for p in policies if all(
            labels.get(k) == v for k, v in
            p["spec"]["podSelector"].get("matchLabels", {}).items())]
        c.check(selected, f"{name}: no NetworkPolicy selects its pods")

    # Services: select pods that exist, target ports they declare.
    for s in by_kind.get("Service", []):
        app = s["spec"]["selector"].get("app")
        ports = pod_ports.get(app)
        if not c.check(ports is not None,
                       f"Service/{s['metadata']['name']} selects no pods"):
            continue
        for p in s["spec"]["ports"]:
            target = p.get("targetPort", p["port"])
            c.check(target in ports or target in ports.values(),
                    f"Service/{s['metadata']['name']} targets port {target} "
                    "its pods do not declare")
    # NetworkPolicies open the coordinator's ports and let workers reach it.
    coordinator_ports = set(pod_ports.get("prism-coordinator", {}).values())
    for p in policies:
        app = p["spec"]["podSelector"].get("matchLabels", {}).get("app")
        rules = p["spec"].get("ingress" if app == "prism-coordinator"
                              else "egress", [])
        opened = {q["port"] for r in rules for q in r.get("ports", [])}
        if app == "prism-coordinator":
            c.check(coordinator_ports <= opened, f"NetworkPolicy "
                    f"{p['metadata']['name']} opens {opened}, not all of "
                    f"{coordinator_ports}")
        elif app == "prism-worker":
            grpc = pod_ports.get("prism-coordinator", {}).get("grpc")
            c.check(grpc in opened, f"NetworkPolicy {p['metadata']['name']}:"
                    f" workers cannot reach the coordinator's gRPC {grpc}")

    # httpGet probes answer on a real coordinator.
    for scheme in sorted({s for _, _, s in http_probes}):
        with tempfile.TemporaryDirectory(prefix="prism_k8s_") as tmp:
            proc, http, ca = start_coordinator(a.prism, a.deploy, tmp,
                                               tls=scheme == "HTTPS")
            context = ssl.create_default_context(cafile=ca) if ca else None
            try:
                for where, path, _ in (p for p in http_probes
                                       if p[2] == scheme):
                    try:
                        code = urllib.request.urlopen(
                            f"{scheme.lower()}://{http}{path}", timeout=10,
                            context=context).status
                    except OSError as e:
                        code = e
                    c.check(code == 200, f"{where}: GET {path} gave {code}")
            finally:
                proc.terminate()
                proc.wait(timeout=30)

    for f in c.failures:
        print(f"FAIL: {f}")
    print(f"k8s manifests: {c.passed} checks passed, {len(c.failures)} failed "
          f"({len(docs)} objects rendered)")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
