//! The determinism check: one seed run twice at once, compared step by step.

use crate::engine::runner::{run, RunOutcome};
use crate::error::SimError;
use crate::report::artifacts::first_difference;
use crate::scenario::Scenario;

/// Runs one seed twice at once, on two threads, and compares the traces step by step: any state
/// shared between runs (a global counter, a process-wide random source) shows up as a
/// difference. Returns the first run and, if they differ, where.
pub fn run_twice_at_once(scenario: &Scenario, seed: u64) -> Result<(RunOutcome, Option<String>), SimError> {
    let (first, second) = std::thread::scope(|s| {
        let first = s.spawn(|| run(scenario, seed));
        let second = s.spawn(|| run(scenario, seed));
        (first.join(), second.join())
    });
    let joined = |r: std::thread::Result<Result<RunOutcome, SimError>>| {
        r.map_err(|_| SimError::Runtime(format!("seed {seed}: a determinism-check thread panicked")))?
    };
    let (first, second) = (joined(first)?, joined(second)?);
    let difference = first_difference(&first.trace, &second.trace);
    Ok((first, difference))
}
