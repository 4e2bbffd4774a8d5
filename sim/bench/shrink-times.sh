#!/bin/sh
# Shrink time per scenario family: one failing pair per family, `explore --search` with and
# without `--no-shrink` on the same generator seed; the shrink time is the difference of the two
# processes' CPU times (user + system: on a shared machine the wall time measures the neighbours
# too; explore runs on one thread, so on an idle machine the two agree). Prints a markdown table
# (docs/search.md, "Shrink time per family").
#
#   cargo build --release -p mcpsim && sim/bench/shrink-times.sh
#
# MCPSIM (default target/release/mcpsim) and BUDGET (cases, default 200) can be set.
set -eu
B=${MCPSIM:-target/release/mcpsim}
BUDGET=${BUDGET:-200}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The CPU seconds of `explore ARGS`, its stdout left in $out/stdout.
cpu() {
  # shellcheck disable=SC2086
  /usr/bin/time -f '%U %S' -o "$out/time" "$B" explore $1 >"$out/stdout" 2>/dev/null || true
  grep -q '^found ' "$out/stdout" && tail -n 1 "$out/time" | awk '{ print $1 + $2 }'
}
echo "| family | pair | invariant | shrink runs | shrink CPU | size before → after |"
echo "|---|---|---|---|---|---|"
while read -r family client server invariant; do
  args="--all --client $client --server $server --scenario $family --search --seeds $BUDGET --out $out --invariant $invariant"
  b=$(cpu "$args --no-shrink")
  a=$(cpu "$args")
  shrunk=$(cat "$out/stdout")
  if [ -z "$a" ] || [ -z "$b" ]; then
    echo "| $family | $client × $server | $invariant | — | not found in $BUDGET cases | — |"
    continue
  fi
  line=$(printf '%s\n' "$shrunk" | sed -n 's/^shrunk in \([0-9]*\) run(s): \(.*\)$/\1|\2/p')
  runs=${line%%|*}
  sizes=${line#*|}
  [ -n "$line" ] || { runs=0; sizes="(already minimal)"; }
  secs=$(echo "$a - $b" | bc -l | sed 's/^\./0./')
  echo "| $family | $client × $server | $invariant | $runs | ${secs} s | $sizes |"
done <<'PAIRS'
long-tool naive reference no-duplicate-execution
chatty-tool reference silent-head every-call-resolves
standalone-notify reference ts-sdk no-silent-event-loss
expire-during-tool naive reference no-duplicate-execution
server-restart naive reference no-duplicate-execution
delete-during-tool naive ts-sdk no-duplicate-execution
two-sessions-same-request-id reference py-sdk no-cross-session-delivery
resume-after-completion reference rmcp no-duplicate-delivery
PAIRS
