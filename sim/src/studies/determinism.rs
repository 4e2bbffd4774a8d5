//! The determinism check: one seed run twice at once, compared step by step.

use crate::engine::runner::{run, run_on_fresh_thread, RunOutcome};
use crate::error::SimError;
use crate::report::artifacts::first_difference;
use crate::scenario::Scenario;

/// Runs `scenario`'s `seed` again on a thread of its own and compares it with `recorded`, a trace
/// an exploration ran in its own process after many others: where they differ, if they do. A
/// counterexample is handed on with its replay command, which must give these bytes.
pub fn replays_alone(
    scenario: &Scenario,
    seed: u64,
    recorded: &mcpsim_model::trace::Trace,
) -> Result<Option<String>, SimError> {
    let alone = run_on_fresh_thread(scenario, seed)?;
    Ok(first_difference(recorded, &alone.trace))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_replays_alone_and_a_changed_one_is_named_where_it_differs() {
        let scenario = Scenario::build("long-tool", "reference", "reference").expect("a built-in family");
        let recorded = run(&scenario, 3).expect("runs").trace;
        assert_eq!(replays_alone(&scenario, 3, &recorded).expect("runs"), None);
        let mut changed = recorded.clone();
        changed.steps.truncate(changed.steps.len() - 1);
        let difference = replays_alone(&scenario, 3, &changed).expect("runs").expect("a difference");
        assert!(difference.contains("step"), "{difference}");
    }
}
