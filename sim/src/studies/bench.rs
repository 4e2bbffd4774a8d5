//! `mcpsim bench`: runs per second of the scenarios, beside the cost of an empty madsim runtime
//! with three idle nodes measured in the same process, so the ratio is comparable across machines.
//!
//! Each line is measured in several rounds, the rounds of all lines interleaved, so that a noisy
//! neighbour slows every line alike; the table gives the median round and the range. A scenario
//! round is a fixed number of seeds; an empty-runtime round runs for a fixed wall-clock time
//! ([`EMPTY_ROUND`]), so its rate is as precise whatever the machine. Each scenario line also
//! says how many steps its seed 0 records and what judging that trace costs (the oracles), so
//! that a longer run's line shows whether the cost grows with the steps alone.
//!
//! Time is the bench thread's own CPU time where the system tells it (`CLOCK_THREAD_CPUTIME_ID`,
//! to the nanosecond), else wall-clock time: on a machine shared with other work a round's
//! wall-clock time counts the time other processes held the core, its CPU time does not. (It
//! was read from `/proc/thread-self/schedstat` before, which moves only at a scheduler tick: a
//! model-alone round of 2 000 long-tool runs lasts about 30 ms, so a 4 ms tick made its rate,
//! and the `× model` ratio, jump by a tenth from round to round.)
//!
//! Each scenario line is also measured against the model alone: the madsim-free harness
//! ([`mcpsim_model::testing::Pair`]) driving the same exchange (the scenario's profiles, tools,
//! balancer and calls, up to the end time of its seed 0, judged by the same oracles; no network
//! latency and no planned faults), in rounds interleaved with the others. `N.N× model` is how many
//! times a simulated run costs that: what madsim's executor and timers and the transport add. It is steadier
//! than the ratio to the empty runtime, whose rate flips by 2× from round to round.
//!
//! [`profile`] is the mode for `perf`: one scenario, many seeds, no other work.

use crate::engine::run_thread::on_calling_thread;
use crate::engine::runner::run;
use crate::error::SimError;
use crate::scenario::Scenario;
use mcpsim_model::oracle::check_all;
use mcpsim_model::testing::Pair;
use mcpsim_model::Instant;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant as WallClock};

/// How long one round of the empty runtime runs.
pub const EMPTY_ROUND: Duration = Duration::from_millis(300);

/// How long the oracles' cost is measured for, per scenario line.
const ORACLE_TIMING: Duration = Duration::from_millis(100);

/// One measured round: this many runs took this long.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    pub runs: u64,
    /// Seconds of the bench thread's CPU time (see [`Clock`]).
    pub seconds: f64,
}

/// The time a round is measured in: the calling thread's CPU time, else wall-clock time.
#[derive(Clone, Copy, Debug)]
enum Clock {
    Cpu(Duration),
    Wall(WallClock),
}

impl Clock {
    fn now() -> Clock {
        thread_cpu_time().map_or_else(|| Clock::Wall(WallClock::now()), Clock::Cpu)
    }

    /// Time since `self`, on the same clock.
    fn elapsed(self) -> Duration {
        match self {
            Clock::Cpu(start) => thread_cpu_time().unwrap_or(start).saturating_sub(start),
            Clock::Wall(start) => start.elapsed(),
        }
    }
}

/// The calling thread's CPU time so far, where the system tells it. Read outside a simulation
/// only: inside one, madsim answers `clock_gettime` itself, for its own clocks alone.
fn thread_cpu_time() -> Option<Duration> {
    cpu_time::ThreadTime::try_now().ok().map(|t| t.as_duration())
}

/// What the rounds are timed in, for the table's note.
pub fn clock_name() -> &'static str {
    if thread_cpu_time().is_some() {
        "CPU time of the bench thread"
    } else {
        "wall-clock time"
    }
}

/// What seed 0 of a scenario line records, and what judging it costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judged {
    /// Steps of its trace.
    pub steps: usize,
    /// Microseconds of `check_all` over it (the mean of repeated checks).
    pub oracle_micros: f64,
}

/// One measured line.
#[derive(Clone, Debug)]
pub struct BenchLine {
    pub what: String,
    pub rounds: Vec<Round>,
    /// For a scenario line: its seed 0, judged.
    pub judged: Option<Judged>,
    /// For a scenario line: rounds of the model alone driving the same exchange.
    pub model: Vec<Round>,
}

impl BenchLine {
    /// Runs per second of each round, slowest first.
    pub fn rates(&self) -> Vec<f64> {
        let mut rates: Vec<f64> = self.rounds.iter().map(|r| r.runs as f64 / r.seconds.max(1e-9)).collect();
        rates.sort_by(f64::total_cmp);
        rates
    }

    /// The median round's runs per second (the lower middle one for an even count).
    pub fn runs_per_second(&self) -> f64 {
        median_rate(&self.rounds)
    }

    /// How many times a run costs the model alone driving the same exchange (medians), if
    /// measured.
    pub fn times_model(&self) -> Option<f64> {
        (!self.model.is_empty()).then(|| median_rate(&self.model) / self.runs_per_second().max(1e-9))
    }
}

/// The median round's runs per second (the lower middle one for an even count).
fn median_rate(rounds: &[Round]) -> f64 {
    let mut rates: Vec<f64> = rounds.iter().map(|r| r.runs as f64 / r.seconds.max(1e-9)).collect();
    rates.sort_by(f64::total_cmp);
    rates.get(rates.len().saturating_sub(1) / 2).copied().unwrap_or(0.0)
}

/// The model alone ([`Pair`], no madsim) driving `scenario`'s exchange until `end`: its profiles,
/// tools and balancer, its calls at their times, then the oracles over the trace.
pub fn model_alone(scenario: &Scenario, end: Instant) -> Result<usize, SimError> {
    let harness = |e: mcpsim_model::testing::HarnessError| SimError::Runtime(format!("model alone: {e}"));
    // One `Pair`, one client: every call goes through the one profile.
    scenario.require_one_client_profile("the model-alone bench")?;
    let mut pair = Pair::with_policies(
        scenario.client.clone(),
        scenario.server.clone(),
        scenario.tools.clone(),
        scenario.lb.clone(),
    )
    .map_err(harness)?;
    let mut calls: Vec<_> = scenario.calls.iter().collect();
    calls.sort_by_key(|c| (c.at, c.call));
    for c in calls {
        pair.advance_to(Instant::ZERO + c.at).map_err(harness)?;
        let idempotent = scenario.tools.iter().find(|t| t.name == c.tool).is_some_and(|t| t.idempotent);
        pair.call(c.call.0, &c.tool, idempotent).map_err(harness)?;
    }
    std::hint::black_box(pair.run_until(end).map_err(harness)?);
    Ok(pair.trace().steps.len())
}

/// When `scenario`'s seed 0 ends: how far the model alone drives the same exchange.
fn seed0_end(scenario: &Scenario) -> Result<Instant, SimError> {
    Ok(Instant(run(scenario, 0)?.trace.steps.last().map_or(0, |step| step.t)))
}

/// A scenario to measure: its label, the scenario, and the seeds of each round.
pub struct Subject {
    pub label: String,
    pub scenario: Scenario,
    pub runs: u64,
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

/// How long a round goes on: a number of seeds, or a wall-clock time.
#[derive(Clone, Copy, Debug)]
enum Length {
    Runs(u64),
    For(Duration),
}

/// One round of `one`: seeds from 0 until `length` is reached (a duration by the wall clock,
/// which is cheap to read between runs; the round is measured on [`Clock`]).
fn time_round(length: Length, one: &mut dyn FnMut(u64) -> Result<(), SimError>) -> Result<Round, SimError> {
    let (start, wall) = (Clock::now(), WallClock::now());
    let mut runs = 0;
    loop {
        let done = match length {
            Length::Runs(n) => runs >= n,
            Length::For(d) => wall.elapsed() >= d,
        };
        if done {
            return Ok(Round { runs, seconds: start.elapsed().as_secs_f64() });
        }
        one(runs)?;
        runs += 1;
    }
}

/// Seed 0 of `scenario`, judged again and again for [`ORACLE_TIMING`].
fn judge(scenario: &Scenario) -> Result<Judged, SimError> {
    let trace = run(scenario, 0)?.trace;
    let (start, wall) = (Clock::now(), WallClock::now());
    let mut checks = 0u32;
    while checks == 0 || wall.elapsed() < ORACLE_TIMING {
        std::hint::black_box(check_all(std::hint::black_box(&trace)));
        checks += 1;
    }
    let oracle_micros = start.elapsed().as_secs_f64() * 1e6 / f64::from(checks);
    Ok(Judged { steps: trace.steps.len(), oracle_micros })
}

/// Measures the empty runtime and each subject, `rounds` times each, rounds interleaved.
pub fn bench(subjects: &[Subject], rounds: u32) -> Result<Vec<BenchLine>, SimError> {
    type Line<'a> = (Length, Box<dyn FnMut(u64) -> Result<(), SimError> + 'a>);
    let mut measured: Vec<Line> = vec![(Length::For(EMPTY_ROUND), Box::new(empty_runtime))];
    let mut lines = vec![BenchLine {
        what: "empty runtime, 3 idle nodes".to_string(),
        rounds: Vec::new(),
        judged: None,
        model: Vec::new(),
    }];
    // Per line, the model alone driving the same exchange (none for the empty runtime).
    let mut models: Vec<Option<Line>> = vec![None];
    for s in subjects {
        measured.push((Length::Runs(s.runs), Box::new(move |seed| run(&s.scenario, seed).map(|_| ()))));
        let end = seed0_end(&s.scenario)?;
        models.push(Some((Length::Runs(s.runs), Box::new(move |_| model_alone(&s.scenario, end).map(|_| ())))));
        let judged = Some(judge(&s.scenario)?);
        lines.push(BenchLine { what: s.label.clone(), rounds: Vec::new(), judged, model: Vec::new() });
    }
    for _ in 0..rounds {
        for (((length, one), model), line) in measured.iter_mut().zip(&mut models).zip(&mut lines) {
            line.rounds.push(time_round(*length, one.as_mut())?);
            if let Some((length, one)) = model {
                line.model.push(time_round(*length, one.as_mut())?);
            }
        }
    }
    Ok(lines)
}

/// Runs `runs` seeds of `scenario` and nothing else: what to put under `perf record`.
pub fn profile(scenario: &Scenario, runs: u64) -> Result<Round, SimError> {
    time_round(Length::Runs(runs), &mut |seed| run(scenario, seed).map(|_| ()))
}

/// Runs the model alone ([`model_alone`]) `runs` times over `scenario`'s exchange up to the end
/// of its seed 0, and nothing else: the other side of the `× model` ratio, for `perf` or valgrind.
pub fn profile_model_alone(scenario: &Scenario, runs: u64) -> Result<Round, SimError> {
    let end = seed0_end(scenario)?;
    time_round(Length::Runs(runs), &mut |_| model_alone(scenario, end).map(|_| ()))
}

/// Prints the lines as a table: the median round, the range over rounds, each line's cost
/// relative to the empty runtime (medians), and for scenario lines the steps of seed 0 and the
/// oracles' share of a run.
pub fn print(lines: &[BenchLine]) {
    let base = lines.first().map(|l| l.runs_per_second()).unwrap_or(1.0);
    let rounds = lines.first().map_or(0, |l| l.rounds.len());
    println!(
        "{:<46} {:>6} {:>9} {:>17} {:>8} {:>11} {:>8} {:>11}",
        "what", "steps", "runs/s", "range", "× empty", "oracles µs", "of a run", "× model"
    );
    for l in lines {
        let rates = l.rates();
        let (low, high) = (rates.first().copied().unwrap_or(0.0), rates.last().copied().unwrap_or(0.0));
        let rate = l.runs_per_second();
        let (steps, oracles, share) = match l.judged {
            Some(j) => (
                j.steps.to_string(),
                format!("{:.0}", j.oracle_micros),
                format!("{:.0} %", j.oracle_micros * rate / 1e4),
            ),
            None => ("".to_string(), "".to_string(), "".to_string()),
        };
        let model = l.times_model().map_or(String::new(), |x| format!("{x:.1}× model"));
        println!(
            "{:<46} {:>6} {:>9.0} {:>17} {:>8.1} {:>11} {:>8} {:>11}",
            l.what,
            steps,
            rate,
            format!("{low:.0}–{high:.0}"),
            base / rate.max(1e-9),
            oracles,
            share,
            model
        );
    }
    let empty = EMPTY_ROUND.as_millis();
    println!(
        "(runs/s: the median of {rounds} round(s) of each line, rounds interleaved, one core, in {};",
        clock_name()
    );
    println!(" an empty-runtime round lasts {empty} ms; steps and oracles: seed 0's trace, judged repeatedly;");
    println!(" × model: the madsim-free Pair driving the same profiles, tools and calls to the same end, no faults;");
    println!(" timed, it moves with the machine's state: sim/bench/model-ratio.sh counts it in instructions)");
    if cfg!(debug_assertions) {
        println!("(debug build: use `cargo run --release -p mcpsim -- bench` for numbers worth quoting)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_clock_moves_by_less_than_a_scheduler_tick() {
        // A clock that moves only at a tick (4 ms at 250 Hz) would make a 30 ms round's rate
        // jump by a tenth; the first change of this one must be far finer.
        let Some(start) = thread_cpu_time() else { return };
        let mut now = start;
        while now == start {
            now = thread_cpu_time().expect("it was readable a moment ago");
        }
        assert!(now - start < Duration::from_micros(500), "the clock moved by {:?} at once", now - start);
    }

    #[test]
    fn the_rate_is_the_median_round() {
        let round = |runs, seconds| Round { runs, seconds };
        let line = BenchLine {
            what: "x".into(),
            rounds: vec![round(100, 1.0), round(100, 0.25), round(100, 0.5)],
            judged: None,
            model: vec![round(100, 0.1)],
        };
        assert_eq!(line.times_model(), Some(5.0));
        assert_eq!(line.rates(), vec![100.0, 200.0, 400.0]);
        assert_eq!(line.runs_per_second(), 200.0);
        let even =
            BenchLine { what: "x".into(), rounds: vec![round(100, 1.0), round(300, 1.0)], judged: None, model: vec![] };
        assert_eq!(even.times_model(), None);
        assert_eq!(even.runs_per_second(), 100.0);
    }

    #[test]
    fn every_line_gets_every_round_and_the_empty_runtime_is_timed_by_duration() {
        let scenario = Scenario::build("long-tool", "reference", "reference").expect("builds");
        let subject = Subject { label: "long".into(), scenario, runs: 2 };
        let lines = bench(&[subject], 3).expect("runs");
        assert_eq!(lines.len(), 2);
        assert!(lines.iter().all(|l| l.rounds.len() == 3), "{lines:?}");
        assert!(lines[1].rounds.iter().all(|r| r.runs == 2), "{lines:?}");
        assert!(lines[0].rounds.iter().all(|r| r.runs > 0), "{lines:?}");
        let judged = lines[1].judged.expect("a scenario line is judged");
        assert!(judged.steps > 10 && judged.oracle_micros > 0.0, "{judged:?}");
        assert!(lines[0].judged.is_none());
        assert!(lines[0].model.is_empty() && lines[1].model.len() == 3, "{lines:?}");
    }

    #[test]
    fn the_model_alone_drives_the_same_exchange_to_the_same_end() {
        let scenario = Scenario::build("long-tool", "reference", "reference").expect("builds");
        let trace = run(&scenario, 0).expect("runs").trace;
        let end = Instant(trace.steps.last().expect("steps").t);
        let steps = model_alone(&scenario, end).expect("the model runs");
        // The same calls and tool: the side effect ran once, the exchange took comparable steps.
        assert!(steps * 2 > trace.steps.len() && steps < trace.steps.len() * 2, "{steps} vs {}", trace.steps.len());
    }

    #[test]
    fn a_profile_runs_the_seeds_asked_for() {
        let scenario = Scenario::build("long-tool", "reference", "reference").expect("builds");
        assert_eq!(profile(&scenario, 3).expect("runs").runs, 3);
        assert_eq!(profile_model_alone(&scenario, 2).expect("runs").runs, 2);
    }
}
