//! The one worker pool of the studies: a list of cells (a scenario and a range of seeds) run on
//! worker threads, each cell tallied ([`Tally`]), the results handed back in input order.
//!
//! Sweeps, the matrix and `advise --verify` all run through `run_cells`, so they share its
//! guarantees: a cell's seeds run in order on one thread, so its tally (first replays
//! included) does not depend on the number of threads; results come back in input order, and
//! `on_done` sees them in that order too, whatever order the cells finish in; the first error
//! stops the pool from starting new cells, the cells before it still finish, and the error of the
//! lowest failing cell is returned.

use crate::error::SimError;
use crate::report::artifacts::replay_command;
use crate::scenario::Scenario;
use crate::studies::tally::{classify, Tally};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

pub(crate) use crate::engine::runner::RunOutcome;

/// Runs one seed of a scenario: `engine::runner::run` in real studies, a fake in tests.
pub type RunFn<'a> = dyn Fn(&Scenario, u64) -> Result<RunOutcome, SimError> + Sync + 'a;

/// One cell of work: these seeds of this scenario.
#[derive(Clone, Debug)]
pub(crate) struct PoolCell<'a> {
    pub scenario: &'a Scenario,
    pub seeds: Range<u64>,
}

impl PoolCell<'_> {
    fn runs(&self) -> u64 {
        self.seeds.end.saturating_sub(self.seeds.start)
    }
}

/// What the pool reports as it goes. `run_done` is called from the worker threads; the others
/// from the calling thread.
pub trait Progress: Sync {
    /// Before the first run: how many cells and runs there are.
    fn start(&self, _cells: usize, _runs: u64) {}
    /// One run finished.
    fn run_done(&self) {}
    /// One cell finished (in completion order).
    fn cell_done(&self) {}
    /// Every cell finished, or the pool stopped.
    fn finish(&self) {}
}

/// No progress shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Progress for Silent {}

/// The number of worker threads `jobs` asks for: 0 means the machine's available parallelism.
pub(crate) fn threads(jobs: usize) -> usize {
    if jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        jobs
    }
}

/// Runs the seeds of one cell in order, tallying each run.
fn run_cell(cell: &PoolCell<'_>, runner: &RunFn<'_>, progress: &dyn Progress) -> Result<Tally, SimError> {
    let mut tally = Tally::new();
    for seed in cell.seeds.clone() {
        let outcome = runner(cell.scenario, seed)
            .map_err(|e| SimError::Runtime(format!("{e} (replay: {})", replay_command(cell.scenario, seed))))?;
        tally.add(seed, &classify(&outcome.trace, &outcome.violations), || replay_command(cell.scenario, seed));
        progress.run_done();
    }
    Ok(tally)
}

/// Runs `cells` on `jobs` worker threads (0: one per core), calling `on_done(i, tally)` for each
/// cell in input order as soon as it and every cell before it have finished, and returns the
/// tallies in input order. An error from `on_done` stops the pool like a failed run.
pub(crate) fn run_cells(
    cells: &[PoolCell<'_>],
    jobs: usize,
    runner: &RunFn<'_>,
    progress: &dyn Progress,
    mut on_done: impl FnMut(usize, &Tally) -> Result<(), SimError>,
) -> Result<Vec<Tally>, SimError> {
    progress.start(cells.len(), cells.iter().map(PoolCell::runs).sum());
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Tally, SimError>)>();
    let mut done: Vec<Tally> = Vec::with_capacity(cells.len());
    let mut first_error: Option<(usize, SimError)> = None;
    std::thread::scope(|scope| {
        for _ in 0..threads(jobs).clamp(1, cells.len().max(1)) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(cell) = cells.get(i) else { break };
                let result = run_cell(cell, runner, progress);
                if result.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                if tx.send((i, result)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        // Finished cells wait here until every cell before them has finished.
        let mut waiting: BTreeMap<usize, Tally> = BTreeMap::new();
        for (i, result) in rx {
            progress.cell_done();
            match result {
                Ok(tally) => {
                    waiting.insert(i, tally);
                }
                Err(e) => {
                    if first_error.as_ref().is_none_or(|(at, _)| i < *at) {
                        first_error = Some((i, e));
                    }
                    continue;
                }
            }
            while let Some(tally) = waiting.remove(&done.len()) {
                if first_error.as_ref().is_some_and(|(at, _)| *at <= done.len()) {
                    break;
                }
                if let Err(e) = on_done(done.len(), &tally) {
                    stop.store(true, Ordering::SeqCst);
                    first_error = Some((done.len(), e));
                    break;
                }
                done.push(tally);
            }
        }
    });
    progress.finish();
    match first_error {
        Some((_, e)) => Err(e),
        None if done.len() == cells.len() => Ok(done),
        None => {
            Err(SimError::Runtime(format!("{} of {} cells did not report back", cells.len() - done.len(), cells.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::tally::tests::{trace_of, violation};
    use crate::studies::tally::Outcome;
    use std::sync::atomic::AtomicU64;
    use std::sync::Mutex;

    fn scenarios(n: usize) -> Vec<Scenario> {
        (0..n)
            .map(|i| {
                let mut s = Scenario::build("chatty-tool", "reference", "reference").expect("a known scenario");
                s.server.retention.max_events = Some(i as u32);
                s
            })
            .collect()
    }

    fn cells(scenarios: &[Scenario], seeds: u64) -> Vec<PoolCell<'_>> {
        scenarios.iter().map(|scenario| PoolCell { scenario, seeds: 0..seeds }).collect()
    }

    /// Cell `i` is slower the lower its index (it spins longer), so cells finish out of order;
    /// its seeds violate an invariant when odd.
    fn slow_first(n: usize) -> impl Fn(&Scenario, u64) -> Result<RunOutcome, SimError> + Sync {
        move |s: &Scenario, seed: u64| {
            let i = s.server.retention.max_events.unwrap_or(0) as usize;
            let mut x = 0u64;
            for k in 0..((n - i) as u64 * 20_000) {
                x = x.wrapping_mul(31).wrapping_add(k);
            }
            std::hint::black_box(x);
            let violations = if seed % 2 == 1 { vec![violation("no-duplicate-execution")] } else { vec![] };
            Ok(RunOutcome { trace: trace_of(vec![]), violations, explained_by: vec![] })
        }
    }

    #[derive(Default)]
    struct Count {
        runs: AtomicU64,
        cells: AtomicU64,
        started: Mutex<Option<(usize, u64)>>,
    }

    impl Progress for Count {
        fn start(&self, cells: usize, runs: u64) {
            *self.started.lock().expect("not poisoned") = Some((cells, runs));
        }
        fn run_done(&self) {
            self.runs.fetch_add(1, Ordering::SeqCst);
        }
        fn cell_done(&self) {
            self.cells.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn results_come_back_in_input_order_whatever_the_completion_order() {
        let s = scenarios(8);
        let progress = Count::default();
        let mut order = Vec::new();
        let runner = slow_first(8);
        let tallies = run_cells(&cells(&s, 3), 4, &runner, &progress, |i, _| {
            order.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
        assert_eq!(tallies.len(), 8);
        assert!(tallies.iter().all(|t| t.n == 3 && t.count(Outcome::OtherViolation) == 0));
        assert!(tallies.iter().all(|t| t.first_violation.as_ref().is_some_and(|(seed, _)| *seed == 1)));
        let one = run_cells(&cells(&s, 3), 1, &runner, &Silent, |_, _| Ok(())).unwrap();
        assert_eq!(one, tallies, "the number of threads changes nothing");
        assert_eq!(*progress.started.lock().unwrap(), Some((8, 24)));
        assert_eq!((progress.runs.load(Ordering::SeqCst), progress.cells.load(Ordering::SeqCst)), (24, 8));
    }

    #[test]
    fn the_first_error_stops_the_pool_and_the_cells_before_it_still_report() {
        let s = scenarios(6);
        let runner = |sc: &Scenario, seed: u64| {
            if sc.server.retention.max_events == Some(2) && seed == 1 {
                Err(SimError::Runtime("boom".into()))
            } else {
                Ok(RunOutcome { trace: trace_of(vec![]), violations: vec![], explained_by: vec![] })
            }
        };
        let mut reported = Vec::new();
        let err = run_cells(&cells(&s, 2), 1, &runner, &Silent, |i, _| {
            reported.push(i);
            Ok(())
        })
        .unwrap_err()
        .to_string();
        // The cell was edited in code (its retention): the replay line sets what was edited.
        assert!(
            err.contains("boom") && err.ends_with("--scenario chatty-tool --set server.retention=2 --seed 1)"),
            "{err}"
        );
        assert_eq!(reported, [0, 1]);
        // An error from on_done stops it the same way.
        let clean =
            |_: &Scenario, _: u64| Ok(RunOutcome { trace: trace_of(vec![]), violations: vec![], explained_by: vec![] });
        let err = run_cells(&cells(&s, 1), 2, &clean, &Silent, |i, _| {
            if i == 1 {
                Err(SimError::Usage("disk full".into()))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }

    #[test]
    fn no_cells_is_no_work() {
        let runner = slow_first(1);
        assert_eq!(run_cells(&[], 0, &runner, &Silent, |_, _| Ok(())).unwrap(), Vec::<Tally>::new());
    }
}
