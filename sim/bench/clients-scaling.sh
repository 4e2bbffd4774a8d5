#!/bin/sh
# Cost per simulated step against the number of clients (docs/model.md, "Cost per step"): a
# scenario file with N clients, each calling a one-minute tool that streams an event a second
# through the balancer to one server, run with `mcpsim bench --profile` (CPU time of the bench
# thread). Prints N, steps of seed 0, runs/s and µs per step. A last row runs the largest N's
# calls with one client, one after another (a call every 61 s): as many steps as the N clients
# take, so it tells the cost of more clients from the cost of a longer run.
#
#   cargo build --release -p mcpsim && sim/bench/clients-scaling.sh
#   MCPSIM=path/to/other/mcpsim STEPS_PER_ROUND=400000 sim/bench/clients-scaling.sh
set -eu
M=${MCPSIM:-target/release/mcpsim}
WORK=${CLIENTS_WORK:-/tmp/mcpsim-clients}
BUDGET=${STEPS_PER_ROUND:-200000}  # simulated steps per measurement, spread over the runs
mkdir -p "$WORK"
echo "| clients | steps (seed 0) | runs/s | µs per step |"
echo "|---|---|---|---|"
measure() {  # $1: label, $2: scenario file
  steps=$("$M" run --client reference --server reference --scenario "$2" --seed 0 | sed -n 's/.*seed 0, \([0-9]*\) steps.*/\1/p')
  runs=$((BUDGET / steps + 1))
  rate=$("$M" bench --profile --client reference --server reference --scenario "$2" --runs "$runs" | sed -n 's/.*, \([0-9.]*\) runs\/s$/\1/p')
  echo "$1|$steps|$rate" | awk -F'|' '{ printf "| %s | %d | %.1f | %.3f |\n", $1, $2, $3, 1e6 / ($3 * $2) }'
}
last=1
for n in ${CLIENTS:-1 2 4 8 16 32 64}; do
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
  measure "$n" "$f"
  last=$n
done
if [ "$last" -gt 1 ]; then
  f="$WORK/in-turn-$last.toml"
  {
    echo "description = \"one client calling a one-minute tool $last times, one call after another\""
    echo "clients = 1"
    printf '[[tools]]\nname = "crawl"\nduration = "1m"\nevent_interval = "1s"\nidempotent = true\n'
    i=0
    while [ "$i" -lt "$last" ]; do
      printf '[[calls]]\nat = "%ds"\ncall = %d\ntool = "crawl"\nclient = 0\n' $((1 + 61 * i)) "$i"
      i=$((i + 1))
    done
  } > "$f"
  measure "1, $last calls in turn" "$f"
fi
