//! Several logical clients, and the application deleting its session: the two scenario families
//! `two-sessions-same-request-id` and `delete-during-tool`, end to end.

mod common;
use common::{run_ok, violated};

use mcpsim::engine::runner::RunOutcome;
use mcpsim::Scenario;
use mcpsim_model::http::ConnEnd;
use mcpsim_model::ids::ConnId;
use mcpsim_model::trace::{Actor, Step, StepKind, ToolEnd};
use std::collections::BTreeSet;

const TWO: &str = "two-sessions-same-request-id";
const DELETE: &str = "delete-during-tool";

fn scenario(client: &str, server: &str, name: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(name, client, server).expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

/// The command that replays one run, for failure messages.
fn replay(scenario: &Scenario, seed: u64) -> String {
    format!("cargo run --release -p mcpsim -- run {} --seed {seed}", scenario.cli_args())
}

/// The violations, one per line (the first few), for failure messages.
fn verdict(outcome: &RunOutcome) -> String {
    outcome.violations.iter().take(5).map(|v| format!("  {} at {}: {}\n", v.invariant, v.at, v.detail)).collect()
}

fn steps_of(outcome: &RunOutcome, client: u32) -> impl Iterator<Item = &Step> {
    outcome.trace.steps.iter().filter(move |s| s.client == Some(client))
}

fn tool_ends(outcome: &RunOutcome) -> Vec<(u64, ToolEnd)> {
    outcome
        .trace
        .steps
        .iter()
        .filter_map(|s| match s.kind {
            StepKind::ToolEnded { end, .. } => Some((s.t, end)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// two-sessions-same-request-id
// ---------------------------------------------------------------------------------------------

#[test]
fn each_client_has_its_own_process_session_and_connection_numbers() {
    let s = scenario("reference", "reference", TWO, &[]);
    let outcome = run_ok(&s, 0);
    let replay = replay(&s, 0);
    let steps = &outcome.trace.steps;
    for step in steps {
        let by_a_client = matches!(step.actor, Actor::Client | Actor::App);
        assert_eq!(step.client.is_some(), by_a_client, "step {} is misattributed\nreplay: {replay}", step.seq);
    }
    let names: BTreeSet<&str> = steps
        .iter()
        .filter_map(|s| match &s.kind {
            StepKind::SessionCreated { client, .. } => Some(client.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, BTreeSet::from(["app", "app-1"]), "replay: {replay}");
    for client in [0, 1] {
        let first_send = steps_of(&outcome, client).find_map(|s| match s.kind {
            StepKind::Send { conn, .. } => Some(conn),
            _ => None,
        });
        assert_eq!(first_send, Some(ConnId(1)), "client {client} numbers its own connections\nreplay: {replay}");
        // Both are cut off by the partition.
        let reset = steps_of(&outcome, client)
            .any(|s| s.t == 20_000_000 && matches!(s.kind, StepKind::ConnEnd { end: ConnEnd::Reset, .. }));
        assert!(reset, "the partition did not reset client {client}'s connections\nreplay: {replay}");
    }
    let Some(StepKind::RunEnd { client_session, other_client_sessions, .. }) = steps.last().map(|s| &s.kind) else {
        panic!("the run does not end with RunEnd\nreplay: {replay}")
    };
    assert!(client_session.is_some() && other_client_sessions.len() == 1, "replay: {replay}");
    assert_ne!(Some(client_session), other_client_sessions.first(), "two clients, two sessions\nreplay: {replay}");
}

#[test]
fn the_reference_pair_keeps_the_two_sessions_apart() {
    let s = scenario("reference", "reference", TWO, &[]);
    for seed in 0..20 {
        let outcome = run_ok(&s, seed);
        assert!(outcome.violations.is_empty(), "seed {seed}:\n{}replay: {}", verdict(&outcome), replay(&s, seed));
    }
}

/// The Python server keeps one event store for all sessions, keyed by the JSON-RPC request id:
/// both clients' calls are request #2, so both POST streams share the key "2". A resume with
/// `Last-Event-ID` replays the events after that id under the key, the other session's included.
#[test]
fn the_py_sdk_shared_store_hands_each_client_the_other_sessions_events_once_they_resume() {
    let s = scenario("py-sdk", "py-sdk", TWO, &[("fault.partition", "none"), ("fault.reset", "20s")]);
    for seed in 0..3 {
        let outcome = run_ok(&s, seed);
        let cross: Vec<_> = outcome.violations.iter().filter(|v| v.invariant == "no-cross-session-delivery").collect();
        let sessions: BTreeSet<&str> = cross.iter().map(|v| v.subject.split(' ').nth(1).unwrap_or("")).collect();
        assert_eq!(
            sessions.len(),
            2,
            "seed {seed}: both sessions should be handed the other's events:\n{}replay: {}",
            verdict(&outcome),
            replay(&s, seed)
        );
        assert_eq!(violated(&outcome), BTreeSet::from(["no-cross-session-delivery"]), "replay: {}", replay(&s, seed));
    }
}

/// Under the family's own 20 s partition the Python client never resumes: it gives up after two
/// failed reconnects a second apart and fails each call with "connection closed". Nothing is
/// replayed, so nothing mixes; the application was told, so no invariant breaks.
#[test]
fn the_py_sdk_client_gives_up_inside_the_partition_so_nothing_mixes() {
    let s = scenario("py-sdk", "py-sdk", TWO, &[]);
    let outcome = run_ok(&s, 0);
    assert!(outcome.violations.is_empty(), "violated:\n{}replay: {}", verdict(&outcome), replay(&s, 0));
    for client in [0, 1] {
        let failed = steps_of(&outcome, client)
            .any(|st| matches!(&st.kind, StepKind::AppError { error, .. } if error == "connection closed"));
        assert!(failed, "client {client}'s call did not fail with connection closed\nreplay: {}", replay(&s, 0));
    }
    let resumed = outcome.trace.steps.iter().any(|st| matches!(st.kind, StepKind::Resume { .. }));
    assert!(!resumed, "a resume reached the server\nreplay: {}", replay(&s, 0));
}

#[test]
fn a_client_that_resumes_into_the_py_sdk_store_after_the_partition_is_handed_foreign_events() {
    let s = scenario("reference", "py-sdk", TWO, &[]);
    let outcome = run_ok(&s, 0);
    assert_eq!(
        violated(&outcome),
        BTreeSet::from(["no-cross-session-delivery"]),
        "violated:\n{}replay: {}",
        verdict(&outcome),
        replay(&s, 0)
    );
}

#[test]
fn a_client_restart_restarts_client_0_only() {
    let s = scenario("reference", "reference", TWO, &[("fault.client_restart", "30s")]);
    let outcome = run_ok(&s, 1);
    let starts =
        |client| steps_of(&outcome, client).filter(|st| matches!(st.kind, StepKind::ClientStart { .. })).count();
    assert_eq!((starts(0), starts(1)), (2, 1), "replay: {}", replay(&s, 1));
}

#[test]
fn a_seed_gives_the_same_two_client_trace_every_time() {
    for s in [scenario("reference", "py-sdk", TWO, &[]), scenario("rmcp", "reference", TWO, &[("fault.reset", "50s")])]
    {
        let first = run_ok(&s, 5).trace.to_jsonl();
        let again = run_ok(&s, 5).trace.to_jsonl();
        assert!(first == again, "seed 5 gave two different traces\nreplay: {}", replay(&s, 5));
        assert!(first.contains("\"client_index\":1"), "no step of client 1\nreplay: {}", replay(&s, 5));
        let other = run_ok(&s, 6).trace.to_jsonl();
        assert_ne!(first, other, "seeds 5 and 6 gave the same trace: the seed does not reach the run");
    }
}

// ---------------------------------------------------------------------------------------------
// Connection numbers and single-client traces
// ---------------------------------------------------------------------------------------------

#[test]
fn connection_numbers_stay_unique_across_client_restarts() {
    let s = scenario("reference", "reference", "long-tool", &[("fault.client_restart", "30s,130s")]);
    let outcome = run_ok(&s, 3);
    let sends: Vec<ConnId> = outcome
        .trace
        .steps
        .iter()
        .filter_map(|st| match st.kind {
            StepKind::Send { conn, .. } => Some(conn),
            _ => None,
        })
        .collect();
    let unique: BTreeSet<ConnId> = sends.iter().copied().collect();
    assert_eq!(unique.len(), sends.len(), "a connection number was reused: {sends:?}\nreplay: {}", replay(&s, 3));
    let restarts = outcome.trace.steps.iter().filter(|st| matches!(st.kind, StepKind::ClientStart { .. })).count();
    assert_eq!(restarts, 3, "replay: {}", replay(&s, 3));
}

#[test]
fn a_single_client_trace_carries_no_client_fields() {
    let s = scenario("naive", "reference", "long-tool", &[("fault.client_restart", "100s")]);
    let text = run_ok(&s, 2).trace.to_jsonl();
    assert!(!text.contains("client_index"), "replay: {}", replay(&s, 2));
    assert!(!text.contains("other_client_sessions"), "replay: {}", replay(&s, 2));
}

// ---------------------------------------------------------------------------------------------
// delete-during-tool
// ---------------------------------------------------------------------------------------------

/// The delete at 2 minutes settles the payment as an unknown outcome, and the application is
/// handed nothing more about it.
fn assert_told_unknown_outcome(outcome: &RunOutcome, s: &Scenario) {
    let app: Vec<&StepKind> = outcome.trace.app_view().map(|st| &st.kind).collect();
    let unknown = app.iter().position(|k| matches!(k, StepKind::AppUnknownOutcome { .. }));
    assert!(unknown.is_some(), "the application was not told\nreplay: {}", replay(s, 0));
    assert!(!app.iter().any(|k| matches!(k, StepKind::AppResult { .. })), "a result arrived\nreplay: {}", replay(s, 0));
    let deleted = outcome.trace.steps.iter().any(|st| {
        st.t == 120_000_000
            && matches!(&st.kind, StepKind::Send { request, .. } if request.method == mcpsim_model::http::Method::Delete)
    });
    assert!(deleted, "no DELETE at 2m\nreplay: {}", replay(s, 0));
}

#[test]
fn the_ts_sdk_server_lets_a_deleted_sessions_tool_run_on_into_nowhere() {
    let s = scenario("reference", "ts-sdk", DELETE, &[]);
    let outcome = run_ok(&s, 0);
    // Work the client ended with its DELETE runs on: that is what no-abandoned-work judges.
    let broken: Vec<&str> = outcome.violations.iter().map(|v| v.invariant.name()).collect();
    assert_eq!(broken, ["no-abandoned-work"], "violated:\n{}replay: {}", verdict(&outcome), replay(&s, 0));
    assert_told_unknown_outcome(&outcome, &s);
    let ends = tool_ends(&outcome);
    assert!(
        matches!(ends.as_slice(), [(t, ToolEnd::Completed)] if *t > 240_000_000),
        "the tool should run on to completion, ended {ends:?}\nreplay: {}",
        replay(&s, 0)
    );
}

#[test]
fn the_py_sdk_and_rmcp_servers_cancel_a_deleted_sessions_tool() {
    for server in ["py-sdk", "rmcp"] {
        let s = scenario("reference", server, DELETE, &[]);
        let outcome = run_ok(&s, 0);
        assert!(outcome.violations.is_empty(), "violated:\n{}replay: {}", verdict(&outcome), replay(&s, 0));
        assert_told_unknown_outcome(&outcome, &s);
        let ends = tool_ends(&outcome);
        assert!(
            matches!(ends.as_slice(), [(t, ToolEnd::Cancelled)] if (120_000_000..121_000_000).contains(t)),
            "{server}: the tool should be cancelled by the delete, ended {ends:?}\nreplay: {}",
            replay(&s, 0)
        );
    }
}
