//! Determinism: one seed, one trace. Every scenario family runs each seed twice *at once*, on two
//! threads (`mcpsim run --check-determinism`), and the two traces must agree step for step — so
//! neither a process-wide random source nor state shared between runs can creep in unnoticed.
//! And a run on a thread that already ran other seeds (and a run that panicked) must give the
//! bytes of a run on a brand-new thread: runs reuse their thread (see `mcpsim::engine::run_thread`).
//!
//! `MCPSIM_SEEDS=N` sweeps N seeds per family instead of 200 (30 for the thread comparison);
//! `MCPSIM_SEED=K` only seed K.

mod common;

use mcpsim::engine::run_thread::on_calling_thread;
use mcpsim::engine::runner::{run, run_on_fresh_thread};
use mcpsim::scenario::SCENARIO_NAMES;
use mcpsim::studies::determinism::run_twice_at_once;
use mcpsim::Scenario;

const DEFAULT_SEEDS: u64 = 200;
const DEFAULT_THREAD_SEEDS: u64 = 30;

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

/// Every family, plus restarts of both processes (a restart kills a madsim node, the one place
/// where madsim walks a hash map of its own on the way), plus a black hole over a kept-alive
/// client's streams (its list of open connections, its held connects and TCP's give-up).
fn families_with_restarts() -> Vec<Scenario> {
    let mut all: Vec<Scenario> =
        SCENARIO_NAMES.iter().map(|name| Scenario::build(name, "reference", "reference").expect("builds")).collect();
    let mut restarts = Scenario::build("long-tool", "naive", "reference").expect("builds");
    let faults = [("fault.client_restart", "90s"), ("fault.server_restart", "3m"), ("fault.reset", "20s")];
    restarts.apply_overrides(&faults.map(|(k, v)| (k.to_string(), v.to_string()))).expect("valid overrides");
    all.push(restarts);
    let mut hole = Scenario::build("standalone-notify", "ts-sdk", "py-sdk").expect("builds");
    let faults = [("fault.partition", "none"), ("fault.blackhole", "30s..100s"), ("fault.reset", "20s")];
    hole.apply_overrides(&faults.map(|(k, v)| (k.to_string(), v.to_string()))).expect("valid overrides");
    all.push(hole);
    all
}

#[test]
fn a_thread_that_ran_other_seeds_gives_the_bytes_of_a_fresh_thread() {
    let seeds = common::seeds(DEFAULT_THREAD_SEEDS);
    let scenarios = families_with_restarts();
    // This thread's first runtime (the one madsim seeds std's hasher for) runs another seed, and
    // one run panics (madsim finds every task blocked) before the runs compared.
    run(&scenarios[0], 1_000_003).expect("a warm-up run");
    let panicked = on_calling_thread(|| {
        madsim::runtime::Runtime::with_seed_and_config(7, madsim::Config::default())
            .block_on(std::future::pending::<()>())
    });
    assert!(panicked.expect("runs on this thread").is_err(), "a runtime whose tasks all block forever panics");
    for scenario in &scenarios {
        // Backwards, so each seed follows the others on this thread.
        for &seed in seeds.iter().rev() {
            let replay = common::replay(scenario, seed);
            let reused = run(scenario, seed).unwrap_or_else(|e| panic!("{e}\nreplay: {replay}"));
            let fresh = run_on_fresh_thread(scenario, seed).unwrap_or_else(|e| panic!("{e}\nreplay: {replay}"));
            assert!(
                reused.trace.to_jsonl() == fresh.trace.to_jsonl(),
                "{}, seed {seed}: a reused thread and a fresh one give different traces\nreplay: {replay}",
                scenario.name
            );
        }
    }
}

/// A request reaching a kept-alive upstream connection as the server's keep-alive timeout fires
/// (a server restart at 14 s, standalone notifications every 2 s): the server's `select!` of the
/// two was unbiased, so tokio's thread RNG, which no seed reaches, chose; two runs at once took
/// different branches, and a search's case replayed with other bytes. Found by a guided search.
#[test]
fn a_keep_alive_timeout_racing_a_request_is_decided_by_the_seed() {
    let mut scenario = Scenario::build("standalone-notify", "reference", "reference").expect("builds");
    let o = [("lb.upstream_keep_alive", "true"), ("server.keep_alive_timeout", "29s"), ("fault.server_restart", "14s")];
    scenario.apply_overrides(&o.map(|(k, v)| (k.to_string(), v.to_string()))).expect("valid overrides");
    let seed = 14_900_486_561_624_649_667;
    for _ in 0..4 {
        let (_, difference) = run_twice_at_once(&scenario, seed).expect("runs");
        assert_eq!(difference, None, "replay: {}", common::replay(&scenario, seed));
    }
}

/// Every `select!` of the simulation is biased: an unbiased one draws from tokio's thread RNG.
#[test]
fn every_select_in_the_simulation_is_biased() {
    let mut unbiased = Vec::new();
    for (rel, text) in common::rust_sources("sim/src/engine") {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
            if code.contains("select!") && next != "biased;" {
                unbiased.push(format!("sim/src/engine/{rel}:{}", i + 1));
            }
        }
    }
    assert!(unbiased.is_empty(), "unbiased select! (add `biased;`): {unbiased:?}");
}

#[test]
fn the_seed_variables_choose_the_sweep() {
    assert_eq!(common::seeds_from(None, None, 3), vec![0, 1, 2]);
    assert_eq!(common::seeds_from(None, Some("5"), 3).len(), 5);
    assert_eq!(common::seeds_from(Some("42"), Some("5"), 3), vec![42]);
    assert!(std::panic::catch_unwind(|| common::seeds_from(None, Some("many"), 3)).is_err());
}
