//! The oracles' cost per step: `check_all` over seed 0 of `chatty-tool` (reference client and
//! server) with the tool running 7 minutes, 28 minutes and 2 hours — traces of about 1 000,
//! 5 000 and 22 000 steps. The throughput is in steps, so criterion's "elements/s" line of each
//! reads directly as steps judged per second: flat when the cost grows with the steps alone.
//!
//! `cargo bench -p mcpsim --bench oracles` (add `-- --quick` for a rough figure in seconds).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcpsim::{run, Scenario};
use mcpsim_model::oracle::check_all;

/// The tool's duration for each trace, with the steps seed 0 records.
const DURATIONS: [&str; 3] = ["7m", "28m", "2h"];

fn oracles(c: &mut Criterion) {
    let mut group = c.benchmark_group("oracles");
    for duration in DURATIONS {
        let mut scenario =
            Scenario::build("chatty-tool", "reference", "reference").expect("a built-in scenario builds");
        scenario
            .apply_overrides(&[("tool.duration".to_string(), duration.to_string())])
            .expect("tool.duration is a settable key");
        let trace = run(&scenario, 0).expect("seed 0 runs").trace;
        let steps = trace.steps.len();
        group.throughput(Throughput::Elements(steps as u64));
        group.bench_with_input(BenchmarkId::new("check_all", format!("{steps} steps ({duration})")), &trace, |b, t| {
            b.iter(|| check_all(std::hint::black_box(t)))
        });
    }
    group.finish();
}

criterion_group!(benches, oracles);
criterion_main!(benches);
