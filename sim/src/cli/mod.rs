//! The commands behind the `mcpsim` binary, as functions that return an exit status.
//!
//! Exit statuses: 0 no invariant violated (or replay identical), 1 an invariant violated,
//! 2 bad input (one line naming the problem), 3 a replay diverged from its recording, 4 the
//! simulator itself failed.

mod advise;
mod bench;
mod explore;
mod matrix;
mod probe;
mod profiles;
mod run;
mod show;
mod sweep;

pub use advise::cmd_advise;
pub use bench::cmd_bench;
pub use explore::{cmd_explore, default_out_dir, ExploreArgs};
pub use matrix::{cmd_matrix, MatrixArgs};
pub use probe::cmd_probe_server;
pub use profiles::cmd_profiles;
pub use run::{cmd_replay, cmd_run};
pub use show::cmd_show;
pub use sweep::cmd_sweep;

use crate::engine::runner::RunOutcome;
use crate::report::artifacts::replay_command;
use crate::scenario::Scenario;
use mcpsim_model::oracle::{Coverage, COVERAGE_EVENTS};
use mcpsim_model::time::format_micros;

pub use crate::scenario::ScenarioArgs;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Clean = 0,
    Violated = 1,
    BadInput = 2,
    Diverged = 3,
    /// The simulation itself failed (a bug in mcpsim, not in the protocol under test).
    Internal = 4,
}

/// Prints a run's verdict; returns whether it violated anything.
pub(crate) fn print_verdict(scenario: &Scenario, seed: u64, outcome: &RunOutcome) -> bool {
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
    println!("replay: {}", replay_command(scenario, seed));
    true
}

/// Coverage totals: how often each "sometimes" event happened over the runs, zeros included.
pub(crate) fn print_coverage(runs: u64, coverage: &Coverage) {
    let counts: Vec<String> = COVERAGE_EVENTS.iter().map(|e| format!("{e}={}", coverage.get(e))).collect();
    println!("coverage over {runs} run(s): {}", counts.join(" "));
}
