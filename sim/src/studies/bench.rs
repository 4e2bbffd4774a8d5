//! `mcpsim bench`: runs per second of the scenarios, beside the cost of an empty madsim runtime
//! with three idle nodes measured in the same process, so the ratio is comparable across machines.
//!
//! Each line is measured in several rounds, the rounds of all lines interleaved, so that a noisy
//! neighbour slows every line alike; the table gives the median round and the range.

use crate::engine::run_thread::on_calling_thread;
use crate::engine::runner::run;
use crate::error::SimError;
use crate::scenario::Scenario;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant as WallClock};

/// One measured line: `runs` runs in each round.
#[derive(Clone, Debug)]
pub struct BenchLine {
    pub what: String,
    pub runs: u64,
    /// Wall-clock seconds of each round.
    pub seconds: Vec<f64>,
}

impl BenchLine {
    /// Runs per second of each round, slowest first.
    pub fn rates(&self) -> Vec<f64> {
        let mut rates: Vec<f64> = self.seconds.iter().map(|s| self.runs as f64 / s.max(1e-9)).collect();
        rates.sort_by(f64::total_cmp);
        rates
    }

    /// The median round's runs per second (the lower middle one for an even count).
    pub fn runs_per_second(&self) -> f64 {
        let rates = self.rates();
        rates.get(rates.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
    }
}

/// An empty runtime with three idle nodes, on the calling thread as real runs are.
fn empty_runtime(seed: u64) -> Result<(), SimError> {
    let idle = move || {
        let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        for i in 1..=3u8 {
            rt.create_node()
                .name(format!("idle{i}"))
                .ip(IpAddr::V4(Ipv4Addr::new(10, 0, 0, i)))
                .init(|| async { madsim::time::sleep(Duration::from_secs(3600)).await })
                .build();
        }
        rt.block_on(async { madsim::time::sleep(Duration::from_millis(1)).await });
    };
    match on_calling_thread(idle) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(SimError::Runtime("the empty runtime panicked".into())),
        Err(e) => Err(SimError::Runtime(format!("cannot start the empty runtime: {e}"))),
    }
}

/// Wall-clock seconds of `runs` seeds of `one`.
fn time_round(runs: u64, one: &mut dyn FnMut(u64) -> Result<(), SimError>) -> Result<f64, SimError> {
    let start = WallClock::now();
    for seed in 0..runs {
        one(seed)?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Measures the empty runtime and each of `scenarios` over `runs` seeds, `rounds` times each.
pub fn bench(scenarios: &[Scenario], runs: u64, rounds: u32) -> Result<Vec<BenchLine>, SimError> {
    type Subject<'a> = (String, Box<dyn FnMut(u64) -> Result<(), SimError> + 'a>);
    let mut subjects: Vec<Subject> = vec![("empty runtime, 3 idle nodes".to_string(), Box::new(empty_runtime))];
    for s in scenarios {
        let label = format!("{} × {} × {}", s.client.name, s.server.name, s.name);
        subjects.push((label, Box::new(move |seed| run(s, seed).map(|_| ()))));
    }
    let mut lines: Vec<BenchLine> =
        subjects.iter().map(|(what, _)| BenchLine { what: what.clone(), runs, seconds: Vec::new() }).collect();
    for _ in 0..rounds {
        for ((_, one), line) in subjects.iter_mut().zip(&mut lines) {
            line.seconds.push(time_round(runs, one.as_mut())?);
        }
    }
    Ok(lines)
}

/// Prints the lines as a table: the median round, the range over rounds, and each line's cost
/// relative to the empty runtime (medians).
pub fn print(lines: &[BenchLine]) {
    let base = lines.first().map(|l| l.runs_per_second()).unwrap_or(1.0);
    let rounds = lines.first().map_or(0, |l| l.seconds.len());
    println!("{:<44} {:>6} {:>8} {:>18} {:>12}", "what", "runs", "runs/s", "range", "× empty cost");
    for l in lines {
        let rates = l.rates();
        let (low, high) = (rates.first().copied().unwrap_or(0.0), rates.last().copied().unwrap_or(0.0));
        println!(
            "{:<44} {:>6} {:>8.0} {:>18} {:>12.1}",
            l.what,
            l.runs,
            l.runs_per_second(),
            format!("{low:.0}–{high:.0}"),
            base / l.runs_per_second().max(1e-9)
        );
    }
    println!("(runs/s: the median of {rounds} round(s) of each line, rounds interleaved; one core)");
    if cfg!(debug_assertions) {
        println!("(debug build: use `cargo run --release -p mcpsim -- bench` for numbers worth quoting)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_the_median_round() {
        let line = BenchLine { what: "x".into(), runs: 100, seconds: vec![1.0, 0.25, 0.5] };
        assert_eq!(line.rates(), vec![100.0, 200.0, 400.0]);
        assert_eq!(line.runs_per_second(), 200.0);
        let even = BenchLine { what: "x".into(), runs: 100, seconds: vec![1.0, 0.5] };
        assert_eq!(even.runs_per_second(), 100.0);
    }

    #[test]
    fn every_line_gets_every_round() {
        let scenario = Scenario::build("long-tool", "reference", "reference").expect("builds");
        let lines = bench(&[scenario], 2, 3).expect("runs");
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.seconds.len() == 3 && l.runs == 2), "{lines:?}");
        assert!(lines[1].what.contains("long-tool"));
    }
}
