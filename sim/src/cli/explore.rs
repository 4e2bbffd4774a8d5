//! `mcpsim explore`: seeds or generated cases until the first violation, shrunk and saved.

use super::{print_coverage, verdict_text, Exit, ScenarioArgs, ShardArgs};
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{
    check_writable, program, quoted_cli_args, replay_file_command, trace_file_name, write_file,
};
use crate::report::escape::control;
use crate::scenario::Scenario;
use crate::studies::shard::{self, Shard};
use crate::studies::{determinism, guided, search};
use mcpsim_model::oracle::conditions::Condition;
use mcpsim_model::oracle::{self, by_name, Coverage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant as WallClock;

/// The flags of `mcpsim explore`.
#[derive(Clone, Debug)]
pub struct ExploreArgs {
    /// Seeds to run, or with `search` the case budget.
    pub seeds: u64,
    /// First seed, or with `search` the generator's seed.
    pub start_seed: u64,
    /// Where a found counterexample's trace is saved.
    pub out: PathBuf,
    /// Generated cases (`search::search`) instead of the scenario's seeds.
    pub search: bool,
    /// Coverage-guided cases (`guided::explore_guided`) instead of the scenario's seeds.
    pub guided: bool,
    /// With `search`: stay inside the design note's conditions of validity.
    pub within_conditions: bool,
    /// With `search` or `guided`: swarm testing over fault kinds and workload parts
    /// (`search::Space::swarm`).
    pub swarm: bool,
    /// With `search` or `guided`: the fault kinds cases draw (`search::Space::with_fault_kinds`);
    /// empty: the space's default.
    pub fault_kinds: Vec<String>,
    /// Stop at any violation (`--all`); otherwise only at one no broken condition explains.
    pub all: bool,
    /// Only this invariant counts.
    pub invariant: Option<String>,
    /// Invariants whose violations count for nothing (`--ignore`).
    pub ignore: Vec<String>,
    /// Shrink what is found before saving it.
    pub shrink: bool,
    /// Run only this shard's block of seeds and write it for `mcpsim merge`.
    pub shard: ShardArgs,
}

/// `mcpsim explore`: seeds in order (or generated cases) until the first violation, which is
/// shrunk, saved and printed with the command that replays it.
pub fn cmd_explore(args: &ScenarioArgs, explore: &ExploreArgs) -> Result<Exit, SimError> {
    let scenario = args.build()?;
    let target = explore.invariant.as_deref();
    if let Some(t) = target.filter(|t| by_name(t).is_none()) {
        return Err(SimError::Usage(format!("unknown invariant {t:?} (see `mcpsim profiles`)")));
    }
    for name in &explore.ignore {
        if by_name(name).is_none() {
            return Err(SimError::Usage(format!("--ignore: unknown invariant {name:?} (see `mcpsim profiles`)")));
        }
        if target == Some(name.as_str()) {
            return Err(SimError::Usage(format!("--invariant {name} and --ignore {name} exclude each other")));
        }
    }
    if explore.within_conditions && !explore.search && !explore.guided {
        return Err(SimError::Usage("--within-conditions needs --search or --guided".into()));
    }
    if explore.swarm && !explore.search && !explore.guided {
        return Err(SimError::Usage("--swarm needs --search or --guided".into()));
    }
    if !explore.fault_kinds.is_empty() && !explore.search && !explore.guided {
        return Err(SimError::Usage("--fault-kinds needs --search or --guided".into()));
    }
    if !explore.search && explore.seeds > 0 && explore.start_seed.checked_add(explore.seeds - 1).is_none() {
        return Err(SimError::Usage(format!(
            "--start-seed {} with --seeds {} goes past the last seed, {}: at most {} seed(s) from there",
            explore.start_seed,
            explore.seeds,
            u64::MAX,
            u64::MAX - explore.start_seed + 1
        )));
    }
    if let Some((shard, dir)) = explore.shard.parse()? {
        return explore_shard(args, &scenario, explore, target, shard, &dir);
    }
    check_writable(&explore.out.join("probe"))?;
    let started = WallClock::now();
    let hunt = explore.hunt();
    let search::Explored { found, runs, steps, coverage, explained } = if explore.guided {
        let (space, seeds, seed) = (explore.space(&scenario)?, explore.seeds, explore.start_seed);
        guided::explore_guided_reporting(&scenario, &space, seeds, seed, explore.shrink, target)?
    } else if explore.search {
        explore_cases(&scenario, explore, target)?
    } else {
        explore_seeds(&scenario, explore.start_seed, explore.seeds, explore.shrink, target, hunt)?
    };
    let secs = started.elapsed().as_secs_f64();
    print_explained(&explained, runs, &explore.ignore, explore.all);
    print_over_budget(explained.over_budget)?;
    print_refused(&explained);
    let what = if explore.search || explore.guided { "generated case(s)" } else { "seed(s)" };
    let Some(found) = found else {
        let which = passed_over(&explained, explore.all);
        print_none(Ran { runs, steps, secs }, what, explore.start_seed, &scenario, &coverage, which);
        return Ok(Exit::Clean);
    };
    let summary = Summary::of(&found);
    let path = explore.out.join(&summary.trace);
    write_file(&path, &found.minimal.outcome.trace.to_jsonl())?;
    let what = if explore.search || explore.guided { "case(s)" } else { "seed(s)" };
    print_found(&summary, &path, runs, what, secs, explore.shrink, &coverage);
    warn_unless_it_replays(&found)?;
    Ok(Exit::Violated)
}

impl ExploreArgs {
    /// The search space `--search` and `--guided` draw from.
    fn space(&self, scenario: &Scenario) -> Result<search::Space, SimError> {
        let space = match self.within_conditions {
            true => search::Space::within_conditions(scenario),
            false => search::Space::for_scenario(scenario),
        };
        let space = space.hunting(self.hunt()).swarming(self.swarm);
        match self.fault_kinds.is_empty() {
            true => Ok(space),
            false => space.with_fault_kinds(&self.fault_kinds),
        }
    }

    /// Which violations stop the exploration.
    fn hunt(&self) -> search::Hunt {
        let hunt = if self.all { search::Hunt::ALL } else { search::Hunt::UNEXPLAINED };
        // The names were checked in `cmd_explore`.
        self.ignore.iter().filter_map(|name| by_name(name)).fold(hunt, |h, i| h.ignoring(i.id))
    }
}

/// How many runs broke only invariants a broken condition of validity explains, or only
/// invariants set aside with `--ignore` (they did not stop the exploration).
fn print_explained(explained: &search::Passed, runs: u64, ignored: &[String], all: bool) {
    if explained.runs == 0 {
        return;
    }
    let aside = format!("set aside (--ignore {})", ignored.join(","));
    let why = match (all, ignored.is_empty()) {
        (true, _) => aside,
        (false, true) => "explained by a broken condition of validity".to_string(),
        (false, false) => format!("explained by a broken condition of validity or {aside}"),
    };
    let all_hint = if all || !ignored.is_empty() { "" } else { "; --all stops at any violation" };
    println!("{} of {runs} run(s) broke only invariants {why} (counted, not stopped at{all_hint})", explained.runs);
    if !explained.by.is_empty() {
        println!("  explained by (a run may count under several), with the settings each depends on:");
    }
    for (condition, n) in &explained.by {
        let keys = crate::scenario::keeping(*condition);
        let settings = if keys.is_empty() { String::new() } else { format!(" — {}", keys.join(", ")) };
        println!("  {n:>7}  {}{settings}", condition.label());
    }
}

/// How many generated cases ran into the step budget: not judged, and how to run them whole.
fn print_over_budget(cases: u64) -> Result<(), SimError> {
    if cases > 0 {
        let budget = crate::engine::runner::Budget::from_env()?.max_steps;
        println!(
            "{cases} generated case(s) reached the step budget ({budget} steps) and were left unjudged; \
             {}=N runs them longer",
            crate::engine::runner::MAX_STEPS_VAR
        );
    }
    Ok(())
}

/// How many generated cases the scenario refused to be built with, and the first reason.
fn print_refused(passed: &search::Passed) {
    if passed.refused > 0 {
        println!(
            "{} generated case(s) were refused by the scenario and passed over (first: {}); the family's own settings bound what the search draws",
            passed.refused,
            passed.refused_first.as_deref().unwrap_or("no reason given")
        );
    }
}

/// What `explore` prints of a counterexample, and the name of its trace file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Summary {
    /// The shrunk case's verdict, explanation and rerun command.
    verdict: String,
    invariant: String,
    original: String,
    minimal: String,
    shrink_runs: u64,
    shrink_error: Option<String>,
    /// The trace's file name (in `--out`).
    trace: String,
}

impl Summary {
    fn of(found: &search::Found) -> Summary {
        let minimal = &found.minimal;
        Summary {
            verdict: verdict_text(&minimal.scenario, minimal.seed, &minimal.outcome, Some(found.invariant)),
            invariant: found.invariant.to_string(),
            original: found.original.size().to_string(),
            minimal: minimal.size().to_string(),
            shrink_runs: found.shrink_runs,
            shrink_error: found.shrink_error.clone(),
            trace: trace_file_name(&minimal.scenario, found.invariant, minimal.seed, &minimal.outcome.trace),
        }
    }
}

/// The word for the violations still hunted, once some runs were passed over: "unexplained"
/// ones, or with `--all` (only invariants set aside passed over) the "other" ones.
fn passed_over(explained: &search::Passed, all: bool) -> &'static str {
    match (explained.runs > 0, all) {
        (false, _) => "",
        (true, false) => "unexplained ",
        (true, true) => "other ",
    }
}

/// How many runs an exploration made, the steps they simulated (0: not counted, a shard written
/// before they were) and the seconds they took.
#[derive(Clone, Copy)]
struct Ran {
    runs: u64,
    steps: u64,
    secs: f64,
}

impl Ran {
    /// `1.55s, 1292 runs/s, 212 steps per run, 274k steps/s`: the steps say how heavy the runs
    /// were, so a search's runs per second can be read against plain seeds'.
    fn rates(&self) -> String {
        let Ran { runs, steps, secs } = *self;
        let per_sec = |n: u64| n as f64 / secs.max(1e-9);
        let mut text = format!("{secs:.2}s, {:.0} runs/s", per_sec(runs));
        if steps > 0 && runs > 0 {
            let per_run = steps as f64 / runs as f64;
            text += &format!(", {per_run:.0} steps per run, {:.0}k steps/s", per_sec(steps) / 1000.0);
        }
        text
    }
}

/// The end of an `explore` that found nothing: no violation at all, or none but those a broken
/// condition explains (`explained` runs broke only those).
fn print_none(ran: Ran, what: &str, start_seed: u64, scenario: &Scenario, coverage: &Coverage, which: &str) {
    println!(
        "no {which}violation in {} {what} from {start_seed} of {} ({})",
        ran.runs,
        control(&quoted_cli_args(scenario)),
        ran.rates()
    );
    print_coverage(ran.runs, coverage);
}

/// The end of an `explore` that found a counterexample, its trace saved at `path`.
fn print_found(s: &Summary, path: &Path, runs: u64, what: &str, secs: f64, shrink: bool, coverage: &Coverage) {
    print!("{}", control(&s.verdict));
    println!("found {} after {runs} {what} ({secs:.2}s wall, shrinking included)", s.invariant);
    if !shrink {
        println!("not shrunk (--no-shrink): {}", s.minimal);
    } else if s.original != s.minimal {
        println!("shrunk in {} run(s): {} → {}", s.shrink_runs, s.original, s.minimal);
    }
    if let Some(e) = &s.shrink_error {
        eprintln!("warning: a shrinking candidate failed to simulate (skipped): {e}");
    }
    println!("trace: {}", path.display());
    println!("replay the trace (timeline, byte-for-byte check): {}", replay_file_command(path));
    print_coverage(runs, coverage);
}

/// The counterexample ran after many others in this process; its replay command runs it alone and
/// must give the same bytes. A warning on stderr where it does not (a determinism bug of mcpsim).
fn warn_unless_it_replays(found: &search::Found) -> Result<(), SimError> {
    let minimal = &found.minimal;
    if let Some(difference) = determinism::replays_alone(&minimal.scenario, minimal.seed, &minimal.outcome.trace)? {
        eprintln!(
            "warning: run alone, this counterexample gives other steps than in the exploration (a determinism \
             bug in mcpsim; please report it with the trace): {difference}"
        );
    }
    Ok(())
}

/// What every shard of one sharded `explore` must share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ExploreQuestion {
    client: String,
    server: String,
    scenario: String,
    sets: Vec<String>,
    seeds: u64,
    start_seed: u64,
    invariant: Option<String>,
    shrink: bool,
    /// `--all` (absent in shards written before the conditions: they stopped at any violation).
    #[serde(default = "yes")]
    all: bool,
    /// `--ignore` (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ignore: Vec<String>,
}

fn yes() -> bool {
    true
}

/// One shard's block of seeds: how many ran (up to its first counterexample), what they covered,
/// and the counterexample, its trace beside the shard file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ExplorePart {
    first_seed: u64,
    seeds: u64,
    runs: u64,
    coverage: BTreeMap<String, u32>,
    found: Option<Summary>,
    secs: f64,
    /// Runs that broke only invariants a broken condition explains (absent in shards written
    /// before it was counted).
    #[serde(default)]
    explained: u64,
    /// Of those, how many each broken condition explains (absent in shards written before).
    #[serde(default)]
    explained_by: BTreeMap<Condition, u64>,
    /// Steps the runs simulated (absent in shards written before they were counted).
    #[serde(default)]
    steps: u64,
}

/// `explore --shard K/N`: the K-th of N consecutive blocks of the seeds, explored up to its
/// first counterexample. The first counterexample in seed order is in the first shard that
/// found one, so `merge` needs nothing of the shards after it.
fn explore_shard(
    args: &ScenarioArgs,
    scenario: &Scenario,
    explore: &ExploreArgs,
    target: Option<&str>,
    shard: Shard,
    dir: &Path,
) -> Result<Exit, SimError> {
    if explore.search || explore.guided {
        return Err(SimError::Usage(
            "--shard splits seeds: --search and --guided are one sequential search each (run N of them with \
             different --start-seed instead)"
                .into(),
        ));
    }
    check_writable(&dir.join(shard::file_name("explore")))?;
    let (first, count) = shard.block(explore.start_seed, explore.seeds);
    let started = WallClock::now();
    let search::Explored { found, runs, steps, coverage, explained } =
        explore_seeds(scenario, first, count, explore.shrink, target, explore.hunt())?;
    let summary = found.as_ref().map(Summary::of);
    if let (Some(found), Some(s)) = (&found, &summary) {
        write_file(&dir.join(&s.trace), &found.minimal.outcome.trace.to_jsonl())?;
        warn_unless_it_replays(found)?;
    }
    let part = ExplorePart {
        first_seed: first,
        seeds: count,
        runs,
        coverage: coverage.0.iter().map(|(e, n)| (e.to_string(), *n)).collect(),
        found: summary,
        secs: started.elapsed().as_secs_f64(),
        explained: explained.runs,
        explained_by: explained.by,
        steps,
    };
    let question = ExploreQuestion {
        client: args.client.clone(),
        server: args.server.clone(),
        scenario: args.scenario.clone(),
        sets: args.sets.clone(),
        seeds: explore.seeds,
        start_seed: explore.start_seed,
        invariant: explore.invariant.clone(),
        shrink: explore.shrink,
        all: explore.all,
        ignore: explore.ignore.clone(),
    };
    let path = shard::write_shard(dir, "explore", shard, &question, &part)?;
    let verdict = part.found.as_ref().map_or("none violated".to_string(), |f| format!("{} found", f.invariant));
    eprintln!("shard {shard}: seeds {first}.. ({runs} of {count} run, {verdict}) → {}", path.display());
    eprintln!("when every shard is done: {} merge DIR... [--out DIR]", program());
    Ok(if part.found.is_some() { Exit::Violated } else { Exit::Clean })
}

/// `mcpsim merge` of an `explore --shard K/N` run: what the unsharded `explore` prints, its
/// counterexample's trace copied into `out`. Only the wall-clock figures differ (the shards'
/// seconds added up).
pub(crate) fn merge_explore(dirs: &[PathBuf], out: &Path) -> Result<Exit, SimError> {
    let what = "profiles, scenario, seeds, invariant or shrinking";
    let (q, parts) = shard::read_shards::<ExploreQuestion, ExplorePart>(dirs, "explore", what)?;
    let args = ScenarioArgs { client: q.client, server: q.server, scenario: q.scenario, sets: q.sets };
    let scenario = args.build()?;
    let (mut runs, mut steps, mut secs, mut coverage) = (0u64, 0u64, 0f64, Coverage::new());
    let mut explained = search::Passed::default();
    let mut expected = q.start_seed;
    for (shard, dir, part) in &parts {
        if (part.first_seed, part.seeds) != shard.block(q.start_seed, q.seeds) || part.first_seed != expected {
            return Err(SimError::Usage(format!("merge: shard {shard} ran other seeds than its block")));
        }
        expected = part.first_seed.wrapping_add(part.seeds);
        runs += part.runs;
        steps += part.steps;
        secs += part.secs;
        explained.add(&search::Passed { runs: part.explained, by: part.explained_by.clone(), ..Default::default() });
        let mut covered = BTreeMap::new();
        for (name, n) in &part.coverage {
            let event = name.parse().map_err(|_| SimError::Usage(format!("merge: unknown coverage event {name:?}")))?;
            covered.insert(event, *n);
        }
        coverage.merge(&Coverage(covered));
        let Some(found) = &part.found else {
            if part.runs != part.seeds {
                return Err(SimError::Usage(format!("merge: shard {shard} stopped early without a counterexample")));
            }
            continue;
        };
        check_writable(&out.join("probe"))?;
        let source = dir.join(&found.trace);
        let text = std::fs::read_to_string(&source)
            .map_err(|e| SimError::Io { path: source.display().to_string(), problem: e.to_string() })?;
        let path = out.join(&found.trace);
        write_file(&path, &text)?;
        print_explained(&explained, runs, &q.ignore, q.all);
        print_found(found, &path, runs, "seed(s)", secs, q.shrink, &coverage);
        return Ok(Exit::Violated);
    }
    print_explained(&explained, runs, &q.ignore, q.all);
    let which = passed_over(&explained, q.all);
    print_none(Ran { runs, steps, secs }, "seed(s)", q.start_seed, &scenario, &coverage, which);
    Ok(Exit::Clean)
}

/// `explore` over the scenario's seeds: the first violation, shrunk by `search::shrink_fixed`.
fn explore_seeds(
    scenario: &Scenario,
    first: u64,
    count: u64,
    shrink: bool,
    target: Option<&str>,
    hunt: search::Hunt,
) -> Result<search::Explored, SimError> {
    let started = WallClock::now();
    let mut explained = search::Passed::default();
    let mut last_report = started;
    let mut coverage = Coverage::new();
    let seeds = (0..count).map_while(|i| first.checked_add(i));
    let (mut ran, mut steps) = (0u64, 0u64);
    for (i, seed) in seeds.enumerate() {
        ran += 1;
        let outcome = run(scenario, seed)?;
        steps += outcome.trace.steps.len() as u64;
        coverage.merge(&oracle::coverage(&outcome.trace));
        if let Some(invariant) = hunt.pinned(&outcome, target) {
            let original = search::Counterexample { scenario: scenario.clone(), seed, outcome };
            let arg = |a: &Option<String>, name: &str| a.clone().unwrap_or_else(|| name.to_string());
            let family = Scenario::build(
                &arg(&scenario.scenario_arg, &scenario.name),
                &arg(&scenario.client_arg, &scenario.client.name),
                &arg(&scenario.server_arg, &scenario.server.name),
            )?;
            let (minimal, shrink_runs) =
                if shrink { search::shrink_fixed(&family, &original, invariant, hunt)? } else { (original.clone(), 0) };
            let found = search::Found { invariant, original, minimal, shrink_runs, shrink_error: None };
            return Ok(search::Explored { found: Some(found), runs: i as u64 + 1, steps, coverage, explained });
        }
        explained.count(hunt, &outcome);
        if last_report.elapsed().as_secs_f64() >= 2.0 {
            last_report = WallClock::now();
            let rate = (i + 1) as f64 / started.elapsed().as_secs_f64();
            eprintln!("  explored {}/{count} seeds ({rate:.0} runs/s)", i + 1);
        }
    }
    Ok(search::Explored { found: None, runs: ran, steps, coverage, explained })
}

/// `explore --search`: generated cases, shrunk by proptest and then `search::shrink_fixed`.
fn explore_cases(
    scenario: &Scenario,
    explore: &ExploreArgs,
    target: Option<&str>,
) -> Result<search::Explored, SimError> {
    let space = explore.space(scenario)?;
    let budget = u32::try_from(explore.seeds).map_err(|_| SimError::Usage("--seeds is too large".into()))?;
    let report = search::search_for(scenario, &space, budget, explore.start_seed, explore.shrink, target)?;
    Ok(report.into())
}

/// Default directory for found counterexamples.
pub fn default_out_dir() -> PathBuf {
    PathBuf::from("traces/found")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_long_tool() -> ScenarioArgs {
        ScenarioArgs { client: "naive".into(), server: "reference".into(), scenario: "long-tool".into(), sets: vec![] }
    }

    fn explore(ignore: &[&str], invariant: Option<&str>, out: &Path) -> ExploreArgs {
        ExploreArgs {
            seeds: 1,
            start_seed: 0,
            out: out.to_path_buf(),
            search: false,
            guided: false,
            within_conditions: false,
            swarm: false,
            fault_kinds: vec![],
            all: true,
            invariant: invariant.map(str::to_string),
            ignore: ignore.iter().map(|s| s.to_string()).collect(),
            shrink: false,
            shard: ShardArgs::default(),
        }
    }

    #[test]
    fn ignore_takes_known_invariants_other_than_the_one_hunted() {
        // Removed when dropped (at the end of the test, also when it panics); `out` is made by the run.
        let tmp = tempfile::Builder::new().prefix("mcpsim-explore-ignore-").tempdir().unwrap();
        let out = tmp.path().join("out");
        let bad = cmd_explore(&naive_long_tool(), &explore(&["no-such-invariant"], None, &out));
        assert!(matches!(&bad, Err(SimError::Usage(m)) if m.contains("--ignore: unknown invariant")), "{bad:?}");
        let both = explore(&["no-orphaned-session"], Some("no-orphaned-session"), &out);
        let both = cmd_explore(&naive_long_tool(), &both);
        assert!(matches!(&both, Err(SimError::Usage(m)) if m.contains("exclude each other")), "{both:?}");
        // Seed 0 of the first incident breaks no-duplicate-execution first; set aside, what it
        // broke besides is found, or nothing.
        let hunt = explore(&["no-duplicate-execution"], None, &out).hunt();
        assert!(hunt.ignores(mcpsim_model::oracle::InvariantId::NoDuplicateExecution) && !hunt.unexplained_only);
        let found = cmd_explore(&naive_long_tool(), &explore(&["no-duplicate-execution"], None, &out)).unwrap();
        let names: Vec<String> = std::fs::read_dir(&out)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        assert!(names.iter().all(|n| !n.starts_with("no-duplicate-execution")), "{names:?}");
        assert_eq!(found == Exit::Violated, names.iter().any(|n| n.ends_with(".jsonl")), "{found:?} {names:?}");
    }
}
