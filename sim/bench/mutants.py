#!/usr/bin/env python3
"""Planted-bug benchmark: which of cargo-mutants' mutants of the reference behaviour each search
catches. Run through sim/bench/mutants.sh (see docs/search.md); this file is its driver.

For every sampled mutant (from `cargo mutants --list --json --diff`, files from
.cargo/mutants.toml) it patches a private copy of the workspace, builds, and runs four checks:

  unit     cargo test -p mcpsim-model --lib
  random   explore --search --within-conditions   (every pair of MUTANTS_PAIRS x every family)
  guided   explore --guided --within-conditions   (same targets, same budget per target)
  seeds    explore                                (the family as it is, seeds 0..budget)

With MUTANTS_SPACE=wide the two searches drop --within-conditions: they draw from the whole space
(retention, attempts, routing, made-up ids, deploys...) and, as `explore` does by default, stop
only at a violation no broken condition of validity explains. MUTANTS_SPACE=both runs the two
searches in each space on one build (columns random, guided, random-wide, guided-wide).
MUTANTS_SWARM=1 adds --swarm to the searches. MUTANTS_IGNORE_KNOWN=1: a target the unmutated model
fails has that invariant set aside (`explore --ignore`) instead of being skipped.
MUTANTS_KNOWN_EXPECTED=1: besides, each such target's first known violation is an expectation:
after the other targets, the strategy runs it again without `--ignore`, and a mutant with which it
no longer finds that invariant first (none within the budget, or another one) is caught there
(`lost: INVARIANT` or `OTHER instead of INVARIANT`). A search of a pair with a known bug is then a
regression test of the oracle that reports it: a weakened oracle shows as a known bug no longer
found. A known bug no longer found that the mutated build still breaks when it re-runs the
baseline's case of it is an artefact of the search's path (see below).

A target is a client x server pair and a family. The pairs default to the reference client
against each SDK server and each SDK client against the reference server beside reference x
reference: the files under test carry every profile's rules, and a rule only an SDK profile uses
(an event-id lookup, a dropped detached event) is reached only through that profile. A target the
unmutated model already fails for a strategy (a known bug of an SDK, found inside the conditions)
is skipped for that strategy, so it does not count as a catch.

Each check counts as catching the mutant when it fails (a violation, a failed test, a crash or a
timeout). A search's violation is checked against the unmutated build: if that replays the trace
byte for byte, or its re-run of the case breaks the same invariant, the mutant changed only the
search's path to a finding of the unmutated model (an artefact; conservative: a mutant that turns
an explained violation of that invariant into an unexplained one is counted as one too); it is
listed beside the row and the strategy goes on to the next target. One JSON line per mutant goes to results.jsonl; a Markdown summary to summary.md.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORK = os.environ.get("MUTANTS_WORK", "/tmp/mcpsim-mutants")
SAMPLE = int(os.environ.get("MUTANTS_SAMPLE", "40"))
# Where the systematic sample starts (0..stride-1): another offset draws the mutants between.
OFFSET = int(os.environ.get("MUTANTS_OFFSET", "0"))
BUDGET = int(os.environ.get("MUTANTS_BUDGET", "30"))
ONLY = os.environ.get("MUTANTS_ONLY")  # a regex over mutant names, to rerun a few
# Sample the whole model (every file of model/src) instead of .cargo/mutants.toml's files: the
# search columns of the full-model table in docs/search.md.
ALL = os.environ.get("MUTANTS_ALL") == "1"
SPACE = os.environ.get("MUTANTS_SPACE", "conditions")
if SPACE not in ("conditions", "wide", "both"):
    sys.exit(f"MUTANTS_SPACE={SPACE!r}: expected conditions, wide or both")
# The checks run on every mutant after the unit tests: the searches of the space(s) asked, then
# plain seeds. A `-wide` search drops --within-conditions.
SEARCHES = {"conditions": ["random", "guided"], "wide": ["random-wide", "guided-wide"]}
MODES = [m for s in (["conditions", "wide"] if SPACE == "both" else [SPACE]) for m in SEARCHES[s]] + ["seeds"]
SWARM = os.environ.get("MUTANTS_SWARM") == "1"
PAIRS = [
    tuple(p.split(":"))
    for p in os.environ.get(
        "MUTANTS_PAIRS",
        "reference:reference,reference:ts-sdk,reference:py-sdk,reference:rmcp,"
        "ts-sdk:reference,py-sdk:reference,rmcp:reference",
    ).split(",")
]
FAMILIES = [
    "long-tool",
    "chatty-tool",
    "standalone-notify",
    "expire-during-tool",
    "server-restart",
    "delete-during-tool",
    "two-sessions-same-request-id",
    "resume-after-completion",
]
PROFILE = [
    "--release",
    "--config", "profile.release.lto=false",
    "--config", "profile.release.codegen-units=16",
    "--config", "profile.release.incremental=false",
]
SRC = os.path.join(WORK, "src")
ENV = dict(os.environ, CARGO_TARGET_DIR=os.path.join(WORK, "target"))
FOUND = re.compile(r"found (\S+) after (\d+) (?:case|seed)\(s\) \(([\d.]+)s wall")
TRACE = re.compile(r"^trace: (\S+)$", re.M)
# The unmutated build, kept beside the mutated ones: a catch whose trace it replays byte for byte
# is the unmutated model's own finding (the mutant changed only the search's path to it), an
# artefact, not a catch.
UNMUTATED = os.path.join(WORK, "mcpsim-unmutated")


def sh(args, timeout, cwd=SRC):
    started = time.monotonic()
    try:
        p = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired:
        return "timeout", "", time.monotonic() - started


def copy_workspace():
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for f in files:
        if f.startswith(("target/", "traces/found")) or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        dst = os.path.join(SRC, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        # A fresh modification time, not the original's: a target directory left by an
        # interrupted run holds a mutant's build, which cargo would otherwise take as up to date.
        shutil.copy(os.path.join(ROOT, f), dst)


PLANTED = os.environ.get("MUTANTS_PLANTED") == "1"


def sample_mutants():
    if PLANTED:
        # Bugs the searches found in the model (docs/search.md), put back as one-line patches:
        # the benchmark's targets for search power, where cargo-mutants' mutants are caught at a
        # target's first cases or not at all.
        planted = json.load(open(os.path.join(os.path.dirname(__file__), "planted.json")))
        return planted, len(planted)
    scope = ["--no-config", "--file", "model/src/**/*.rs"] if ALL else []
    out = subprocess.run(
        ["cargo", "mutants", "--list", "--json", "--diff", "--package", "mcpsim-model", *scope],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    mutants = json.loads(out)
    if ONLY:
        mutants = [m for m in mutants if re.search(ONLY, m["name"])]
    stride = max(1, len(mutants) // SAMPLE)
    if not 0 <= OFFSET < stride:
        sys.exit(f"MUTANTS_OFFSET={OFFSET}: expected 0 to {stride - 1} (the sample takes every {stride}th)")
    return mutants[OFFSET::stride][:SAMPLE], len(mutants)


def build():
    code, out, secs = sh(["cargo", "build", "-p", "mcpsim", "--bin", "mcpsim", *PROFILE], 900)
    if code != 0:
        return False, secs, out[-2000:]
    code, out, more = sh(["cargo", "test", "-p", "mcpsim-model", "--lib", "--no-run", *PROFILE], 900)
    return code == 0, secs + more, out[-2000:]


def unit():
    code, out, secs = sh(["cargo", "test", "-p", "mcpsim-model", "--lib", *PROFILE], 600)
    return {"caught": code != 0, "secs": round(secs, 2)}


# Families a strategy already fails on without any mutant (a finding of its own, reported in the
# baseline line): skipped for that strategy on the mutants, so they do not count as catches.
SKIP = {}


def targets():
    return [(client, server, family) for client, server in PAIRS for family in FAMILIES]


# With MUTANTS_IGNORE_KNOWN=1 a target the unmutated model fails is not skipped at once: the
# invariant it broke (a known bug of that pair, e.g. an SDK server expiring a busy session) is set
# aside with `explore --ignore`, and the target is tried again, up to IGNORE_MAX invariants; only a
# target still failing then is skipped. A mutant is then caught on it by any other invariant.
IGNORE_KNOWN = os.environ.get("MUTANTS_IGNORE_KNOWN") == "1"
IGNORE_MAX = 3
IGNORE = {}  # mode -> target -> invariants set aside
KNOWN_EXPECTED = os.environ.get("MUTANTS_KNOWN_EXPECTED") == "1"
KNOWN = {}  # mode -> target -> [client, server, family, the invariant the unmutated model finds first]


def run_target(mode, client, server, family, ignore=True, check=True):
    """One strategy on one target: the explore result, as a dict (`caught`, `invariant`, ...).
    `ignore`: set aside the target's known invariants (MUTANTS_IGNORE_KNOWN). `check`: replay a
    catch's trace on the unmutated build and mark it `artefact` when that reproduces it."""
    binary = os.path.join(WORK, "target", "release", "mcpsim")
    target = f"{client}x{server}x{family}"
    args = [binary, "explore", "--client", client, "--server", server, "--scenario", family,
            "--seeds", str(BUDGET), "--no-shrink", "--out", os.path.join(WORK, "found")]
    if mode != "seeds":
        args += ["--search" if mode.startswith("random") else "--guided"]
        args += [] if mode.endswith("-wide") else ["--within-conditions"]
        args += ["--swarm"] if SWARM else []
    ignored = IGNORE.get(mode, {}).get(target, []) if ignore else []
    args += ["--ignore", ",".join(ignored)] if ignored else []
    code, out, secs = sh(args, 300)
    m = FOUND.search(out)
    if code == 0:
        return {"caught": False, "cases": BUDGET, "secs": secs}
    r = {
        "caught": True,
        "family": target,
        "invariant": m.group(1) if m else ("timeout" if code == "timeout" else "crash"),
        "cases": int(m.group(2)) if m else None,
        "secs": float(m.group(3)) if m else secs,
    }
    trace = TRACE.search(out)
    if trace:
        r["trace"] = trace.group(1)
    wide = mode.endswith("-wide")
    if check and m and trace and os.path.exists(UNMUTATED) and breaks(UNMUTATED, trace.group(1), r["invariant"], wide):
        r["artefact"] = True
    return r


def breaks(binary, trace, invariant, unexplained=False):
    """Whether `binary`, re-running `trace`'s case, breaks `invariant`: it replays the trace byte
    for byte, or its verdict names the invariant. With the unmutated build: a catch the unmutated
    model makes too (a mutant that changed only what a step records, such as an attempt's number,
    diverges and is no catch all the same). With the mutated build and a known violation's trace
    from the baseline: the known bug is still there, only the search's path missed it.

    `unexplained` (the whole-space strategies, which stop only at unexplained violations): the
    re-run must leave the invariant unexplained too. A violation the unmutated model breaks with a
    broken condition to explain it, which the mutant reads as a bug (a mutant of what a resume
    step records: "its store still held every event" instead of "evicted"), is a catch: the
    mutant changed the tool's answer."""
    code, out, _ = sh([binary, "replay", "--quiet", trace], 300)
    if code in (0, 1) and "identical:" in out:
        return True
    verdict = next((line for line in out.splitlines() if line.startswith("verdict: ")), "")
    named = [v.split(" ×")[0] for v in verdict.removeprefix("verdict: ").split(", ")]
    if invariant not in named or not unexplained:
        return invariant in named
    # The re-run's own footer says how it judged each violation: record it in a copy.
    copy = trace + ".rerun.jsonl"
    shutil.copyfile(trace, copy)
    sh([binary, "replay", "--quiet", "--rerecord", copy], 300)
    try:
        with open(copy) as f:
            footer = json.loads(f.read().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return True
    finally:
        if os.path.exists(copy):
            os.remove(copy)
    return any(v.get("invariant") == invariant and str(v.get("conditions", "")).startswith("unexplained")
               for v in footer.get("verdict", []))


def explore(mode):
    """One strategy over every target: caught at the first target that fails."""
    total_cases, total_secs, artefacts = 0, 0.0, []
    for client, server, family in targets():
        if f"{client}x{server}x{family}" in SKIP.get(mode, ()):
            continue
        r = run_target(mode, client, server, family)
        if r.get("artefact"):
            # The unmutated model's own violation, reached on another path: noted, and the
            # strategy goes on to the next target as if this one were clean.
            artefacts.append(f"{r['family']}: {r['invariant']}")
            r = {"caught": False, "cases": r["cases"], "secs": r["secs"]}
        if not r["caught"]:
            total_cases += r["cases"]
            total_secs += r["secs"]
            continue
        r["cases"] = total_cases + r["cases"] if r["cases"] is not None else None
        r["secs"] = round(total_secs + r["secs"], 2)
        r["artefacts"] = artefacts
        return r
    mutated = os.path.join(WORK, "target", "release", "mcpsim")
    for target, (client, server, family, expected, *known_trace) in KNOWN.get(mode, {}).items() if KNOWN_EXPECTED else ():
        r = run_target(mode, client, server, family, ignore=False)
        trace = known_trace[0] if known_trace else None
        if not r["caught"] and trace and breaks(mutated, trace, expected):
            # Not found within the budget, yet the mutated model breaks it on the baseline's
            # case: the search's path missed it, the mutant did not hide it.
            artefacts.append(f"{target}: {expected} not found, yet still broken on the baseline's case")
            total_cases += r["cases"] or 0
            total_secs += r["secs"]
            continue
        if r.get("artefact") and r["invariant"] != expected:
            artefacts.append(f"{target}: {r['invariant']} instead of {expected}")
            total_cases += r["cases"] or 0
            total_secs += r["secs"]
            continue
        if r["caught"] and r["invariant"] == expected:
            total_cases += r["cases"] or 0
            total_secs += r["secs"]
            continue
        found = f"{r['invariant']} instead of {expected}" if r["caught"] else f"lost: {expected}"
        return {"caught": True, "family": target, "invariant": found, "artefacts": artefacts,
                "cases": total_cases + (r["cases"] or 0), "secs": round(total_secs + r["secs"], 2)}
    return {"caught": False, "cases": total_cases, "secs": round(total_secs, 2), "artefacts": artefacts}


def baseline_of(mode, failures):
    """The unmutated model under one strategy, target by target: a failing target has its
    invariant set aside (MUTANTS_IGNORE_KNOWN) or is skipped."""
    total_cases, total_secs = 0, 0.0
    for client, server, family in targets():
        target = f"{client}x{server}x{family}"
        while (r := run_target(mode, client, server, family, check=False))["caught"]:
            failures.append({"mode": mode, **r})
            ignored = IGNORE.setdefault(mode, {}).setdefault(target, [])
            known = r["invariant"] not in ("timeout", "crash")
            if known and not ignored:
                KNOWN.setdefault(mode, {})[target] = [client, server, family, r["invariant"], r.get("trace")]
            if IGNORE_KNOWN and known and len(ignored) < IGNORE_MAX:
                ignored.append(r["invariant"])
                continue
            del IGNORE[mode][target]
            SKIP.setdefault(mode, []).append(target)
            break
        else:
            total_cases += r["cases"]
            total_secs += r["secs"]
    return {"caught": False, "cases": total_cases, "secs": round(total_secs, 2)}


def main():
    os.makedirs(WORK, exist_ok=True)
    copy_workspace()
    mutants, listed = sample_mutants()
    results = os.path.join(WORK, "results.jsonl")
    print(f"{len(mutants)} of {listed} mutants, budget {BUDGET} cases per family; work in {WORK}", file=sys.stderr)
    ok, secs, log = build()
    if not ok:
        sys.exit(f"the unmutated workspace does not build:\n{log}")
    shutil.copy2(os.path.join(WORK, "target", "release", "mcpsim"), UNMUTATED)
    baseline = {"mutant": "baseline", "unit": unit()}
    for mode in MODES:
        baseline[mode] = baseline_of(mode, baseline.setdefault("baseline_failures", []))
    baseline["skipped"] = SKIP
    baseline["ignored"] = IGNORE
    baseline["expected"] = KNOWN if KNOWN_EXPECTED else {}
    print(json.dumps(baseline), file=sys.stderr)
    with open(results, "w") as out:
        out.write(json.dumps(baseline) + "\n")
        for i, m in enumerate(mutants):
            path = os.path.join(SRC, m["file"])
            original = open(path).read()
            patched = subprocess.run(["patch", "-s", "-p0", path], input=m["diff"], text=True, capture_output=True)
            row = {"mutant": m["name"], "file": m["file"]}
            if patched.returncode != 0:
                row["status"] = "patch-failed"
            else:
                ok, secs, log = build()
                row["build_secs"] = round(secs, 1)
                if not ok:
                    row["status"] = "unviable"
                else:
                    row["status"] = "ran"
                    row["unit"] = unit()
                    for mode in MODES:
                        row[mode] = explore(mode)
            with open(path, "w") as f:
                f.write(original)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"[{i + 1}/{len(mutants)}] {row.get('status')} {m['name']}", file=sys.stderr)
    summarize(results)


def summarize(results):
    rows = [json.loads(line) for line in open(results)]
    baseline, rows = rows[0], rows[1:]
    ran = [r for r in rows if r.get("status") == "ran"]
    modes = ("unit", *(m for m in MODES if m in baseline))
    lines = [
        f"Mutants sampled: {len(rows)}; viable (built): {len(ran)}; unviable: "
        f"{sum(r.get('status') == 'unviable' for r in rows)}. Budget: {BUDGET} cases per target; "
        f"{len(targets())} targets ({len(PAIRS)} pairs x {len(FAMILIES)} families). Search space: "
        + {"conditions": "inside the conditions of validity",
           "wide": "the whole space, unexplained violations only",
           "both": "inside the conditions (random, guided) and the whole space, unexplained violations only "
                   "(random-wide, guided-wide)"}[SPACE]
        + (", swarm" if SWARM else "") + ".",
        "",
        "Baseline (unmutated): " + ", ".join(f"{m} {'FAILS' if baseline[m]['caught'] else 'clean'}" for m in modes)
        + f"; families skipped per strategy because the unmutated model already fails them: {baseline.get('skipped', {})}"
        + (f"; invariants set aside per strategy and target (MUTANTS_IGNORE_KNOWN): {baseline['ignored']}"
           if baseline.get("ignored") else "")
        + (f"; known violations each strategy must still find first (MUTANTS_KNOWN_EXPECTED): {baseline['expected']}"
           if baseline.get("expected") else ""),
        "",
        "| caught by | mutants | only this one | median cases to first | median s to first |",
        "|---|---|---|---|---|",
    ]
    for m in modes:
        caught = [r for r in ran if r[m]["caught"] and not baseline[m]["caught"]]
        only = [r for r in caught if not any(r[o]["caught"] for o in modes if o != m)]
        cases = [r[m]["cases"] for r in caught if r[m].get("cases") is not None]
        secs = [r[m]["secs"] for r in caught]
        med = lambda xs: f"{statistics.median(xs):g}" if xs else "—"
        lines.append(f"| {m} | {len(caught)} | {len(only)} | {med(cases) if m != 'unit' else '—'} | {med(secs)} |")
    killed = [r for r in ran if r["unit"]["caught"]]
    lines.append("")
    for rnd, gd in (("random", "guided"), ("random-wide", "guided-wide")):
        if gd not in modes:
            continue
        both = [r for r in ran if r[rnd]["caught"] and r[gd]["caught"]
                and r[rnd].get("cases") is not None and r[gd].get("cases") is not None]
        fewer = lambda a, b: sum(r[a]["cases"] < r[b]["cases"] for r in both)
        found = sum(r[gd]["caught"] for r in killed)
        share = f"{100 * found / len(killed):.0f} %" if killed else "—"
        lines.append(f"{gd}: of the {len(killed)} mutants the unit tests kill, it catches {found} ({share}). "
                     f"Caught by {rnd} and {gd}: {len(both)}; {gd} in fewer cases on {fewer(gd, rnd)}, "
                     f"{rnd} in fewer on {fewer(rnd, gd)}, the same on {len(both) - fewer(gd, rnd) - fewer(rnd, gd)}.")
    lines.append("Cases to first are summed over the targets tried before the one that failed.")
    lines += ["", "| mutant | " + " | ".join(modes) + " |", "|---|" + "---|" * len(modes)]
    def show(r):
        text = "caught " + (f"({r['family']}, {r.get('invariant')}, {r['cases']} cases)" if "family" in r else "") \
            if r["caught"] else "missed"
        passed = r.get("artefacts") or []
        return text + (f" (went past {len(passed)} artefact(s): {'; '.join(passed)})" if passed else "")
    for r in ran:
        lines.append(f"| `{r['mutant']}` | " + " | ".join(show(r[m]) for m in modes) + " |")
    survivors = [r for r in ran if not any(r[m]["caught"] for m in modes)]
    lines += ["", f"Survivors ({len(survivors)}):"] + [f"- `{r['mutant']}`" for r in survivors]
    text = "\n".join(lines) + "\n"
    open(os.path.join(WORK, "summary.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "summarize":
        summarize(os.path.join(WORK, "results.jsonl"))
    else:
        main()
