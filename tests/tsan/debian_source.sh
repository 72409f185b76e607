#!/usr/bin/env bash
# debian_source.sh OUT_DIR SOURCE_PACKAGE VERSION: unpacks Debian's source
# of SOURCE_PACKAGE=VERSION (patches applied) under OUT_DIR/src and prints
# the unpacked directory. Used by build_absl.sh and build_grpc.sh to build
# ThreadSanitizer-instrumented copies of libraries from the very version
# installed.
#
# Needs dpkg-dev (dpkg-source) and network to Debian's archive. Leaves the
# system's apt configuration as it is: the deb-src entries and the package
# lists live in a private apt state under OUT_DIR/apt.
set -euo pipefail

out=$(realpath -m "${1:?usage: debian_source.sh OUT_DIR PACKAGE VERSION}")
package=${2:?usage: debian_source.sh OUT_DIR PACKAGE VERSION}
version=${3:?usage: debian_source.sh OUT_DIR PACKAGE VERSION}
upstream=${version#*:}
upstream=${upstream%-*}
dir="$out/src/$package-$upstream"
if [[ -d "$dir" ]]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$out/apt/parts" "$out/apt/lists/partial" "$out/src"
# The system's Debian entries, as source entries, in a private apt state.
for f in /etc/apt/sources.list.d/*.sources; do
  grep -q 'debian' "$f" || continue
  sed 's/^Types: deb$/Types: deb-src/' "$f" > "$out/apt/parts/$(basename "$f")"
done
apt_opts=(-o "Dir::Etc::SourceList=/dev/null"
          -o "Dir::Etc::SourceParts=$out/apt/parts"
          -o "Dir::State::Lists=$out/apt/lists")
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$out/src" && apt-get "${apt_opts[@]}" -qq source "$package=$version" >&2)
[[ -d "$dir" ]] || { echo "debian_source: $dir was not unpacked" >&2; exit 1; }
echo "$dir"
