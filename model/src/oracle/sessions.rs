//! `no-orphaned-session`: no result is written where nobody listens, a logical client holds one
//! live session at a time, and a client told its session is gone does not keep it.

use super::TraceIndex;
use super::{client_of, event_subject, session_subject, sorted, Invariant, InvariantId, RunEnd, Violation};
use crate::http::{Method, ServerMessage, Status};
use crate::ids::{ConnId, SessionId};
use crate::time::{format_micros, Instant};
use crate::trace::{Actor, StepKind};
use std::collections::{BTreeMap, BTreeSet};

pub(super) const NO_ORPHANED_SESSION: Invariant = Invariant {
    id: InvariantId::NoOrphanedSession,
    name: InvariantId::NoOrphanedSession.name(),
    description: "No tool result is stored in a session nobody reads; a logical client holds at most one live \
                  session; a client answered for its session that the server no longer has it (404, or any other refusal the \
                  server gave: 400, 503, a JSON-RPC error) does not keep the dead id.",
    check: orphaned_sessions_in,
};

/// Rules a, b and c over a shared index.
fn orphaned_sessions_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let mut violations = orphaned_results(ix);
    violations.extend(second_live_sessions(ix));
    violations.extend(dead_sessions_kept(ix));
    sorted(violations)
}

/// Rule a: a tool result stored in a session the server still holds when the run ends, never
/// handed over, while the application was not told the call failed or may not have run. A
/// session the server lost (restart, expiry, delete) holds nothing any more. A call still
/// unresolved in a session its client holds at the end is not orphaned (it may be in flight;
/// every-call-resolves judges it).
fn orphaned_results(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let log = ix.log();
    let ledger = ix.ledger();
    let end = ix.final_state();
    let held_at_end = |session: &SessionId| end.is_some_and(|e| e.held(session));
    let answered_from = ix.answered_from();
    // Without a RunEnd step (a trace cut short) every session counts as still held.
    let server_holds = |session: &SessionId| end.is_none_or(|e| e.server_sessions.contains(session));
    log.events()
        .filter_map(|e| match e.message {
            Some(ServerMessage::ToolResult { call, .. }) => Some((e, *call)),
            _ => None,
        })
        .filter(|(e, call)| {
            let still_listening = !ledger.resolved(*call) && held_at_end(e.session);
            // Sent again in the same session and answered there: the client abandoned this request
            // for another in a session it kept, and nothing is orphaned (a result left in a session
            // the client dropped still is).
            let superseded = answered_from.get(call).is_some_and(|from| from.0 == e.session && from.1 != e.stream);
            server_holds(e.session)
                && !ix.was_delivered(e)
                && !ledger.told_failure(*call)
                && !still_listening
                && !superseded
        })
        .map(|(e, call)| Violation {
            invariant: InvariantId::NoOrphanedSession,
            step: e.order,
            at: e.at,
            subject: event_subject(e.session, Some(e.stream), e.id),
            detail: format!(
                "the result of {call} was stored {} where nobody received it, and the application was not \
                 told the call failed or may not have run",
                e.session.placed()
            ),
        })
        .collect()
}

/// Rule b: a session created for a client that still has a live one.
///
/// A session counts only if its id reached a client (a response head carrying it): one whose
/// `initialize` answer was lost on the way never did, so no client can use or end it — the
/// server's idle expiry is its only end, and no client behaviour could have avoided it.
///
/// A session its client is already ending is no longer held: from the client's first `DELETE`
/// naming it, provided the session does end later in the trace (that `DELETE` or a retry of it
/// got through, or the server expired it). A client that re-initializes while its `DELETE` of
/// the old session is still being retried through an outage has given that session up, and it
/// is cleaned up; one whose `DELETE` never ends it left it orphaned, and is flagged.
fn second_live_sessions(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let mut known: BTreeSet<&SessionId> = BTreeSet::new();
    let mut ends: BTreeSet<&SessionId> = BTreeSet::new();
    let mut changes = Vec::new();
    for (order, step) in ix.others() {
        match &step.kind {
            StepKind::Response { head, .. } if step.actor == Actor::Client => known.extend(head.session.as_ref()),
            StepKind::SessionEnded { session, .. } => {
                ends.insert(session);
                changes.push((order, step));
            }
            StepKind::SessionCreated { .. } => changes.push((order, step)),
            StepKind::Send { request, .. } if step.actor == Actor::Client && request.method == Method::Delete => {
                changes.push((order, step))
            }
            _ => {}
        }
    }
    // Each client's live sessions by when they were created, and where each live session is
    // held: a client that re-initializes in a loop (a round robin over replicas that do not share
    // sessions) holds thousands, and each end is found without a scan.
    let mut live: BTreeMap<&str, BTreeMap<usize, &SessionId>> = BTreeMap::new();
    let mut held_by: BTreeMap<&SessionId, (&str, usize)> = BTreeMap::new();
    let mut violations = Vec::new();
    for (created, (order, step)) in changes.into_iter().enumerate() {
        let ended = match &step.kind {
            StepKind::SessionCreated { session, client } if known.contains(session) => {
                let held = live.entry(client.as_str()).or_default();
                if !held.is_empty() {
                    violations.push(Violation {
                        invariant: InvariantId::NoOrphanedSession,
                        step: order,
                        at: step.at(),
                        subject: session_subject(session),
                        detail: format!("client {client} got session {session} while {}", still_live(held)),
                    });
                }
                if !held_by.contains_key(session) {
                    held.insert(created, session);
                    held_by.insert(session, (client.as_str(), created));
                }
                None
            }
            StepKind::SessionEnded { session, .. } => Some(session),
            StepKind::Send { request, .. } => request.session.as_ref().filter(|s| ends.contains(s)),
            _ => None,
        };
        if let Some((client, created)) = ended.and_then(|session| held_by.remove(session)) {
            live.entry(client).or_default().remove(&created);
        }
    }
    violations
}

/// The most live sessions a second-session violation names; the rest are counted.
const NAMED_LIVE: usize = 5;

/// What a client still held when it got another session: `its session A was still live`, or for
/// more than [`NAMED_LIVE`] the first of them and how many more (the text stays short however
/// many a loop of re-initializations left behind).
fn still_live(held: &BTreeMap<usize, &SessionId>) -> String {
    let named: Vec<&SessionId> = held.values().copied().take(NAMED_LIVE).collect();
    match held.len().checked_sub(NAMED_LIVE) {
        Some(more) if more > 0 => format!("its sessions {} and {more} more were still live", join(&named)),
        _ => format!("its session {} was still live", join(&named)),
    }
}

/// Rule c, per logical client: at the end a client holds a session the server no longer has,
/// though a 404 for it reached that client after the session ended.
fn dead_sessions_kept(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let Some(end) = ix.final_state() else { return Vec::new() };
    let kept: Vec<(u32, &SessionId)> = (0u32..)
        .zip(&end.client_sessions)
        .filter_map(|(client, held)| Some((client, (*held)?)))
        .filter(|(_, held)| !end.server_sessions.contains(held))
        .collect();
    if kept.is_empty() {
        return Vec::new();
    }
    let answers = Answers::new(ix);
    kept.into_iter().filter_map(|(client, held)| dead_session_kept(&answers, end, client, held)).collect()
}

fn dead_session_kept(answers: &Answers<'_>, end: &RunEnd<'_>, client: u32, held: &SessionId) -> Option<Violation> {
    let ended = answers.ended.get(held).copied();
    let after_end = |t: &&(Instant, String)| ended.is_none_or(|end| t.0 >= end);
    let not_found =
        answers.not_found.get(&(client, held)).and_then(|ts| ts.iter().find(|t| ended.is_none_or(|end| **t >= end)));
    // Said otherwise (400, 503, a JSON-RPC error with 200): it counts once the server itself
    // refused the session, so a proxy's own answer during an outage is not taken for it.
    let refused = answers.refused.get(held).copied();
    let other =
        || answers.other.get(&(client, held))?.iter().filter(after_end).find(|t| refused.is_some_and(|r| t.0 >= r));
    let (told, how) = match not_found {
        Some(t) => (*t, "404".to_string()),
        None => other().map(|(t, how)| (*t, how.clone()))?,
    };
    let who = if end.several_clients() { format!("client {client}") } else { "the client".to_string() };
    Some(Violation {
        invariant: InvariantId::NoOrphanedSession,
        step: end.order,
        at: end.at,
        subject: session_subject(held),
        detail: format!(
            "{who} still holds session {held}, which the server no longer has, though it was answered {how} for it at {}",
            format_micros(told.0)
        ),
    })
}

/// What rule c reads of the steps, in one pass for every client.
struct Answers<'a> {
    /// When each session first ended, if the trace says.
    ended: BTreeMap<&'a SessionId, Instant>,
    /// By client and session: the times the client received a 404 to a request of its own that
    /// carried the session, in trace order.
    not_found: BTreeMap<(u32, &'a SessionId), Vec<Instant>>,
    /// By client and session: any other failed answer to such a request (another non-2xx
    /// status, or a JSON-RPC error body), when and what, in trace order.
    other: BTreeMap<(u32, &'a SessionId), Vec<(Instant, String)>>,
    /// When the server first refused a request naming each session it did not know.
    refused: BTreeMap<&'a SessionId, Instant>,
}

impl<'a> Answers<'a> {
    fn new(ix: &TraceIndex<'a>) -> Self {
        // Each client numbers its own connections, so a number names an exchange only together
        // with the client; should a number be reused, its latest request counts.
        let mut sent_with: BTreeMap<(u32, ConnId), Option<&SessionId>> = BTreeMap::new();
        let mut ended = BTreeMap::new();
        let mut not_found: BTreeMap<(u32, &SessionId), Vec<Instant>> = BTreeMap::new();
        let mut other: BTreeMap<(u32, &SessionId), Vec<(Instant, String)>> = BTreeMap::new();
        let mut refused = BTreeMap::new();
        for (_, step) in ix.others() {
            let session_of = |conn: &ConnId| sent_with.get(&(client_of(step), *conn)).copied().flatten();
            match &step.kind {
                StepKind::SessionEnded { session, .. } => {
                    ended.entry(session).or_insert(step.at());
                }
                StepKind::Rejected { session: Some(session), .. }
                    if step.actor == Actor::Server && ended.contains_key(session) =>
                {
                    refused.entry(session).or_insert(step.at());
                }
                StepKind::Send { conn, request } => {
                    sent_with.insert((client_of(step), *conn), request.session.as_ref());
                }
                StepKind::Response { conn, head } if head.status == Status::NOT_FOUND => {
                    if let Some(session) = session_of(conn) {
                        not_found.entry((client_of(step), session)).or_default().push(step.at());
                    }
                }
                StepKind::Response { conn, head } if !head.status.is_success() && step.actor == Actor::Client => {
                    if let Some(session) = session_of(conn) {
                        other.entry((client_of(step), session)).or_default().push((step.at(), head.status.to_string()));
                    }
                }
                StepKind::Json { conn, message: ServerMessage::Error { .. } } if step.actor == Actor::Client => {
                    if let Some(session) = session_of(conn) {
                        let how = "a JSON-RPC error".to_string();
                        other.entry((client_of(step), session)).or_default().push((step.at(), how));
                    }
                }
                _ => {}
            }
        }
        Answers { ended, not_found, other, refused }
    }
}

fn join(sessions: &[&SessionId]) -> String {
    sessions.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    use crate::http::ConnEnd;
    use crate::trace::Trace;

    fn orphaned(trace: &Trace) -> Vec<Violation> {
        orphaned_results(&TraceIndex::new(trace))
    }

    fn second_live_sessions(trace: &Trace) -> Vec<Violation> {
        super::second_live_sessions(&TraceIndex::new(trace))
    }

    fn dead_sessions_kept(trace: &Trace) -> Vec<Violation> {
        super::dead_sessions_kept(&TraceIndex::new(trace))
    }
    use crate::http::Request;

    #[test]
    fn a_result_nobody_received_is_orphaned_unless_the_app_was_told() {
        let a = sid("A");
        let base = || {
            TraceBuilder::new()
                .at(1_000)
                .app(app_call(0, false))
                .at(2_000)
                .server(stored(&a, 1, 1, Some(0), Some(tool_result(1, 0))))
                .at(3_000)
        };
        let v = orphaned(&base().app(app_result(0, &sid("B"), None)).build());
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(2_000), "session A stream1 event 1-1"));
        assert_eq!(orphaned(&base().app(app_result(0, &a, Some(ev(1, 1)))).build()), vec![]);
        assert_eq!(orphaned(&base().app(app_unknown(0)).build()), vec![]);
        assert_eq!(orphaned(&base().app(app_error(0)).build()), vec![]);
        // Judged at the end of the run: a session the server still holds keeps the result ...
        let held = base().app(app_result(0, &sid("B"), None)).at(4_000).run(run_end(Some(&sid("B")), &[&a, &sid("B")]));
        assert_eq!(orphaned(&held.build()).len(), 1);
        // ... one the server lost (a restart, an expiry) holds nothing any more.
        let lost = base()
            .server(session_ended(&a))
            .app(app_result(0, &sid("B"), None))
            .at(4_000)
            .run(run_end(Some(&sid("B")), &[&sid("B")]));
        assert_eq!(orphaned(&lost.build()), vec![]);
    }

    #[test]
    fn an_unresolved_result_in_the_session_still_held_is_in_flight_not_orphaned() {
        let (a, b) = (sid("A"), sid("B"));
        let trace = |held: &SessionId| {
            TraceBuilder::new()
                .app(app_call(0, false))
                .at(2_000)
                .server(stored(&a, 1, 1, Some(0), Some(tool_result(1, 0))))
                .run(run_end(Some(held), &[&a, &b]))
                .build()
        };
        assert_eq!(orphaned(&trace(&a)), vec![]);
        assert_eq!(orphaned(&trace(&b)).len(), 1);
        // Resolved from elsewhere, it is orphaned even in the session still held.
        let resolved_elsewhere = TraceBuilder::new()
            .app(app_call(0, false))
            .at(2_000)
            .server(stored(&a, 1, 1, Some(0), Some(tool_result(1, 0))))
            .server(stored(&b, 1, 1, Some(0), Some(tool_result(1, 0))))
            .app(app_result(0, &b, Some(ev(1, 1))))
            .run(run_end(Some(&a), &[&a, &b]))
            .build();
        let v = orphaned(&resolved_elsewhere);
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session A stream1 event 1-1"));
    }

    #[test]
    fn a_result_left_on_a_request_sent_again_in_the_same_session_is_not_orphaned() {
        let (a, b) = (sid("A"), sid("B"));
        // Stream 1 of A holds the abandoned request's result; the call was answered on stream 2
        // of `answered_in`.
        let trace = |answered_in: &SessionId| {
            TraceBuilder::new()
                .app(app_call(0, true))
                .at(2_000)
                .server(stored(&a, 1, 1, Some(0), Some(tool_result(1, 0))))
                .server(stored(answered_in, 2, 1, Some(0), Some(tool_result(2, 0))))
                .app(app_result(0, answered_in, Some(ev(2, 1))))
                .run(run_end(Some(answered_in), &[&a, &b]))
                .build()
        };
        assert_eq!(orphaned(&trace(&a)), vec![]);
        // Answered in another session: A, which the client dropped, holds a result nobody reads.
        let v = orphaned(&trace(&b));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session A stream1 event 1-1"));
    }

    /// A client that re-initializes in a loop gets a violation for each new session, each naming
    /// the first few it still holds and counting the rest: the text stays short, not one name per
    /// session before it (12 000 sessions made 570 MB of verdict), and an ended one is dropped.
    #[test]
    fn a_loop_of_sessions_names_the_first_few_still_live_and_counts_the_rest() {
        let ids: Vec<SessionId> = (0..40).map(|i| sid(&format!("S{i}"))).collect();
        let mut b = TraceBuilder::new();
        for (i, id) in ids.iter().enumerate() {
            b = b.at(1_000 * (i as u64 + 1)).server(session_created(id, "app")).client(session_answer(i as u64, id));
            if i == 2 {
                b = b.server(session_ended(&ids[1]));
            }
        }
        let v = second_live_sessions(&b.build());
        assert_eq!(v.len(), 39);
        assert_eq!(v[0].detail, "client app got session S1 while its session S0 was still live");
        assert_eq!(v[5].detail, "client app got session S6 while its session S0, S2, S3, S4, S5 was still live");
        assert_eq!(
            v[38].detail,
            "client app got session S39 while its sessions S0, S2, S3, S4, S5 and 33 more were still live"
        );
    }

    #[test]
    fn a_second_live_session_of_one_client_names_both() {
        let (a, b, c) = (sid("A"), sid("B"), sid("C"));
        let trace = TraceBuilder::new()
            .at(1_000)
            .server(session_created(&a, "app"))
            .client(session_answer(1, &a))
            .server(session_created(&c, "other-app"))
            .client(session_answer(2, &c))
            .at(2_000)
            .server(session_created(&b, "app"))
            .client(session_answer(3, &b))
            .build();
        let v = second_live_sessions(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(2_000), "session B"));
        assert_eq!(v[0].detail, "client app got session B while its session A was still live");
        // After A ended, B is a legitimate successor.
        let ended = TraceBuilder::new()
            .server(session_created(&a, "app"))
            .server(session_ended(&a))
            .server(session_created(&b, "app"))
            .build();
        assert_eq!(second_live_sessions(&ended), vec![]);
    }

    #[test]
    fn a_session_being_deleted_is_given_up_only_if_the_delete_ends_it() {
        let (a, b) = (sid("A"), sid("B"));
        // The client's DELETE of A is refused through an outage; it re-initializes (B) and a
        // retry of the DELETE ends A afterwards.
        let trace = |a_ends: bool| {
            let t = TraceBuilder::new()
                .at(1_000)
                .server(session_created(&a, "app"))
                .client(session_answer(1, &a))
                .at(2_000)
                .client(StepKind::Send { conn: ConnId(2), request: Request::delete(a.clone()) })
                .client(conn_end(2, ConnEnd::Refused))
                .at(3_000)
                .server(session_created(&b, "app"))
                .client(session_answer(3, &b))
                .at(4_000)
                .client(StepKind::Send { conn: ConnId(4), request: Request::delete(a.clone()) });
            if a_ends {
                t.server(session_ended(&a)).build()
            } else {
                t.build()
            }
        };
        assert_eq!(second_live_sessions(&trace(true)), vec![]);
        // The DELETE never got through: A is orphaned, and B is the second live session.
        let v = second_live_sessions(&trace(false));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session B"));
        // Without any DELETE, A ending later does not excuse B.
        let never_deleted = TraceBuilder::new()
            .server(session_created(&a, "app"))
            .client(session_answer(1, &a))
            .server(session_created(&b, "app"))
            .client(session_answer(2, &b))
            .server(session_ended(&a))
            .build();
        assert_eq!(second_live_sessions(&never_deleted).len(), 1);
    }

    #[test]
    fn a_client_that_keeps_a_session_it_was_told_is_dead_is_reported_at_run_end() {
        let a = sid("A");
        let post = StepKind::Send {
            conn: ConnId(4),
            request: Request::post(Some(a.clone()), crate::http::ClientMessage::Initialized),
        };
        let trace = |answer: Status, server_has_it: bool| {
            let sessions: Vec<&SessionId> = if server_has_it { vec![&a] } else { vec![] };
            TraceBuilder::new()
                .server(session_created(&a, "app"))
                .at(1_000)
                .server(session_ended(&a))
                .at(2_000)
                .client(post.clone())
                .client(response(4, answer))
                .at(9_000)
                .run(run_end(Some(&a), &sessions))
                .build()
        };
        let v = dead_sessions_kept(&trace(Status::NOT_FOUND, false));
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(9_000), "session A"));
        assert!(v[0].detail.starts_with("the client still holds session A"), "{}", v[0].detail);
        assert!(v[0].detail.contains("404 for it at 0.002s"), "{}", v[0].detail);
        assert_eq!(dead_sessions_kept(&trace(Status::BAD_GATEWAY, false)), vec![]);
        assert_eq!(dead_sessions_kept(&trace(Status::NOT_FOUND, true)), vec![]);
    }

    #[test]
    fn session_not_found_said_with_400_503_or_a_json_rpc_error_counts_once_the_server_refused_it() {
        let a = sid("A");
        let post = StepKind::Send {
            conn: ConnId(4),
            request: Request::post(Some(a.clone()), crate::http::ClientMessage::Initialized),
        };
        let refused = |status: Status| StepKind::Rejected { conn: ConnId(9), status, session: Some(a.clone()) };
        // `server_refused`: the server itself answered a request naming the dead session.
        let trace = |answer: &[StepKind], server_refused: Option<Status>| {
            let mut b = TraceBuilder::new().server(session_created(&a, "app")).at(1_000).server(session_ended(&a));
            b = b.at(2_000).client(post.clone());
            if let Some(status) = server_refused {
                b = b.server(refused(status));
            }
            for step in answer {
                b = b.client(step.clone());
            }
            b.at(9_000).run(run_end(Some(&a), &[])).build()
        };
        for status in [Status::BAD_REQUEST, Status::UNAVAILABLE] {
            let v = dead_sessions_kept(&trace(&[response(4, status)], Some(status)));
            assert_eq!(v.len(), 1, "{status}");
            assert!(v[0].detail.contains(&format!("answered {status} for it at 0.002s")), "{}", v[0].detail);
            // The same status from a proxy while the server never refused the session: no news.
            assert_eq!(dead_sessions_kept(&trace(&[response(4, status)], None)), vec![], "{status}");
        }
        let error = ServerMessage::Error { request: None, message: "Session not found".into(), code: Some(-32001) };
        let rpc = [response(4, Status::OK), StepKind::Json { conn: ConnId(4), message: error }];
        let v = dead_sessions_kept(&trace(&rpc, Some(Status::OK)));
        assert_eq!(v.len(), 1);
        assert!(v[0].detail.contains("answered a JSON-RPC error for it"), "{}", v[0].detail);
        // A 200 with a result is no refusal.
        assert_eq!(dead_sessions_kept(&trace(&[response(4, Status::OK)], Some(Status::OK))), vec![]);
    }

    #[test]
    fn a_404_before_the_session_ended_does_not_count() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .server(session_created(&a, "app"))
            .client(get_standalone(1, &a))
            .client(response(1, Status::NOT_FOUND))
            .at(5_000)
            .server(session_ended(&a))
            .at(9_000)
            .run(run_end(Some(&a), &[]))
            .build();
        assert_eq!(dead_sessions_kept(&trace), vec![]);
    }

    /// Clients 0 and 1 hold sessions A and B, both gone from the server. Each numbers its own
    /// connections, so both send on c4.
    fn two_clients_on_the_same_conn_number(answered: u32) -> Trace {
        let (a, b) = (sid("A"), sid("B"));
        let post = |s: &SessionId| StepKind::Send {
            conn: ConnId(4),
            request: Request::post(Some(s.clone()), crate::http::ClientMessage::Initialized),
        };
        TraceBuilder::new()
            .server(session_created(&a, "app"))
            .server(session_created(&b, "app-1"))
            .at(1_000)
            .server(session_ended(&a))
            .server(session_ended(&b))
            .at(2_000)
            .by(0)
            .client(post(&a))
            .by(1)
            .client(post(&b))
            .by(answered)
            .client(response(4, Status::NOT_FOUND))
            .at(9_000)
            .run(run_end_of_clients(&[Some(&a), Some(&b)], &[]))
            .build()
    }

    #[test]
    fn each_client_is_judged_by_the_404s_answered_to_its_own_requests() {
        // Client 0's c4 was answered 404 after client 1 reused the number: it is A's answer.
        let v = dead_sessions_kept(&two_clients_on_the_same_conn_number(0));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, "session A");
        assert!(v[0].detail.starts_with("client 0 still holds session A"), "{}", v[0].detail);
        let v = dead_sessions_kept(&two_clients_on_the_same_conn_number(1));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, "session B");
        assert!(v[0].detail.starts_with("client 1 still holds session B"), "{}", v[0].detail);
    }

    #[test]
    fn a_session_whose_id_never_reached_the_client_is_not_one_it_holds() {
        // `initialize` ran on the server (A) but its answer was lost: the client never learned A,
        // initialized again and got B. No client could have used or ended A.
        let (a, b) = (sid("A"), sid("B"));
        let trace = |a_arrives: bool| {
            let first = TraceBuilder::new().at(1_000).server(session_created(&a, "app"));
            let first = if a_arrives { first.client(session_answer(1, &a)) } else { first };
            first
                .client(conn_end(1, ConnEnd::Reset))
                .at(2_000)
                .server(session_created(&b, "app"))
                .client(session_answer(2, &b))
                .build()
        };
        assert_eq!(second_live_sessions(&trace(false)), vec![]);
        // Had A's id arrived, B beside it is the client's second live session.
        assert_eq!(second_live_sessions(&trace(true)).len(), 1);
    }

    #[test]
    fn two_clients_each_with_one_live_session_is_no_second_session() {
        let (a, b, c) = (sid("A"), sid("B"), sid("C"));
        let trace = TraceBuilder::new()
            .server(session_created(&a, "app"))
            .client(session_answer(1, &a))
            .server(session_created(&b, "app-1"))
            .by(1)
            .client(session_answer(1, &b))
            .at(2_000)
            .server(session_created(&c, "app-1"))
            .client(session_answer(2, &c))
            .build();
        let v = second_live_sessions(&trace);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].detail, "client app-1 got session C while its session B was still live");
    }

    #[test]
    fn an_unresolved_result_in_the_session_another_client_still_holds_is_in_flight() {
        // Client 1's call 1 is still running in B, the session client 1 holds at the end.
        let (a, b) = (sid("A"), sid("B"));
        let trace = |held_by_1: Option<&SessionId>| {
            TraceBuilder::new()
                .by(1)
                .app(app_call(1, false))
                .at(2_000)
                .server(stored(&b, 1, 1, Some(1), Some(tool_result(1, 1))))
                .run(run_end_of_clients(&[Some(&a), held_by_1], &[&a, &b]))
                .build()
        };
        assert_eq!(orphaned(&trace(Some(&b))), vec![]);
        let v = orphaned(&trace(None));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session B stream1 event 1-1"));
    }

    #[test]
    fn only_a_delete_gives_up_a_session_not_another_request_sent_in_it() {
        // The client opens A's standalone stream, then initializes again (B) while A is live; A
        // expires later. A GET in A is no DELETE: the client still held A when it got B.
        let (a, b) = (sid("A"), sid("B"));
        let trace = TraceBuilder::new()
            .at(1_000)
            .server(session_created(&a, "app"))
            .client(session_answer(1, &a))
            .at(2_000)
            .client(get_standalone(2, &a))
            .at(3_000)
            .server(session_created(&b, "app"))
            .client(session_answer(3, &b))
            .at(4_000)
            .server(session_ended(&a))
            .build();
        let v = second_live_sessions(&trace);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].step, v[0].subject.as_str()), (3, "session B"));
        assert_eq!(v[0].detail, "client app got session B while its session A was still live");
    }

    #[test]
    fn an_answer_only_a_hop_recorded_hands_no_session_to_a_client() {
        // The balancer recorded the answer carrying A's id, but it never reached the client,
        // which initialized again and got B: A is no session the client held.
        let (a, b) = (sid("A"), sid("B"));
        let trace = |seen_by: Actor| {
            TraceBuilder::new()
                .at(1_000)
                .server(session_created(&a, "app"))
                .step(seen_by, session_answer(1, &a))
                .at(2_000)
                .server(session_created(&b, "app"))
                .client(session_answer(2, &b))
                .build()
        };
        assert_eq!(second_live_sessions(&trace(Actor::Lb)), vec![]);
        // Had the client got it, B beside it is the client's second live session.
        let v = second_live_sessions(&trace(Actor::Client));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session B"), "{v:#?}");
    }

    #[test]
    fn a_session_the_client_got_that_ended_leaves_room_for_its_successor() {
        // A reached the client, then expired on the server; the client initialized again (B).
        let (a, b) = (sid("A"), sid("B"));
        let trace = |a_ends: bool| {
            let t = TraceBuilder::new().at(1_000).server(session_created(&a, "app")).client(session_answer(1, &a));
            let t = if a_ends { t.at(2_000).server(session_ended(&a)) } else { t };
            t.at(3_000).server(session_created(&b, "app")).client(session_answer(2, &b)).build()
        };
        assert_eq!(second_live_sessions(&trace(true)), vec![]);
        let v = second_live_sessions(&trace(false));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session B"), "{v:#?}");
    }
}
