#!/usr/bin/env bash
# Builds kscope's Debian package: scripts/make-deb.sh [BUILD_DIR [OUT_DIR]]
#
# Configures BUILD_DIR (default build-deb) as the package wants it -- gcc,
# RelWithDebInfo (stripped when packed), -Werror, the dependencies linked
# as shared libraries (Debian does not embed zlib or bzip2 in an
# executable), no tests or examples -- builds it, and runs cpack, which writes kscope_<version>_<arch>.deb into
# OUT_DIR (default BUILD_DIR/package/deb) and prints its path last.
# DEBFULLNAME and DEBEMAIL name the maintainer, as for Debian's own tools.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-deb}
out=${2:-$build/package/deb}
jobs=$(nproc 2>/dev/null || echo 2)

mkdir -p "$build"
build=$(cd "$build" && pwd)
log=$build/make-deb.log
: >"$log"
# Each step's output goes to the log; a step that fails shows its end.
step() {
	if ! "$@" >>"$log" 2>&1; then
		tail -n 40 "$log" >&2
		echo "make-deb: failed: $* (the whole output is in $log)" >&2
		exit 1
	fi
}
echo "make-deb: building in $build (output in $log)" >&2
step cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc \
	-DKSCOPE_WERROR=ON -DKSCOPE_STATIC_DEPS=OFF -DKSCOPE_BUILD_TESTS=OFF \
	-DCMAKE_INSTALL_PREFIX=/usr
step cmake --build "$build" -j "$jobs"
mkdir -p "$out"
out=$(cd "$out" && pwd)
# (cpack warns that the preloaded runtimes have no soname: they are
# private to kscope, loaded by path, and rightly not in the shlibs file)
(cd "$build" && step cpack -G DEB -B "$out")
rm -rf "$out/_CPack_Packages"
deb=$(ls -t "$out"/kscope_*.deb | head -n 1)
echo "$deb"
