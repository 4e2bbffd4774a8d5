#!/bin/sh
# Every cargo-mutants mutant of model/src under the model's unit tests (opt-in, nightly-sized:
# hours on a 2-core machine; not CI). The benchmark's sample (sim/bench/mutants.sh) covers the
# files of .cargo/mutants.toml and also runs the searches; this covers the whole model, tests only.
# Results: $MUTANTS_WORK/mutants.out (cargo-mutants' own: caught.txt, missed.txt, ...) and a
# one-line tally on stdout. Needs cargo-mutants: cargo install cargo-mutants --locked
#
#   sim/bench/mutants-full.sh                                  # all of model/src
#   MUTANTS_FILE=model/src/time.rs sim/bench/mutants-full.sh   # one module (a glob), e.g. to try it
#   MUTANTS_JOBS=2 sim/bench/mutants-full.sh                   # parallel builds (needs the cores)
#   MUTANTS_RESUME=1 sim/bench/mutants-full.sh                 # go on: skip what an earlier run caught
#   MUTANTS_SURVIVORS=1 sim/bench/mutants-full.sh              # only the survivors again (new tests)
#   sim/bench/mutants-full.sh summarize                        # the table of docs/search.md
#   sim/bench/mutants-full.sh --list                           # extra arguments go to cargo mutants
#
# A run is resumable across machines: `summarize` also writes the outcome lists to
# sim/bench/mutants-full/ (committed), and MUTANTS_RESUME=1 seeds $MUTANTS_WORK from them before
# it passes --iterate, so only mutants not yet caught or found unviable are built again.
set -eu
cd "$(dirname "$0")/../.."
WORK=${MUTANTS_WORK:-/tmp/mcpsim-mutants-full}
GLOB=${MUTANTS_FILE:-model/src/**/*.rs}
SAVED=sim/bench/mutants-full
mkdir -p "$WORK"
if [ "${1:-}" = summarize ]; then
  exec python3 sim/bench/mutants_full.py "$WORK/mutants.out" "$SAVED" "$GLOB"
fi
command -v cargo-mutants >/dev/null || { echo "needs cargo-mutants: cargo install cargo-mutants --locked" >&2; exit 2; }
iterate=
if [ "${MUTANTS_RESUME:-0}" = 1 ]; then
  iterate=--iterate
  if [ ! -d "$WORK/mutants.out" ] && [ -d "$SAVED" ]; then
    mkdir -p "$WORK/mutants.out"
    for k in caught missed timeout unviable; do
      [ -f "$SAVED/$k.txt" ] && cp "$SAVED/$k.txt" "$WORK/mutants.out/$k.txt"
    done
  fi
fi
if [ "${MUTANTS_SURVIVORS:-0}" = 1 ]; then
  # Each survivor by its exact name (regex-escaped), on top of what was caught so far.
  iterate=--iterate
  names=$(cat "$SAVED/missed.txt" "$WORK/mutants.out/missed.txt" 2>/dev/null | sort -u |
    python3 -c 'import re,sys; print("\n".join("^" + re.escape(l.rstrip("\n")) + "$" for l in sys.stdin if l.strip()))')
  [ -n "$names" ] || { echo "no survivors listed in $SAVED/missed.txt or $WORK/mutants.out/missed.txt" >&2; exit 0; }
  old_ifs=$IFS
  IFS='
'
  for n in $names; do set -- "$@" --re "$n"; done
  IFS=$old_ifs
fi
# --no-config: .cargo/mutants.toml limits the benchmark to the reference behaviour's files, and a
# config's file list is added to the command line's, so it would not narrow MUTANTS_FILE either.
# --profile mutants: the test profile without debug info (Cargo.toml), for faster links.
# --cargo-arg=--lib: builds and runs only the model's unit tests, one compile of the crate per
# mutant (with the integration test it is three); `summarize` lists the survivors, for a second
# pass over them with the rest of the suite. --shuffle: an interrupted run leaves a uniform sample
# of the whole. --timeout: the unit tests take under a second; a mutant that loops (time
# arithmetic) is a timeout after 10 s instead of the automatic 20.
status=0
# shellcheck disable=SC2086 # $iterate is one flag or nothing
cargo mutants --no-config --package mcpsim-model --test-package mcpsim-model --file "$GLOB" \
  --profile mutants --cargo-arg=--lib --shuffle --timeout "${MUTANTS_TIMEOUT:-10}" $iterate \
  --jobs "${MUTANTS_JOBS:-1}" --output "$WORK" "$@" || status=$?
# The tally, the table and the saved lists (sim/bench/mutants-full/), whatever the run's end.
python3 sim/bench/mutants_full.py "$WORK/mutants.out" "$SAVED" "$GLOB" >"$WORK/summary.md" || true
head -3 "$WORK/summary.md"
# cargo-mutants exits 2 when some mutant was missed, 3 on a timeout: results, not failures here.
case $status in 0|2|3) exit 0 ;; *) exit "$status" ;; esac
