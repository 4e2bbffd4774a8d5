//! The oracles' cost per step: `check_all` over seed 0 of `chatty-tool` (reference client and
//! server) with the tool running 7 minutes, 28 minutes and 2 hours — traces of about 1 000,
//! 5 000 and 22 000 steps. The throughput is in steps, so criterion's "elements/s" line of each
//! reads directly as steps judged per second: flat when the cost grows with the steps alone.
//!
//! Beside each, `read_ids`: one pass that reads the session and id of every stored and delivered
//! event and does nothing else — the least any judgement of the trace must read (a recorded trace
//! holds its strings in as many allocations as it has steps, scattered among the run's own). The
//! trace itself outgrows the core's cache past a few thousand steps (some 180 bytes a step), so
//! the oracles read it once (`TraceIndex`) and then only the index. On a machine shared with
//! other work, the longest trace's figures move with the neighbours' use of the shared cache:
//! compare runs made together.
//!
//! `cargo bench -p mcpsim --bench oracles` (add `-- --quick` for a rough figure in seconds).

// The command line's allocator, so that a run's trace lies in memory as it does under `mcpsim`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcpsim::{run, Scenario};
use mcpsim_model::oracle::check_all;
use mcpsim_model::trace::{StepKind, Trace};

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
        let label = format!("{steps} steps ({duration})");
        group.bench_with_input(BenchmarkId::new("check_all", &label), &trace, |b, t| {
            b.iter(|| check_all(std::hint::black_box(t)))
        });
        group.bench_with_input(BenchmarkId::new("read_ids", &label), &trace, |b, t| {
            b.iter(|| read_ids(std::hint::black_box(t)))
        });
    }
    group.finish();
}

/// Every byte of the session and id of each stored and delivered event, summed.
fn read_ids(trace: &Trace) -> u64 {
    let sum = |s: &str| s.bytes().map(u64::from).sum::<u64>();
    trace
        .steps
        .iter()
        .map(|step| match &step.kind {
            StepKind::EventStored { session, id, .. } => sum(&session.0) + sum(&id.0),
            StepKind::AppEvent { session, id: Some(id), .. } => sum(&session.0) + sum(&id.0),
            _ => 0,
        })
        .sum()
}

criterion_group!(benches, oracles);
criterion_main!(benches);
