#!/bin/sh
# The `× model` ratio of `mcpsim bench`, counted rather than timed (docs/model.md, "The ratio
# counted"): instructions and cache misses per run of the simulation and of the model alone (the
# madsim-free `Pair` driving the same exchange), under valgrind's cachegrind with its cache
# simulation. Counts are the same for the same binary whatever else the machine does, so this
# ratio does not move with the weather the timed one moves with.
#
# Each side runs R and 2R times under `mcpsim bench --profile` (`--model-alone` for the model);
# the difference is the cost of R runs alone (start-up, profile parsing and the first runs cancel
# out). The simulation runs seeds 0.., the model seed 0's exchange each time, as `bench` does.
# Prints, per scenario: instructions per run of each side and their ratio, then first-level
# data-cache misses per run of each side (what the instructions leave out: the simulation's larger
# working set; cachegrind's last-level model, sized from this VM's reports, is left out).
#
#   cargo build --release -p mcpsim && sim/bench/model-ratio.sh
#   SCENARIOS="long-tool:400 chatty-tool:40" sim/bench/model-ratio.sh
set -eu
M=${MCPSIM:-target/release/mcpsim}
WORK=${RATIO_WORK:-/tmp/mcpsim-model-ratio}
. "$(dirname "$0")/lib-cachegrind.sh"
cachegrind_ready model-ratio.sh
mkdir -p "$WORK"
echo "| scenario | runs measured | instructions / run: simulation | model alone | × model | D1 misses / run: simulation | model alone | × model |"
echo "|---|---|---|---|---|---|---|---|"
for spec in ${SCENARIOS:-long-tool:400 chatty-tool:40}; do
  sc=${spec%%:*}
  r=${spec##*:}
  for side in sim model; do
    flag=""
    [ "$side" = model ] && flag="--model-alone"
    for runs in "$r" $((2 * r)); do
      # shellcheck disable=SC2086 # $flag is one word or none
      valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
        "$M" bench --profile $flag --client reference --server reference --scenario "$sc" --runs "$runs" \
        >/dev/null 2>"$WORK/cg-$sc-$side-$runs.txt"
    done
  done
  per() { # side counter: per run over the R measured runs
    a=$(count "$WORK/cg-$sc-$1-$r.txt" "$2")
    b=$(count "$WORK/cg-$sc-$1-$((2 * r)).txt" "$2")
    echo "$a $b $r" | awk '{ printf "%.1f", ($2 - $1) / $3 }'
  }
  si=$(per sim 'I *refs'); mi=$(per model 'I *refs')
  sd=$(per sim 'D1 *misses'); md=$(per model 'D1 *misses')
  echo "$sc $r $si $mi $sd $md" |
    awk '{ printf "| %s | %d | %.0f | %.0f | %.2f× | %.0f | %.0f | %.2f× |\n", $1, $2, $3, $4, $3 / $4, $5, $6, $5 / $6 }'
done
