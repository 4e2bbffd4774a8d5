//! The commands behind the `mcpsim` binary, as functions that return an exit status.
//!
//! Exit statuses: 0 no invariant violated (or replay identical), 1 an invariant violated,
//! 2 bad input (one line naming the problem), 3 a replay diverged from its recording, 4 the
//! simulator itself failed.

mod advise;
mod bench;
mod check;
mod dump;
mod explore;
mod matrix;
mod probe;
mod profiles;
mod progress;
mod run;
mod show;
mod sweep;

pub use advise::cmd_advise;
pub use bench::cmd_bench;
pub use check::{cmd_check, CheckArgs};
pub use dump::cmd_dump;
pub use explore::{cmd_explore, default_out_dir, ExploreArgs};
pub use matrix::{cmd_matrix, cmd_merge, MatrixArgs, MergeArgs};
pub use probe::{cmd_probe_client, cmd_probe_reality, cmd_probe_server};
pub use profiles::{cmd_profiles, cmd_sources};
pub use run::{cmd_replay, cmd_run};
pub use show::cmd_show;
pub use sweep::cmd_sweep;

use crate::engine::runner::RunOutcome;
use crate::report::artifacts::replay_command;
use crate::report::explain;
use crate::scenario::Scenario;
use mcpsim_model::oracle::{Coverage, Violation, COVERAGE_EVENTS};
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::Trace;

pub use crate::scenario::ScenarioArgs;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// No invariant violated, or a replay identical to its recording.
    Clean = 0,
    /// An invariant was violated.
    Violated = 1,
    /// Bad input: an unknown name, a bad value, an unreadable file.
    BadInput = 2,
    /// A replay diverged from its recording.
    Diverged = 3,
    /// The simulation itself failed (a bug in mcpsim, not in the protocol under test).
    Internal = 4,
}

/// Prints a run's verdict; returns whether it violated anything. A violation comes with what
/// happened and why, explained for `pinned` (default: the first violation).
pub(crate) fn print_verdict(scenario: &Scenario, seed: u64, outcome: &RunOutcome, pinned: Option<&str>) -> bool {
    let end = outcome.trace.steps.last().map(|s| s.t).unwrap_or(0);
    if outcome.violations.is_empty() {
        println!(
            "ok: no invariant violated ({} × {} × {}, seed {seed}, {} steps, {} simulated)",
            scenario.client.name,
            scenario.server.name,
            scenario.name,
            outcome.trace.steps.len(),
            format_micros(end)
        );
        return false;
    }
    println!(
        "VIOLATED ({} × {} × {}, seed {seed}, {} steps, {} simulated):",
        scenario.client.name,
        scenario.server.name,
        scenario.name,
        outcome.trace.steps.len(),
        format_micros(end)
    );
    for v in &outcome.violations {
        println!("  {} at {}: {} — {}", v.invariant, v.at, v.subject, v.detail);
    }
    let explained = outcome.violations.iter().find(|v| pinned.is_none_or(|p| v.invariant == p));
    print_explanation(&outcome.trace, explained.or(outcome.violations.first()));
    println!("rerun (same seed, same steps): {}", replay_command(scenario, seed));
    true
}

/// What happened and why, from the trace: each call's tool executions, and the chain of steps
/// that led to `violation`.
pub(crate) fn print_explanation(trace: &Trace, violation: Option<&Violation>) {
    let runs = explain::executions(trace);
    if !runs.is_empty() {
        println!("what happened:");
        for e in &runs {
            println!("  {}", e.sentence());
        }
    }
    let Some(v) = violation else { return };
    let (chain, dropped) = crate::report::cause::cause_chain(&trace.steps, v.step);
    if chain.is_empty() {
        return;
    }
    println!("why (the steps that led to {} at {}):", v.invariant, v.at);
    if dropped > 0 {
        println!("  ({dropped} earlier step(s) of the chain left out)");
    }
    for c in &chain {
        println!("  {}", c.line());
    }
}

/// Coverage totals: how often each "sometimes" event happened over the runs, zeros included.
pub(crate) fn print_coverage(runs: u64, coverage: &Coverage) {
    let counts: Vec<String> = COVERAGE_EVENTS.iter().map(|e| format!("{e}={}", coverage.get(*e))).collect();
    println!("coverage over {runs} run(s): {}", counts.join(" "));
    println!("  (times each event the runs should exercise happened over them; 0 = never reached)");
}
