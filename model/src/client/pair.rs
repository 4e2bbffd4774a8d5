//! A client and a server wired together through a load balancer ([`crate::testing::Pair`]), with
//! no latency: enough to see what a pair of policies leads to, judged by the oracles, without the
//! simulator.

use super::*;
use crate::config::{LbConfig, ServerPolicy, ToolSpec};
use crate::http::Method;
use crate::oracle::Violation;
use crate::testing::{HarnessError, Pair};
use crate::trace::ToolEnd;
use std::time::Duration;

/// The one tool of these runs.
const TOOL: &str = "pay";

fn silent_tool(secs: u64, idempotent: bool) -> ToolSpec {
    ToolSpec {
        name: TOOL.into(),
        duration: Duration::from_secs(secs),
        event_interval: None,
        idempotent,
        ..ToolSpec::default()
    }
}

fn names(violations: &[Violation]) -> Vec<&'static str> {
    violations.iter().map(|v| v.invariant.name()).collect()
}

const IDLE_CUT: Option<Duration> = Some(Duration::from_secs(60));
const HOUR: Instant = Instant(3_600_000_000);

#[test]
fn stateless_under_an_idle_cut_runs_a_non_idempotent_tool_again_on_every_reissue() -> Result<(), HarnessError> {
    let mut p = Pair::new("stateless-2026", "stateless-2026", silent_tool(300, false), IDLE_CUT)?;
    p.call(1, TOOL, false)?;
    let violations = p.run_until(HOUR)?;
    // Each attempt is cut at 60 s, which cancels it on the server after its side effect ran.
    assert_eq!(p.side_effects(), 6, "the first POST and five re-issues");
    assert_eq!(p.count(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Disconnected, .. })), 6);
    assert_eq!(p.count(|k| matches!(k, StepKind::SessionCreated { .. })), 0);
    assert_eq!(p.resolutions(), vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: ERR_EXHAUSTED.into() }]);
    // The revision cancels a tool when its stream closes: by its rule the closed stream ended the
    // work (no-work-killed and no-abandoned-work agree the client no longer waits for it), and
    // each re-issue runs the side effect again.
    assert_eq!(names(&violations), vec!["no-duplicate-execution"], "{violations:#?}");
    Ok(())
}

#[test]
fn stateless_reissues_of_an_idempotent_tool_break_nothing() -> Result<(), HarnessError> {
    let mut p = Pair::new("stateless-2026", "stateless-2026", silent_tool(300, true), IDLE_CUT)?;
    p.call(1, TOOL, true)?;
    let violations = p.run_until(HOUR)?;
    assert_eq!(p.side_effects(), 6);
    assert_eq!(p.resolutions(), vec![StepKind::AppError { call: CallKey(1), error: ERR_EXHAUSTED.into() }]);
    // Each cut cancels by the revision's rule; re-running an idempotent tool is harmless.
    assert_eq!(names(&violations), Vec::<&str>::new(), "{violations:#?}");
    Ok(())
}

#[test]
fn stateless_without_a_cut_runs_once_and_delivers_under_the_empty_session() -> Result<(), HarnessError> {
    let mut p = Pair::new("stateless-2026", "stateless-2026", silent_tool(30, false), IDLE_CUT)?;
    p.call(1, TOOL, false)?;
    assert_eq!(p.run_until(HOUR)?, vec![]);
    assert_eq!(p.side_effects(), 1);
    assert_eq!(
        p.resolutions(),
        vec![StepKind::AppResult { call: CallKey(1), session: SessionId::from(""), id: Some(EventId::from("0.1-0")) }]
    );
    Ok(())
}

#[test]
fn the_reference_pair_resumes_through_the_same_cuts_and_runs_the_tool_once() -> Result<(), HarnessError> {
    let mut p = Pair::new("reference", "reference", silent_tool(300, false), IDLE_CUT)?;
    p.call(1, TOOL, false)?;
    assert_eq!(p.run_until(HOUR)?, vec![]);
    assert_eq!(p.side_effects(), 1);
    assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]));
    Ok(())
}

#[test]
fn a_session_client_works_against_a_server_without_sessions_that_states_no_era() -> Result<(), HarnessError> {
    // The `sessions = false` machinery as before eras: a server stating no `eras` lets every
    // request through (`era_pair.rs` has the modern-only server, which refuses them).
    let server = ServerPolicy { eras: None, ..crate::profiles::server("stateless-2026").expect("listed") };
    for client in ["reference", "ts-sdk", "py-sdk", "rmcp", "naive"] {
        let policy = crate::profiles::client(client).expect("listed");
        let mut p = Pair::with_policies(policy, server.clone(), vec![silent_tool(30, false)], LbConfig::default())?;
        p.call(1, TOOL, false)?;
        assert_eq!(p.run_until(HOUR)?, vec![], "{client}");
        assert_eq!(p.client().session(), None, "{client}");
        assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]), "{client}: {:#?}", p.resolutions());
    }
    Ok(())
}

#[test]
fn a_client_without_sessions_is_refused_by_a_server_that_requires_them() -> Result<(), HarnessError> {
    // The legacy-only servers; the dual-era ones (py-sdk, rmcp) serve it (`era_pair.rs`).
    for server in ["reference", "ts-sdk"] {
        let mut p = Pair::new("stateless-2026", server, silent_tool(30, false), None)?;
        p.call(1, TOOL, false)?;
        assert_eq!(p.run_until(HOUR)?, vec![], "{server}");
        assert_eq!(p.side_effects(), 0, "{server}");
        assert_eq!(p.resolutions(), vec![StepKind::AppError { call: CallKey(1), error: "HTTP 400".into() }]);
    }
    Ok(())
}

#[test]
fn deleting_the_session_during_a_tool_cancels_it_or_lets_it_run_on_per_server() -> Result<(), HarnessError> {
    for (server, end) in [("ts-sdk", ToolEnd::Completed), ("py-sdk", ToolEnd::Cancelled), ("rmcp", ToolEnd::Cancelled)]
    {
        let mut p = Pair::new("reference", server, silent_tool(300, false), None)?;
        p.call(1, TOOL, false)?;
        p.run_until(Instant(10_000_000))?;
        p.delete_session()?;
        let violations = p.run_until(HOUR)?;
        // TypeScript's tool ignores the abort signal and runs on to its result after the DELETE.
        let expected: Vec<&str> = if end == ToolEnd::Completed { vec!["no-abandoned-work"] } else { vec![] };
        assert_eq!(names(&violations), expected, "{server}: {violations:#?}");
        assert_eq!(p.server().live_sessions(), vec![], "{server}");
        assert_eq!(p.count(|k| matches!(k, StepKind::ToolEnded { end: e, .. } if *e == end)), 1, "{server}");
        assert_eq!(
            p.resolutions(),
            vec![StepKind::AppUnknownOutcome { call: CallKey(1), reason: SESSION_DELETED.into() }],
            "{server}"
        );
        assert_eq!(p.count(|k| matches!(k, StepKind::Send { request, .. } if request.method == Method::Delete)), 1);
    }
    Ok(())
}
