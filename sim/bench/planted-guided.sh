#!/bin/sh
# Guided search's feature sets compared on the planted bugs (sim/bench/planted.json): for each
# bug, put it back in a scratch worktree, build the debug binary once with the guided search of
# GUIDED_A and once with GUIDED_B (two versions of sim/src/studies/guided.rs), and run
# `explore --guided --within-conditions` on reference x reference over every family, BUDGET cases
# each, generator seeds SEEDS; print the cases to the first violation per family ("-": none).
# BUGS lists planted.json entries by index; "none" is the unmutated baseline.
#
#   git show a54f098^:sim/src/studies/guided.rs > /tmp/guided-before.rs
#   GUIDED_A=/tmp/guided-before.rs GUIDED_B=sim/src/studies/guided.rs sim/bench/planted-guided.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WT=${PLANTED_WORK:-/tmp/mcpsim-planted-guided}
BUDGET=${BUDGET:-1000}
SEEDS=${SEEDS:-0}
BUGS=${BUGS:-none 0 1 2 3}
FAMILIES=${FAMILIES:-long-tool chatty-tool standalone-notify expire-during-tool server-restart delete-during-tool two-sessions-same-request-id resume-after-completion}
A=$(realpath "$GUIDED_A"); B=$(realpath "$GUIDED_B")
[ -d "$WT" ] || git -C "$ROOT" worktree add --detach "$WT" HEAD >/dev/null
cd "$WT"
for bug in $BUGS; do
  python3 - "$ROOT/sim/bench/planted.json" "$bug" > /tmp/planted-$$.diff <<'PY'
import json, sys
print("" if sys.argv[2] == "none" else json.load(open(sys.argv[1]))[int(sys.argv[2])]["diff"], end="")
PY
  [ -s /tmp/planted-$$.diff ] && patch -s -p0 < /tmp/planted-$$.diff
  for side in A B; do
    if [ $side = A ]; then cp "$A" sim/src/studies/guided.rs; else cp "$B" sim/src/studies/guided.rs; fi
    cargo build -q -p mcpsim --bin mcpsim 2>/dev/null
    for s in $SEEDS; do
      line="bug $bug $side seed $s:"
      for f in $FAMILIES; do
        n=$(target/debug/mcpsim explore --client reference --server reference --scenario "$f" --guided \
          --within-conditions --seeds "$BUDGET" --start-seed "$s" --no-shrink --out /tmp/planted-found-$$ 2>/dev/null \
          | sed -n 's/^found .* after \([0-9]*\) case.*/\1/p')
        line="$line ${n:--}"
      done
      echo "$line"
    done
  done
  [ -s /tmp/planted-$$.diff ] && patch -s -R -p0 < /tmp/planted-$$.diff
  git checkout -q sim/src/studies/guided.rs
done
rm -f /tmp/planted-$$.diff
