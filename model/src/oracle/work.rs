//! `no-work-killed`: the server does not expire a session, or cancel a tool, while the tool is
//! still working for a client that is still there.
//!
//! A client is still there for a call while the application has not seen the call resolved, the
//! client has not asked to cancel the call's request (`notifications/cancelled`), and it has not
//! deleted the session. Expiring such a session (say, idle expiry counted from the last request
//! only) or cancelling such a tool throws away work the client is waiting for: the call can at
//! best end as an unknown outcome. A server restart is a fault, not a decision, and is not judged.

use super::{sorted, Invariant, InvariantId, TraceIndex, Violation};
use crate::http::{ClientMessage, Method};
use crate::ids::{CallKey, RequestId, SessionId};
use crate::time::{format_micros, Instant};
#[cfg(test)]
use crate::trace::Trace;
use crate::trace::{SessionEndReason, StepKind, ToolEnd};
use std::collections::{BTreeMap, BTreeSet};

pub(super) const NO_WORK_KILLED: Invariant = Invariant {
    id: InvariantId::NoWorkKilled,
    name: InvariantId::NoWorkKilled.name(),
    description: "No session is expired, and no tool cancelled, while the tool still works for a call its client \
                  still waits for (not resolved, not cancelled by the client, session not deleted).",
    check: work_killed_in,
};

/// A tool execution under way: its call and when it started.
struct Running {
    call: CallKey,
    started: Instant,
}

/// One violation per call, at the first step that killed its work.
fn work_killed_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let resolved_at = first_resolutions(ix);
    let still_waiting = |call: CallKey, order: usize| resolved_at.get(&call).is_none_or(|r| *r > order);
    let mut running: BTreeMap<(&SessionId, RequestId), Running> = BTreeMap::new();
    let mut cancelled: BTreeSet<(Option<&SessionId>, RequestId)> = BTreeSet::new();
    let mut deleted: BTreeSet<Option<&SessionId>> = BTreeSet::new();
    let mut violations: BTreeMap<CallKey, Violation> = BTreeMap::new();
    // A server that expires a session cancels its tools first, at the same instant.
    let expired_at: BTreeSet<(&SessionId, Instant)> = ix
        .steps()
        .filter_map(|(_, s)| match &s.kind {
            StepKind::SessionEnded { session, reason: SessionEndReason::IdleExpired } => Some((session, s.at())),
            _ => None,
        })
        .collect();
    for (order, step) in ix.others() {
        match &step.kind {
            StepKind::Send { request, .. } => match (&request.method, &request.body) {
                (Method::Delete, _) => {
                    deleted.insert(request.session.as_ref());
                }
                (_, Some(ClientMessage::Cancelled { request: id })) => {
                    cancelled.insert((request.session.as_ref(), *id));
                }
                _ => {}
            },
            StepKind::SideEffect { session, request, call, .. } => {
                running.entry((session, *request)).or_insert(Running { call: *call, started: step.at() });
            }
            StepKind::ToolEnded { session, request, end, .. } => {
                let Some(tool) = running.remove(&(session, *request)) else { continue };
                let asked = cancelled.contains(&(Some(session), *request))
                    || (session.0.is_empty() && cancelled.contains(&(None, *request)))
                    || deleted.contains(&Some(session));
                if *end == ToolEnd::Cancelled && !asked && still_waiting(tool.call, order) {
                    let what = if expired_at.contains(&(session, step.at())) {
                        format!("session {session} was expired as idle (its tool cancelled)")
                    } else {
                        format!("the server cancelled the tool of {} in session {session}", tool.call)
                    };
                    violations.entry(tool.call).or_insert_with(|| killed(order, step.at(), &tool, what));
                }
            }
            StepKind::SessionEnded { session, reason: SessionEndReason::IdleExpired } => {
                let tools: Vec<_> =
                    running.range((session, RequestId(0))..=(session, RequestId(u64::MAX))).map(|(k, _)| *k).collect();
                for key in tools {
                    let Some(tool) = running.remove(&key) else { continue };
                    if still_waiting(tool.call, order) {
                        let what = format!("session {session} was expired as idle");
                        violations.entry(tool.call).or_insert_with(|| killed(order, step.at(), &tool, what));
                    }
                }
            }
            StepKind::ServerStart { .. } => running.clear(),
            _ => {}
        }
    }
    sorted(violations.into_values().collect())
}

fn killed(order: usize, at: Instant, tool: &Running, what: String) -> Violation {
    Violation {
        invariant: InvariantId::NoWorkKilled,
        step: order,
        at,
        subject: tool.call.to_string(),
        detail: format!(
            "{what} while the tool (started at {}) was still working for {}, whose client still waited for it and \
             had asked for no cancellation",
            format_micros(tool.started.0),
            tool.call
        ),
    }
}

/// The index of the first step resolving each call.
fn first_resolutions(ix: &TraceIndex<'_>) -> BTreeMap<CallKey, usize> {
    let mut first = BTreeMap::new();
    for (order, step) in ix.others() {
        if let Some(call) = step.kind.resolves() {
            first.entry(call).or_insert(order);
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::http::Request;
    use crate::ids::ConnId;

    fn work_killed(trace: &Trace) -> Vec<Violation> {
        work_killed_in(&TraceIndex::new(trace))
    }

    /// call0's tool starts at 2 ms in session A (request 2).
    fn running() -> TraceBuilder {
        let a = sid("A");
        TraceBuilder::new().at(1_000).app(app_call(0, false)).at(2_000).server(side_effect(&a, 2, 0))
    }

    fn tool_ended(session: &SessionId, end: ToolEnd) -> StepKind {
        StepKind::ToolEnded { session: session.clone(), request: RequestId(2), call: CallKey(0), end }
    }

    fn expired(session: &SessionId) -> StepKind {
        StepKind::SessionEnded { session: session.clone(), reason: SessionEndReason::IdleExpired }
    }

    #[test]
    fn expiring_a_session_under_a_tool_its_client_waits_for_kills_work() {
        let a = sid("A");
        let trace =
            running().at(120_000).server(expired(&a)).server(tool_ended(&a, ToolEnd::Cancelled)).app(app_unknown(0));
        let v = work_killed(&trace.build());
        assert_eq!(v.len(), 1, "one per call: {v:#?}");
        // Cancelled first, then expired, at the same instant: still an expiry.
        let cancelled_first = running().at(120_000).server(tool_ended(&a, ToolEnd::Cancelled)).server(expired(&a));
        let w = work_killed(&cancelled_first.build());
        assert!(w[0].detail.starts_with("session A was expired as idle (its tool cancelled)"), "{}", w[0].detail);
        assert_eq!(
            (v[0].invariant, v[0].at, v[0].subject.as_str()),
            (InvariantId::NoWorkKilled, Instant(120_000), "call0")
        );
        assert!(v[0].detail.starts_with("session A was expired as idle"), "{}", v[0].detail);
    }

    #[test]
    fn cancelling_a_tool_nobody_asked_to_cancel_kills_work() {
        let a = sid("A");
        let v = work_killed(&running().at(60_000).server(tool_ended(&a, ToolEnd::Cancelled)).build());
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.starts_with("the server cancelled the tool of call0"), "{}", v[0].detail);
    }

    #[test]
    fn a_tool_that_ended_a_resolved_call_or_a_client_that_asked_kills_nothing() {
        let a = sid("A");
        // The tool completed before the expiry.
        let completed = running().server(tool_ended(&a, ToolEnd::Completed)).at(120_000).server(expired(&a));
        assert_eq!(work_killed(&completed.build()), vec![]);
        // The application already had its answer (a timeout error) when the session expired.
        let resolved = running().at(60_000).app(app_error(0)).at(120_000).server(expired(&a));
        assert_eq!(work_killed(&resolved.build()), vec![]);
        // The client cancelled the request itself.
        let cancel = Request::post(Some(a.clone()), ClientMessage::Cancelled { request: RequestId(2) });
        let asked = running()
            .at(60_000)
            .client(StepKind::Send { conn: ConnId(3), request: cancel })
            .server(tool_ended(&a, ToolEnd::Cancelled));
        assert_eq!(work_killed(&asked.build()), vec![]);
        // The client deleted the session.
        let delete = running()
            .at(60_000)
            .client(StepKind::Send { conn: ConnId(3), request: Request::delete(a.clone()) })
            .server(StepKind::SessionEnded { session: a.clone(), reason: SessionEndReason::Deleted })
            .server(tool_ended(&a, ToolEnd::Cancelled));
        assert_eq!(work_killed(&delete.build()), vec![]);
        // A restart lost it: a fault, not a decision.
        let restart =
            running().at(60_000).server(tool_ended(&a, ToolEnd::Lost)).server(StepKind::ServerStart { epoch: 1 });
        assert_eq!(work_killed(&restart.build()), vec![]);
    }

    #[test]
    fn expiring_another_session_kills_nothing() {
        let v = work_killed(&running().at(120_000).server(expired(&sid("B"))).build());
        assert_eq!(v, vec![]);
    }
}
