//! The commands behind the `mcpsim` binary, as functions that return an exit status.
//!
//! Exit statuses: 0 no invariant violated (or replay identical), 1 an invariant violated,
//! 2 bad input (one line naming the problem), 3 a replay diverged from its recording, 4 the
//! simulator itself failed.

mod advise;
mod bench;
mod check;
mod dump;
mod explore;
mod matrix;
mod probe;
mod profiles;
mod progress;
mod run;
mod show;
mod sweep;

pub use advise::{cmd_advise, cmd_advise_tasks};
pub use bench::cmd_bench;
pub use check::{cmd_check, CheckArgs};
pub use dump::cmd_dump;
pub use explore::{cmd_explore, default_out_dir, ExploreArgs};
pub use matrix::{cmd_matrix, cmd_merge, MatrixArgs, MergeArgs};
pub use probe::{cmd_probe_client, cmd_probe_reality, cmd_probe_server, ServerExtras};
pub use profiles::{cmd_profiles, cmd_sources};
pub use run::{cmd_replay, cmd_run};
pub use show::cmd_show;
pub use sweep::cmd_sweep;

use crate::engine::runner::RunOutcome;
use crate::error::SimError;
use crate::report::artifacts::replay_command;
use crate::report::explain;
use crate::scenario::Scenario;
use crate::studies::shard::Shard;
use mcpsim_model::oracle::{Coverage, Violation, COVERAGE_EVENTS};
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::Trace;
use std::path::PathBuf;

pub use crate::scenario::ScenarioArgs;

/// `--shard K/N` and `--shard-out DIR`, as `explore`, `matrix`, `sweep` and `check` take them.
#[derive(Clone, Debug, Default)]
pub struct ShardArgs {
    /// `K/N`, when the command runs one shard.
    pub shard: Option<String>,
    /// Where the shard writes (default `shard-K-of-N`).
    pub out: Option<PathBuf>,
}

impl ShardArgs {
    /// The shard and its directory, or `None` for an unsharded run; `--shard-out` without
    /// `--shard` is bad input.
    pub fn parse(&self) -> Result<Option<(Shard, PathBuf)>, SimError> {
        match (&self.shard, &self.out) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(SimError::Usage("--shard-out needs --shard K/N".into())),
            (Some(text), out) => {
                let shard: Shard = text.parse()?;
                Ok(Some((shard, out.clone().unwrap_or_else(|| shard.default_dir()))))
            }
        }
    }
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// No invariant violated, or a replay identical to its recording.
    Clean = 0,
    /// An invariant was violated.
    Violated = 1,
    /// Bad input: an unknown name, a bad value, an unreadable file.
    BadInput = 2,
    /// A replay diverged from its recording.
    Diverged = 3,
    /// The simulation itself failed (a bug in mcpsim, not in the protocol under test).
    Internal = 4,
}

/// Prints a run's verdict; returns whether it violated anything. A violation comes with what
/// happened and why, explained for `pinned` (default: the first violation).
pub(crate) fn print_verdict(scenario: &Scenario, seed: u64, outcome: &RunOutcome, pinned: Option<&str>) -> bool {
    print!("{}", crate::report::escape::control(&verdict_text(scenario, seed, outcome, pinned)));
    !outcome.violations.is_empty()
}

/// The most violations of one invariant a verdict prints; the rest are counted. A client caught
/// in a loop can break one invariant thousands of times in a run.
const SHOWN_PER_INVARIANT: usize = 10;

/// `print_verdict`'s text.
pub fn verdict_text(scenario: &Scenario, seed: u64, outcome: &RunOutcome, pinned: Option<&str>) -> String {
    use std::fmt::Write;
    let end = outcome.trace.steps.last().map(|s| s.t).unwrap_or(0);
    let mut out = String::new();
    let (client, server, name) = (&scenario.client_label(), &scenario.server.name, &scenario.name);
    let (steps, simulated) = (outcome.trace.steps.len(), format_micros(end));
    if outcome.violations.is_empty() {
        let _ = writeln!(
            out,
            "ok: no invariant violated ({client} × {server} × {name}, seed {seed}, {steps} steps, {simulated} simulated)"
        );
        return out;
    }
    let _ =
        writeln!(out, "VIOLATED ({client} × {server} × {name}, seed {seed}, {steps} steps, {simulated} simulated):");
    let conditions = mcpsim_model::oracle::conditions::Conditions::judge(&outcome.trace);
    let mut shown: std::collections::BTreeMap<_, usize> = std::collections::BTreeMap::new();
    for v in &outcome.violations {
        let n = shown.entry(v.invariant).or_default();
        *n += 1;
        if *n <= SHOWN_PER_INVARIANT {
            let _ = writeln!(out, "  {} at {}: {} — {}", v.invariant, v.at, v.subject, v.detail);
            let _ = writeln!(out, "    conditions: {}", conditions.explain(v));
        }
    }
    for (invariant, n) in shown.into_iter().filter(|(_, n)| *n > SHOWN_PER_INVARIANT) {
        let more = n - SHOWN_PER_INVARIANT;
        let _ = writeln!(
            out,
            "  … and {more} more {invariant} violation(s) of this run, not shown (a trace lists every one)"
        );
    }
    let explained = outcome.violations.iter().find(|v| pinned.is_none_or(|p| v.invariant == p));
    out.push_str(&explanation_text(scenario, &outcome.trace, explained.or(outcome.violations.first())));
    let _ = writeln!(out, "rerun (same seed, same steps): {}", replay_command(scenario, seed));
    out
}

/// What happened and why, from the trace: each call's tool executions, and the chain of steps
/// that led to `violation`.
fn explanation_text(scenario: &Scenario, trace: &Trace, violation: Option<&Violation>) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let runs = explain::executions(trace);
    if !runs.is_empty() {
        out.push_str("what happened:\n");
        for e in &runs {
            let _ = writeln!(out, "  {}", e.sentence());
        }
    }
    let Some(v) = violation else { return out };
    let (chain, dropped) = crate::report::cause::cause_chain(&trace.steps, v.step);
    if chain.is_empty() {
        return out;
    }
    let _ = writeln!(out, "why (the steps that led to {} at {}):", v.invariant, v.at);
    if dropped > 0 {
        let _ = writeln!(out, "  ({dropped} earlier step(s) of the chain left out)");
    }
    for c in &chain {
        let _ = writeln!(out, "  {}", c.line());
    }
    let conditions = mcpsim_model::oracle::conditions::Conditions::judge(trace);
    match conditions.explain(v) {
        mcpsim_model::oracle::conditions::Explanation::ExplainedBy(breaches) => {
            // A termination, the server's pacing and the 2026-07-28 revision's lost requests are
            // no condition, but explain it alike.
            out.push_str(
                "what explains it (a design-note condition that broke, a termination, the server's pacing, \
                 or the 2026-07-28 revision's lost requests):\n",
            );
            for b in breaches {
                let _ = writeln!(out, "  {} (step {}, {})", b, b.step, b.at);
            }
        }
        // It names whose bug it is already.
        bug @ mcpsim_model::oracle::conditions::Explanation::Bug(_) => {
            let _ = writeln!(out, "conditions of validity: {bug}");
            if let mcpsim_model::oracle::conditions::Explanation::Bug(breaches) = &bug {
                out.push_str(&server_rules(scenario, breaches));
            }
        }
        unexplained => {
            let _ = writeln!(out, "conditions of validity: {unexplained}: a bug of the client or the server");
        }
    }
    out
}

/// For each server bug among `breaches` that one field of the server's profile models (its
/// replay rule, its event ids, its dropped events: `scenario::keeping`; its idle rule, named by
/// the breach itself: `Breach::rules`), that field's value in
/// the scenario's built-in server profile and the source it was read from: where to look in the
/// server, or which release moves past it.
fn server_rules(scenario: &Scenario, breaches: &[&mcpsim_model::oracle::conditions::Breach]) -> String {
    use mcpsim_model::profiles::{source_rows, Role};
    let mut out = String::new();
    // A server bug's fields, and the rules a breach names itself (work left running: the one
    // rule of the server's that left it).
    let mut keys: Vec<&str> = breaches
        .iter()
        .flat_map(|b| {
            let kept = if b.condition.is_server_bug() { crate::scenario::keeping(b.condition) } else { &[] };
            kept.iter().chain(b.rules).copied()
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        return out;
    }
    let name = &scenario.server.name;
    let rows = source_rows(Role::Server, name).and_then(Result::ok).unwrap_or_default();
    // The run's own values: a rule set for this run (`--set server.second_get=...`) is not the
    // profile's, whose source is then only what the profile would have done.
    let run = serde_json::to_value(&scenario.server).unwrap_or_default();
    for key in keys {
        let path = key.strip_prefix("server.").unwrap_or(key);
        let Some(row) = rows.iter().find(|r| r.path == path) else { continue };
        let source = row.source.as_deref().unwrap_or("no source given");
        let set = path.split('.').try_fold(&run, |v, part| v.get(part)).map(mcpsim_model::profiles::toml_value);
        match set.filter(|value| *value != row.value) {
            Some(value) => out.push_str(&format!(
                "  the server's rule behind it: {key} = {value}, set for this run (the {name} profile has {}: {source})\n",
                row.value
            )),
            None => out.push_str(&format!(
                "  the server's rule behind it: {key} = {} in the {name} profile ({source})\n",
                row.value
            )),
        }
    }
    out
}

/// Coverage totals: how often each "sometimes" event happened over the runs, zeros included.
pub(crate) fn print_coverage(runs: u64, coverage: &Coverage) {
    let counts: Vec<String> = COVERAGE_EVENTS.iter().map(|e| format!("{e}={}", coverage.get(*e))).collect();
    println!("coverage over {runs} run(s): {}", counts.join(" "));
    println!("  (times each event the runs should exercise happened over them; 0 = never reached)");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict `mcpsim run` prints for reference × `server` × `family` with `sets`, seed 0.
    fn verdict_of(family: &str, server: &str, sets: &[(&str, &str)]) -> String {
        let mut scenario = Scenario::build(family, "reference", server).expect("a built-in scenario");
        let sets: Vec<(String, String)> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        scenario.apply_overrides(&sets).expect("valid overrides");
        let outcome = crate::engine::runner::run(&scenario, 0).expect("the simulation runs");
        verdict_text(&scenario, 0, &outcome, None)
    }

    /// A server bug that one field of the server's profile models is printed with that field,
    /// its value and the source it was read from (rmcp's replay that includes the named event);
    /// with the field set to the spec's rule, the bug is gone.
    #[test]
    fn a_server_bug_names_the_profile_field_behind_it_and_its_source() {
        let verdict = |replay: Option<&str>| {
            let mut sets = vec![("server.retention", "unbounded"), ("fault.partition", "30s..40s")];
            sets.extend(replay.map(|r| ("server.replay", r)));
            verdict_of("chatty-tool", "rmcp", &sets)
        };
        let text = verdict(None);
        assert!(text.contains("a server bug: the server resumed a stream"), "{text}");
        assert!(
            text.contains("the server's rule behind it: server.replay = \"from\" in the rmcp profile (rmcp 3.11.0"),
            "{text}"
        );
        let fixed = verdict(Some("after"));
        assert!(!fixed.contains("rule behind it"), "{fixed}");
    }

    /// A busy session's expiry (rmcp's worker expires a session whose quiet tool outlasts its
    /// 5 min keep-alive) prints the idle rule behind it, read from the rmcp profile; with the
    /// reference server's rule the session is held and nothing is printed.
    /// A server rule set for the run (`--set server.second_get=end-session`) is printed with the
    /// run's value, the profile's value and source beside it: the profile's alone would name the
    /// 409 the TypeScript transport answers, not the rule that ended the session.
    #[test]
    fn a_server_rule_set_for_the_run_is_printed_with_the_runs_value() {
        let mut scenario = Scenario::build("long-tool", "ts-sdk", "ts-sdk").expect("a built-in scenario");
        let sets: Vec<(String, String)> = [
            ("server.dead_stream", "on-write"),
            ("lb", "{ idle_timeout = \"60s\", cut_mode = \"client-side\" }"),
            ("client.request_timeout", "none"),
            ("server.second_get", "end-session"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        scenario.apply_overrides(&sets).expect("valid overrides");
        let outcome = crate::engine::runner::run(&scenario, 0).expect("the simulation runs");
        let text = verdict_text(&scenario, 0, &outcome, None);
        assert!(
            text.contains(
                "the server's rule behind it: server.second_get = \"end-session\", set for this run (the ts-sdk \
                 profile has \"reject409\": @modelcontextprotocol/sdk 1.32.2"
            ),
            "{text}"
        );
        assert!(!text.contains("server.second_get = \"reject409\" in the ts-sdk profile"), "{text}");
    }

    #[test]
    fn a_busy_sessions_expiry_names_the_servers_idle_rule() {
        let verdict = |rule: Option<&str>| {
            let mut sets = vec![
                ("tool.duration", "400s"),
                ("tool.event_interval", "none"),
                ("server.keepalive", "none"),
                ("lb.idle_timeout", "none"),
            ];
            sets.extend(rule.map(|r| ("server.idle_rule", r)));
            verdict_of("long-tool", "rmcp", &sets)
        };
        let busy = verdict(None);
        assert!(busy.contains("as idle while its tool still ran for call0"), "{busy}");
        assert!(
            busy.contains(
                "the server's rule behind it: server.idle_rule = \"last-request\" in the rmcp profile (rmcp 3.11.0"
            ),
            "{busy}"
        );
        let held = verdict(Some("never-while-busy"));
        assert!(!held.contains("rule behind it"), "{held}");
    }

    /// A tool left running after its client's `DELETE` (TypeScript aborts the handler's signal,
    /// and the family's tool ignores it) prints as work left running, with the server's DELETE
    /// rule and its source; a tool that checks the signal (`tool.on_abort = stop`) stops, and
    /// nothing is printed.
    #[test]
    fn work_left_running_names_the_servers_delete_rule() {
        let ignored = verdict_of("delete-during-tool", "ts-sdk", &[]);
        assert!(ignored.contains("unexplained: work left running: the server ended session"), "{ignored}");
        assert!(
            ignored.contains(
                "the server's rule behind it: server.delete_running_tool = \"abort-signal\" in the ts-sdk profile"
            ),
            "{ignored}"
        );
        let checked = verdict_of("delete-during-tool", "ts-sdk", &[("tool.on_abort", "stop")]);
        assert!(!checked.contains("work left running") && !checked.contains("rule behind it"), "{checked}");
    }

    /// A run that breaks one invariant many times prints the first few of them and counts the
    /// rest, whatever their number; another invariant's violations are still printed.
    #[test]
    fn a_verdict_prints_the_first_violations_of_each_invariant_and_counts_the_rest() {
        let scenario = Scenario::build("long-tool", "naive", "reference").expect("a built-in scenario");
        let mut outcome = crate::engine::runner::run(&scenario, 0).expect("the simulation runs");
        let first = outcome.violations.first().cloned().expect("the naive client's duplicate at seed 0");
        let other = Violation { invariant: mcpsim_model::oracle::InvariantId::BoundedReconnects, ..first.clone() };
        outcome.violations = vec![first.clone(); 25];
        outcome.violations.push(other);
        let text = verdict_text(&scenario, 0, &outcome, None);
        let printed = |name: &str| text.lines().filter(|l| l.starts_with(&format!("  {name} at "))).count();
        assert_eq!(printed(first.invariant.name()), SHOWN_PER_INVARIANT, "{text}");
        assert_eq!(printed("bounded-reconnects"), 1, "{text}");
        let more = format!("  … and {} more {} violation(s)", 25 - SHOWN_PER_INVARIANT, first.invariant);
        assert!(text.lines().any(|l| l.starts_with(&more)), "{text}");
    }
}
