#!/usr/bin/env bash
# Builds kscope's Debian package: scripts/make-deb.sh [BUILD_DIR [OUT_DIR]]
#
# Configures BUILD_DIR (default build-deb) as the package wants it -- gcc,
# RelWithDebInfo (stripped when packed), -Werror, the dependencies linked as shared libraries (Debian
# does not embed zlib or bzip2 in an executable), no tests or examples --
# builds it, and runs cpack, which writes kscope_<version>_<arch>.deb into
# OUT_DIR (default BUILD_DIR/package/deb) and prints its path last.
# DEBFULLNAME and DEBEMAIL name the maintainer, as for Debian's own tools.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-deb}
out=${2:-$build/package/deb}
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc \
      -DKSCOPE_WERROR=ON -DKSCOPE_STATIC_DEPS=OFF -DKSCOPE_BUILD_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" -j "$jobs" >/dev/null
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
deb=$(ls -t "$out"/kscope_*.deb | head -n 1)
echo "$deb"
