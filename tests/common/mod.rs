//! Helpers shared by the integration tests: which seeds a seed sweep runs, how many cases a
//! property runs, and the command that replays a failure.
//!
//! - `MCPSIM_SEEDS=N` runs seeds `0..N` instead of a sweep's default.
//! - `MCPSIM_SEED=K` runs only seed `K` (it wins over `MCPSIM_SEEDS`).
//! - `PROPTEST_CASES=N` runs N generated cases per property instead of the default.

#![allow(dead_code)] // each test binary uses its own part of this module

use mcpsim::report::artifacts::replay_command;
use mcpsim::studies::search::Counterexample;
use mcpsim::Scenario;

/// The seeds a sweep runs: `default` seeds from 0 unless the environment says otherwise.
pub fn seeds(default: u64) -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok();
    seeds_from(var("MCPSIM_SEED").as_deref(), var("MCPSIM_SEEDS").as_deref(), default)
}

/// [`seeds`] with the two variables given: `one` is `MCPSIM_SEED`, `many` is `MCPSIM_SEEDS`.
pub fn seeds_from(one: Option<&str>, many: Option<&str>, default: u64) -> Vec<u64> {
    if let Some(k) = one {
        return vec![number("MCPSIM_SEED", k)];
    }
    let n = many.map_or(default, |n| number("MCPSIM_SEEDS", n));
    (0..n).collect()
}

/// Generated cases per property: `PROPTEST_CASES` or `default`.
pub fn cases(default: u32) -> u32 {
    match std::env::var("PROPTEST_CASES") {
        Ok(n) => u32::try_from(number("PROPTEST_CASES", &n)).unwrap_or(u32::MAX),
        Err(_) => default,
    }
}

fn number(name: &str, text: &str) -> u64 {
    text.trim().parse().unwrap_or_else(|_| panic!("{name}={text:?} is not a number"))
}

/// The command that replays one seed of a scenario (overrides included).
pub fn replay(scenario: &Scenario, seed: u64) -> String {
    replay_command(scenario, seed)
}

/// How a counterexample reads in a failure message: its verdict and the command that replays it.
pub fn describe(found: &Counterexample) -> String {
    let verdict: Vec<String> =
        found.outcome.violations.iter().map(|v| format!("  {} at {}: {}", v.invariant, v.at, v.detail)).collect();
    format!("{}\nreplay: {}", verdict.join("\n"), replay(&found.scenario, found.seed))
}

/// Runs one seed; a run that fails to run panics with the command that replays it.
pub fn run_ok(scenario: &Scenario, seed: u64) -> mcpsim::engine::runner::RunOutcome {
    mcpsim::engine::runner::run(scenario, seed).unwrap_or_else(|e| panic!("{e}\nreplay: {}", replay(scenario, seed)))
}

/// The names of the invariants a run broke.
pub fn violated(outcome: &mcpsim::engine::runner::RunOutcome) -> std::collections::BTreeSet<&'static str> {
    outcome.violations.iter().map(|v| v.invariant.name()).collect()
}

/// Where a regenerated document section differs from the checked-in one, for a failure message:
/// the first differing line of each, or that one is longer.
pub fn first_difference(now: &str, checked_in: &str) -> String {
    now.lines()
        .zip(checked_in.lines())
        .find(|(a, b)| a != b)
        .map(|(now, was)| format!("\n  checked in: {was}\n  now:        {now}"))
        .unwrap_or_else(|| "\n  (one is longer than the other)".to_string())
}

/// [`first_difference`] of two tables given as rows of cells (a row is one line, cells joined
/// by ` | `).
pub fn first_row_difference(now: &[Vec<String>], checked_in: &[Vec<String>]) -> String {
    let lines = |rows: &[Vec<String>]| rows.iter().map(|r| r.join(" | ")).collect::<Vec<_>>().join("\n");
    first_difference(&lines(now), &lines(checked_in))
}

/// Says on the terminal that a test is skipped and why: straight to stderr, past the test
/// harness's capture (which takes only `print!`/`eprint!`), so plain `cargo test` shows it
/// beside the test's `ok` instead of reporting a skipped test as passed in silence.
pub fn skipped(test: &str, why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// Every Rust source file under `dir` (relative to the repository root), with its path relative
/// to `dir` (`/`-separated) and its text, in path order: what the source-scanning tests read.
pub fn rust_sources(dir: &str) -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut stack = vec![root.clone()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
                files.push((rel, std::fs::read_to_string(&path).expect("a source file reads")));
            }
        }
    }
    files.sort();
    files
}
