//! Determinism: one seed, one trace. Every scenario family runs each seed twice *at once*, on two
//! threads (`mcpsim run --check-determinism`), and the two traces must agree step for step — so
//! neither a process-wide random source nor state shared between runs can creep in unnoticed.
//!
//! `MCPSIM_SEEDS=N` sweeps N seeds per family instead of 200; `MCPSIM_SEED=K` only seed K.

mod common;

use mcpsim::cli::run_twice_at_once;
use mcpsim::scenario::SCENARIO_NAMES;
use mcpsim::Scenario;

const DEFAULT_SEEDS: u64 = 200;

#[test]
fn every_family_is_deterministic_when_a_seed_runs_twice_at_once() {
    let seeds = common::seeds(DEFAULT_SEEDS);
    for name in SCENARIO_NAMES {
        let scenario = Scenario::build(name, "reference", "reference").expect("every family builds");
        for &seed in &seeds {
            let replay = common::replay(&scenario, seed);
            let (_, difference) =
                run_twice_at_once(&scenario, seed).unwrap_or_else(|e| panic!("{e}\nreplay: {replay}"));
            if let Some(diff) = difference {
                panic!("{name}, seed {seed}: two runs at once differ: {diff}\nreplay: {replay} --check-determinism");
            }
        }
    }
}

#[test]
fn the_seed_variables_choose_the_sweep() {
    assert_eq!(common::seeds_from(None, None, 3), vec![0, 1, 2]);
    assert_eq!(common::seeds_from(None, Some("5"), 3).len(), 5);
    assert_eq!(common::seeds_from(Some("42"), Some("5"), 3), vec![42]);
    assert!(std::panic::catch_unwind(|| common::seeds_from(None, Some("many"), 3)).is_err());
}
