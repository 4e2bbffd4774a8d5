#!/bin/bash
# Random generation (`--search`) against coverage-guided exploration (`--guided`), side by side on
# the same targets and budget: cases to the first violation of each target's invariant, over
# generator seeds 0..7, inside the conditions of validity (reference x reference).
#
# The targets are the bugs the searches found in the unmutated model on 2026-12-03 (docs/search.md,
# "Bugs the searches found"), so run it on a build from before their fixes (2f6bf80) that has the
# later pin of the routing condition (31278fb), without which a guided case can leave the conditions:
#
#   git worktree add --detach /tmp/mcpsim-before 2f6bf80
#   (cd /tmp/mcpsim-before && git cherry-pick 31278fb && cargo build --release -p mcpsim)
#   MCPSIM=/tmp/mcpsim-before/target/release/mcpsim sim/bench/guided-vs-random.sh
#
# On a build with the fixes every cell reads "miss". BUDGET (default 2000) caps each search.
set -eu
BIN=${MCPSIM:-target/release/mcpsim}
BUDGET=${BUDGET:-2000}
[ -x "$BIN" ] || { echo "no mcpsim binary at $BIN (set MCPSIM)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "| target | invariant | strategy | cases to first, seeds 0..7 | found |"
echo "|---|---|---|---|---|"
for t in "standalone-notify no-orphaned-session" "server-restart no-orphaned-session" \
         "two-sessions-same-request-id no-silent-event-loss" "chatty-tool no-orphaned-session" \
         "expire-during-tool no-orphaned-session"; do
  set -- $t
  for mode in --search --guided; do
    cells="" found=0
    for s in 0 1 2 3 4 5 6 7; do
      n=$("$BIN" explore --client reference --server reference --scenario "$1" $mode --within-conditions \
            --invariant "$2" --seeds "$BUDGET" --no-shrink --start-seed $s --out "$OUT" 2>/dev/null \
          | sed -n 's/^found .* after \([0-9]*\) case.*/\1/p')
      if [ -n "$n" ]; then found=$((found + 1)); cells="$cells $n"; else cells="$cells –"; fi
    done
    echo "| $1 | $2 | \`$mode\` |$cells | $found/8 |"
  done
done
