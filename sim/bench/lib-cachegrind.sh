# Sourced by the scripts that count under valgrind's cachegrind (model-ratio.sh,
# clients-instructions.sh), with M set to the mcpsim binary: the checks they share and the
# reading of cachegrind's summary.

# Exits with a one-line error unless valgrind and the binary are there. $1: the calling script.
cachegrind_ready() {
  command -v valgrind >/dev/null 2>&1 || { echo "$1: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  [ -x "$M" ] || { echo "$1: no binary at $M (cargo build --release -p mcpsim)" >&2; exit 2; }
}

# One counter from cachegrind's summary on stderr: the figure after "NAME:", without commas.
# $1: the summary file, $2: the counter's name (a sed pattern).
count() { sed -n "s/.*$2: *\([0-9,]*\).*/\1/p" "$1" | head -n 1 | tr -d ,; }
