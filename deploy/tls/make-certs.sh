#!/bin/sh
# make-certs.sh DIR [NAME...]: a private CA and the certificates Prism's TLS
# needs, in DIR (deploy/README.md, "TLS"):
#   ca.pem, ca.key            the CA (keep ca.key offline; give out ca.pem)
#   server.pem, server.key    the coordinator's: --tls-cert, --tls-key
#   client.pem, client.key    a worker's, for mutual TLS: --tls-cert, --tls-key
# The server certificate names 127.0.0.1, localhost and every NAME (a host
# name, or an IP address), which is what clients dial. Existing files are
# kept, so a second run with the same DIR reuses the CA. ECDSA P-256 keys,
# valid for DAYS (default 825) days.
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [NAME...]" >&2
  exit 2
fi
dir=$1
shift
days=${DAYS:-825}
mkdir -p "$dir"
cd "$dir"
umask 077

san="IP:127.0.0.1,DNS:localhost"
for name in "$@"; do
  case $name in
    *[!0-9.]*) san="$san,DNS:$name" ;;
    *) san="$san,IP:$name" ;;
  esac
done

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

if [ ! -f ca.pem ]; then
  key ca.key
  openssl req -x509 -new -key ca.key -out ca.pem -days "$days" \
    -subj "/CN=Prism CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
fi

# sign NAME CN EXTENSIONS: NAME.key and NAME.pem, signed by the CA.
sign() {
  [ -f "$1.pem" ] && return 0
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days "$days" -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
sign server "prism-coordinator" "subjectAltName=$san
extendedKeyUsage=serverAuth"
sign client "prism-worker" "extendedKeyUsage=clientAuth"
chmod 644 ca.pem server.pem client.pem
