//! Coverage ("sometimes" properties): each scenario family must reach the events it exists to
//! exercise, or its clean verdicts say nothing. A family whose idle cut never happens, whose
//! partition never forces a resume, whose restart never re-initializes a session fails here.
//!
//! `MCPSIM_SEEDS=N` sweeps N seeds per family instead of the default; `MCPSIM_SEED=K` only K.

mod common;

use mcpsim::scenario::{parse_override, SCENARIO_NAMES};
use mcpsim::{run, Scenario};
use mcpsim_model::oracle::{coverage, Coverage};

const DEFAULT_SEEDS: u64 = 8;

/// A family run with a pair (and overrides), and the events it must reach: for each group, at
/// least one of the events in it.
struct Expect {
    scenario: &'static str,
    client: &'static str,
    server: &'static str,
    sets: &'static [&'static str],
    reach: &'static [&'static [&'static str]],
}

const EXPECTED: &[Expect] = &[
    Expect {
        scenario: "long-tool",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["lb-idle-cut"], &["resume-replayed", "resume-attached"]],
    },
    Expect {
        scenario: "long-tool",
        client: "naive",
        server: "reference",
        sets: &[],
        reach: &[&["lb-idle-cut"], &["session-reinitialized"], &["duplicate-execution"]],
    },
    Expect {
        scenario: "chatty-tool",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["gap-reported"], &["resume-attached"]],
    },
    Expect {
        scenario: "chatty-tool",
        client: "reference",
        server: "silent-head",
        sets: &[],
        reach: &[&["silent-resume"]],
    },
    Expect {
        scenario: "standalone-notify",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["resume-replayed"], &["lb-idle-cut"]],
    },
    // The reference server counts a running tool as activity: the session outlives the cut.
    Expect {
        scenario: "expire-during-tool",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["resume-replayed"]],
    },
    // The SDK servers count requests only: the session expires under the running tool.
    Expect {
        scenario: "expire-during-tool",
        client: "reference",
        server: "ts-sdk",
        sets: &[],
        reach: &[&["session-expired"], &["session-reinitialized"], &["unknown-outcome"]],
    },
    Expect {
        scenario: "server-restart",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["session-reinitialized"], &["unknown-outcome"]],
    },
    // An idempotent tool is simply run again in the new session: the restart is survived.
    Expect {
        scenario: "server-restart",
        client: "reference",
        server: "reference",
        sets: &["tool.idempotent=true"],
        reach: &[&["session-reinitialized"], &["server-restart-survived"]],
    },
    Expect {
        scenario: "delete-during-tool",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["session-deleted"], &["unknown-outcome"]],
    },
    Expect {
        scenario: "two-sessions-same-request-id",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["request-id-shared"], &["resume-replayed"]],
    },
    Expect {
        scenario: "resume-after-completion",
        client: "reference",
        server: "reference",
        sets: &[],
        reach: &[&["resume-replayed"]],
    },
];

fn scenario(e: &Expect) -> Scenario {
    let mut s = Scenario::build(e.scenario, e.client, e.server).expect("known family and profiles");
    let sets: Vec<_> = e.sets.iter().map(|t| parse_override(t).expect("a valid override")).collect();
    s.apply_overrides(&sets).expect("valid values");
    s
}

/// Sweeps the seeds of `e` and returns the problems: unreached event groups, each with the
/// command that replays the sweep's first seed.
fn check(e: &Expect) -> Vec<String> {
    let s = scenario(e);
    let seeds = common::seeds(DEFAULT_SEEDS);
    let mut total = Coverage::new();
    for &seed in &seeds {
        let outcome = run(&s, seed).unwrap_or_else(|err| panic!("{err}\nreplay: {}", common::replay(&s, seed)));
        total.merge(&coverage(&outcome.trace));
    }
    e.reach
        .iter()
        .filter(|any_of| any_of.iter().all(|event| total.get(event.parse().expect("a coverage event name")) == 0))
        .map(|any_of| {
            format!(
                "{}: {} seed(s) never reached {any_of:?} (coverage {:?})\nreplay: {}",
                s.cli_args(),
                seeds.len(),
                total.0,
                common::replay(&s, seeds.first().copied().unwrap_or(0))
            )
        })
        .collect()
}

#[test]
fn every_family_has_expectations() {
    for name in SCENARIO_NAMES {
        assert!(EXPECTED.iter().any(|e| e.scenario == *name), "no coverage expectation for {name}");
    }
    for e in EXPECTED {
        assert!(SCENARIO_NAMES.contains(&e.scenario), "{} is no family", e.scenario);
        assert!(!e.reach.is_empty());
    }
}

#[test]
fn every_family_reaches_what_it_exists_to_exercise() {
    let problems: Vec<String> = EXPECTED.iter().flat_map(check).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
