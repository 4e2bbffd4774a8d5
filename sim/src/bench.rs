//! `mcpsim bench`: runs per second of the scenarios, beside the cost of an empty madsim runtime
//! with three idle nodes measured in the same process, so the ratio is comparable across machines.

use crate::error::SimError;
use crate::run_thread::on_calling_thread;
use crate::runner::run;
use crate::scenario::Scenario;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant as WallClock};

/// One measured line.
#[derive(Clone, Debug)]
pub struct BenchLine {
    pub what: String,
    pub runs: u64,
    pub seconds: f64,
}

impl BenchLine {
    pub fn runs_per_second(&self) -> f64 {
        self.runs as f64 / self.seconds.max(1e-9)
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

fn measure(what: &str, runs: u64, mut one: impl FnMut(u64) -> Result<(), SimError>) -> Result<BenchLine, SimError> {
    let start = WallClock::now();
    for seed in 0..runs {
        one(seed)?;
    }
    Ok(BenchLine { what: what.to_string(), runs, seconds: start.elapsed().as_secs_f64() })
}

/// Measures the empty runtime and each of `scenarios` over `runs` seeds.
pub fn bench(scenarios: &[Scenario], runs: u64) -> Result<Vec<BenchLine>, SimError> {
    let mut lines = vec![measure("empty runtime, 3 idle nodes", runs, empty_runtime)?];
    for s in scenarios {
        let label = format!("{} × {} × {}", s.client.name, s.server.name, s.name);
        lines.push(measure(&label, runs, |seed| run(s, seed).map(|_| ()))?);
    }
    Ok(lines)
}

/// Prints the lines as a table with each scenario's cost relative to the empty runtime.
pub fn print(lines: &[BenchLine]) {
    let base = lines.first().map(|l| l.runs_per_second()).unwrap_or(1.0);
    println!("{:<44} {:>8} {:>10} {:>12}", "what", "runs", "runs/s", "× empty cost");
    for l in lines {
        println!(
            "{:<44} {:>8} {:>10.0} {:>12.1}",
            l.what,
            l.runs,
            l.runs_per_second(),
            base / l.runs_per_second().max(1e-9)
        );
    }
    if cfg!(debug_assertions) {
        println!("(debug build: use `cargo run --release -p mcpsim -- bench` for numbers worth quoting)");
    }
}
