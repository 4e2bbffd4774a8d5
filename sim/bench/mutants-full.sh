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
#   sim/bench/mutants-full.sh --list                           # extra arguments go to cargo mutants
set -eu
command -v cargo-mutants >/dev/null || { echo "needs cargo-mutants: cargo install cargo-mutants --locked" >&2; exit 2; }
cd "$(dirname "$0")/../.."
WORK=${MUTANTS_WORK:-/tmp/mcpsim-mutants-full}
GLOB=${MUTANTS_FILE:-model/src/**/*.rs}
mkdir -p "$WORK"
# --no-config: .cargo/mutants.toml limits the benchmark to the reference behaviour's files, and a
# config's file list is added to the command line's, so it would not narrow MUTANTS_FILE either.
status=0
cargo mutants --no-config --package mcpsim-model --test-package mcpsim-model --file "$GLOB" \
  --jobs "${MUTANTS_JOBS:-1}" --output "$WORK" "$@" || status=$?
out="$WORK/mutants.out"
if [ -f "$out/outcomes.json" ]; then
  for k in caught missed timeout unviable; do
    printf '%s %s  ' "$k" "$(wc -l < "$out/$k.txt" 2>/dev/null || echo 0)"
  done
  echo "(survivors: $out/missed.txt)"
fi
# cargo-mutants exits 2 when some mutant was missed, 3 on a timeout: results, not failures here.
case $status in 0|2|3) exit 0 ;; *) exit "$status" ;; esac
