//! The work family: whether the server's tools work exactly as long as a client waits for them.
//!
//! One definition of "the client still waits" serves both invariants. A client still waits for a
//! call's work while the application has not seen the call resolved and the client has not ended
//! the work itself: it has not asked to cancel the request (`notifications/cancelled`), it has not
//! deleted the session (`DELETE`), and its stream's connection has not ended on a server whose
//! policy says a disconnect cancels (the 2026-07-28 revision; the server records such an end as
//! `ToolEnd::Disconnected`).
//!
//! - `no-work-killed`: the server does not expire a session, or cancel a tool, while the client
//!   still waits for it. Expiring such a session (say, idle expiry counted from the last request
//!   only) or cancelling such a tool throws away work the client is waiting for: the call can at
//!   best end as an unknown outcome. A server restart is a fault, not a decision, and is not judged.
//! - `no-abandoned-work`: once the server has learned that the client ended the work (it ended
//!   the session for the client's `DELETE`, or answered the client's cancel), no side effect of
//!   that request runs and its tool does not run on to a result. A tool left running after a
//!   `DELETE` (TypeScript's ignored abort signal, `delete_running_tool = "run-on"`) breaks it, and
//!   so does one left running after its stream's connection ended on a server that says a
//!   disconnect cancels but does not (`disconnect_cancel_ignored`, recorded `CancelIgnored`).

use super::{sorted, Invariant, InvariantId, TraceIndex, Violation};
use crate::http::{ClientMessage, Method};
use crate::ids::{CallKey, RequestId, SessionId};
use crate::tasks::{TaskId, TaskOp};
use crate::time::{format_micros, Instant};
#[cfg(test)]
use crate::trace::Trace;
use crate::trace::{SessionEndReason, StepKind, ToolEnd};
use std::collections::{BTreeMap, BTreeSet};

pub(super) const NO_ABANDONED_WORK: Invariant = Invariant {
    id: InvariantId::NoAbandonedWork,
    name: InvariantId::NoAbandonedWork.name(),
    description: "No side effect runs, and no tool runs on to its result, after the server learned that the client \
                  ended the work (its DELETE of the session, its cancel of the request).",
    check: abandoned_work_in,
};

pub(super) const NO_WORK_KILLED: Invariant = Invariant {
    id: InvariantId::NoWorkKilled,
    name: InvariantId::NoWorkKilled.name(),
    description: "No session is expired, and no tool cancelled, while the tool still works for a call its client \
                  still waits for (not resolved, not cancelled by the client, session not deleted).",
    check: work_killed_in,
};

/// A request a cancel names, as the server can tell it from others: in a session by the session
/// and its id; with no session (a modern request, or a server without sessions) by its id and
/// its call, since every client numbers its requests from 1 and only the call tells two
/// clients' request 13 apart.
type CancelKey<'a> = (Option<&'a SessionId>, RequestId, Option<CallKey>);

/// The key of request `request` of `call` (if known) in `session`: what a cancel names, and what a
/// tool run is cancelled under.
fn cancel_key(session: Option<&SessionId>, request: RequestId, call: Option<CallKey>) -> CancelKey<'_> {
    match session.filter(|s| !s.0.is_empty()) {
        Some(s) => (Some(s), request, None),
        None => (None, request, call),
    }
}

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
    let mut cancelled: BTreeSet<CancelKey<'_>> = BTreeSet::new();
    let ledger = ix.ledger();
    let mut deleted: BTreeSet<Option<&SessionId>> = BTreeSet::new();
    let mut tasks = TaskTools::default();
    let mut violations: BTreeMap<CallKey, Violation> = BTreeMap::new();
    // A server that expires a session cancels its tools first, at the same instant.
    let expired_at: BTreeSet<(&SessionId, Instant)> = ix
        .steps()
        .filter_map(|(_, s)| match &s.kind {
            StepKind::SessionEnded { session, reason: SessionEndReason::IdleExpired, .. } => Some((session, s.at())),
            _ => None,
        })
        .collect();
    for (order, step) in ix.others() {
        tasks.read(step);
        match &step.kind {
            StepKind::Send { request, .. } => match (&request.method, &request.body) {
                (Method::Delete, _) => {
                    deleted.insert(request.session.as_ref());
                }
                (_, Some(ClientMessage::Cancelled { request: id })) => {
                    cancelled.insert(cancel_key(request.session.as_ref(), *id, ledger.call_cancelled_at(order)));
                }
                _ => {}
            },
            StepKind::SideEffect { session, request, call, .. } => {
                running.entry((session, *request)).or_insert(Running { call: *call, started: step.at() });
            }
            StepKind::ToolEnded { session, request, end, .. } => {
                let Some(tool) = running.remove(&(session, *request)) else { continue };
                let asked = cancelled.contains(&cancel_key(Some(session), *request, Some(tool.call)))
                    || deleted.contains(&Some(session))
                    || tasks.cancel_asked(session, *request, tool.call);
                // A `Disconnected` end is judged by the request's era. Served with no session (a
                // modern request, or a server without sessions) it is the client's own: closing
                // the stream cancels the request (2026-07-28 streamable-http.mdx:233-240), and the
                // client no longer waits. Served in a legacy session it kills the work: in that era
                // a disconnection is not a cancellation (2025-11-25 basic/transports.mdx, "the
                // disconnection SHOULD NOT be interpreted as the client cancelling its request").
                let legacy_disconnect = *end == ToolEnd::Disconnected && !session.0.is_empty();
                if (*end == ToolEnd::Cancelled || legacy_disconnect) && !asked && still_waiting(tool.call, order) {
                    let what = if legacy_disconnect {
                        format!(
                            "the server cancelled the tool of {} in legacy session {session} when its stream closed",
                            tool.call
                        )
                    } else if expired_at.contains(&(session, step.at())) {
                        format!("session {session} was expired as idle (its tool cancelled)")
                    } else {
                        format!("the server cancelled the tool of {} {}", tool.call, session.placed())
                    };
                    violations.entry(tool.call).or_insert_with(|| killed(order, step.at(), &tool, what));
                }
            }
            StepKind::SessionEnded { session, reason: SessionEndReason::IdleExpired, .. } => {
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
            // A restart ends its own process's tools, each recorded lost; another replica's run on.
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

/// Where the server learned that the client ended a request's work.
#[derive(Default)]
struct EndedByClient<'a> {
    /// Sessions the client sent a `DELETE` for (as the client sent it).
    delete_sent: BTreeSet<&'a SessionId>,
    /// When the server ended each session the client had asked to delete.
    deleted: BTreeMap<&'a SessionId, Instant>,
    /// Client connections carrying a cancel, by (client, conn): the request it names.
    cancel_conns: BTreeMap<(u32, crate::ids::ConnId), CancelKey<'a>>,
    /// When the server's answer to each cancel reached the client (by then it had handled it).
    cancelled: BTreeMap<CancelKey<'a>, Instant>,
    /// When the connection carrying each request's stream ended on a server whose policy says
    /// a disconnect cancels, and the handler ignored it (`CancelIgnored`).
    disconnected: BTreeMap<(&'a SessionId, RequestId), Instant>,
    /// Which task each tool run works for.
    tasks: TaskTools<'a>,
    /// Client connections carrying a `tasks/cancel`, by (client, conn): the task.
    task_cancel_conns: BTreeMap<(u32, crate::ids::ConnId), &'a TaskId>,
    /// When the server's answer to each `tasks/cancel` reached the client.
    tasks_cancelled: BTreeMap<&'a TaskId, Instant>,
}

/// Which task each tool run works for: the server records `task-created` and, at once, the
/// side effect of the tool it starts for it (`model/src/server/tasks.rs`). A tool whose side
/// effect comes at its completion names no run at its start: it is matched by its call to the
/// tasks created for that call.
#[derive(Default)]
struct TaskTools<'a> {
    /// A task created for a call whose tool has not started yet.
    pending: BTreeMap<CallKey, &'a TaskId>,
    of: BTreeMap<(&'a SessionId, RequestId), &'a TaskId>,
    /// Every task created for each call.
    of_call: BTreeMap<CallKey, Vec<&'a TaskId>>,
    /// Tasks the client sent a `tasks/cancel` for.
    cancel_sent: BTreeSet<&'a TaskId>,
}

impl<'a> TaskTools<'a> {
    fn read(&mut self, step: &'a crate::trace::Step) {
        match &step.kind {
            StepKind::TaskCreated { task, call, .. } => {
                self.pending.insert(*call, task);
                self.of_call.entry(*call).or_default().push(task);
            }
            StepKind::SideEffect { session, request, call, .. } => {
                if let Some(task) = self.pending.remove(call) {
                    self.of.insert((session, *request), task);
                }
            }
            StepKind::Send { request, .. } => {
                if let Some(ClientMessage::Task { op: TaskOp::Cancel, task, .. }) = &request.body {
                    self.cancel_sent.insert(task);
                }
            }
            _ => {}
        }
    }

    /// The tasks the tool run `(session, request)` of `call` may work for: the one its start
    /// named, else every task created for its call.
    fn tasks_of(&self, session: &'a SessionId, request: RequestId, call: CallKey) -> Vec<&'a TaskId> {
        match self.of.get(&(session, request)) {
            Some(task) => vec![*task],
            None => self.of_call.get(&call).cloned().unwrap_or_default(),
        }
    }

    /// Whether the client asked to cancel the task the tool run works for.
    fn cancel_asked(&self, session: &'a SessionId, request: RequestId, call: CallKey) -> bool {
        self.tasks_of(session, request, call).iter().any(|t| self.cancel_sent.contains(t))
    }
}

impl<'a> EndedByClient<'a> {
    /// Reads step `order`; the ledger names the call each client cancel named.
    fn read(&mut self, order: usize, step: &'a crate::trace::Step, ledger: &super::CallLedger) {
        self.tasks.read(step);
        match &step.kind {
            StepKind::Send { conn, request } => match (&request.method, &request.body) {
                (Method::Delete, _) => {
                    self.delete_sent.extend(request.session.as_ref());
                }
                (_, Some(ClientMessage::Cancelled { request: id })) => {
                    let key = cancel_key(request.session.as_ref(), *id, ledger.call_cancelled_at(order));
                    self.cancel_conns.insert((super::client_of(step), *conn), key);
                }
                (_, Some(ClientMessage::Task { op: TaskOp::Cancel, task, .. })) => {
                    self.task_cancel_conns.insert((super::client_of(step), *conn), task);
                }
                _ => {}
            },
            // An answer below 500 says the server took the cancel; a 5xx (a balancer with no
            // replica to send it to, a server that failed) says nothing reached a handler.
            StepKind::Response { conn, head } => {
                let handled = head.status.0 < 500;
                if let Some(key) = self.cancel_conns.remove(&(super::client_of(step), *conn)) {
                    if handled {
                        self.cancelled.entry(key).or_insert(step.at());
                    }
                }
                if let Some(task) = self.task_cancel_conns.remove(&(super::client_of(step), *conn)) {
                    if handled {
                        self.tasks_cancelled.entry(task).or_insert(step.at());
                    }
                }
            }
            StepKind::SessionEnded { session, reason: SessionEndReason::Deleted, .. }
                if self.delete_sent.contains(session) =>
            {
                self.deleted.entry(session).or_insert(step.at());
            }
            StepKind::CancelIgnored { session, request, .. } => {
                self.disconnected.entry((session, *request)).or_insert(step.at());
            }
            _ => {}
        }
    }

    /// When the server had learned that the client ended this request's work, if it had.
    fn ended(&self, session: &'a SessionId, request: RequestId, call: CallKey) -> Option<(Instant, &'static str)> {
        let deleted = self.deleted.get(session).map(|t| (*t, "the client's DELETE of the session"));
        let cancelled = self
            .cancelled
            .get(&cancel_key(Some(session), request, Some(call)))
            .map(|t| (*t, "the client's cancel of the request"));
        let disconnected = self
            .disconnected
            .get(&(session, request))
            .map(|t| (*t, "the end of the request's stream, which its policy makes a cancel"));
        let task_cancelled = self
            .tasks
            .tasks_of(session, request, call)
            .iter()
            .filter_map(|task| self.tasks_cancelled.get(task))
            .min()
            .map(|t| (*t, "the client's tasks/cancel of the task it works for"));
        [deleted, cancelled, disconnected, task_cancelled].into_iter().flatten().min_by_key(|(t, _)| *t)
    }
}

/// One violation per request, at the first thing the server did for it after it learned the
/// client had ended its work.
fn abandoned_work_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let mut ended = EndedByClient::default();
    let ledger = ix.ledger();
    let mut violations: BTreeMap<(&SessionId, RequestId), Violation> = BTreeMap::new();
    for (order, step) in ix.others() {
        ended.read(order, step, ledger);
        let (session, request, call, what) = match &step.kind {
            StepKind::SideEffect { session, request, call, tool, .. } => {
                (session, *request, *call, format!("the side effect of {tool} ran"))
            }
            StepKind::ToolEnded { session, request, call, end: ToolEnd::Completed } => {
                (session, *request, *call, "the tool ran on to its result".to_string())
            }
            _ => continue,
        };
        let Some((at, how)) = ended.ended(session, request, call) else { continue };
        if step.at() <= at {
            continue;
        }
        violations.entry((session, request)).or_insert_with(|| Violation {
            invariant: InvariantId::NoAbandonedWork,
            step: order,
            at: step.at(),
            subject: call.to_string(),
            detail: format!(
                "{what} for {call} ({request} {}) at {}, after the server had learned of {how} at {}",
                session.placed(),
                format_micros(step.at().0),
                format_micros(at.0)
            ),
        });
    }
    sorted(violations.into_values().collect())
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
    use crate::http::{ResponseHead, Status};
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
        StepKind::SessionEnded { session: session.clone(), reason: SessionEndReason::IdleExpired, idle_ttl_us: None }
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
            .server(StepKind::SessionEnded { session: a.clone(), reason: SessionEndReason::Deleted, idle_ttl_us: None })
            .server(tool_ended(&a, ToolEnd::Cancelled));
        assert_eq!(work_killed(&delete.build()), vec![]);
        // A restart lost it: a fault, not a decision.
        let restart = running().at(60_000).server(tool_ended(&a, ToolEnd::Lost)).server(StepKind::ServerStart {
            epoch: 1,
            sessions_share_store: false,
            bounds: Default::default(),
        });
        assert_eq!(work_killed(&restart.build()), vec![]);
    }

    #[test]
    fn a_disconnect_that_cancels_kills_nothing_without_a_session_and_kills_a_legacy_sessions_work() {
        let none = sid("");
        let sessionless = TraceBuilder::new()
            .at(1_000)
            .app(app_call(0, false))
            .at(2_000)
            .server(side_effect(&none, 2, 0))
            .at(60_000)
            .server(tool_ended(&none, ToolEnd::Disconnected));
        assert_eq!(work_killed(&sessionless.build()), vec![]);
        let a = sid("A");
        let killed = work_killed(&running().at(60_000).server(tool_ended(&a, ToolEnd::Disconnected)).build());
        assert_eq!(killed.len(), 1, "a legacy request's closed stream is no cancellation");
    }

    fn abandoned(trace: &Trace) -> Vec<Violation> {
        abandoned_work_in(&TraceIndex::new(trace))
    }

    #[test]
    fn a_tool_that_runs_on_after_the_clients_delete_is_abandoned_work() {
        let a = sid("A");
        let deleted = |end: ToolEnd| {
            running()
                .at(60_000)
                .client(StepKind::Send { conn: ConnId(3), request: Request::delete(a.clone()) })
                .at(61_000)
                .server(StepKind::SessionEnded {
                    session: a.clone(),
                    reason: SessionEndReason::Deleted,
                    idle_ttl_us: None,
                })
                .at(90_000)
                .server(tool_ended(&a, end))
                .build()
        };
        let v = abandoned(&deleted(ToolEnd::Completed));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            (v[0].invariant, v[0].at, v[0].subject.as_str()),
            (InvariantId::NoAbandonedWork, Instant(90_000), "call0")
        );
        assert!(v[0].detail.contains("after the server had learned of the client's DELETE"), "{}", v[0].detail);
        // Cancelled with the session: nothing ran on.
        assert_eq!(abandoned(&deleted(ToolEnd::Cancelled)), vec![]);
        // A side effect at completion after the DELETE is abandoned work too.
        let effect = running()
            .at(60_000)
            .client(StepKind::Send { conn: ConnId(3), request: Request::delete(a.clone()) })
            .server(StepKind::SessionEnded { session: a.clone(), reason: SessionEndReason::Deleted, idle_ttl_us: None })
            .at(90_000)
            .server(side_effect(&a, 2, 0));
        assert_eq!(abandoned(&effect.build()).len(), 1);
        // An operator's delete (no DELETE from the client) is not the client ending the work.
        let operator = running()
            .at(60_000)
            .server(StepKind::SessionEnded { session: a.clone(), reason: SessionEndReason::Deleted, idle_ttl_us: None })
            .at(90_000)
            .server(tool_ended(&a, ToolEnd::Completed));
        assert_eq!(abandoned(&operator.build()), vec![]);
    }

    #[test]
    fn work_run_on_after_a_disconnect_the_server_says_cancels_is_abandoned_and_an_honest_cancel_is_not() {
        let a = sid("A");
        let ignored = StepKind::CancelIgnored { session: a.clone(), request: RequestId(2), call: CallKey(0) };
        let liar = running().at(60_000).server(ignored).at(90_000).server(tool_ended(&a, ToolEnd::Completed));
        let v = abandoned(&liar.build());
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(90_000), "call0"));
        assert!(
            v[0].detail.contains("the end of the request's stream, which its policy makes a cancel"),
            "{}",
            v[0].detail
        );
        // The honest server ends the tool at the disconnect: nothing runs on.
        let honest = running().at(60_000).server(tool_ended(&a, ToolEnd::Disconnected));
        assert_eq!(abandoned(&honest.build()), vec![]);
        // A disconnect on a server that makes no such claim ends nothing: the tool may run on.
        let no_claim = running().at(90_000).server(tool_ended(&a, ToolEnd::Completed));
        assert_eq!(abandoned(&no_claim.build()), vec![]);
    }

    #[test]
    fn work_after_the_server_answered_the_clients_cancel_is_abandoned() {
        let a = sid("A");
        let cancel = Request::post(Some(a.clone()), ClientMessage::Cancelled { request: RequestId(2) });
        let answered = |status: crate::http::Status, done_at: u64| {
            running()
                .at(60_000)
                .client(StepKind::Send { conn: ConnId(3), request: cancel.clone() })
                .at(61_000)
                .client(response(3, status))
                .at(done_at)
                .server(tool_ended(&a, ToolEnd::Completed))
                .build()
        };
        let trace = |done_at: u64| answered(crate::http::Status::ACCEPTED, done_at);
        assert_eq!(abandoned(&trace(70_000)).len(), 1);
        // Done before the server could have read the cancel: not the server's doing.
        assert_eq!(abandoned(&trace(60_500)), vec![]);
        // A cancel answered 503 (by a balancer with no replica, say) never reached a handler.
        assert_eq!(abandoned(&answered(crate::http::Status(503), 70_000)), vec![]);
        assert_eq!(abandoned(&answered(crate::http::Status(500), 70_000)), vec![]);
        assert_eq!(abandoned(&answered(crate::http::Status(499), 70_000)).len(), 1);
    }

    #[test]
    fn expiring_another_session_kills_nothing() {
        let v = work_killed(&running().at(120_000).server(expired(&sid("B"))).build());
        assert_eq!(v, vec![]);
    }

    #[test]
    fn a_sessionless_tool_cancelled_unasked_kills_work_and_a_sessionless_cancel_excuses_only_a_sessionless_one() {
        let (none, a) = (sid(""), sid("A"));
        let cancel = Request::post(None, ClientMessage::Cancelled { request: RequestId(2) });
        let trace = |session: &SessionId, asked: bool| {
            let sent = call_sent(2, Some(session).filter(|s| !s.0.is_empty()), 2, 0);
            let mut b = TraceBuilder::new()
                .at(1_000)
                .app(app_call(0, false))
                .client(sent)
                .at(2_000)
                .server(side_effect(session, 2, 0));
            b = b.at(60_000);
            if asked {
                b = b.client(StepKind::Send { conn: ConnId(3), request: cancel.clone() });
            }
            b.server(tool_ended(session, ToolEnd::Cancelled)).build()
        };
        // A modern request's tool cancelled with no cancel from the client.
        let v = work_killed(&trace(&none, false));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(60_000), "call0"));
        assert!(v[0].detail.starts_with("the server cancelled the tool of call0"), "{}", v[0].detail);
        // The client's sessionless cancel of request 2 is asking for it.
        assert_eq!(work_killed(&trace(&none, true)), vec![]);
        // It names no request of session A: A's request 2 was cancelled unasked.
        assert_eq!(work_killed(&trace(&a, true)).len(), 1);
    }

    #[test]
    fn two_clients_sessionless_requests_of_one_id_are_told_apart_by_their_calls() {
        // Every client numbers its requests from 1: with no session (the 2026-07-28 revision)
        // client 1's cancel of its request 2 says nothing of client 0's request 2. A swarm sweep
        // of stateless-2026 × stateless-2026 with three clients read client 0's re-issued work
        // as abandoned after client 1's cancel.
        let none = sid("");
        let cancel = Request::post(None, ClientMessage::Cancelled { request: RequestId(2) });
        let trace = |canceller: u32| {
            TraceBuilder::new()
                .at(1_000)
                .by(0)
                .app(app_call(0, false))
                .client(call_sent(2, None, 2, 0))
                .by(1)
                .app(app_call(1, false))
                .client(call_sent(2, None, 2, 1))
                .at(5_000)
                .by(canceller)
                .client(StepKind::Send { conn: ConnId(3), request: cancel.clone() })
                .client(StepKind::Response { conn: ConnId(3), head: ResponseHead::status(Status::ACCEPTED) })
                .at(6_000)
                .server(side_effect(&none, 2, 0))
                .build()
        };
        // Client 1 cancelled its own request 2: client 0's call0 runs on rightly.
        assert_eq!(abandoned(&trace(1)), vec![]);
        // Client 0 cancelled its request 2, call0's: running it after is abandoned work.
        let v = abandoned(&trace(0));
        assert_eq!(v.iter().map(|v| v.subject.as_str()).collect::<Vec<_>>(), vec!["call0"], "{v:#?}");
    }

    #[test]
    fn another_replicas_restart_leaves_this_replicas_tools_running() {
        // Replica 0 runs call0's tool in session A; replica 1 restarts (a rolling deploy, local
        // stores: its session B ends, a new epoch starts); then replica 0 expires A under the tool.
        let (a, b) = (sid("A"), sid("B"));
        let mut t = running()
            .at(30_000)
            .server(StepKind::SessionEnded {
                session: b.clone(),
                reason: SessionEndReason::ServerRestart,
                idle_ttl_us: None,
            })
            .server(StepKind::ServerStart { epoch: 3, sessions_share_store: false, bounds: Default::default() })
            .at(120_000)
            .server(expired(&a))
            .server(tool_ended(&a, ToolEnd::Cancelled))
            .app(app_unknown(0))
            .build();
        for (i, replica) in [(1, 0), (2, 1), (3, 1), (4, 0), (5, 0)] {
            t.steps[i].replica = Some(replica);
        }
        let v = work_killed(&t);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].step, v[0].at, v[0].subject.as_str()), (4, Instant(120_000), "call0"));
        assert!(v[0].detail.starts_with("session A was expired as idle"), "{}", v[0].detail);
    }

    #[test]
    fn a_tasks_cancel_ends_only_the_tool_run_of_the_task_it_names() {
        // call0 ran twice as a task (t1 by request 2, then t2 by request 3, a re-sent call); the
        // client cancelled t1 and the server answered. `first_done` is request 2's end.
        let a = sid("A");
        let created = |task: &str| StepKind::TaskCreated {
            task: TaskId(task.into()),
            call: CallKey(0),
            replica: 0,
            ttl_us: None,
        };
        let ended = |request: u64, end: ToolEnd| StepKind::ToolEnded {
            session: a.clone(),
            request: RequestId(request),
            call: CallKey(0),
            end,
        };
        let cancel = Request::post(
            Some(a.clone()),
            ClientMessage::Task { id: RequestId(5), op: TaskOp::Cancel, task: TaskId("t1".into()) },
        );
        let trace = |first_done: ToolEnd| {
            TraceBuilder::new()
                .at(1_000)
                .app(app_call(0, false))
                .at(2_000)
                .server(created("t1"))
                .server(side_effect(&a, 2, 0))
                .at(10_000)
                .server(created("t2"))
                .server(side_effect(&a, 3, 0))
                .at(20_000)
                .client(StepKind::Send { conn: ConnId(5), request: cancel.clone() })
                .at(21_000)
                .client(response(5, crate::http::Status::OK))
                .at(22_000)
                .server(ended(2, first_done))
                .at(30_000)
                .server(ended(3, ToolEnd::Completed))
                .build()
        };
        // t2's run was never cancelled: it may run on to its result.
        assert_eq!(abandoned(&trace(ToolEnd::Cancelled)), vec![]);
        // t1's run cancelled as its client asked: no work killed, though the call is unresolved.
        assert_eq!(work_killed(&trace(ToolEnd::Cancelled)), vec![]);
        // t1's run going on to its result after the answered cancel is abandoned work.
        let v = abandoned(&trace(ToolEnd::Completed));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].step, v[0].at), (7, Instant(22_000)));
        assert!(v[0].detail.contains("the client's tasks/cancel of the task it works for"), "{}", v[0].detail);
    }
}
