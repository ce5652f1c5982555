# Top-level wrapper around CMake.  The README's two commands are
#   make demo    install what is missing, build, run kscope on the bundled example
#   make check   install what is missing, build, run the whole test suite
#
# make check builds twice: build/ with gcc and -Werror (the release
# configuration), and build-san/ with clang, AddressSanitizer,
# UndefinedBehaviorSanitizer and the libFuzzer targets.  The suite runs in both.

JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
BUILD      ?= build
BUILD_SAN  ?= build-san
BUILD_DEB  ?= build-deb
CMAKE_ARGS ?=
# Seconds each fuzz target runs in make check (at most 60).
FUZZ_SECONDS ?= 30
# make install: where to (docs/install.md lists every file); DESTDIR=DIR
# stages the files under DIR, as packagers do.
PREFIX     ?= /usr/local

.PHONY: all deps build build-san check check-release check-san demo install deb clean

all: build

deps:
	@scripts/install-deps.sh

# A tree counts as configured once CMake has generated its Makefile (a
# configure that failed leaves CMakeCache.txt but no Makefile, and is run
# again).
$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc \
	      -DKSCOPE_WERROR=ON $(CMAKE_ARGS)

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD_SAN)/Makefile:
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang \
	      -DKSCOPE_WERROR=ON -DKSCOPE_SANITIZE=ON -DKSCOPE_FUZZ=ON \
	      -DKSCOPE_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_ARGS)

build-san: $(BUILD_SAN)/Makefile
	cmake --build $(BUILD_SAN) -j $(JOBS)

check-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

check-san: build-san
	cd $(BUILD_SAN) && ctest --output-on-failure -j $(JOBS)

check: deps
	@$(MAKE) --no-print-directory check-release
	@$(MAKE) --no-print-directory check-san

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix $(PREFIX)

# The Debian package, $(BUILD_DEB)/package/deb/kscope_<version>_<arch>.deb,
# from a build of its own (scripts/make-deb.sh says how it differs).
deb:
	@scripts/make-deb.sh $(BUILD_DEB)

demo: deps
	@$(MAKE) --no-print-directory build
	@scripts/demo.sh $(BUILD)/kscope

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_DEB)
