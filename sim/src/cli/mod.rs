//! The commands behind the `mcpsim` binary, as functions that return an exit status.
//!
//! Exit statuses: 0 no invariant violated (or replay identical), 1 an invariant violated,
//! 2 bad input (one line naming the problem), 3 a replay diverged from its recording, 4 the
//! simulator itself failed.

use crate::engine::runner::{run, RunOutcome};
use crate::error::SimError;
use crate::report::timeline;
use crate::scenario::{self, parse_override, Scenario, SETTINGS};
use crate::studies::search;
use mcpsim_model::oracle::{self, by_name, Coverage, COVERAGE_EVENTS, INVARIANTS};
use mcpsim_model::profiles;
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::{fnv1a, step_line, Trace, FNV_OFFSET};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant as WallClock;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Clean = 0,
    Violated = 1,
    BadInput = 2,
    Diverged = 3,
    /// The simulation itself failed (a bug in mcpsim, not in the protocol under test).
    Internal = 4,
}

/// The scenario a command names: profiles, family and overrides.
#[derive(Clone, Debug)]
pub struct ScenarioArgs {
    pub client: String,
    pub server: String,
    pub scenario: String,
    /// `key=value` overrides, in order.
    pub sets: Vec<String>,
}

impl ScenarioArgs {
    /// Builds and validates the scenario before anything runs.
    pub fn build(&self) -> Result<Scenario, SimError> {
        let mut s = Scenario::build(&self.scenario, &self.client, &self.server)?;
        let overrides = self.sets.iter().map(|t| parse_override(t)).collect::<Result<Vec<_>, _>>()?;
        s.apply_overrides(&overrides)?;
        Ok(s)
    }
}

/// How the user invokes this binary, for the commands we print: `cargo run` from a checkout,
/// `mcpsim` once installed.
pub fn program() -> String {
    let exe = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    if exe.contains("/target/release/") {
        "cargo run --release -p mcpsim --".to_string()
    } else if exe.contains("/target/debug/") {
        "cargo run -p mcpsim --".to_string()
    } else {
        "mcpsim".to_string()
    }
}

/// The command that re-runs one seed of a scenario.
pub fn replay_command(scenario: &Scenario, seed: u64) -> String {
    format!("{} run {} --seed {seed}", program(), scenario.cli_args())
}

/// Prints a run's verdict; returns whether it violated anything.
fn print_verdict(scenario: &Scenario, seed: u64, outcome: &RunOutcome) -> bool {
    let end = outcome.trace.steps.last().map(|s| s.t).unwrap_or(0);
    if outcome.violations.is_empty() {
        println!(
            "ok: no invariant violated ({} × {} × {}, seed {seed}, {} steps, {} simulated)",
            scenario.client.name,
            scenario.server.name,
            scenario.name,
            outcome.trace.steps.len(),
            format_micros(end)
        );
        return false;
    }
    println!(
        "VIOLATED ({} × {} × {}, seed {seed}, {} steps, {} simulated):",
        scenario.client.name,
        scenario.server.name,
        scenario.name,
        outcome.trace.steps.len(),
        format_micros(end)
    );
    for v in &outcome.violations {
        println!("  {} at {}: {} — {}", v.invariant, v.at, v.subject, v.detail);
    }
    println!("replay: {}", replay_command(scenario, seed));
    true
}

pub fn write_file(path: &Path, text: &str) -> Result<(), SimError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir)
            .map_err(|e| SimError::Io { path: dir.display().to_string(), problem: e.to_string() })?;
    }
    fs::write(path, text).map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })
}

/// Fails early, before any run, if `path` cannot be written.
pub fn check_writable(path: &Path) -> Result<(), SimError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| SimError::Io { path: dir.display().to_string(), problem: e.to_string() })?;
    if dir.metadata().map(|m| m.permissions().readonly()).unwrap_or(true) {
        return Err(SimError::Io { path: dir.display().to_string(), problem: "directory is not writable".into() });
    }
    Ok(())
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

/// `mcpsim run`.
pub fn cmd_run(
    args: &ScenarioArgs,
    seed: u64,
    trace: Option<&Path>,
    check_determinism: bool,
) -> Result<Exit, SimError> {
    let scenario = args.build()?;
    if let Some(p) = trace {
        check_writable(p)?;
    }
    let outcome = if check_determinism {
        let (outcome, difference) = run_twice_at_once(&scenario, seed)?;
        match difference {
            None => println!("determinism: two runs of seed {seed} at once gave byte-identical traces"),
            Some(diff) => {
                println!("determinism BROKEN for seed {seed}: {diff}");
                return Ok(Exit::Diverged);
            }
        }
        outcome
    } else {
        run(&scenario, seed)?
    };
    if let Some(p) = trace {
        write_file(p, &outcome.trace.to_jsonl())?;
        println!("trace: {}", p.display());
    }
    Ok(if print_verdict(&scenario, seed, &outcome) { Exit::Violated } else { Exit::Clean })
}

/// The file name a found counterexample is saved under: invariant, profiles, family and a short
/// hash of seed, overrides and steps (two counterexamples of one family differ in one of those).
pub fn trace_file_name(scenario: &Scenario, invariant: &str, seed: u64, trace: &Trace) -> String {
    let (digest, _) = trace.digest();
    let mut h = fnv1a(FNV_OFFSET, &seed.to_le_bytes());
    h = fnv1a(h, scenario.cli_args().as_bytes());
    h = fnv1a(h, digest.as_bytes());
    format!("{invariant}--{}--{}--{}--{:08x}.jsonl", scenario.client.name, scenario.server.name, scenario.name, h >> 32)
}

/// The flags of `mcpsim explore`.
#[derive(Clone, Debug)]
pub struct ExploreArgs {
    /// Seeds to run, or with `search` the case budget.
    pub seeds: u64,
    /// First seed, or with `search` the generator's seed.
    pub start_seed: u64,
    pub out: PathBuf,
    /// Generated cases (`search::search`) instead of the scenario's seeds.
    pub search: bool,
    /// With `search`: stay inside the design note's conditions of validity.
    pub within_conditions: bool,
    /// Only this invariant counts.
    pub invariant: Option<String>,
    /// Shrink what is found before saving it.
    pub shrink: bool,
}

/// `mcpsim explore`: seeds in order (or generated cases) until the first violation, which is
/// shrunk, saved and printed with the command that replays it.
pub fn cmd_explore(args: &ScenarioArgs, explore: &ExploreArgs) -> Result<Exit, SimError> {
    let scenario = args.build()?;
    let target = explore.invariant.as_deref();
    if let Some(t) = target.filter(|t| by_name(t).is_none()) {
        return Err(SimError::Usage(format!("unknown invariant {t:?} (see `mcpsim profiles`)")));
    }
    if explore.within_conditions && !explore.search {
        return Err(SimError::Usage("--within-conditions needs --search".into()));
    }
    check_writable(&explore.out.join("probe"))?;
    let started = WallClock::now();
    let (found, runs, coverage) = if explore.search {
        explore_cases(&scenario, explore, target)?
    } else {
        explore_seeds(&scenario, explore, target)?
    };
    let secs = started.elapsed().as_secs_f64();
    let Some(found) = found else {
        let what = if explore.search { "generated case(s)" } else { "seed(s)" };
        println!(
            "no violation in {runs} {what} from {} of {} ({secs:.2}s, {:.0} runs/s)",
            explore.start_seed,
            scenario.cli_args(),
            runs as f64 / secs.max(1e-9)
        );
        print_coverage(runs, &coverage);
        return Ok(Exit::Clean);
    };
    let minimal = &found.minimal;
    let path =
        explore.out.join(trace_file_name(&minimal.scenario, found.invariant, minimal.seed, &minimal.outcome.trace));
    write_file(&path, &minimal.outcome.trace.to_jsonl())?;
    print_verdict(&minimal.scenario, minimal.seed, &minimal.outcome);
    let what = if explore.search { "case(s)" } else { "seed(s)" };
    println!("found {} after {runs} {what} ({secs:.2}s wall, shrinking included)", found.invariant);
    if explore.shrink {
        println!("shrunk in {} run(s): {} → {}", found.shrink_runs, found.original.size(), minimal.size());
    } else {
        println!("not shrunk (--no-shrink): {}", minimal.size());
    }
    if let Some(e) = &found.shrink_error {
        eprintln!("warning: a shrinking candidate failed to simulate (skipped): {e}");
    }
    println!("trace: {}", path.display());
    println!("timeline: {} replay {}", program(), path.display());
    print_coverage(runs, &coverage);
    Ok(Exit::Violated)
}

/// `explore` over the scenario's seeds: the first violation, shrunk by `search::shrink_fixed`.
fn explore_seeds(
    scenario: &Scenario,
    explore: &ExploreArgs,
    target: Option<&str>,
) -> Result<(Option<search::Found>, u64, Coverage), SimError> {
    let started = WallClock::now();
    let mut last_report = started;
    let mut coverage = Coverage::new();
    for (i, seed) in (explore.start_seed..explore.start_seed.saturating_add(explore.seeds)).enumerate() {
        let outcome = run(scenario, seed)?;
        coverage.merge(&oracle::coverage(&outcome.trace));
        if let Some(invariant) = search::pinned_invariant(&outcome.violations, target) {
            let original = search::Counterexample { scenario: scenario.clone(), seed, outcome };
            let family = Scenario::build(&scenario.name, &scenario.client.name, &scenario.server.name)?;
            let (minimal, shrink_runs) = if explore.shrink {
                search::shrink_fixed(&family, &original, invariant)?
            } else {
                (original.clone(), 0)
            };
            let found = search::Found { invariant, original, minimal, shrink_runs, shrink_error: None };
            return Ok((Some(found), i as u64 + 1, coverage));
        }
        if last_report.elapsed().as_secs_f64() >= 2.0 {
            last_report = WallClock::now();
            let rate = (i + 1) as f64 / started.elapsed().as_secs_f64();
            eprintln!("  explored {}/{} seeds ({rate:.0} runs/s)", i + 1, explore.seeds);
        }
    }
    Ok((None, explore.seeds, coverage))
}

/// `explore --search`: generated cases, shrunk by proptest and then `search::shrink_fixed`.
fn explore_cases(
    scenario: &Scenario,
    explore: &ExploreArgs,
    target: Option<&str>,
) -> Result<(Option<search::Found>, u64, Coverage), SimError> {
    let space = if explore.within_conditions {
        search::Space::within_conditions(scenario)
    } else {
        search::Space::for_scenario(scenario)
    };
    let budget = u32::try_from(explore.seeds).map_err(|_| SimError::Usage("--seeds is too large".into()))?;
    let report = search::search_for(scenario, &space, budget, explore.start_seed, explore.shrink, target)?;
    Ok((report.found, report.cases, report.coverage))
}

/// Coverage totals: how often each "sometimes" event happened over the runs, zeros included.
fn print_coverage(runs: u64, coverage: &Coverage) {
    let counts: Vec<String> = COVERAGE_EVENTS.iter().map(|e| format!("{e}={}", coverage.get(e))).collect();
    println!("coverage over {runs} run(s): {}", counts.join(" "));
}

/// Reads and validates a trace file.
pub fn read_trace(path: &Path) -> Result<Trace, SimError> {
    let text = fs::read_to_string(path)
        .map_err(|e| SimError::Io { path: path.display().to_string(), problem: e.to_string() })?;
    Trace::parse(&text).map_err(|source| SimError::Trace { path: path.display().to_string(), source })
}

/// The scenario recorded in a trace header.
pub fn recorded_scenario(path: &Path, trace: &Trace) -> Result<Scenario, SimError> {
    let value = trace.header.scenario.get("scenario").cloned().ok_or_else(|| SimError::BadScenario {
        path: path.display().to_string(),
        problem: "no \"scenario\" field".into(),
    })?;
    serde_json::from_value(value)
        .map_err(|e| SimError::BadScenario { path: path.display().to_string(), problem: e.to_string() })
}

/// Where two traces first differ, in words; `None` if their steps and footers are identical.
pub fn first_difference(recorded: &Trace, replayed: &Trace) -> Option<String> {
    for (i, (a, b)) in recorded.steps.iter().zip(&replayed.steps).enumerate() {
        if a != b {
            // The timeline rounds times to the millisecond: show the raw lines when it hides the
            // difference.
            let (mut ra, mut rb) = (timeline::line(a), timeline::line(b));
            if ra == rb {
                (ra, rb) = (step_line(a), step_line(b));
            }
            return Some(format!("step {i} differs:\n  recorded: {ra}\n  replayed: {rb}"));
        }
    }
    if recorded.steps.len() != replayed.steps.len() {
        return Some(format!("recorded {} steps, replayed {}", recorded.steps.len(), replayed.steps.len()));
    }
    if recorded.footer != replayed.footer {
        return Some("same steps but a different verdict (the oracles changed)".to_string());
    }
    None
}

/// `mcpsim replay`: re-runs a recorded trace, prints its timeline, compares.
pub fn cmd_replay(path: &Path, quiet: bool, rerecord: bool) -> Result<Exit, SimError> {
    let recorded = read_trace(path)?;
    let scenario = recorded_scenario(path, &recorded)?;
    let seed = recorded.header.seed;
    let outcome = run(&scenario, seed)?;
    if !quiet {
        print!("{}", timeline::render(&outcome.trace));
    }
    let verdict: Vec<String> = outcome.violations.iter().map(|v| v.invariant.to_string()).collect();
    println!("verdict: {}", if verdict.is_empty() { "no invariant violated".to_string() } else { verdict.join(", ") });
    match first_difference(&recorded, &outcome.trace) {
        None => {
            println!("identical: the replay is byte-identical to {}", path.display());
            Ok(Exit::Clean)
        }
        Some(_) if rerecord => {
            write_file(path, &outcome.trace.to_jsonl())?;
            println!("re-recorded {}", path.display());
            Ok(Exit::Clean)
        }
        Some(diff) => {
            println!("DIVERGED from {}: {diff}", path.display());
            println!("if the model changed on purpose: {} replay --rerecord {}", program(), path.display());
            Ok(Exit::Diverged)
        }
    }
}

/// `mcpsim profiles`.
pub fn cmd_profiles() -> Result<Exit, SimError> {
    println!("clients:");
    for n in profiles::CLIENT_NAMES {
        println!("  {n:<12} {}", profiles::describe(n));
    }
    println!("servers:");
    for n in profiles::SERVER_NAMES {
        println!("  {n:<12} {}", profiles::describe(n));
    }
    println!("scenarios:");
    for n in scenario::SCENARIO_NAMES {
        println!("  {n:<12} {}", scenario::describe(n));
    }
    println!("invariants:");
    for i in INVARIANTS {
        println!("  {:<26} {}", i.name, i.description);
    }
    let families: Vec<Scenario> = scenario::SCENARIO_NAMES
        .iter()
        .map(|n| Scenario::build(n, "reference", "reference"))
        .collect::<Result<_, _>>()?;
    println!("settable keys (--set key=value), with defaults for the reference profiles:");
    print!("  {:<26}", "key");
    for f in &families {
        print!(" {:<14}", f.name);
    }
    println!(" meaning");
    for s in SETTINGS {
        print!("  {:<26}", s.key);
        for f in &families {
            print!(" {:<14}", (s.show)(f));
        }
        println!(" {}", s.help);
    }
    Ok(Exit::Clean)
}

/// Default directory for found counterexamples.
pub fn default_out_dir() -> PathBuf {
    PathBuf::from("traces/found")
}

/// `mcpsim bench`.
pub fn cmd_bench(runs: u64, rounds: u32) -> Result<Exit, SimError> {
    if runs == 0 {
        return Err(SimError::Usage("--runs must be at least 1".into()));
    }
    if rounds == 0 {
        return Err(SimError::Usage("--rounds must be at least 1".into()));
    }
    let scenarios = [
        Scenario::build("long-tool", "reference", "reference")?,
        Scenario::build("chatty-tool", "reference", "reference")?,
    ];
    crate::studies::bench::print(&crate::studies::bench::bench(&scenarios, runs, rounds)?);
    Ok(Exit::Clean)
}

/// `mcpsim show`: a trace as a sequence diagram.
pub fn cmd_show(
    path: &Path,
    format: crate::report::diagram::Format,
    collapse: bool,
    max_rows: Option<usize>,
    output: Option<&Path>,
) -> Result<Exit, SimError> {
    let trace = read_trace(path)?;
    if let Some(out) = output {
        check_writable(out)?;
    }
    let opts = crate::report::diagram::DiagramOptions { collapse, max_rows };
    let drawing = crate::report::diagram::render(&trace, format, &opts);
    match output {
        Some(out) => {
            write_file(out, &drawing)?;
            println!("wrote {}", out.display());
        }
        None => print!("{drawing}"),
    }
    Ok(Exit::Clean)
}

/// The flags of `mcpsim matrix`.
#[derive(Clone, Debug)]
pub struct MatrixArgs {
    pub clients: Vec<String>,
    pub servers: Vec<String>,
    pub scenarios: Vec<String>,
    pub seeds: u64,
    pub format: String,
    pub mitigate: Option<String>,
    pub jobs: Option<usize>,
    pub doc: Option<PathBuf>,
    pub traces: PathBuf,
}

/// `mcpsim matrix`.
pub fn cmd_matrix(args: &MatrixArgs) -> Result<Exit, SimError> {
    use crate::studies::matrix::{self, MatrixSpec};
    let mut spec = MatrixSpec::everything(args.seeds);
    let pick = |given: &[String], all: Vec<String>| if given.is_empty() { all } else { given.to_vec() };
    spec.clients = pick(&args.clients, spec.clients.clone());
    spec.servers = pick(&args.servers, spec.servers.clone());
    spec.scenarios = pick(&args.scenarios, spec.scenarios.clone());
    if let Some(j) = args.jobs {
        spec.jobs = j.max(1);
    }
    if args.seeds == 0 {
        return Err(SimError::Usage("--seeds must be at least 1".into()));
    }
    spec.mitigation = args.mitigate.as_deref().map(matrix::mitigation).transpose()?;
    let render: fn(&[matrix::CellResult]) -> String = match args.format.as_str() {
        "md" | "markdown" => matrix::to_markdown,
        "csv" => matrix::to_csv,
        "json" => matrix::to_json,
        other => return Err(SimError::Usage(format!("unknown format {other:?} (use md, csv or json)"))),
    };
    if let Some(doc) = &args.doc {
        check_writable(doc)?;
        check_writable(&args.traces.join("probe"))?;
    }
    let results = matrix::run_matrix(&spec, true)?;
    print!("{}", render(&results));
    if let Some(doc) = &args.doc {
        matrix::write_doc(&spec, &results, doc, &args.traces)?;
        println!("wrote {}", doc.display());
    }
    let broken = results.iter().any(|r| !r.violations.is_empty());
    Ok(if broken { Exit::Violated } else { Exit::Clean })
}

/// `mcpsim sweep`.
pub fn cmd_sweep(
    args: &ScenarioArgs,
    vary: &[String],
    opts: &crate::studies::sweep::SweepOptions,
) -> Result<Exit, SimError> {
    let base = args.build()?;
    let report = crate::studies::sweep::sweep(&base, vary, opts, &run)?;
    print!("{}", crate::studies::sweep::render_report(&report));
    if let Some(csv) = &opts.csv {
        println!("csv: {}", csv.display());
    }
    if let Some(plot) = &opts.plot {
        println!("plot: {}", plot.display());
    }
    Ok(Exit::Clean)
}

/// `mcpsim advise`: flags are the load balancer idle timeout, the event rate and the outage;
/// with `retention`, the longest outage that retention survives instead.
pub fn cmd_advise(
    args: &ScenarioArgs,
    flags: [Option<String>; 3],
    retention: Option<&str>,
    verify: bool,
    seeds: u64,
) -> Result<Exit, SimError> {
    use crate::studies::advise;
    let mut scenario = args.build()?;
    let [lb_idle, event_rate, max_outage] = flags;
    if retention.is_some() && (verify || max_outage.is_some()) {
        return Err(SimError::Usage(
            "--retention asks for the longest outage; it does not combine with --max-outage or --verify".into(),
        ));
    }
    let input = advise::AdviseInput::from_scenario(&scenario).with_flags(
        lb_idle.as_deref(),
        event_rate.as_deref(),
        max_outage.as_deref(),
    )?;
    if let Some(n) = retention {
        scenario.apply_overrides(&[("server.retention".into(), n.into())])?;
        // Outages in 100 ms steps, up to an hour: finer than any reconnect delay of the profiles.
        let (step, until) = (std::time::Duration::from_millis(100), std::time::Duration::from_secs(3600));
        let longest = advise::longest_outage(&scenario, &input, step, until);
        print!("{}", advise::render_longest(&scenario, &input, &longest));
        return Ok(Exit::Clean);
    }
    let advice = advise::advise(&scenario, &input);
    print!("{}", advise::render(&advice));
    if verify {
        let opts = advise::VerifyOptions { seeds, margin: 5, jobs: 0, program: program() };
        let report = advise::verify(&scenario, &advice, &opts, &run)?;
        print!("{}", advise::render_verify(&report));
    }
    Ok(Exit::Clean)
}
