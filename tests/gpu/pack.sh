#!/bin/sh
# Prepares a kscope build for tests/gpu/run.sh on a GPU machine, which
# has no package archive: copies the shared libraries the kscope
# executable needs beyond glibc into BUILD/gpu-deps.  Run it here after
# building; then carry BUILD/kscope, BUILD/lib and BUILD/gpu-deps.
#
#   tests/gpu/pack.sh [BUILD]      (default build-cuda)
set -eu
B=${1:-build-cuda}
test -x "$B/kscope" || { echo "pack.sh: no $B/kscope: build first" >&2; exit 2; }
rm -rf "$B/gpu-deps"
mkdir -p "$B/gpu-deps"
for f in "$B/kscope" "$B"/lib/*.so*; do
	ldd "$f" 2>/dev/null | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
	case $(basename "$lib") in
	libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*) ;;
	*) cp -L "$lib" "$B/gpu-deps/" ;;
	esac
done
du -sh "$B/kscope" "$B/lib" "$B/gpu-deps"
