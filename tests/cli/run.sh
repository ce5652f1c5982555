#!/usr/bin/env bash
# Runs one golden command-line test (tests/cli/NAME.t), in the manner of
# Valgrind's .vgtest files.
#
#   usage: run.sh KSCOPE TESTFILE SRCDIR
#
# A .t file holds "key: value" lines ('#' starts a comment):
#   setup: CMD      shell command run in the scratch directory first (repeatable)
#   env: VAR=VALUE  environment for kscope (repeatable); no other KSCOPE_*
#                   variable reaches it
#   args: ARGS      kscope's arguments, as shell words ($KS_SRC, $KS_WORK usable)
#   exit: N         expected exit status (required)
#   nothing-written: yes   the scratch directory must be unchanged afterwards
#   post: CMD       shell command that must succeed afterwards (repeatable);
#                   $KS_STDOUT and $KS_STDERR name kscope's captured output
# NAME.stdout.exp and NAME.stderr.exp, when present, must equal kscope's
# output after filtering: the scratch directory becomes @WORK@, the source
# tree @SRC@, run-directory timestamps and pids _@TS@.
# kscope runs in a fresh scratch directory, which is removed afterwards.
set -u
KSCOPE=$1 T=$2 SRC=$3
name=$(basename "$T" .t)
tdir=$(dirname "$T")

work=$(mktemp -d /tmp/kscope-cli-work.XXXXXX)
cap=$(mktemp -d /tmp/kscope-cli-out.XXXXXX)
cleanup() { chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work" "$cap"; }
trap cleanup EXIT

# The text after "key:" and any blanks.
value() { local v=${1#*:}; echo "${v#"${v%%[! ]*}"}"; }

setup=() post=() envs=() args="" want_exit="" nothing_written=no
while IFS= read -r line || [[ -n "$line" ]]; do
	case "$line" in
	'#'* | '') ;;
	setup:*) setup+=("$(value "$line")") ;;
	env:*) envs+=("$(value "$line")") ;;
	args:*) args=$(value "$line") ;;
	exit:*) want_exit=$(value "$line") ;;
	nothing-written:*) nothing_written=$(value "$line") ;;
	post:*) post+=("$(value "$line")") ;;
	*) echo "$T: cannot read line: $line" >&2; exit 2 ;;
	esac
done <"$T"
if [[ -z "$want_exit" ]]; then
	echo "$T: no 'exit:' line" >&2
	exit 2
fi
if [[ ! -f "$tdir/$name.stdout.exp" && ! -f "$tdir/$name.stderr.exp" &&
      ${#post[@]} -eq 0 ]]; then
	echo "$T: checks nothing but the exit status; add expected output or post:" >&2
	exit 2
fi

export KS_SRC=$SRC KS_WORK=$work KS_STDOUT=$cap/stdout KS_STDERR=$cap/stderr
export KSCOPE
cd "$work" || exit 2
for s in "${setup[@]}"; do
	if ! bash -c "$s"; then
		echo "$T: setup failed: $s" >&2
		exit 2
	fi
done
snapshot() { find . -printf '%p %m %s %T@\n' | sort; }
before=$(snapshot)

# kscope sees a clean environment: PATH, HOME, LANG=C and the test's env.
eval "set -- $args"
env -i PATH="$PATH" HOME="${HOME:-/root}" LANG=C "${envs[@]}" \
	"$KSCOPE" "$@" >"$cap/stdout" 2>"$cap/stderr"
status=$?

fail=0
if [[ "$status" != "$want_exit" ]]; then
	echo "FAIL: exit status $status, expected $want_exit" >&2
	fail=1
fi
filter() {
	sed -e "s|$work|@WORK@|g" -e "s|$SRC|@SRC@|g" \
	    -e 's/_[0-9]\{8\}_[0-9]\{6\}_[0-9]\+\(\.[0-9]\+\)\?/_@TS@/g' "$1"
}
for stream in stdout stderr; do
	exp="$tdir/$name.$stream.exp"
	[[ -f "$exp" ]] || continue
	if ! diff -u "$exp" <(filter "$cap/$stream") >"$cap/$stream.diff"; then
		echo "FAIL: $stream differs from $exp:" >&2
		cat "$cap/$stream.diff" >&2
		fail=1
	fi
done
if [[ "$nothing_written" == yes && "$(snapshot)" != "$before" ]]; then
	echo "FAIL: the run wrote to its directory:" >&2
	diff <(echo "$before") <(snapshot) >&2
	fail=1
fi
for p in "${post[@]}"; do
	if ! bash -c "$p"; then
		echo "FAIL: post check failed: $p" >&2
		fail=1
	fi
done
if [[ $fail -ne 0 ]]; then
	echo "--- kscope $args" >&2
	echo "--- stdout:" >&2; cat "$cap/stdout" >&2
	echo "--- stderr:" >&2; cat "$cap/stderr" >&2
	exit 1
fi
echo "ok: $name"
