//! `mcpsim run` and `mcpsim replay`: one seed, or one recorded trace, run again.

use super::{print_verdict, Exit, ScenarioArgs};
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{
    check_writable, first_difference, program, read_header, read_trace, recorded_scenario, scenario_in_header,
    shell_quote, write_file,
};
use crate::report::escape::control;
use crate::report::timeline;
use crate::studies::determinism::run_twice_at_once;
use std::path::Path;

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
    Ok(if print_verdict(&scenario, seed, &outcome, None) { Exit::Violated } else { Exit::Clean })
}

/// `mcpsim replay`: re-runs a recorded trace, prints its timeline, compares.
///
/// Exit status: 3 when the replay diverged from the recording; otherwise (identical, or just
/// re-recorded) the run's own: 1 when it violates an invariant, 0 when it violates none.
pub fn cmd_replay(path: &Path, quiet: bool, rerecord: bool) -> Result<Exit, SimError> {
    if rerecord {
        // From the header alone, so a trace of an older schema can be recorded again.
        let header = read_header(path)?;
        let scenario = scenario_in_header(path, &header)?;
        let outcome = run(&scenario, header.seed)?;
        let same = read_trace(path).ok().is_some_and(|old| first_difference(&old, &outcome.trace).is_none());
        if !same {
            write_file(path, &outcome.trace.to_jsonl())?;
        }
        println!("{} {}", if same { "unchanged:" } else { "re-recorded" }, path.display());
        return Ok(if outcome.violations.is_empty() { Exit::Clean } else { Exit::Violated });
    }
    let recorded = read_trace(path)?;
    let scenario = recorded_scenario(path, &recorded)?;
    let seed = recorded.header.seed;
    let outcome = run(&scenario, seed)?;
    if !quiet {
        print!("{}", control(&timeline::render(&outcome.trace)));
    }
    // Each invariant once, in the order it first broke, with how many times (`no-orphaned-session
    // ×5`): a replay of a run that broke one invariant five times says so in one word.
    let mut counted: Vec<(String, usize)> = Vec::new();
    for v in &outcome.violations {
        let name = v.invariant.to_string();
        match counted.iter_mut().find(|(n, _)| *n == name) {
            Some((_, k)) => *k += 1,
            None => counted.push((name, 1)),
        }
    }
    let verdict: Vec<String> = counted.into_iter().map(|(n, k)| if k > 1 { format!("{n} ×{k}") } else { n }).collect();
    println!(
        "verdict: {}",
        if verdict.is_empty() {
            "no invariant violated".to_string()
        } else {
            control(&verdict.join(", ")).into_owned()
        }
    );
    let verdict_exit = if outcome.violations.is_empty() { Exit::Clean } else { Exit::Violated };
    match first_difference(&recorded, &outcome.trace) {
        None => {
            println!("identical: the replay is byte-identical to {}", path.display());
            Ok(verdict_exit)
        }
        Some(_) if rerecord => {
            write_file(path, &outcome.trace.to_jsonl())?;
            println!("re-recorded {}", path.display());
            Ok(verdict_exit)
        }
        Some(diff) => {
            println!("DIVERGED from {}: {diff}", path.display());
            let quoted = shell_quote(&path.display().to_string());
            println!("if the model changed on purpose: {} replay --rerecord {quoted}", program());
            Ok(Exit::Diverged)
        }
    }
}
