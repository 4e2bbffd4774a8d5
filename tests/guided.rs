//! Coverage-guided exploration (`mcpsim explore --guided`, `mcpsim::studies::guided`): it finds a
//! known bug within a stated budget, it is deterministic, and the reference pair stays clean
//! inside the conditions of validity.

mod common;

use mcpsim::studies::guided::{explore_guided, Guided, GuidedReport, Progress};
use mcpsim::studies::search::Space;
use mcpsim::Scenario;

fn family(client: &str, server: &str, scenario: &str) -> Scenario {
    Scenario::build(scenario, client, server).expect("known profiles and family")
}

fn guided(base: &Scenario, space: &Space, budget: u64, rng_seed: u64, target: Option<&str>) -> GuidedReport {
    let config = Guided { budget, rng_seed, shrink: true, target: target.map(str::to_string) };
    let mut last = None;
    let report =
        explore_guided(base, space, &config, &mut |p: &Progress| last = Some(p.clone())).expect("the simulation runs");
    let last = last.expect("progress after every case");
    assert_eq!((last.cases, last.features), (report.cases, report.features));
    report
}

/// The second incident with the family's own 4-minute partition taken away: the exploration has
/// to plan a partition longer than the 100-event buffer takes to fill on its own.
fn second_incident_without_its_partition() -> Scenario {
    let mut base = family("reference", "silent-head", "chatty-tool");
    base.apply_overrides(&[("fault.partition".into(), "none".into())]).expect("a known key");
    base
}

/// About twice the most cases generator seeds 0..10 needed (measured with
/// `explore --all … --set fault.partition=none --guided --invariant no-silent-event-loss --no-shrink
/// --start-seed 0..=9`, most cases in brackets; docs/search.md, "The second incident's budget").
/// Seed 0, which this test runs, is the worst of them.
const SECOND_INCIDENT_BUDGET: u64 = 1_770; // [883]

#[test]
fn guided_finds_the_second_incident_without_the_familys_partition() {
    let base = second_incident_without_its_partition();
    let space = Space::for_scenario(&base);
    let report = guided(&base, &space, SECOND_INCIDENT_BUDGET, 0, Some("no-silent-event-loss"));
    let Some(found) = report.found else {
        panic!(
            "no no-silent-event-loss in {} guided cases ({} features, corpus {}); search again: cargo run --release \
             -p mcpsim -- explore {} --guided --invariant no-silent-event-loss --seeds {SECOND_INCIDENT_BUDGET}",
            report.cases,
            report.features,
            report.corpus,
            base.cli_args()
        )
    };
    assert_eq!(found.invariant, "no-silent-event-loss");
    assert!(found.minimal.breaks("no-silent-event-loss"), "{}", common::describe(&found.minimal));
    assert!(found.minimal.size() <= found.original.size());
    // The family alone (no fault left, no override) loses nothing: the shrunk case keeps something.
    let size = found.minimal.size();
    assert!(size.faults + size.overrides > 0, "{}", common::describe(&found.minimal));
}

#[test]
fn the_family_itself_is_the_first_case() {
    // The family's own plan breaks the invariant: the corpus starts from it, so it is case 1.
    let base = family("reference", "silent-head", "chatty-tool");
    let report = guided(&base, &Space::for_scenario(&base), 5, 0, Some("no-silent-event-loss"));
    assert_eq!(report.cases, 1);
    assert!(report.found.is_some());
}

#[test]
fn the_same_seed_explores_the_same_cases() {
    let base = family("naive", "reference", "long-tool");
    let space = Space::for_scenario(&base);
    // A target nobody breaks here, so the whole budget runs.
    let a = guided(&base, &space, 40, 7, Some("no-cross-session-delivery"));
    let b = guided(&base, &space, 40, 7, Some("no-cross-session-delivery"));
    assert!(a.found.is_none() && b.found.is_none());
    assert_eq!(a.cases, 40);
    assert_eq!((a.features, a.corpus, &a.growth), (b.features, b.corpus, &b.growth));
    assert_eq!(a.coverage.0, b.coverage.0);
    assert!(a.corpus > 1, "new features were found after the first case: {:?}", a.growth);
    let c = guided(&base, &space, 40, 8, Some("no-cross-session-delivery"));
    assert_ne!((a.features, &a.growth, &a.coverage.0), (c.features, &c.growth, &c.coverage.0));
}

#[test]
fn the_reference_pair_stays_safe_inside_the_conditions() {
    let base = family("reference", "reference", "long-tool");
    let cases = u64::from(common::cases(24));
    let report = guided(&base, &Space::within_conditions(&base), cases, 0, None);
    if let Some(found) = &report.found {
        panic!("broke {} inside the conditions:\n{}", found.invariant, common::describe(&found.minimal));
    }
    assert_eq!(report.cases, cases);
}
