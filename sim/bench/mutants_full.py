#!/usr/bin/env python3
"""The full-model mutants table of docs/search.md, from cargo-mutants' outcome lists.

    python3 sim/bench/mutants_full.py OUT SAVED GLOB      (run by sim/bench/mutants-full.sh)

OUT is a cargo-mutants `mutants.out` directory (caught.txt, previously_caught.txt from an
`--iterate` run, missed.txt, timeout.txt, unviable.txt); SAVED is sim/bench/mutants-full/, the
committed lists of earlier runs, merged in and written back, so a run resumed on another machine
adds to the same table. Every list is filtered to the mutants `cargo mutants --list` gives for
GLOB today: a name whose line moved is "not run" again, never counted twice.

A mutant counts as killed by the tests when it was caught or timed out (a test that loops is a
test that noticed). Survivors are the missed ones; SAVED/equivalent.tsv says, for a survivor no
test can kill, why (`name<TAB>reason`), and SAVED/killed.tsv names the test written for one that
an earlier run missed (`name<TAB>test`) until a resumed run sees it caught (both may be split in
files named equivalent.PART.tsv, killed.PART.tsv).

Prints the Markdown table on stdout.
"""

import math
import os
import subprocess
import sys
from collections import defaultdict

KINDS = ("caught", "timeout", "missed", "unviable")


def read_list(path):
    if not os.path.isfile(path):
        return set()
    return {line.rstrip("\n") for line in open(path) if line.strip()}


def read_tsv(path):
    rows = {}
    if os.path.isfile(path):
        for line in open(path):
            if line.strip() and not line.startswith("#"):
                name, _, why = line.rstrip("\n").partition("\t")
                rows[name] = why
    return rows


def listed(glob):
    out = subprocess.run(
        ["cargo", "mutants", "--no-config", "--package", "mcpsim-model", "--file", glob, "--list"],
        capture_output=True, text=True, check=True,
    ).stdout
    return [line for line in out.splitlines() if line.strip()]


def wilson(k, n, z=1.96):
    """95 % interval of a proportion k/n (Wilson), as percentages."""
    if n == 0:
        return (0.0, 100.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (100 * max(0.0, centre - half), 100 * min(1.0, centre + half))


def area(name):
    path = name.split(":", 1)[0].removeprefix("model/src/")
    return path.rsplit("/", 1)[0] + "/" if "/" in path else path


def main(out, saved, glob):
    everything = listed(glob)
    known = set(everything)
    # An --iterate run moves the previous lists to mutants.out.old and names what it skipped,
    # caught or unviable alike, in previously_caught.txt.
    dirs = (saved, out + ".old", out)
    lists = {k: set().union(*(read_list(os.path.join(d, f"{k}.txt")) for d in dirs)) & known for k in KINDS}
    lists["caught"] |= (read_list(os.path.join(out, "previously_caught.txt")) & known) - lists["unviable"]
    # One outcome per mutant: a later run that caught a mutant an earlier one missed wins.
    outcome = {}
    for k in ("unviable", "missed", "timeout", "caught"):
        for name in lists[k]:
            outcome[name] = k
    # equivalent.tsv and killed.tsv, and any equivalent.*.tsv / killed.*.tsv beside them (one per
    # part of the model, so that work on two parts at once merges without conflicts).
    equivalent, killed_by = {}, {}
    for name in sorted(os.listdir(saved)) if os.path.isdir(saved) else []:
        table = (equivalent if name.startswith("equivalent") else killed_by if name.startswith("killed") else None)
        if table is not None and name.endswith(".tsv"):
            table.update((n, w) for n, w in read_tsv(os.path.join(saved, name)).items() if n in known)

    os.makedirs(saved, exist_ok=True)
    for k in KINDS:
        with open(os.path.join(saved, f"{k}.txt"), "w") as f:
            f.writelines(f"{n}\n" for n in sorted(n for n, o in outcome.items() if o == k))

    rows = defaultdict(lambda: defaultdict(int))
    for name in everything:
        a, o = area(name), outcome.get(name, "not run")
        rows[a]["mutants"] += 1
        rows[a][o] += 1
        if o == "missed" and name in equivalent:
            rows[a]["equivalent"] += 1
        if o == "missed" and name in killed_by:
            rows[a]["test written"] += 1

    def line(label, r):
        viable = r["caught"] + r["timeout"] + r["missed"]
        rate = f"{100 * (r['caught'] + r['timeout']) / viable:.0f} %" if viable else "—"
        return (f"| {label} | {r['mutants']} | {r['not run']} | {r['unviable']} | {r['caught']} | {r['timeout']} "
                f"| {r['missed']} | {r['test written']} | {r['equivalent']} | {rate} |")

    total = defaultdict(int)
    for r in rows.values():
        for k, v in r.items():
            total[k] += v
    ran = len(everything) - total["not run"]
    viable = total["caught"] + total["timeout"] + total["missed"]
    killed = total["caught"] + total["timeout"]
    lo, hi = wilson(killed, viable)
    print("# Every mutant of the model under its unit tests")
    print()
    print("Written by `sim/bench/mutants-full.sh summarize > docs/mutants-full.md` from the lists in")
    print("`sim/bench/mutants-full/` (what the runs found, and what became of each survivor); a run goes on")
    print("with `MUTANTS_RESUME=1 MUTANTS_JOBS=2 sim/bench/mutants-full.sh` (docs/search.md, \"The whole model\").")
    print()
    print(f"Mutants of {glob}: {len(everything)}; run {ran} ({100 * ran / len(everything):.0f} %), "
          f"not run yet {total['not run']}.")
    print(f"Killed by the unit tests: {killed} of {viable} viable ({100 * killed / max(viable, 1):.1f} %, "
          f"95 % interval {lo:.1f}–{hi:.1f} %); survivors {total['missed']}, of which a test was written "
          f"for {total['test written']} and {total['equivalent']} are equivalent.")
    print()
    print("| module | mutants | not run | unviable | caught | timeout | missed | test written | equivalent "
          "| killed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for a in sorted(rows):
        print(line(f"`{a}`", rows[a]))
    print(line("**all**", total))
    survivors = sorted(n for n, o in outcome.items() if o == "missed")
    print()
    print(f"Survivors ({len(survivors)}), with what became of each:")
    print()
    for n in survivors:
        note = (f" — killed by `{killed_by[n]}`" if n in killed_by
                else f" — equivalent: {equivalent[n]}" if n in equivalent else " — open")
        print(f"- `{n}`{note}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: mutants_full.py OUT SAVED GLOB")
    main(*sys.argv[1:])
