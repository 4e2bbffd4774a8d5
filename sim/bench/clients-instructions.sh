#!/bin/sh
# Work per simulated step against the number of clients, counted rather than timed
# (docs/model.md, "Cost per step"): the scenario of clients-scaling.sh (N clients, each calling a
# one-minute tool that streams an event a second) under valgrind's cachegrind with its cache
# simulation. Instruction and cache-miss counts are the same for the same binary and input
# whatever else the machine does, so the figures hold on a loaded machine where timings do not.
#
# Each N is run twice, for R and 2R seeds of `mcpsim bench --profile`; the difference is the
# cost of seeds R..2R-1 alone (start-up, profile parsing and the first runs cancel out), divided
# by their steps (counted with `mcpsim run`, one seed at a time). Prints, per step: instructions,
# data references, first-level data-cache misses, last-level misses.
#
#   cargo build --release -p mcpsim && sim/bench/clients-instructions.sh
#   CLIENTS="1 8 64" STEPS=80000 sim/bench/clients-instructions.sh
set -eu
M=${MCPSIM:-target/release/mcpsim}
WORK=${CLIENTS_WORK:-/tmp/mcpsim-clients}
STEPS=${STEPS:-40000}  # simulated steps in the measured seeds, about
. "$(dirname "$0")/lib-cachegrind.sh"
cachegrind_ready clients-instructions.sh
mkdir -p "$WORK"
echo "| clients | steps measured | instructions / step | data refs / step | D1 misses / step | LL misses / step |"
echo "|---|---|---|---|---|---|"
for n in ${CLIENTS:-1 64}; do
  f="$WORK/clients-$n.toml"
  {
    echo "description = \"$n clients, each calling a one-minute tool\""
    echo "clients = $n"
    printf '[[tools]]\nname = "crawl"\nduration = "1m"\nevent_interval = "1s"\nidempotent = true\n'
    i=0
    while [ "$i" -lt "$n" ]; do
      printf '[[calls]]\nat = "1s"\ncall = %d\ntool = "crawl"\nclient = %d\n' "$i" "$i"
      i=$((i + 1))
    done
  } > "$f"
  steps0=$("$M" run --client reference --server reference --scenario "$f" --seed 0 | sed -n 's/.*seed 0, \([0-9]*\) steps.*/\1/p')
  r=$((STEPS / steps0 + 1))
  for runs in "$r" $((2 * r)); do
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
      "$M" bench --profile --client reference --server reference --scenario "$f" --runs "$runs" \
      >/dev/null 2>"$WORK/cg-$n-$runs.txt"
  done
  measured=0
  seed=$r
  while [ "$seed" -lt $((2 * r)) ]; do
    s=$("$M" run --client reference --server reference --scenario "$f" --seed "$seed" | sed -n 's/.*, \([0-9]*\) steps.*/\1/p')
    measured=$((measured + s))
    seed=$((seed + 1))
  done
  a="$WORK/cg-$n-$r.txt"
  b="$WORK/cg-$n-$((2 * r)).txt"
  echo "$n $measured $(count "$a" 'I *refs') $(count "$b" 'I *refs') $(count "$a" 'D *refs') $(count "$b" 'D *refs') \
    $(count "$a" 'D1 *misses') $(count "$b" 'D1 *misses') $(count "$a" 'LL misses') $(count "$b" 'LL misses')" |
    awk '{ s = $2; printf "| %d | %d | %.0f | %.0f | %.1f | %.2f |\n", $1, s, ($4-$3)/s, ($6-$5)/s, ($8-$7)/s, ($10-$9)/s }'
done
