#!/bin/sh
# Planted-bug benchmark (opt-in, about half an hour on a 2-core machine): cargo-mutants' mutants
# of the reference behaviour (files in .cargo/mutants.toml), each run against the model's unit
# tests, random search, guided search and plain seeds. Results: $MUTANTS_WORK/summary.md
# (default /tmp/mcpsim-mutants); docs/search.md holds the latest.
#
#   MUTANTS_SAMPLE=40 MUTANTS_BUDGET=30 sim/bench/mutants.sh     # sample size, cases per family
#   sim/bench/mutants.sh summarize                               # re-print the last summary
#   MUTANTS_ONLY='decision.rs' sim/bench/mutants.sh              # only mutants matching a regex (sampled)
#   MUTANTS_OFFSET=7 sim/bench/mutants.sh                        # the systematic sample from the 8th mutant
#   MUTANTS_PLANTED=1 MUTANTS_BUDGET=1000 sim/bench/mutants.sh   # the found bugs of sim/bench/planted.json instead
#   MUTANTS_ALL=1 MUTANTS_PAIRS=reference:reference MUTANTS_BUDGET=2000 sim/bench/mutants.sh
#                                                                # a sample of every file of model/src
#   MUTANTS_SPACE=wide sim/bench/mutants.sh                      # searches over the whole space, counting
#                                                                # unexplained violations only (explore's default)
#   MUTANTS_SWARM=1 sim/bench/mutants.sh                         # both searches with --swarm
#   MUTANTS_IGNORE_KNOWN=1 sim/bench/mutants.sh                  # a pair's known bug set aside (--ignore), not its target skipped
set -eu
command -v cargo-mutants >/dev/null || { echo "needs cargo-mutants: cargo install cargo-mutants --locked" >&2; exit 2; }
exec python3 "$(dirname "$0")/mutants.py" "$@"
