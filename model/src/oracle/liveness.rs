//! `every-call-resolves`: the application learns how each call ended, once, by the deadline.

use super::TraceIndex;
use super::{sorted, step_at_or_after, Invariant, InvariantId, Resolution, Violation};
use crate::ids::CallKey;
use crate::time::{format_micros, Instant};
use crate::trace::StepKind;
#[cfg(test)]
use crate::trace::Trace;
use std::collections::BTreeMap;

pub(super) const EVERY_CALL_RESOLVES: Invariant = Invariant {
    id: InvariantId::EveryCallResolves,
    name: InvariantId::EveryCallResolves.name(),
    description: "Every call the application issues is resolved (result, error or unknown outcome) by the liveness \
                  deadline, and resolved only once; and a client whose calls fail because it never got a session (the server \
                  refused every initialize it sent, a session cap; or every answer came without its session) is not \
                  served at all.",
    check: every_call_resolves_in,
};

/// Both rules of the invariant.
fn every_call_resolves_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let mut violations = unresolved_calls_in(ix);
    violations.extend(never_got_a_session(ix));
    sorted(violations)
}

/// A logical client that issued calls, sent `initialize`, and had every one it got an answer to
/// refused by the server itself (a non-2xx answer with the server's `Rejected` of a session-less
/// request between its send and its answer: a session cap's 503, not a proxy's answer during an
/// outage), never one accepted. Its calls may all "resolve" with an error, which the rule above
/// accepts; but no call of it can ever be served, which is no resolution the application can act
/// on. Reported at the last refusal.
///
/// An answer that reached the client as a success but without the session the server created
/// for it (a hop dropped `Mcp-Session-Id` on the way: no client ever saw that id) accepts
/// nothing either: the client goes on without a session the server requires.
fn never_got_a_session(ix: &TraceIndex<'_>) -> Vec<Violation> {
    #[derive(Default)]
    struct Tally {
        calls: u32,
        accepted: u32,
        refused: Vec<(usize, Instant, crate::http::Status)>,
        /// Answers that came without the session the server created for them.
        lost: u32,
    }
    let mut inits: BTreeMap<(u32, crate::ids::ConnId), Instant> = BTreeMap::new();
    let mut server_refusals: Vec<(Instant, crate::http::Status)> = Vec::new();
    let mut tally: BTreeMap<u32, Tally> = BTreeMap::new();
    // Every session id that reached a client, and when each session was created.
    let mut reached: std::collections::BTreeSet<&crate::ids::SessionId> = std::collections::BTreeSet::new();
    let mut created: Vec<(Instant, &crate::ids::SessionId)> = Vec::new();
    for (_, step) in ix.others() {
        match &step.kind {
            StepKind::Response { head, .. } if step.actor == crate::trace::Actor::Client => {
                reached.extend(head.session.as_ref())
            }
            StepKind::SessionCreated { session, .. } => created.push((step.at(), session)),
            _ => {}
        }
    }
    for (order, step) in ix.others() {
        let client = super::client_of(step);
        match &step.kind {
            StepKind::AppCall { .. } => tally.entry(client).or_default().calls += 1,
            StepKind::Send { conn, request } => {
                if matches!(request.body, Some(crate::http::ClientMessage::Initialize { .. })) {
                    inits.insert((client, *conn), step.at());
                } else {
                    inits.remove(&(client, *conn));
                }
            }
            StepKind::Rejected { status, session: None, .. } if step.actor == crate::trace::Actor::Server => {
                server_refusals.push((step.at(), *status));
            }
            StepKind::Response { conn, head } if step.actor == crate::trace::Actor::Client => {
                let Some(sent) = inits.remove(&(client, *conn)) else { continue };
                let t = tally.entry(client).or_default();
                let lost_on_the_way = head.session.is_none()
                    && created.iter().any(|(at, s)| *at >= sent && *at <= step.at() && !reached.contains(s));
                if head.status.is_success() && lost_on_the_way {
                    t.lost += 1;
                    t.refused.push((order, step.at(), head.status));
                } else if head.status.is_success() {
                    t.accepted += 1;
                } else if server_refusals.iter().any(|(at, s)| *s == head.status && *at >= sent && *at <= step.at()) {
                    t.refused.push((order, step.at(), head.status));
                }
            }
            _ => {}
        }
    }
    tally
        .into_iter()
        .filter(|(_, t)| t.calls > 0 && t.accepted == 0)
        .filter_map(|(client, t)| {
            let (order, at, status) = *t.refused.last()?;
            let who = if ix.several_clients() { format!("client {client}") } else { "the client".to_string() };
            let refused = t.refused.len() as u32 - t.lost;
            let how = match (refused, t.lost) {
                (_, 0) => format!(
                    "the server refused all {refused} initialize requests it answered (the last with {status} at {})",
                    format_micros(at.0)
                ),
                (0, lost) => format!(
                    "all {lost} initialize answers it got came without the session the server created for them (the \
                     last at {})",
                    format_micros(at.0)
                ),
                (refused, lost) => format!(
                    "the server refused {refused} initialize requests it answered and {lost} answers came without the \
                     session it created (the last at {})",
                    format_micros(at.0)
                ),
            };
            Some(Violation {
                invariant: InvariantId::EveryCallResolves,
                step: order,
                at,
                subject: format!("client {client}"),
                detail: format!("{who} never got a session: {how}, so none of its {} calls could be served", t.calls),
            })
        })
        .collect()
}

/// By when calls must be resolved: the `Liveness` deadline, else the end of the run.
fn deadline(ix: &TraceIndex<'_>) -> Option<Instant> {
    ix.liveness_step().map(|(_, deadline)| deadline).or_else(|| ix.final_state().map(|end| end.at))
}

/// An `AppCall` opens its call (the application may issue a key again after it was resolved); an
/// `AppCall` of a call still open is the same logical call issued again — after a client
/// process restart the application re-issues what it has not seen resolved — and leaves it
/// open since the first issue. A resolution settles the open call. A call issued after the
/// deadline is not judged for liveness: the run gave it no time.
#[cfg(test)]
fn unresolved_calls(trace: &Trace) -> Vec<Violation> {
    unresolved_calls_in(&TraceIndex::new(trace))
}

/// [`unresolved_calls`] over a shared index.
fn unresolved_calls_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let deadline = deadline(ix).unwrap_or(Instant(u64::MAX));
    let mut open: BTreeMap<CallKey, Instant> = BTreeMap::new();
    let mut settled: BTreeMap<CallKey, (Instant, Resolution)> = BTreeMap::new();
    let mut violations = Vec::new();
    // Read only when some call was left unresolved: where the deadline is drawn.
    let deadline_step = std::cell::OnceCell::new();
    let deadline_step = || *deadline_step.get_or_init(|| step_at_or_after(ix, deadline));
    for (order, step) in ix.others() {
        if let StepKind::AppCall { call, .. } = &step.kind {
            open.entry(*call).or_insert(step.at());
        }
        let Some((call, how)) = Resolution::of(&step.kind) else { continue };
        match open.remove(&call) {
            Some(issued) if issued <= deadline && step.at() > deadline => {
                violations.push(late(call, issued, (deadline, order), Some(step.at())));
            }
            Some(_) => {}
            None => violations.push(resolved_again(call, (step.at(), order), how, settled.get(&call))),
        }
        settled.insert(call, (step.at(), how));
    }
    for (call, issued) in open {
        if issued <= deadline {
            violations.push(late(call, issued, (deadline, deadline_step()), None));
        }
    }
    sorted(violations)
}

/// `deadline` is the time and the step it is drawn at: the late resolution, or the first step
/// after the deadline.
fn late(call: CallKey, issued: Instant, (deadline, step): (Instant, usize), resolved: Option<Instant>) -> Violation {
    let when = match resolved {
        Some(t) => format!("was resolved only at {}", format_micros(t.0)),
        None => "was never resolved".to_string(),
    };
    Violation {
        invariant: InvariantId::EveryCallResolves,
        step,
        at: deadline,
        subject: call.to_string(),
        detail: format!(
            "{call}, issued at {}, {when}: the deadline was {}",
            format_micros(issued.0),
            format_micros(deadline.0)
        ),
    }
}

fn resolved_again(
    call: CallKey,
    (at, step): (Instant, usize),
    how: Resolution,
    before: Option<&(Instant, Resolution)>,
) -> Violation {
    let detail = match before {
        Some((t, first)) => format!(
            "the application was told the outcome of {call} twice: {} at {}, then {} at {}",
            first.name(),
            format_micros(t.0),
            how.name(),
            format_micros(at.0)
        ),
        None => format!("the application was handed {} for {call}, which it never issued", how.name()),
    };
    Violation { invariant: InvariantId::EveryCallResolves, step, at, subject: call.to_string(), detail }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    fn call_resolved_at(t: Option<u64>, liveness_deadline: Option<u64>) -> Trace {
        let mut b = TraceBuilder::new().at(1_000).app(app_call(0, true));
        if let Some(deadline) = liveness_deadline {
            b = b.at(2_000).run(StepKind::Liveness { deadline });
        }
        if let Some(t) = t {
            b = b.at(t).app(app_unknown(0));
        }
        b.at(20_000).run(run_end(None, &[])).build()
    }

    #[test]
    fn a_client_whose_every_initialize_the_server_refused_was_never_served() {
        use crate::http::{ClientMessage, Request, Status};
        use crate::ids::{ConnId, RequestId};
        let init = |conn: u64| StepKind::Send {
            conn: ConnId(conn),
            request: Request::post(None, ClientMessage::Initialize { id: RequestId(conn), client: "app".into() }),
        };
        let refused = StepKind::Rejected { conn: ConnId(9), status: Status::UNAVAILABLE, session: None };
        let trace = |server_said_it: bool, then_accepted: bool| {
            let mut b = TraceBuilder::new().app(app_call(0, false));
            for conn in 1..=2 {
                b = b.at(conn * 1_000_000).client(init(conn));
                if server_said_it {
                    b = b.server(refused.clone());
                }
                b = b.client(response(conn, Status::UNAVAILABLE));
            }
            if then_accepted {
                b = b.at(5_000_000).client(init(3)).client(response(3, Status::OK));
            }
            b.at(6_000_000).app(app_error(0)).build()
        };
        let v = never_got_a_session(&TraceIndex::new(&trace(true, false)));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(2_000_000), "client 0"));
        assert!(v[0].detail.starts_with("the client never got a session: the server refused all 2"), "{}", v[0].detail);
        // The call resolved (an error), so only this rule sees it.
        assert_eq!(unresolved_calls(&trace(true, false)), vec![]);
        assert_eq!(every_call_resolves_in(&TraceIndex::new(&trace(true, false))).len(), 1);
        // A proxy's own 503s (no refusal by the server) and a session got in the end: not starved.
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(false, false))), vec![]);
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(true, true))), vec![]);
        // A client that made no call was owed nothing: refused, it is not judged.
        let mut b = TraceBuilder::new();
        for conn in 1..=2 {
            b = b
                .at(conn * 1_000_000)
                .client(init(conn))
                .server(refused.clone())
                .client(response(conn, Status::UNAVAILABLE));
        }
        assert_eq!(never_got_a_session(&TraceIndex::new(&b.build())), vec![]);
    }

    #[test]
    fn a_session_id_that_only_an_intermediary_saw_never_reached_the_client() {
        use crate::http::{ClientMessage, Request, Status};
        use crate::ids::{ConnId, RequestId};
        // The answer passed the balancer with the session's id (a step of the balancer's own),
        // and a hop in front dropped it: the client got a 200 without it.
        let s = sid("S1");
        let init = Request::post(None, ClientMessage::Initialize { id: RequestId(1), client: "app".into() });
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .at(1_000_000)
            .client(StepKind::Send { conn: ConnId(1), request: init })
            .server(session_created(&s, "app"))
            .lb(session_answer(1, &s))
            .client(response(1, Status::OK))
            .at(6_000_000)
            .app(app_error(0))
            .build();
        let v = never_got_a_session(&TraceIndex::new(&trace));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.contains("all 1 initialize answers it got came without the session"), "{}", v[0].detail);
    }

    #[test]
    fn initialize_answers_that_arrive_without_their_session_leave_the_client_without_one() {
        use crate::http::{ClientMessage, Request, Status};
        use crate::ids::{ConnId, RequestId};
        let init = |conn: u64| StepKind::Send {
            conn: ConnId(conn),
            request: Request::post(None, ClientMessage::Initialize { id: RequestId(conn), client: "app".into() }),
        };
        // The server creates a session for each initialize; `reaches` says whether its id is in
        // the answer the client gets.
        let trace = |reaches: bool| {
            let mut b = TraceBuilder::new().app(app_call(0, false));
            for conn in 1..=2u64 {
                let s = sid(&format!("S{conn}"));
                b = b.at(conn * 1_000_000).client(init(conn)).server(session_created(&s, "app"));
                b = b.client(if reaches { session_answer(conn, &s) } else { response(conn, Status::OK) });
            }
            b.at(6_000_000).app(app_error(0)).build()
        };
        let v = never_got_a_session(&TraceIndex::new(&trace(false)));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(
            v[0].detail.starts_with(
                "the client never got a session: all 2 initialize answers it got came without the session the server created"
            ),
            "{}",
            v[0].detail
        );
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(true))), vec![]);
        // A server without sessions creates none: its answers lose nothing.
        let stateless = TraceBuilder::new()
            .app(app_call(0, false))
            .at(1_000_000)
            .client(init(1))
            .client(response(1, Status::OK))
            .at(2_000_000)
            .app(app_error(0))
            .build();
        assert_eq!(never_got_a_session(&TraceIndex::new(&stateless)), vec![]);
    }

    #[test]
    fn a_call_issued_again_after_a_restart_needs_one_resolution() {
        let t = TraceBuilder::new()
            .at(1_000)
            .app(app_call(0, false))
            .at(2_000)
            .app(app_call(0, false))
            .at(3_000)
            .app(app_unknown(0))
            .at(4_000)
            .run(run_end(None, &[]))
            .build();
        assert_eq!(unresolved_calls(&t), vec![]);
    }

    #[test]
    fn a_call_resolved_by_the_deadline_is_fine() {
        assert_eq!(unresolved_calls(&call_resolved_at(Some(5_000), Some(10_000))), vec![]);
        assert_eq!(unresolved_calls(&call_resolved_at(Some(10_000), Some(10_000))), vec![], "at the deadline itself");
        assert_eq!(unresolved_calls(&call_resolved_at(Some(15_000), None)), vec![]);
    }

    #[test]
    fn an_unresolved_or_late_call_is_reported_at_the_deadline() {
        let never = unresolved_calls(&call_resolved_at(None, Some(10_000)));
        assert_eq!(never.len(), 1);
        assert_eq!(
            (never[0].invariant.name(), never[0].at, never[0].subject.as_str()),
            ("every-call-resolves", Instant(10_000), "call0")
        );
        assert!(never[0].detail.contains("never resolved"));
        let late = unresolved_calls(&call_resolved_at(Some(15_000), Some(10_000)));
        assert_eq!(late[0].at, Instant(10_000));
        assert!(late[0].detail.contains("resolved only at 0.015s"), "{}", late[0].detail);
        // Without a Liveness step the end of the run is the deadline.
        let at_end = unresolved_calls(&call_resolved_at(None, None));
        assert_eq!(at_end[0].at, Instant(20_000));
    }

    #[test]
    fn a_call_resolved_twice_is_reported_at_the_second_resolution() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .at(1_000)
            .app(app_result(0, &a, None))
            .at(2_000)
            .app(app_unknown(0))
            .build();
        let v = unresolved_calls(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(2_000), "call0"));
        assert!(v[0].detail.contains("a result at 0.001s, then an unknown outcome at 0.002s"), "{}", v[0].detail);
    }

    #[test]
    fn a_task_outcome_resolves_its_call_as_a_result_or_an_error_by_its_status() {
        use crate::tasks::{TaskId, TaskStatus};
        for (status, how) in [(TaskStatus::Completed, "a result"), (TaskStatus::Failed, "an error")] {
            let trace = TraceBuilder::new()
                .app(app_call(0, false))
                .at(1_000)
                .app(StepKind::AppTaskOutcome { task: TaskId("t".into()), call: CallKey(0), status })
                .at(2_000)
                .app(app_unknown(0))
                .build();
            let v = unresolved_calls(&trace);
            assert_eq!(v.len(), 1, "{v:#?}");
            let expected = format!("{how} at 0.001s, then an unknown outcome at 0.002s");
            assert!(v[0].detail.contains(&expected), "{}", v[0].detail);
        }
    }

    #[test]
    fn a_task_the_application_is_told_is_lost_resolves_its_call_as_an_unknown_outcome() {
        use crate::tasks::TaskId;
        let lost = || {
            TraceBuilder::new()
                .app(app_call(0, false))
                .at(1_000)
                .app(StepKind::AppTaskLost { task: TaskId("t".into()), call: CallKey(0) })
                .at(20_000)
                .run(run_end(None, &[]))
        };
        assert_eq!(unresolved_calls(&lost().build()), vec![]);
        let v = unresolved_calls(&lost().at(30_000).app(app_error(0)).build());
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.contains("an unknown outcome at 0.001s, then an error at 0.030s"), "{}", v[0].detail);
    }

    #[test]
    fn a_call_issued_again_may_be_resolved_again() {
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .app(app_error(0))
            .app(app_call(0, false))
            .app(app_result(0, &sid("A"), None))
            .build();
        assert_eq!(unresolved_calls(&trace), vec![]);
    }

    #[test]
    fn a_refusal_recorded_by_a_hop_is_not_the_server_refusing_the_client() {
        use crate::http::{ClientMessage, Request, Status};
        use crate::ids::{ConnId, RequestId};
        let init = |conn: u64| StepKind::Send {
            conn: ConnId(conn),
            request: Request::post(None, ClientMessage::Initialize { id: RequestId(conn), client: "app".into() }),
        };
        let refused = StepKind::Rejected { conn: ConnId(9), status: Status::UNAVAILABLE, session: None };
        // Every initialize answered 503, each with a session-less refusal recorded by `actor`.
        let trace = |actor: crate::trace::Actor| {
            let mut b = TraceBuilder::new().app(app_call(0, false));
            for conn in 1..=2 {
                b = b.at(conn * 1_000_000).client(init(conn)).step(actor, refused.clone());
                b = b.client(response(conn, Status::UNAVAILABLE));
            }
            b.at(6_000_000).app(app_error(0)).build()
        };
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(crate::trace::Actor::Server))).len(), 1);
        // The balancer's own refusals say nothing of the server: the client was not starved by it.
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(crate::trace::Actor::Lb))), vec![]);
    }

    #[test]
    fn an_unresolved_call_is_reported_at_the_first_step_at_or_after_the_deadline() {
        // Steps: the call (0), the deadline set (1), a step before the deadline (2), the first
        // at or after it (3), the end (4).
        let trace = |deadline: u64| {
            TraceBuilder::new()
                .at(1_000)
                .app(app_call(0, true))
                .at(2_000)
                .run(StepKind::Liveness { deadline })
                .at(5_000)
                .server(session_created(&sid("A"), "app"))
                .at(12_000)
                .server(session_ended(&sid("A")))
                .at(20_000)
                .run(run_end(None, &[]))
                .build()
        };
        let v = unresolved_calls(&trace(10_000));
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].step, v[0].at, v[0].subject.as_str()), (3, Instant(10_000), "call0"));
        // A step exactly at the deadline is where it is drawn.
        let v = unresolved_calls(&trace(12_000));
        assert_eq!((v.len(), v[0].step), (1, 3), "{v:#?}");
        // A deadline after the last step is drawn at the last step.
        let v = unresolved_calls(&trace(30_000));
        assert_eq!((v.len(), v[0].step), (1, 4), "{v:#?}");
    }

    #[test]
    fn a_session_another_client_got_is_not_lost_on_the_way_to_this_one() {
        use crate::http::{ClientMessage, Request, Status};
        use crate::ids::{ConnId, RequestId};
        let init = |client: &str| StepKind::Send {
            conn: ConnId(1),
            request: Request::post(None, ClientMessage::Initialize { id: RequestId(1), client: client.into() }),
        };
        // While client 0's initialize is in flight the server creates S for client 1; client 0's
        // own answer is a 200 without a session (a server that keeps none for it).
        let trace = |s_reaches_client_1: bool| {
            let s = sid("S");
            let mut b = TraceBuilder::new().by(0).app(app_call(0, false)).at(1_000_000).client(init("app"));
            b = b.by(1).client(init("app-1")).server(session_created(&s, "app-1"));
            if s_reaches_client_1 {
                b = b.client(session_answer(1, &s));
            }
            b.by(0).client(response(1, Status::OK)).at(6_000_000).app(app_error(0)).build()
        };
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(true))), vec![]);
        // Had S reached no client, it is the one client 0's answer came without.
        let v = never_got_a_session(&TraceIndex::new(&trace(false)));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "client 0"), "{v:#?}");
    }

    #[test]
    fn an_answer_only_a_hop_recorded_is_not_one_the_client_got() {
        use crate::http::{ClientMessage, ConnEnd, Request, Status};
        use crate::ids::{ConnId, RequestId};
        let init = StepKind::Send {
            conn: ConnId(1),
            request: Request::post(None, ClientMessage::Initialize { id: RequestId(1), client: "app".into() }),
        };
        let refused = StepKind::Rejected { conn: ConnId(9), status: Status::UNAVAILABLE, session: None };
        // The server refused the initialize; the 503 is recorded by whoever got it.
        let trace = |got_by: crate::trace::Actor| {
            let b =
                TraceBuilder::new().app(app_call(0, false)).at(1_000_000).client(init.clone()).server(refused.clone());
            let b = b.step(got_by, response(1, Status::UNAVAILABLE));
            let b = if got_by == crate::trace::Actor::Client { b } else { b.client(conn_end(1, ConnEnd::Reset)) };
            b.at(2_000_000).app(app_error(0)).build()
        };
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(crate::trace::Actor::Client))).len(), 1);
        // The balancer had the answer but the client's connection broke first: no answer of the
        // server's reached the client, so nothing says it was refused.
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(crate::trace::Actor::Lb))), vec![]);
    }

    #[test]
    fn a_server_refusal_counts_only_between_the_initialize_and_its_answer() {
        use crate::http::{ClientMessage, Request, Status};
        use crate::ids::{ConnId, RequestId};
        let init = StepKind::Send {
            conn: ConnId(1),
            request: Request::post(None, ClientMessage::Initialize { id: RequestId(1), client: "app".into() }),
        };
        let refused = StepKind::Rejected { conn: ConnId(9), status: Status::UNAVAILABLE, session: None };
        // The server refused something at `refused_at` µs; the initialize went out at 1 s and a
        // 503 came back at 2 s.
        let trace = |refused_at: u64| {
            let mut steps = vec![(refused_at, true), (1_000_000, false)];
            steps.sort();
            let mut b = TraceBuilder::new().app(app_call(0, false));
            for (t, is_refusal) in steps {
                b = if is_refusal { b.at(t).server(refused.clone()) } else { b.at(t).client(init.clone()) };
            }
            b.at(2_000_000).client(response(1, Status::UNAVAILABLE)).at(3_000_000).app(app_error(0)).build()
        };
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(1_500_000))).len(), 1);
        // A refusal before the initialize was sent is not its answer: a proxy's own 503.
        assert_eq!(never_got_a_session(&TraceIndex::new(&trace(500_000))), vec![]);
    }
}
