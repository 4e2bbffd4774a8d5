#!/bin/sh
# Two search variants compared on the planted bugs (sim/bench/planted.json): for each bug, put it
# back in a scratch worktree (of HEAD), build the binary once per side, and run `explore MODE
# --within-conditions` on reference x reference over every family, BUDGET cases each, generator
# seeds SEEDS; print the cases to the first violation per family ("-": none).
# BUGS lists planted.json entries by index; "none" is the unmutated baseline.
#
# A side is a version of sim/src/studies/guided.rs (GUIDED_A, GUIDED_B; default: HEAD's) and
# extra `explore` flags (FLAGS_A, FLAGS_B; default none). MODE is --guided (default), --search, or
# both ("--search --guided": each bug's build runs both).
# RELEASE=1 builds with --release (set CARGO_PROFILE_RELEASE_LTO=off and
# CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 for a quicker build); CARGO_TARGET_DIR is honoured.
#
#   git show a54f098^:sim/src/studies/guided.rs > /tmp/guided-before.rs
#   GUIDED_A=/tmp/guided-before.rs GUIDED_B=sim/src/studies/guided.rs sim/bench/planted-guided.sh
#   FLAGS_B=--swarm MODE=--search sim/bench/planted-guided.sh     # swarm testing on and off
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WT=${PLANTED_WORK:-/tmp/mcpsim-planted-guided}
BUDGET=${BUDGET:-1000}
SEEDS=${SEEDS:-0}
BUGS=${BUGS:-none 0 1 2 3}
MODE=${MODE:---guided}
FLAGS_A=${FLAGS_A:-}
FLAGS_B=${FLAGS_B:-}
FAMILIES=${FAMILIES:-long-tool chatty-tool standalone-notify expire-during-tool server-restart delete-during-tool two-sessions-same-request-id resume-after-completion}
A=$(realpath "${GUIDED_A:-$ROOT/sim/src/studies/guided.rs}"); B=$(realpath "${GUIDED_B:-$ROOT/sim/src/studies/guided.rs}")
[ -d "$WT" ] || git -C "$ROOT" worktree add --detach "$WT" HEAD >/dev/null
cd "$WT"
if [ "${RELEASE:-0}" = 1 ]; then BUILD="--release"; BIN=${CARGO_TARGET_DIR:-target}/release/mcpsim
else BUILD=""; BIN=${CARGO_TARGET_DIR:-target}/debug/mcpsim; fi
for bug in $BUGS; do
  python3 - "$ROOT/sim/bench/planted.json" "$bug" > /tmp/planted-$$.diff <<'PY'
import json, sys
print("" if sys.argv[2] == "none" else json.load(open(sys.argv[1]))[int(sys.argv[2])]["diff"], end="")
PY
  [ -s /tmp/planted-$$.diff ] && patch -s -p0 < /tmp/planted-$$.diff
  for side in A B; do
    if [ $side = A ]; then cp "$A" sim/src/studies/guided.rs; flags=$FLAGS_A; else cp "$B" sim/src/studies/guided.rs; flags=$FLAGS_B; fi
    cargo build -q $BUILD -p mcpsim --bin mcpsim 2>/dev/null
    for mode in $MODE; do for s in $SEEDS; do
      line="bug $bug $side $mode seed $s:"
      for f in $FAMILIES; do
        n=$("$BIN" explore --client reference --server reference --scenario "$f" $mode $flags \
          --within-conditions --seeds "$BUDGET" --start-seed "$s" --no-shrink --out /tmp/planted-found-$$ 2>/dev/null \
          | sed -n 's/^found .* after \([0-9]*\) case.*/\1/p')
        line="$line ${n:--}"
      done
      echo "$line"
    done; done
  done
  [ -s /tmp/planted-$$.diff ] && patch -s -R -p0 < /tmp/planted-$$.diff
  git checkout -q sim/src/studies/guided.rs
done
rm -f /tmp/planted-$$.diff
