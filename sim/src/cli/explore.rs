//! `mcpsim explore`: seeds or generated cases until the first violation, shrunk and saved.

use super::{print_coverage, print_verdict, Exit, ScenarioArgs};
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{check_writable, quoted_cli_args, replay_file_command, trace_file_name, write_file};
use crate::scenario::Scenario;
use crate::studies::{guided, search};
use mcpsim_model::oracle::{self, by_name, Coverage};
use std::path::PathBuf;
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
    if explore.within_conditions && !explore.search && !explore.guided {
        return Err(SimError::Usage("--within-conditions needs --search or --guided".into()));
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
    check_writable(&explore.out.join("probe"))?;
    let started = WallClock::now();
    let (found, runs, coverage) = if explore.guided {
        let (within, seeds, seed) = (explore.within_conditions, explore.seeds, explore.start_seed);
        guided::explore_guided_reporting(&scenario, within, seeds, seed, explore.shrink, target)?
    } else if explore.search {
        explore_cases(&scenario, explore, target)?
    } else {
        explore_seeds(&scenario, explore, target)?
    };
    let secs = started.elapsed().as_secs_f64();
    let Some(found) = found else {
        let what = if explore.search || explore.guided { "generated case(s)" } else { "seed(s)" };
        println!(
            "no violation in {runs} {what} from {} of {} ({secs:.2}s, {:.0} runs/s)",
            explore.start_seed,
            quoted_cli_args(&scenario),
            runs as f64 / secs.max(1e-9)
        );
        print_coverage(runs, &coverage);
        return Ok(Exit::Clean);
    };
    let minimal = &found.minimal;
    let path =
        explore.out.join(trace_file_name(&minimal.scenario, found.invariant, minimal.seed, &minimal.outcome.trace));
    write_file(&path, &minimal.outcome.trace.to_jsonl())?;
    print_verdict(&minimal.scenario, minimal.seed, &minimal.outcome, Some(found.invariant));
    let what = if explore.search || explore.guided { "case(s)" } else { "seed(s)" };
    println!("found {} after {runs} {what} ({secs:.2}s wall, shrinking included)", found.invariant);
    if !explore.shrink {
        println!("not shrunk (--no-shrink): {}", minimal.size());
    } else if found.original.size() != minimal.size() {
        println!("shrunk in {} run(s): {} → {}", found.shrink_runs, found.original.size(), minimal.size());
    }
    if let Some(e) = &found.shrink_error {
        eprintln!("warning: a shrinking candidate failed to simulate (skipped): {e}");
    }
    println!("trace: {}", path.display());
    println!("replay the trace (timeline, byte-for-byte check): {}", replay_file_command(&path));
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
    let seeds = (0..explore.seeds).map_while(|i| explore.start_seed.checked_add(i));
    let mut ran = 0u64;
    for (i, seed) in seeds.enumerate() {
        ran += 1;
        let outcome = run(scenario, seed)?;
        coverage.merge(&oracle::coverage(&outcome.trace));
        if let Some(invariant) = search::pinned_invariant(&outcome.violations, target) {
            let original = search::Counterexample { scenario: scenario.clone(), seed, outcome };
            let arg = |a: &Option<String>, name: &str| a.clone().unwrap_or_else(|| name.to_string());
            let family = Scenario::build(
                &arg(&scenario.scenario_arg, &scenario.name),
                &arg(&scenario.client_arg, &scenario.client.name),
                &arg(&scenario.server_arg, &scenario.server.name),
            )?;
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
    Ok((None, ran, coverage))
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

/// Default directory for found counterexamples.
pub fn default_out_dir() -> PathBuf {
    PathBuf::from("traces/found")
}
