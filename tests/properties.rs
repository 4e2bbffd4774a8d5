//! Property tests: generated cases (`mcpsim::studies::search`, the same strategies `mcpsim explore
//! --search` uses) against client × server pairs.
//!
//! - Safe pairs: inside the design note's conditions of validity no invariant breaks, and the
//!   cases reach what their family exists to exercise (a search that never cuts a connection
//!   proves nothing).
//! - Unsafe pairs: the search must find the known violation within a stated number of cases.
//!
//! `PROPTEST_CASES=N` runs N cases per safe property instead of the default (24); below 8 the
//! coverage part of those properties is not judged, only their safety.

mod common;

use mcpsim::report::artifacts::first_difference;
use mcpsim::scenario::ScenarioArgs;
use mcpsim::studies::search::{search, search_for, Found, Space};
use mcpsim::{run, Scenario};

/// Cases per safe property: small enough for CI, large enough to cut, resume and restart.
const DEFAULT_CASES: u32 = 24;

/// Below this many cases the coverage part of a safety property is not judged: a handful of
/// generated cases may honestly miss a rare event (two properties did at 7). The safety part is
/// judged at any count.
const COVERAGE_FLOOR: u32 = 8;

/// The generator seed every property starts from (`--start-seed` of `explore --search`).
const GENERATOR_SEED: u64 = 0;

fn family(client: &str, server: &str, scenario: &str) -> Scenario {
    Scenario::build(scenario, client, server).expect("known profiles and family")
}

/// The command that repeats a search.
fn explore_command(base: &Scenario, cases: u32, within_conditions: bool, invariant: Option<&str>) -> String {
    let within = if within_conditions { " --within-conditions" } else { "" };
    let invariant = invariant.map(|i| format!(" --invariant {i}")).unwrap_or_default();
    format!(
        "cargo run --release -p mcpsim -- explore --all {} --search{within}{invariant} --seeds {cases} --start-seed \
         {GENERATOR_SEED}",
        base.cli_args()
    )
}

/// Inside the conditions of validity, `client` × `server` breaks nothing on `scenario`, and the
/// cases reach, for each group of `must_reach`, at least one of its coverage events.
fn assert_safe(client: &str, server: &str, scenario: &str, must_reach: &[&[&str]]) {
    let base = family(client, server, scenario);
    let cases = common::cases(DEFAULT_CASES);
    let report =
        search(&base, &Space::within_conditions(&base), cases, GENERATOR_SEED, true).expect("the simulation runs");
    if let Some(found) = &report.found {
        panic!(
            "{client} × {server} × {scenario} broke {} inside the conditions of validity (case {} of {cases}, shrunk \
             from {}):\n{}\nsearch again: {}",
            found.invariant,
            report.cases,
            found.original.size(),
            common::describe(&found.minimal),
            explore_command(&base, cases, true, None)
        );
    }
    assert_eq!(report.cases, u64::from(cases));
    if cases < COVERAGE_FLOOR {
        eprintln!("{client} × {server} × {scenario}: coverage not judged below {COVERAGE_FLOOR} cases ({cases} run)");
        return;
    }
    for any_of in must_reach {
        assert!(
            any_of.iter().any(|event| report.coverage.get(event.parse().expect("a coverage event name")) > 0),
            "{client} × {server} × {scenario}: {cases} cases never reached {any_of:?}, so their clean verdicts say \
             nothing about it; coverage: {:?}",
            report.coverage.0
        );
    }
}

#[test]
fn reference_pair_is_safe_on_long_tool() {
    assert_safe(
        "reference",
        "reference",
        "long-tool",
        &[&["lb-idle-cut"], &["resume-replayed", "resume-attached"], &["retry-honoured"]],
    );
}

#[test]
fn reference_pair_is_safe_on_chatty_tool() {
    assert_safe("reference", "reference", "chatty-tool", &[&["resume-replayed"], &["retry-honoured"]]);
}

#[test]
fn reference_pair_is_safe_on_standalone_notify() {
    assert_safe("reference", "reference", "standalone-notify", &[&["resume-replayed"], &["lb-idle-cut"]]);
}

#[test]
fn reference_pair_is_safe_on_resume_after_completion() {
    assert_safe("reference", "reference", "resume-after-completion", &[&["resume-replayed"]]);
}

#[test]
fn reference_pair_is_safe_on_server_restart_without_the_restart() {
    // Within the conditions the family's restart is removed (condition 2 cannot hold across an
    // in-memory server's restart): what is left is a long tool with keep-alives and cuts.
    assert_safe("reference", "reference", "server-restart", &[&["resume-replayed", "resume-attached"]]);
}

/// A pair known to break an invariant on a family, and the most cases the search may need.
struct Unsafe {
    client: &'static str,
    server: &'static str,
    scenario: &'static str,
    invariant: &'static str,
    within: u32,
}

/// Budgets are about twice the most cases any of generator seeds 0..20 needed (measured with
/// `explore --all --search --invariant NAME --no-shrink --start-seed 0..=19`, most cases in
/// brackets; 2026-12-05, after the server's own stream closes joined the space); the test runs seed 0, and
/// the search is deterministic.
const UNSAFE: &[Unsafe] = &[
    // The first incident: a reset is fatal, the naive client re-initializes and re-sends.
    Unsafe {
        client: "naive",
        server: "reference",
        scenario: "long-tool",
        invariant: "no-duplicate-execution",
        within: 16, // [8]
    },
    // The second incident: an evicted Last-Event-ID resumes silently at the head.
    Unsafe {
        client: "reference",
        server: "silent-head",
        scenario: "chatty-tool",
        invariant: "no-silent-event-loss",
        within: 270, // [134]
    },
    Unsafe {
        client: "naive",
        server: "reference",
        scenario: "server-restart",
        invariant: "no-duplicate-execution",
        within: 12, // [3]
    },
    Unsafe {
        client: "reference",
        server: "ts-sdk",
        scenario: "standalone-notify",
        invariant: "no-silent-event-loss",
        within: 20, // [9]
    },
    Unsafe {
        client: "ts-sdk",
        server: "reference",
        scenario: "server-restart",
        invariant: "no-orphaned-session",
        within: 12, // [3]
    },
    // The silent-head answer on a finished stream used to make the reference client resume again
    // and again without ever resolving the call (every-call-resolves); since the reference client
    // resolves a call as unknown outcome after 3 unhonourable resumes in a row it no longer does.
    // The counterexample stays in the corpus, recorded with the earlier policy in its header:
    // traces/every-call-resolves--reference--silent-head--chatty-tool--4d4900bb.jsonl.
];

fn find(u: &Unsafe, shrink: bool) -> (Scenario, Found) {
    let base = family(u.client, u.server, u.scenario);
    let space = Space::for_scenario(&base);
    let report =
        search_for(&base, &space, u.within, GENERATOR_SEED, shrink, Some(u.invariant)).expect("the simulation runs");
    let Some(found) = report.found else {
        panic!(
            "{} × {} × {}: no {} in {} cases; coverage {:?}\nsearch again: {}",
            u.client,
            u.server,
            u.scenario,
            u.invariant,
            u.within,
            report.coverage.0,
            explore_command(&base, u.within, false, Some(u.invariant))
        );
    };
    assert_eq!(found.invariant, u.invariant);
    assert!(report.cases <= u64::from(u.within));
    (base, found)
}

#[test]
fn the_search_finds_every_known_unsafe_pair_within_its_budget() {
    for u in UNSAFE {
        let (_, found) = find(u, false);
        assert!(found.original.breaks(u.invariant), "{}", common::describe(&found.original));
    }
}

/// The minimal counterexample still breaks the same invariant, is no bigger than the original,
/// and replays from its command line (overrides and seed) step for step.
fn assert_shrunk(found: &Found) {
    let minimal = &found.minimal;
    assert!(minimal.breaks(found.invariant), "{}", common::describe(minimal));
    assert!(minimal.size() <= found.original.size(), "{} → {}", found.original.size(), minimal.size());
    let args = ScenarioArgs {
        client: minimal.scenario.client.name.clone(),
        server: minimal.scenario.server.name.clone(),
        scenario: minimal.scenario.name.clone(),
        sets: minimal.scenario.overrides.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    };
    let rerun = run(&args.build().expect("the command line parses"), minimal.seed).expect("the simulation runs");
    assert_eq!(first_difference(&minimal.outcome.trace, &rerun.trace), None, "{}", common::describe(minimal));
}

#[test]
fn the_first_incident_shrinks_to_the_bare_family() {
    let (_, found) = find(&UNSAFE[0], true);
    assert_shrunk(&found);
    // Neither a fault nor a parameter is needed: the load balancer's idle cut does it all.
    let size = found.minimal.size();
    assert_eq!((size.faults, size.overrides), (0, 0), "{}", common::describe(&found.minimal));
}

#[test]
fn the_second_incident_shrinks_to_the_one_long_partition() {
    let (_, found) = find(&UNSAFE[1], true);
    assert_shrunk(&found);
    let size = found.minimal.size();
    assert_eq!(size.faults, 1, "{}", common::describe(&found.minimal));
    let partition = &found.minimal.scenario.faults.faults()[0];
    assert_eq!(partition.fault.kind(), "partition");
    // Longer than the 100-event buffer takes to fill at one event a second.
    assert!(partition.fault.duration().as_secs() > 100, "{partition}");
}
