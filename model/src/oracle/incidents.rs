//! The design note's two incidents and a well-behaved run, in miniature, through `check_all`.

use super::coverage::CoverageEvent;
use super::testkit::*;
use super::{check_all, coverage, Violation};
use crate::http::{ClientMessage, ConnEnd, Request, SseEvent, ToolCall};
use crate::ids::{CallKey, ConnId, RequestId, SessionId};
use crate::trace::{ResumeOutcome, StepKind};

fn summary(violations: &[Violation]) -> Vec<(&'static str, u64, &str)> {
    violations.iter().map(|v| (v.invariant.name(), v.at.0, v.subject.as_str())).collect()
}

fn initialize(conn: u64) -> StepKind {
    StepKind::Send { conn: ConnId(conn), request: Request::initialize(RequestId(1), "app") }
}

fn call_tool(conn: u64, session: &SessionId, request: u64) -> StepKind {
    let call = ToolCall { tool: "pay".to_string(), key: CallKey(0), idempotency_key: None, tasks: false };
    StepKind::Send {
        conn: ConnId(conn),
        request: Request::post(Some(session.clone()), ClientMessage::CallTool { id: RequestId(request), call }),
    }
}

/// Incident 1: the load balancer cuts an idle stream during a long payment; the naive client
/// drops its session, initializes again and re-sends the call. The first run's result lands in
/// the abandoned session.
#[test]
fn the_naive_client_incident_is_a_duplicate_execution_and_an_orphaned_session() {
    let (a, b) = (sid("A"), sid("B"));
    let trace = TraceBuilder::new()
        .server(StepKind::ServerStart { epoch: 0, sessions_share_store: false, bounds: Default::default() })
        .at(1_000)
        .client(initialize(1))
        .server(session_created(&a, "app"))
        .client(session_answer(1, &a))
        .at(2_000)
        .app(app_call(0, false))
        .client(call_tool(2, &a, 2))
        .server(side_effect(&a, 2, 0))
        .at(62_000)
        .lb(lb_idle_cut(2))
        .client(conn_end(2, ConnEnd::Reset))
        .at(63_000)
        .client(initialize(3))
        .server(session_created(&b, "app"))
        .client(session_answer(3, &b))
        .at(64_000)
        .client(call_tool(4, &b, 2))
        .server(side_effect(&b, 2, 0))
        .at(90_000)
        .server(stored(&a, 1, 1, Some(0), Some(tool_result(2, 0))))
        .at(95_000)
        .server(stored(&b, 1, 1, Some(0), Some(tool_result(2, 0))))
        .app(app_result(0, &b, Some(ev(1, 1))))
        .at(100_000)
        .run(run_end(Some(&b), &[&a, &b]))
        .build();
    let v = check_all(&trace);
    assert_eq!(
        summary(&v),
        vec![
            ("no-orphaned-session", 63_000, "session B"),
            ("no-duplicate-execution", 64_000, "call0"),
            ("no-orphaned-session", 90_000, "session A stream1 event 1-1"),
        ]
    );
    assert_eq!(v[0].detail, "client app got session B while its session A was still live");
    assert_eq!(v[1].detail, "non-idempotent call0 ran 2 times: in session A at 0.002s, in session B at 0.064s");
    assert_eq!(coverage(&trace).get(CoverageEvent::DuplicateExecution), 1);
    assert_eq!(coverage(&trace).get(CoverageEvent::SessionReinitialized), 1);
}

/// Incident 2: a chatty tool fills a bounded buffer while the client is away; the server resumes
/// at its head without a word. `gap` decides whether the application is told.
fn silent_head(gap: bool) -> crate::trace::Trace {
    let a = sid("A");
    let mut b = TraceBuilder::new()
        .at(1_000)
        .server(session_created(&a, "app"))
        .app(StepKind::AppCall { call: CallKey(0), tool: "crawl".to_string(), idempotent: true })
        .client(call_tool(2, &a, 2))
        .server(stored(&a, 1, 0, Some(0), None))
        .at(10_000)
        .stored_range(&a, 1, Some(0), 1..=100)
        .at(20_000)
        .delivered_range(&a, 1, Some(0), 1..=100)
        .at(30_000)
        .lb(lb_idle_cut(2))
        .at(40_000)
        .stored_range(&a, 1, Some(0), 101..=300)
        .at(50_000)
        .client(get_resume(3, &a, ev(1, 100)))
        .server(resume(&a, ev(1, 100), ResumeOutcome::SilentHead { skipped: 140 }));
    if gap {
        b = b.app(app_gap(&a, Some(ev(1, 100)), ev(1, 240)));
    }
    b.at(60_000)
        .delivered_range(&a, 1, Some(0), 241..=300)
        .at(70_000)
        .server(stored(&a, 1, 301, Some(0), Some(tool_result(2, 0))))
        .app(app_result(0, &a, Some(ev(1, 301))))
        .at(80_000)
        .run(run_end(Some(&a), &[&a]))
        .build()
}

#[test]
fn the_silent_head_incident_loses_140_events_without_a_word() {
    let trace = silent_head(false);
    let v = check_all(&trace);
    assert_eq!(summary(&v), vec![("no-silent-event-loss", 40_000, "session A stream1 event 1-101")]);
    assert!(v[0].detail.starts_with("140 events"), "{}", v[0].detail);
    assert!(v[0].detail.ends_with("(seq 101 to 240)"), "{}", v[0].detail);
    assert_eq!(coverage(&trace).get(CoverageEvent::SilentResume), 1);
}

#[test]
fn the_silent_head_with_a_reported_gap_is_clean() {
    assert_eq!(check_all(&silent_head(true)), vec![]);
}

/// The reference client and server: the stream is cut, the client waits the server's `retry`,
/// resumes with its last event id, the server replays what was missed, the result arrives once.
#[test]
fn a_well_behaved_run_breaks_nothing() {
    let a = sid("A");
    let priming = SseEvent { id: Some(ev(1, 0)), retry_ms: Some(3_000), kind: Default::default(), data: None };
    let trace = TraceBuilder::new()
        .server(StepKind::ServerStart { epoch: 0, sessions_share_store: false, bounds: Default::default() })
        .at(1_000)
        .client(initialize(1))
        .server(session_created(&a, "app"))
        .client(get_standalone(2, &a))
        .at(2_000)
        .app(app_call(0, false))
        .client(call_tool(3, &a, 2))
        .server(side_effect(&a, 2, 0))
        .server(stored(&a, 1, 0, Some(0), None))
        .client(sse_event(3, priming))
        .at(3_000)
        .stored_range(&a, 1, Some(0), 1..=2)
        .delivered_range(&a, 1, Some(0), 1..=2)
        .at(5_000)
        .stored_range(&a, 0, None, 1..=2)
        .delivered_range(&a, 0, None, 1..=2)
        .at(62_000)
        .lb(lb_idle_cut(3))
        .client(conn_end(3, ConnEnd::Reset))
        .client(StepKind::Backoff { call: Some(CallKey(0)), attempt: 1, delay_us: 3_000_000 })
        .at(63_000)
        .server(stored(&a, 1, 3, Some(0), Some(progress(0, 3))))
        .at(65_000)
        .client(get_resume(4, &a, ev(1, 2)))
        .server(resume(&a, ev(1, 2), ResumeOutcome::Replayed { replayed: 1 }))
        .app(app_event(&a, ev(1, 3), Some(0)))
        .at(70_000)
        .server(stored(&a, 1, 4, Some(0), Some(tool_result(2, 0))))
        .app(app_result(0, &a, Some(ev(1, 4))))
        .at(80_000)
        .run(StepKind::Liveness { deadline: 120_000 })
        .at(120_000)
        .run(run_end(Some(&a), &[&a]))
        .build();
    assert_eq!(check_all(&trace), vec![]);
    let cov = coverage(&trace);
    for event in ["resume-replayed", "resume-attached", "lb-idle-cut", "retry-honoured"] {
        assert_eq!(cov.get(event.parse().expect("a coverage event")), 1, "{event}");
    }
    assert_eq!(cov.get(CoverageEvent::DuplicateExecution), 0);
}
