//! Workloads as scripts, end to end: calls after an idle gap (the session may expire between
//! them), what the application does after an error (give up, re-issue, re-initialize and
//! re-issue), an operator's DELETE, a client resuming with a Last-Event-ID it was never given,
//! and the server's session cap (`server.max_sessions`, 503 past it).

mod common;
use common::violated;

use mcpsim::engine::runner::RunOutcome;
use mcpsim::scenario::faults::FaultPlan;
use mcpsim::scenario::{BogusResume, CallSpec, DeleteBy, OnError};
use mcpsim::Scenario;
use mcpsim_model::http::{Method, Status};
use mcpsim_model::ids::{CallKey, EventId};
use mcpsim_model::trace::{Actor, SessionEndReason, StepKind};
use std::collections::BTreeSet;
use std::time::Duration;

fn scenario(name: &str, client: &str, server: &str, overrides: &[(&str, &str)]) -> Scenario {
    let mut s = Scenario::build(name, client, server).expect("a known scenario and profiles");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    s.apply_overrides(&overrides).expect("valid overrides");
    s
}

fn run_ok(s: &Scenario, seed: u64) -> RunOutcome {
    s.validate().expect("a valid scenario");
    common::run_ok(s, seed)
}

fn count(outcome: &RunOutcome, pick: impl Fn(&StepKind) -> bool) -> usize {
    outcome.trace.steps.iter().filter(|s| pick(&s.kind)).count()
}

fn rejected(outcome: &RunOutcome, status: Status) -> usize {
    count(outcome, |k| matches!(k, StepKind::Rejected { status: s, .. } if *s == status))
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// When (µs) the first step `pick` accepts was recorded.
fn first(outcome: &RunOutcome, pick: impl Fn(&StepKind) -> bool) -> Option<u64> {
    outcome.trace.steps.iter().find(|s| pick(&s.kind)).map(|s| s.t)
}

/// How call `call` ended for the application, each time it ended, in words.
fn endings(outcome: &RunOutcome, call: u32) -> String {
    let endings: Vec<String> = outcome
        .trace
        .steps
        .iter()
        .filter_map(|s| match &s.kind {
            StepKind::AppResult { call: c, .. } if *c == CallKey(call) => Some("result".to_string()),
            StepKind::AppError { call: c, error } if *c == CallKey(call) => Some(format!("error: {error}")),
            StepKind::AppUnknownOutcome { call: c, .. } if *c == CallKey(call) => Some("unknown".to_string()),
            _ => None,
        })
        .collect();
    endings.join(" / ")
}

/// Two calls of a 5 s non-idempotent tool by client 0, the second `gap` of idle after the first
/// settled, on a server that expires a session after 60 s without a request.
fn idle_gap(client: &str, gap: u64) -> Scenario {
    let ttl = [("server.idle_ttl", "60s"), ("server.idle_rule", "last-request"), ("tool.duration", "5s")];
    let mut s = scenario("long-tool", client, "reference", &ttl);
    s.calls = vec![
        CallSpec::new(secs(1), 0, "pay"),
        CallSpec { after_idle: Some(secs(gap)), ..CallSpec::new(Duration::ZERO, 1, "pay") },
    ];
    s
}

#[test]
fn an_idle_gap_longer_than_the_idle_ttl_expires_the_session_between_calls() {
    // (client, how its second call ends after the gap, whether its session expired in the gap)
    let expected = [
        // The decision procedure: a 404 while the non-idempotent call is in flight is unknown.
        ("reference", "unknown", true),
        // Re-initializes and re-sends on the 404: the call runs in the new session.
        ("naive", "result", true),
        // The SDKs keep the dead session id and hand the 404 to the application.
        ("ts-sdk", "error: session not found (HTTP 404)", true),
        ("py-sdk", "error: session not found (HTTP 404)", true),
        // rmcp's standalone GET keeps reconnecting, and a request holds the session alive.
        ("rmcp", "result", false),
    ];
    for (client, ending, expires) in expected {
        let short = run_ok(&idle_gap(client, 30), 0);
        assert_eq!(endings(&short, 1), "result", "{client}: a 30 s gap is inside the 60 s TTL");
        assert_eq!(rejected(&short, Status::NOT_FOUND), 0, "{client}");
        let long = run_ok(&idle_gap(client, 90), 0);
        let settled = first(&long, |k| matches!(k, StepKind::AppResult { call, .. } if *call == CallKey(0)));
        let issued = first(&long, |k| matches!(k, StepKind::AppCall { call, .. } if *call == CallKey(1)));
        let (settled, issued) = (settled.expect("call 0 resolves"), issued.expect("call 1 is issued"));
        assert!(issued >= settled + 90_000_000, "{client}: call 1 waits out its gap ({settled} → {issued})");
        let expired =
            first(&long, |k| matches!(k, StepKind::SessionEnded { reason: SessionEndReason::IdleExpired, .. }));
        assert_eq!(expired.is_some_and(|t| t > settled && t < issued), expires, "{client}: expiry in the gap");
        assert_eq!(rejected(&long, Status::NOT_FOUND) > 0, expires, "{client}: the second call meets a 404");
        assert_eq!(endings(&long, 1), ending, "{client}");
        // The run lasts until the script is done: call 1 resolved, after the gap.
        assert!(long.trace.steps.last().is_some_and(|s| s.t > issued), "{client}");
    }
}

fn timed_out_payment(on_error: OnError) -> Scenario {
    // A 5-minute payment, a client that gives up on a call after 60 s (and cancels it).
    let mut s = scenario(
        "long-tool",
        "reference",
        "reference",
        &[("client.request_timeout", "60s"), ("server.keepalive", "15s")],
    );
    s.calls[0].on_error = on_error;
    s
}

#[test]
fn reissuing_a_timed_out_non_idempotent_call_runs_it_twice_and_giving_up_does_not() {
    for seed in 0..2 {
        let give_up = run_ok(&timed_out_payment(OnError::GiveUp), seed);
        // The reference client reports a sent call that timed out as an unknown outcome (it may
        // have run: the decision procedure), not as a failure.
        assert_eq!(endings(&give_up, 0), "unknown");
        assert!(!violated(&give_up).contains("no-duplicate-execution"), "seed {seed}: {:?}", violated(&give_up));
        for on_error in [OnError::Reissue, OnError::ReinitializeReissue] {
            let again = run_ok(&timed_out_payment(on_error), seed);
            let effects = count(&again, |k| matches!(k, StepKind::SideEffect { .. }));
            assert_eq!(effects, 2, "seed {seed} {on_error:?}: the payment ran again");
            assert_eq!(count(&again, |k| matches!(k, StepKind::AppCall { .. })), 2, "{on_error:?}: one re-issue");
            assert!(violated(&again).contains("no-duplicate-execution"), "seed {seed} {on_error:?}");
            let sessions = count(&again, |k| matches!(k, StepKind::SessionCreated { .. }));
            assert_eq!(sessions, if on_error == OnError::Reissue { 1 } else { 2 }, "{on_error:?}");
        }
    }
}

#[test]
fn an_operator_delete_mid_tool_reaches_the_server_and_each_client_learns_of_it_its_own_way() {
    // (client, how its call ends, what the oracles say)
    let expected: [(&str, &str, &[&str]); 5] = [
        ("reference", "unknown", &["no-work-killed"]),
        ("naive", "result", &["no-duplicate-execution", "no-work-killed"]),
        ("ts-sdk", "error: request timed out", &["no-false-failure", "no-orphaned-session"]),
        ("py-sdk", "error: connection closed", &["no-false-failure", "no-orphaned-session", "no-work-killed"]),
        ("rmcp", "", &["every-call-resolves", "no-orphaned-session", "no-work-killed"]),
    ];
    for (client, ending, broken) in expected {
        let mut s = scenario("delete-during-tool", client, "reference", &[]);
        s.deletes[0].by = DeleteBy::Operator;
        let o = run_ok(&s, 0);
        // The client never sent a DELETE: the server ended the session on the operator's word.
        assert_eq!(count(&o, |k| matches!(k, StepKind::Send { request, .. } if request.method == Method::Delete)), 0);
        let ended = first(&o, |k| matches!(k, StepKind::SessionEnded { reason: SessionEndReason::Deleted, .. }));
        assert_eq!(ended, Some(120_000_000), "{client}: the operator's DELETE at 2 m");
        assert!(o.trace.steps.iter().any(|s| s.actor == Actor::Fault), "{client}: the trace names the operator");
        assert_eq!(endings(&o, 0), ending, "{client}");
        assert_eq!(violated(&o), broken.iter().copied().collect(), "{client}");
        if client != "naive" {
            assert!(rejected(&o, Status::NOT_FOUND) > 0, "{client}: it learns of it from a 404");
        }
    }
    // The application's own DELETE at the same time: the client sends it and settles its call.
    let o = run_ok(&scenario("delete-during-tool", "ts-sdk", "reference", &[]), 0);
    assert_eq!(count(&o, |k| matches!(k, StepKind::Send { request, .. } if request.method == Method::Delete)), 1);
}

/// Two clients, each calling a 20 s tool, against a server with a session cap; with `ttl` a
/// session expires that long after its last request.
fn capped(max_sessions: &str, ttl: &str) -> Scenario {
    let mut s = scenario(
        "long-tool",
        "reference",
        "reference",
        &[
            ("tool.duration", "20s"),
            ("tool.idempotent", "true"),
            ("server.max_sessions", max_sessions),
            ("server.idle_ttl", ttl),
            ("server.idle_rule", "last-request"),
        ],
    );
    s.clients = 2;
    s.calls = vec![CallSpec::new(secs(1), 0, "pay"), CallSpec { client: 1, ..CallSpec::new(secs(2), 1, "pay") }];
    s
}

/// The logical clients that backed off an `initialize`.
fn backed_off(outcome: &RunOutcome) -> BTreeSet<u32> {
    outcome
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::InitializeBackoff { .. }))
        .filter_map(|s| s.client)
        .collect()
}

#[test]
fn past_the_session_cap_initialize_is_answered_503_and_the_client_backs_off() {
    let free = run_ok(&capped("none", "30s"), 0);
    assert_eq!(rejected(&free, Status::UNAVAILABLE), 0);
    assert!(backed_off(&free).is_empty());
    assert_eq!(count(&free, |k| matches!(k, StepKind::SessionCreated { .. })), 2);

    // One session per replica: the client that comes second is refused, backs off and gets in
    // once the first session expired (30 s after its last request).
    let o = run_ok(&capped("1", "30s"), 0);
    assert!(rejected(&o, Status::UNAVAILABLE) > 0, "the second initialize meets the cap");
    assert_eq!(backed_off(&o).len(), 1, "one client retries under its initialize backoff");
    let expired = first(&o, |k| matches!(k, StepKind::SessionEnded { reason: SessionEndReason::IdleExpired, .. }));
    let created: Vec<u64> =
        o.trace.steps.iter().filter(|s| matches!(s.kind, StepKind::SessionCreated { .. })).map(|s| s.t).collect();
    assert_eq!(created.len(), 2, "{created:?}");
    assert!(expired.is_some_and(|e| created[1] >= e), "the second session only after the first expired");
    assert_eq!((endings(&o, 0), endings(&o, 1)), ("result".to_string(), "result".to_string()));

    // With the first session held, a client with a bounded number of attempts gives up.
    let mut s = capped("1", "30m");
    s.apply_overrides(&[("client.max_attempts".into(), "3".into())]).unwrap();
    let o = run_ok(&s, 0);
    let refused = *backed_off(&o).iter().next().expect("a client was refused");
    assert_eq!(endings(&o, refused), "error: initialize failed: HTTP 503");
    assert_eq!(endings(&o, 1 - refused), "result");
    assert_eq!(count(&o, |k| matches!(k, StepKind::SessionCreated { .. })), 1);
}

#[test]
fn the_session_cap_is_settable_and_left_out_of_traces_at_its_default() {
    let s = scenario("long-tool", "reference", "reference", &[]);
    assert_eq!(s.server.max_sessions, None);
    assert!(!serde_json::to_string(&s).unwrap().contains("max_sessions"));
    let s = scenario("long-tool", "reference", "reference", &[("server.max_sessions", "2")]);
    assert_eq!(s.server.max_sessions, Some(2));
    assert!(serde_json::to_string(&s).unwrap().contains("\"max_sessions\":2"));
    let mut s = s.clone();
    let e = s.apply_overrides(&[("server.max_sessions".into(), "0".into())]).unwrap_err().to_string();
    assert!(e.starts_with("server.max_sessions") && e.contains("at least 1"), "{e}");
}

#[test]
fn a_last_event_id_never_given_is_judged_by_the_servers_unhonourable_answer() {
    // A chatty tool and no faults: nothing else breaks a stream.
    let quiet = |server: &str| {
        let mut s = scenario("chatty-tool", "reference", server, &[]);
        s.faults = FaultPlan::default();
        s
    };
    let bogus = |server: &str| {
        let mut s = quiet(server);
        s.bogus_resumes = vec![BogusResume { at: secs(30), client: 0, id: "made-up".into() }];
        run_ok(&s, 0)
    };
    let made_up = Some(EventId("made-up".into()));
    let answered = |o: &RunOutcome, status: Status| {
        count(o, |k| matches!(k, StepKind::Response { head, .. } if head.status == status))
    };
    // The reference server answers 410 with no head id: the decision procedure cannot resume
    // safely, and the tool may have run, so the call is an unknown outcome (it once failed it: a
    // false failure, found by the whole-space search).
    let gone = bogus("reference");
    assert!(answered(&gone, Status::GONE) > 0);
    assert_eq!(endings(&gone, 0), "unknown");
    assert_eq!(violated(&gone), BTreeSet::new());
    // The TypeScript server answers 200 and keeps an empty stream open: the call never resolves.
    let empty_open = bogus("ts-sdk");
    assert_eq!(endings(&empty_open, 0), "");
    assert_eq!(violated(&empty_open), BTreeSet::from(["every-call-resolves"]));
    // rmcp's server answers an empty stream that closes (empty-closed): the application is handed
    // events twice (no-duplicate-delivery).
    assert_eq!(violated(&bogus("rmcp")), BTreeSet::from(["no-duplicate-delivery"]));
    // A server that answers from its head (silent-head) happens to lose nothing here.
    let silent = bogus("silent-head");
    assert_eq!(answered(&silent, Status::GONE), 0);
    assert!(silent.violations.is_empty(), "{:?}", violated(&silent));
    for o in [&gone, &empty_open, &silent] {
        assert_eq!(count(o, |k| matches!(k, StepKind::Send { request, .. } if request.last_event_id == made_up)), 1);
    }
    // Without the bogus resume all four are clean.
    for server in ["reference", "ts-sdk", "rmcp", "silent-head"] {
        let o = run_ok(&quiet(server), 0);
        assert!(o.violations.is_empty(), "{server}: {:?}", violated(&o));
    }
}

#[test]
fn a_script_file_reads_the_new_fields_and_a_dump_reads_back() {
    // Removed when dropped (at the end of the test, also when it panics).
    let tmp = tempfile::Builder::new().prefix("mcpsim-workload-").tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("script.toml");
    std::fs::write(
        &path,
        r#"extends = "long-tool"
[[tools]]
name = "pay"
duration = "5s"
event_interval = "none"
idempotent = false
side_effect = "completion"

[[calls]]
at = "1s"
tool = "pay"

[[calls]]
after_idle = "90s"
tool = "pay"
on_error = "reinitialize-reissue"
max_reissues = 2

[[deletes]]
at = "3m"
by = "operator"

[[bogus_resumes]]
at = "2s"
id = "made-up"

[server]
max_sessions = 4
"#,
    )
    .unwrap();
    let path = path.display().to_string();
    let s = Scenario::build(&path, "reference", "reference").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.calls[1].after_idle, Some(secs(90)));
    assert_eq!(
        (s.calls[1].on_error, s.calls[1].max_reissues, s.calls[1].call),
        (OnError::ReinitializeReissue, 2, CallKey(1))
    );
    assert_eq!(s.deletes[0].by, DeleteBy::Operator);
    assert_eq!(s.bogus_resumes[0].id, "made-up");
    assert_eq!(s.server.max_sessions, Some(4));
    assert_eq!(s.tools[0].side_effect, mcpsim_model::config::SideEffectAt::Completion);
    let dumped = dir.join("dumped.toml");
    std::fs::write(&dumped, mcpsim::scenario::family_files::dump(&s, "").unwrap()).unwrap();
    let mut back = Scenario::build(&dumped.display().to_string(), "reference", "reference").unwrap();
    back.scenario_arg = s.scenario_arg.clone();
    back.name = s.name.clone();
    assert_eq!(back, s);
    // A bad value says where.
    std::fs::write(&path, "extends = \"long-tool\"\n[[calls]]\nat = \"1s\"\ntool = \"pay\"\non_error = \"retry\"\n")
        .unwrap();
    let e = Scenario::build(&path, "reference", "reference").unwrap_err().to_string();
    assert!(e.contains("script.toml:5:12") && e.contains("give-up"), "{e}");
}

#[test]
fn the_idle_gap_example_of_docs_your_system_says_what_it_does() {
    // docs/your-system.md, section 6: (client, verdicts as the file is, with an application that
    // gives up).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/examples/idle-gap.toml");
    let expected: [(&str, &[&str], &[&str]); 3] =
        [("ts-sdk", &[], &["no-orphaned-session"]), ("py-sdk", &[], &["no-orphaned-session"]), ("rmcp", &[], &[])];
    for (client, reissuing, giving_up) in expected {
        let s = Scenario::build(path, client, "reference").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(violated(&run_ok(&s, 0)), reissuing.iter().copied().collect(), "{client}");
        let mut s = s.clone();
        s.apply_overrides(&[("app.calls".into(), "1s; +90s".into())]).unwrap();
        assert_eq!(violated(&run_ok(&s, 0)), giving_up.iter().copied().collect(), "{client}");
    }
}
