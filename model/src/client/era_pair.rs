//! Both eras end to end (`crate::testing::Pair`): the era gate of the server (`server/era_serve.rs`)
//! against the client's era rule (`client/era_choice.rs`), judged by the oracles.

use super::*;
use crate::config::{ClientPolicy, LbConfig, ServerPolicy, ToolSpec};
use crate::era::{ClientEra, EraCacheScope, EraMode, ModernSession};
use crate::oracle::Violation;
use crate::profiles;
use crate::testing::{HarnessError, Pair};
use crate::trace::ToolEnd;
use std::time::Duration;

const TOOL: &str = "pay";
const HOUR: Instant = Instant(3_600_000_000);

fn tool(secs: u64, idempotent: bool) -> ToolSpec {
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

fn client(name: &str) -> ClientPolicy {
    profiles::client(name).expect("listed")
}

fn server(name: &str) -> ServerPolicy {
    profiles::server(name).expect("listed")
}

fn pair(c: ClientPolicy, s: ServerPolicy, t: ToolSpec, idle: Option<Duration>) -> Result<Pair, HarnessError> {
    Pair::with_policies(c, s, vec![t], LbConfig { idle_timeout: idle, ..LbConfig::default() })
}

fn auto() -> ClientPolicy {
    let era = ClientEra {
        mode: EraMode::Auto,
        cache: EraCacheScope::Origin,
        reprobe_on_failure: true,
        fallback_on_no_answer: false,
    };
    ClientPolicy { era: Some(era), ..client("py-sdk") }
}

fn served(p: &Pair) -> Vec<(crate::era::Era, Option<SessionId>)> {
    p.trace()
        .steps
        .iter()
        .filter_map(|s| match &s.kind {
            StepKind::EraServed { era, session, .. } => Some((*era, session.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn the_modern_only_server_refuses_every_legacy_client_before_any_call() -> Result<(), HarnessError> {
    for name in ["reference", "ts-sdk", "py-sdk", "rmcp", "naive"] {
        let mut p = Pair::new(name, "stateless-2026", tool(30, false), None)?;
        p.call(1, TOOL, false)?;
        p.run_until(HOUR)?;
        assert_eq!(p.side_effects(), 0, "{name}");
        assert_eq!(p.count(|k| matches!(k, StepKind::SessionCreated { .. })), 0, "{name}");
        assert!(p.count(|k| matches!(k, StepKind::EraRefused { .. })) > 0, "{name}: a 400 of the era rules");
    }
    Ok(())
}

#[test]
fn the_modern_client_is_served_statelessly_by_the_dual_era_servers() -> Result<(), HarnessError> {
    for name in ["py-sdk", "rmcp"] {
        let mut p = Pair::new("stateless-2026", name, tool(30, false), None)?;
        p.call(1, TOOL, false)?;
        assert_eq!(p.run_until(HOUR)?, vec![], "{name}");
        assert_eq!(p.side_effects(), 1, "{name}");
        assert_eq!(p.count(|k| matches!(k, StepKind::SessionCreated { .. })), 0, "{name}");
        assert_eq!(served(&p), vec![(crate::era::Era::Modern, None)], "{name}");
        assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]), "{name}: {:#?}", p.resolutions());
        let sent: Vec<_> = p
            .trace()
            .steps
            .iter()
            .filter_map(|s| match &s.kind {
                StepKind::Send { request, .. } => Some(request.clone()),
                _ => None,
            })
            .collect();
        assert!(sent.iter().all(|r| r.meta_version.as_deref() == Some("2026-07-28") && r.session.is_none()));
    }
    Ok(())
}

#[test]
fn on_one_dual_era_replica_a_cut_cancels_a_modern_call_and_a_legacy_one_runs_on() -> Result<(), HarnessError> {
    // Modern: the cut closes the response stream, which cancels the request; the client
    // re-issues with a new id, and the non-idempotent side effect runs again each time.
    // The dual-era servers write keep-alives on a modern stream too, so the cut is a CDN's
    // maximum response time, which cuts however busy.
    let cdn = LbConfig { max_lifetime: Some(Duration::from_secs(100)), ..LbConfig::default() };
    let with = |c: &str, idempotent| {
        Pair::with_policies(client(c), server("py-sdk"), vec![tool(300, idempotent)], cdn.clone())
    };
    let mut modern = with("stateless-2026", false)?;
    modern.call(1, TOOL, false)?;
    let violations = modern.run_until(HOUR)?;
    let disconnected = modern.count(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Disconnected, .. }));
    assert_eq!((modern.side_effects(), disconnected), (6, 6), "the first POST and five re-issues, each cancelled");
    assert_eq!(names(&violations), vec!["no-duplicate-execution"], "{violations:#?}");
    // The same with an idempotent tool breaks nothing.
    let mut idempotent = with("stateless-2026", true)?;
    idempotent.call(1, TOOL, true)?;
    assert_eq!(names(&idempotent.run_until(HOUR)?), Vec::<&str>::new());
    // Legacy on the same profile: the cut leaves the tool running (py-sdk's legacy rule).
    let mut legacy = with("py-sdk", false)?;
    legacy.call(1, TOOL, false)?;
    legacy.run_until(HOUR)?;
    assert_eq!(legacy.count(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Disconnected, .. })), 0);
    assert!(legacy.count(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Completed, .. })) >= 1);
    assert!(served(&legacy).is_empty(), "nothing era-specific is recorded for a legacy request");
    Ok(())
}

#[test]
fn no_work_killed_judges_each_request_by_its_era() -> Result<(), HarnessError> {
    // A dual-era server that (unlike the SDKs) also cancels a legacy request whose stream closes:
    // the cut of a modern call is the client's own cancellation, the cut of a legacy call kills
    // work its client still waits for.
    let mut cancels = server("py-sdk");
    cancels.disconnect_cancels = true;
    let cdn = LbConfig { max_lifetime: Some(Duration::from_secs(100)), ..LbConfig::default() };
    let mut modern =
        Pair::with_policies(client("stateless-2026"), cancels.clone(), vec![tool(300, true)], cdn.clone())?;
    modern.call(1, TOOL, true)?;
    let v = modern.run_until(HOUR)?;
    assert!(modern.count(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Disconnected, .. })) > 0);
    assert!(!names(&v).contains(&"no-work-killed"), "{v:#?}");
    let mut legacy = Pair::with_policies(client("py-sdk"), cancels, vec![tool(300, true)], cdn)?;
    legacy.call(1, TOOL, true)?;
    let v = legacy.run_until(HOUR)?;
    assert!(names(&v).contains(&"no-work-killed"), "{v:#?}");
    Ok(())
}

#[test]
fn an_auto_client_falls_back_on_a_legacy_only_server_and_speaks_modern_to_a_dual_one() -> Result<(), HarnessError> {
    for (name, era, sessions) in [("ts-sdk", crate::era::Era::Legacy, 1), ("py-sdk", crate::era::Era::Modern, 0)] {
        let mut p = pair(auto(), server(name), tool(5, false), None)?;
        p.call(1, TOOL, false)?;
        assert_eq!(p.run_until(HOUR)?, vec![], "{name}");
        assert_eq!(p.count(|k| *k == StepKind::EraChosen { era, probed: true }), 1, "{name}");
        assert_eq!(p.count(|k| matches!(k, StepKind::SessionCreated { .. })), sessions, "{name}");
        assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]), "{name}: {:#?}", p.resolutions());
    }
    Ok(())
}

#[test]
fn era_consistent_fires_on_a_server_that_mints_a_session_for_a_modern_request() -> Result<(), HarnessError> {
    let broken = ServerPolicy { modern_session: ModernSession::Minted, ..server("rmcp") };
    let mut p = pair(client("stateless-2026"), broken, tool(5, false), None)?;
    p.call(1, TOOL, false)?;
    let v = p.run_until(HOUR)?;
    assert!(names(&v).contains(&"era-consistent"), "{v:#?}");
    let mut fixed = pair(client("stateless-2026"), server("rmcp"), tool(5, false), None)?;
    fixed.call(1, TOOL, false)?;
    assert_eq!(fixed.run_until(HOUR)?, vec![]);
    Ok(())
}

#[test]
fn a_stateless_server_mints_no_session_for_a_modern_request_whatever_its_modern_session_says(
) -> Result<(), HarnessError> {
    let stateless = ServerPolicy { modern_session: ModernSession::Minted, sessions: false, ..server("rmcp") };
    let mut p = pair(client("stateless-2026"), stateless, tool(5, false), None)?;
    p.call(1, TOOL, false)?;
    assert_eq!(p.run_until(HOUR)?, vec![]);
    assert_eq!(p.count(|k| matches!(k, StepKind::SessionCreated { .. })), 0);
    assert!(matches!(p.resolutions()[..], [StepKind::AppResult { .. }]), "{:#?}", p.resolutions());
    Ok(())
}
