#!/usr/bin/env bash
# Installs the Debian packages kscope needs to build, test and run.
#
# Idempotent: it asks dpkg which packages are missing and runs apt-get only
# for those, so a second run on a ready machine costs a fraction of a second
# and touches nothing.  It uses sudo when not run as root.  Nothing is
# fetched from anywhere but the machine's configured Debian archive.
set -euo pipefail

# Build: compilers (gcc is the default, clang builds the sanitizer and fuzz
# configuration), CMake and pkg-config; libc6-dev's libc.a links the
# statically linked test program of the memory tools (tests/memtools/procs);
# libasan8 and libclang-rt-14-dev are gcc's and clang's AddressSanitizer
# runtimes (kscope memcheck's ASan engine is tested with both).
BUILD_PKGS="build-essential libc6-dev cmake pkg-config clang libclang-rt-14-dev libasan8"
# Libraries kscope links (docs/architecture.md says why each): jansson
# (JSON), libunwind (stack walking in the sampler), elfutils' libdw and
# libelf (symbols, lines, inlined frames), SQLite (profile.db), capstone
# (disassembly in kscope op --simulate), zlib (gzip, for kscope report
# --format pprof), expat (kscope memcheck reads Memcheck's XML output as a
# stream, so a file cut short still gives every complete error), nettle
# (SHA-256, the keys of kscope tune's result cache).
LIB_PKGS="libjansson-dev libunwind-dev libdw-dev libelf-dev libsqlite3-dev libcapstone-dev zlib1g-dev libexpat1-dev nettle-dev"
# MPI: Open MPI, for profiling MPI programs and for its tests.
MPI_PKGS="openmpi-bin libopenmpi-dev"
# Valgrind: its tool API (headers, core archives, pkg-config file) builds
# kscope's memcheck/contention/falseshare tool, and it runs that tool.
VG_PKGS="valgrind"
# OpenCL (kscope op): the ICD loader and headers, and PoCL's CPU device,
# which runs OpenCL kernels on this machine's cores.
OCL_PKGS="ocl-icd-opencl-dev opencl-headers pocl-opencl-icd"
# Test tools: cmocka (unit tests), python3 (checks of outputs, with its
# sqlite3 module), protoc (decodes Perfetto traces), procps (pgrep),
# groff-base (renders the generated man pages with warnings on),
# coz-profiler (coz, the reference kscope causal is run beside, with its
# coz.h for the programs annotated for it).
TEST_PKGS="libcmocka-dev python3 protobuf-compiler procps groff-base coz-profiler"
# Packaging: make deb (dpkg-dev's dpkg-shlibdeps finds the Depends, with
# file), lintian, which the package's test runs on it, and man-db (man),
# with which that test reads the installed pages.
PKG_PKGS="dpkg-dev file lintian man-db"
# The viewer (kscope view): civetweb, the embedded HTTP and WebSocket
# server; its browser tests drive Debian's Chromium through its WebDriver
# (chromium-driver, /usr/bin/chromedriver) with Debian's Selenium
# (python3-selenium).
VIEW_PKGS="libcivetweb-dev chromium chromium-driver python3-selenium"
# Benchmarks: perf (the baseline profiler), bc (ratios), time (/usr/bin/time).
BENCH_PKGS="linux-perf bc time"

PKGS="$BUILD_PKGS $LIB_PKGS $MPI_PKGS $VG_PKGS $OCL_PKGS $TEST_PKGS $PKG_PKGS $VIEW_PKGS $BENCH_PKGS"

missing=()
for p in $PKGS; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    if [[ "$status" != "install ok installed" ]]; then
        missing+=("$p")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all ${PKGS// /, } present"
    exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
        exit 1
    fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
