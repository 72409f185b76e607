#!/usr/bin/env bash
# Installs exactly what Prism Search needs on Debian 12 and is missing; safe to
# run again (it installs nothing the second time). Both README commands run it
# first. Sources: Debian's archive and the npm registry only.
set -euo pipefail

cd "$(dirname "$0")/.."

# Build toolchain and libraries (Debian 12 packages).
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git clang-format
  # clang: `make test` checks the GUARDED_BY annotations with -Wthread-safety.
  clang
  libtorch-dev libopenblas0-pthread
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libabsl-dev libfmt-dev libgtest-dev libgmock-dev
  libcli11-dev libcpp-httplib-dev libssl-dev
  # The openssl CLI: deploy/tls/make-certs.sh, which the TLS tests run too.
  openssl
  fortunes fortunes-min
  nodejs npm chromium
  # Deploy tests (tests/deploy/): a one-node Slurm 22.05 cluster for the
  # batch script, systemd-analyze for the units, PyYAML for the manifests,
  # ip (netns, veth, bridge) for several hosts on one machine.
  slurmctld slurmd slurm-client munge systemd python3-yaml iproute2
  # Optuna 3.1, the reference the search and ingest benchmarks compare with
  # (bench/reference/optuna_*.py, run with Debian's /usr/bin/python3).
  python3-optuna
  # The Python client (clients/python): gRPC and protobuf for its stubs,
  # which protoc and grpc_python_plugin (protobuf-compiler-grpc, above)
  # generate at build time; pandas and matplotlib for its tables and plots;
  # tqdm for wait()'s progress bar.
  python3-grpcio python3-protobuf python3-pandas python3-matplotlib
  python3-tqdm
  # docs/team.md's day of a team sends the dashboard's request with curl
  # (tests/docs/team_day_test.py runs it).
  curl
)
# `kubectl kustomize` renders deploy/k8s: Debian's kubernetes-client, unless
# some kubectl is already on PATH (another vendor's package of it owns
# /usr/bin/kubectl and would conflict).
if ! command -v kubectl >/dev/null; then
  PACKAGES+=(kubernetes-client)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

# nodejs/npm may come from outside Debian (e.g. a NodeSource or nvm install);
# what matters is a working node >= 18 and npm on PATH.
if command -v node >/dev/null && command -v npm >/dev/null; then
  filtered=()
  for pkg in "${missing[@]}"; do
    [[ "$pkg" == nodejs || "$pkg" == npm ]] || filtered+=("$pkg")
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present"
fi

# Debian's LibTorch finds BLAS through the alternatives system: make sure it is
# OpenBLAS (pthread build), not the ~8x slower reference BLAS.
blas_alt=libblas.so.3-$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
if current=$(update-alternatives --query "$blas_alt" 2>/dev/null | awk '/^Value:/{print $2}'); then
  if [[ "$current" != *openblas-pthread* ]]; then
    target=$(update-alternatives --query "$blas_alt" | awk '/^Alternative:/{print $2}' | grep openblas-pthread | head -1)
    if [[ -n "$target" ]]; then
      echo "setup: selecting OpenBLAS ($target)"
      SUDO=""
      if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
      $SUDO update-alternatives --set "$blas_alt" "$target"
    fi
  fi
fi

# Dashboard assets and browser-test driver from npm, pinned by the lockfile.
if [[ -f web/package-lock.json ]]; then
  if [[ ! -d web/node_modules ]] || [[ web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then
    echo "setup: npm ci (web/)"
    (cd web && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
