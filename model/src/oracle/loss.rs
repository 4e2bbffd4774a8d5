//! `no-silent-event-loss`: every event stored on a stream the application was reading reached it,
//! or the application was told it might not.

use super::{
    event_subject, sessions_lost, sorted, CallLedger, EventLog, Invariant, InvariantId, StoredEvent, TraceIndex,
    Violation,
};
use crate::http::{Method, ServerMessage};
use crate::ids::{CallKey, SessionId, StreamNo, NO_SESSION};
use crate::time::Instant;
#[cfg(test)]
use crate::trace::Trace;
use crate::trace::{ResumeOutcome, StepKind};
use std::collections::{BTreeMap, BTreeSet};

pub(super) const NO_SILENT_EVENT_LOSS: Invariant = Invariant {
    id: InvariantId::NoSilentEventLoss,
    name: InvariantId::NoSilentEventLoss.name(),
    description: "Every event stored on a stream the application was reading is delivered to it, or lies in a gap, \
                  a failed call or a lost session the application was told about.",
    check: silent_losses_in,
};

/// One violation per stream that lost events silently, at the first lost event.
#[cfg(test)]
fn silent_losses(trace: &Trace) -> Vec<Violation> {
    silent_losses_in(&TraceIndex::new(trace))
}

/// [`silent_losses`] over a shared index.
fn silent_losses_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let log = ix.log();
    let judge = Judge {
        ledger: ix.ledger(),
        delivered: ix.delivered(),
        gaps: gaps(ix, log),
        lost_sessions: sessions_lost(ix),
        reading: Reading::new(ix),
        in_flight: InFlight::new(ix),
        answered_from: ix.answered_from(),
    };
    let violations = log
        .streams()
        .into_iter()
        .filter_map(|((session, stream), events)| judge.stream(session, stream, &events))
        .collect();
    sorted(violations)
}

/// Everything the judgement of one stream needs.
struct Judge<'a> {
    ledger: &'a CallLedger,
    /// By [`StoredEvent::key`]: whether the application was handed the event.
    delivered: &'a [bool],
    gaps: BTreeMap<(&'a SessionId, StreamNo), Covered>,
    lost_sessions: BTreeSet<&'a SessionId>,
    reading: Reading<'a>,
    in_flight: InFlight<'a>,
    /// Per call, the stream its result reached the application from.
    answered_from: &'a BTreeMap<CallKey, (&'a SessionId, StreamNo)>,
}

impl<'a> Judge<'a> {
    /// `events`: the stream's, in seq order. Whatever holds for the whole stream (its gaps, its
    /// session's) is looked up once, not per event.
    fn stream(&self, session: &SessionId, stream: StreamNo, events: &[&StoredEvent<'a>]) -> Option<Violation> {
        let reading_since = self.reading_since(session, stream, events)?;
        if self.lost_sessions.contains(session) {
            return None;
        }
        let covered = self.gaps.get(&(session, stream));
        let held = self.in_flight.held.contains(session);
        // The client ended the request, or the whole session, itself: from there it reads
        // nothing of it, and what the server stores before the end lands is owed to nobody.
        let call = events.iter().find_map(|e| e.call);
        let cancelled_at = self.cancelled_at(stream, call, events);
        let deleted_at = self.reading.deleted_at.get(session).copied();
        let ended_at = [cancelled_at, deleted_at].into_iter().flatten().min();
        let last_delivered = events.iter().filter(|e| self.was_delivered(e)).map(|e| e.seq).max();
        // A session its client deleted, or a request it cancelled, also gives up what was still
        // on its way to it then: the tail of the stream after the last event handed over (a
        // notification stored at the instant of the DELETE, a replay the DELETE overtook, the
        // progress a time-out's cancel left waiting for a resume), as the end of a run does.
        // Not when the client had already given the stream up before it cancelled: what it
        // failed to resume then was lost to that give-up, in silence, while the call waited for
        // its time-out (the TypeScript client's spent retries).
        let gave_up_before =
            |cancel: usize| call.and_then(|c| self.reading.gave_up_at.get(&c)).is_some_and(|g| *g < cancel);
        let tail_given_up = deleted_at.is_some() || cancelled_at.is_some_and(|cancel| !gave_up_before(cancel));
        let given_up = |e: &StoredEvent<'_>| tail_given_up && last_delivered.is_none_or(|last| e.seq > last);
        let lost: Vec<&StoredEvent<'a>> = events
            .iter()
            .copied()
            .filter(|e| e.order >= reading_since && ended_at.is_none_or(|end| e.order < end) && is_owed_here(e))
            .filter(|e| !given_up(e))
            .filter(|e| !self.was_delivered(e) && !covered.is_some_and(|c| c.covers(e.seq)))
            .filter(|e| !self.in_flight.excuses(held, e, last_delivered) || self.not_on_its_way(session, stream, e))
            .collect();
        let (first, last) = (lost.first()?, lost.last()?);
        Some(Violation {
            invariant: InvariantId::NoSilentEventLoss,
            step: first.order,
            at: first.at,
            subject: event_subject(session, Some(stream), first.id),
            detail: format!(
                "{} events stored on this stream never reached the application, and no gap it was told of covers \
                 them (seq {} to {})",
                lost.len(),
                first.seq,
                last.seq
            ),
        })
    }

    /// The trace position from which the application was reading the stream, if it was: a POST
    /// stream from its start, when its call is one the application issued and the application is
    /// still owed its outcome; the standalone stream from the first GET that opened it.
    fn reading_since(&self, session: &SessionId, stream: StreamNo, events: &[&StoredEvent<'a>]) -> Option<usize> {
        if stream == StreamNo::STANDALONE {
            return self.reading.standalone_opened.get(session).copied();
        }
        let call = events.iter().find_map(|e| e.call)?;
        // An unresolved call is every-call-resolves' to judge; a failed or unknown one told the
        // application not to count on the stream.
        let owed = self.ledger.issued(call) && self.ledger.resolved(call) && !self.ledger.told_failure(call);
        // A call answered from another stream was sent again and read there: this stream's events
        // belong to an execution the client abandoned (whether running it twice was allowed is
        // no-duplicate-execution's to judge), and the application got the progress of the one
        // that answered it.
        let superseded = self.answered_from.get(&call).is_some_and(|from| *from != (session, stream));
        (owed && !superseded).then_some(0)
    }

    /// Where the client cancelled the request this call stream answers (`notifications/cancelled`
    /// of its own, after its request timeout), if it did after the stream opened: from there the
    /// client reads the stream no more and the application has been told the call ended, so
    /// what the server stores on it before the cancel lands is not owed to the application (a
    /// guided sweep of the naive client read a progress event stored 7 ms after its client's
    /// time-out as a silent loss). Whether the work the cancel did not stop left a result
    /// nobody read is no-orphaned-session's to judge.
    fn cancelled_at(&self, stream: StreamNo, call: Option<CallKey>, events: &[&StoredEvent<'a>]) -> Option<usize> {
        if stream == StreamNo::STANDALONE {
            return None;
        }
        let call = call?;
        let opened = events.first()?.order;
        self.ledger.cancels_of(call).find(|order| *order > opened)
    }

    fn was_delivered(&self, event: &StoredEvent<'a>) -> bool {
        self.delivered[event.key]
    }

    /// Whether `event` was stored on the standalone stream after its client gave that stream up
    /// for good, or while the client's connection to it was one the server attached to no
    /// stream: then it is on no way to the client, however late in the run it came (the
    /// in-flight excuse would pass a quiet run's whole tail).
    fn not_on_its_way(&self, session: &SessionId, stream: StreamNo, event: &StoredEvent<'a>) -> bool {
        let after = |at: Option<&usize>| at.is_some_and(|at| event.order > *at);
        stream == StreamNo::STANDALONE
            && (after(self.reading.standalone_given_up.get(session))
                || after(self.reading.standalone_parked.get(session)))
    }
}

/// Priming events carry nothing to lose; a tool result that never arrived is an orphaned
/// result, which no-orphaned-session reports (one concept, one place).
fn is_owed_here(event: &StoredEvent<'_>) -> bool {
    matches!(event.message, Some(m) if !matches!(m, ServerMessage::ToolResult { .. }))
}

/// Seqs of one stream the application was told may be missing: `(after, head]`.
struct Gap {
    after_seq: Option<u32>,
    head_seq: u32,
}

/// The seqs of one stream that its gaps cover, as sorted disjoint inclusive ranges: whether an
/// event lies in a gap is a binary search, however many gaps the stream had.
struct Covered(Vec<(u64, u64)>);

impl Covered {
    fn new(gaps: &[Gap]) -> Self {
        let mut ranges: Vec<(u64, u64)> = gaps
            .iter()
            .map(|g| (g.after_seq.map_or(0, |after| u64::from(after) + 1), u64::from(g.head_seq)))
            .filter(|(from, to)| from <= to)
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (from, to) in ranges {
            match merged.last_mut() {
                Some(last) if from <= last.1 + 1 => last.1 = last.1.max(to),
                _ => merged.push((from, to)),
            }
        }
        Covered(merged)
    }

    /// Whether some gap covers `seq`: `after < seq <= head`.
    fn covers(&self, seq: u32) -> bool {
        let seq = u64::from(seq);
        let after = self.0.partition_point(|(from, _)| *from <= seq);
        after > 0 && self.0[after - 1].1 >= seq
    }
}

/// The `AppGap` steps, placed on their streams, and the `AppStreamLost` ones (a gap with no
/// head on the standalone stream). A gap whose head the session never stored, or
/// whose `after` lies on another stream, says nothing the oracle can place, so it covers nothing.
fn gaps<'a>(ix: &TraceIndex<'a>, log: &EventLog<'a>) -> BTreeMap<(&'a SessionId, StreamNo), Covered> {
    let mut gaps: BTreeMap<_, Vec<Gap>> = BTreeMap::new();
    for (_, step) in ix.others() {
        if let StepKind::AppStreamLost { session, after } = &step.kind {
            // The stream was given up: everything after `after` on it may be missing.
            let after_seq = match after {
                None => None,
                Some(after) => match log.get(session, after).filter(|a| a.stream == StreamNo::STANDALONE) {
                    Some(after) => Some(after.seq),
                    None => continue,
                },
            };
            gaps.entry((session, StreamNo::STANDALONE)).or_default().push(Gap { after_seq, head_seq: u32::MAX });
            continue;
        }
        let StepKind::AppGap { session, after, head, .. } = &step.kind else { continue };
        let Some(head) = log.get(session, head) else { continue };
        let after_seq = match after {
            None => None,
            Some(after) => match log.get(session, after).filter(|a| a.stream == head.stream) {
                Some(after) => Some(after.seq),
                None => continue,
            },
        };
        gaps.entry((session, head.stream)).or_default().push(Gap { after_seq, head_seq: head.seq });
    }
    gaps.into_iter().map(|(stream, gaps)| (stream, Covered::new(&gaps))).collect()
}

/// Where the clients began and stopped reading streams, read in one pass over the steps.
struct Reading<'a> {
    /// For each session, the position from which its standalone stream was read: the first
    /// fresh GET (no `Last-Event-ID`), from its `200` head when that GET was answered. Events
    /// stored before the head were never meant for the application: a fresh GET replays nothing,
    /// and until the server has the request there is no stream to put a notification on (a
    /// swarm sweep of reference × py-sdk read a notification stored 16 ms after the client sent
    /// its GET, and before the GET reached the server behind the balancer, as a silent loss). A
    /// first GET cut before its head reads the stream from its sending: the server may have
    /// taken it, and what it stored then, in the outage that followed, is the loss a buffering
    /// server spares the client.
    standalone_opened: BTreeMap<&'a SessionId, usize>,
    /// For each session, the position of the first `DELETE` of it a client sent: the client ends
    /// its session there and stops reading its streams (a sweep of the TypeScript client against
    /// the reference server read a notification stored in the 8 ms between the application's
    /// `DELETE` and its landing as a silent loss). An operator's `DELETE` is no client's word:
    /// what it costs the client's application stays for the oracle and the conditions to judge.
    deleted_at: BTreeMap<&'a SessionId, usize>,
    /// For each call, the position of the first decision of its client that gave its stream up
    /// because its reconnect attempts were spent.
    gave_up_at: BTreeMap<CallKey, usize>,
    /// For each session, the position where its client gave its standalone stream up (its
    /// reconnect attempts spent), unless a fresh `GET` opened it again later: from there nothing
    /// the server stores on it is on its way to the client (typescript-sdk#2098).
    standalone_given_up: BTreeMap<&'a SessionId, usize>,
    /// For each session, the position of a resume of its standalone stream the server answered
    /// with an empty `200` left open and attached to no stream (typescript-sdk#943, #2560: the
    /// shipped store's id parsing), unless the client sent another `GET` of it later: from there
    /// what the server stores on the stream goes to no connection, while the client sits on one
    /// that carries keep-alives only.
    standalone_parked: BTreeMap<&'a SessionId, usize>,
}

impl<'a> Reading<'a> {
    fn new(ix: &TraceIndex<'a>) -> Self {
        let mut sent = BTreeMap::new();
        let mut fresh: BTreeMap<(Option<u32>, crate::ids::ConnId), &'a SessionId> = BTreeMap::new();
        let mut answered = BTreeMap::new();
        let (mut deleted_at, mut gave_up_at) = (BTreeMap::new(), BTreeMap::new());
        let mut standalone_given_up = BTreeMap::new();
        let mut standalone_parked = BTreeMap::new();
        let log = ix.log();
        // The session each client last sent a request under.
        let mut session_of: BTreeMap<Option<u32>, &'a SessionId> = BTreeMap::new();
        for (order, step) in ix.others() {
            if let (StepKind::Send { request, .. }, crate::trace::Actor::Client) = (&step.kind, step.actor) {
                if let Some(session) = &request.session {
                    session_of.insert(step.client, session);
                    if request.method == Method::Get {
                        standalone_parked.remove(session);
                    }
                }
            }
            match &step.kind {
                StepKind::Send { conn, request } => match (request.method, &request.last_event_id, &request.session) {
                    (Method::Get, None, Some(session)) if !sent.contains_key(session) => {
                        sent.insert(session, order);
                        fresh.insert((step.client, *conn), session);
                    }
                    (Method::Get, None, Some(session)) => {
                        standalone_given_up.remove(session);
                    }
                    // Without a session: the implicit context's standalone stream, where a server
                    // without sessions that holds the GET open stores its notifications.
                    (Method::Get, None, None) if !sent.contains_key(&&*NO_SESSION) => {
                        sent.insert(&*NO_SESSION, order);
                        fresh.insert((step.client, *conn), &*NO_SESSION);
                    }
                    (Method::Delete, _, Some(session)) if step.actor == crate::trace::Actor::Client => {
                        deleted_at.entry(session).or_insert(order);
                    }
                    _ => {}
                },
                StepKind::Resume { session, last_event_id, outcome: ResumeOutcome::Empty { open: true }, .. }
                    if log.get(session, last_event_id).is_some_and(|e| e.stream == StreamNo::STANDALONE) =>
                {
                    standalone_parked.insert(session, order);
                }
                StepKind::Decision { call: None, error: Some(error), .. }
                    if error == crate::client::NOTE_STANDALONE_GIVEN_UP =>
                {
                    if let Some(session) = session_of.get(&step.client) {
                        standalone_given_up.insert(*session, order);
                    }
                }
                StepKind::Response { conn, head } if head.status.0 == 200 => {
                    if let Some(session) = fresh.remove(&(step.client, *conn)) {
                        answered.entry(session).or_insert(order);
                    }
                }
                StepKind::Decision { call: Some(call), error: Some(error), .. }
                    if error.ends_with(crate::client::NOTE_LEFT_PENDING) =>
                {
                    gave_up_at.entry(*call).or_insert(order);
                }
                _ => {}
            }
        }
        sent.extend(answered);
        Reading { standalone_opened: sent, deleted_at, gave_up_at, standalone_given_up, standalone_parked }
    }
}

/// Events still on their way when the run stopped are not lost: the tail of a stream (after the
/// last event delivered from it) stored after the network healed, in a session its client still
/// held at the end. A session its client walked away from has no events in flight.
struct InFlight<'a> {
    /// The sessions the clients held at the end.
    held: BTreeSet<&'a SessionId>,
    /// The `Liveness` step's time, else the end of the run.
    quiet_from: Instant,
}

impl<'a> InFlight<'a> {
    fn new(ix: &TraceIndex<'a>) -> Self {
        let end = ix.final_state();
        let quiet_from = match (ix.liveness_step(), end) {
            (Some((step, _)), _) => step.at(),
            (None, Some(end)) => end.at,
            (None, None) => Instant(u64::MAX),
        };
        let held = end.map(|e| e.client_sessions.iter().copied().flatten().collect()).unwrap_or_default();
        InFlight { held, quiet_from }
    }

    /// `held`: whether the event's session is one a client held at the end.
    fn excuses(&self, held: bool, event: &StoredEvent<'_>, last_delivered_seq: Option<u32>) -> bool {
        held && event.at >= self.quiet_from && last_delivered_seq.is_none_or(|last| event.seq > last)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::ids::EventId;

    /// A call's progress events 1..=5 on stream 1 of session A, then its result (seq 6).
    fn call_stream() -> TraceBuilder {
        let a = sid("A");
        TraceBuilder::new()
            .at(1_000)
            .server(session_created(&a, "app"))
            .app(app_call(0, false))
            .at(2_000)
            .server(stored(&a, 1, 0, Some(0), None))
            .at(3_000)
            .stored_range(&a, 1, Some(0), 1..=5)
            .at(4_000)
            .server(stored(&a, 1, 6, Some(0), Some(tool_result(1, 0))))
    }

    #[test]
    fn a_stream_delivered_in_full_is_clean_even_without_its_priming_event() {
        let a = sid("A");
        let trace = call_stream()
            .at(5_000)
            .delivered_range(&a, 1, Some(0), 1..=5)
            .app(app_result(0, &a, Some(ev(1, 6))))
            .build();
        assert_eq!(silent_losses(&trace), vec![]);
    }

    /// A client that times its request out cancels it and stops reading its stream: what the
    /// server stores on it after the cancel (before the cancel lands) is not owed, nor what was
    /// still on its way; a hole before the last event handed over still is.
    #[test]
    fn what_a_stream_carries_after_its_client_cancelled_the_request_is_not_owed() {
        let a = sid("A");
        let cancel = crate::http::Request::post(
            Some(a.clone()),
            crate::http::ClientMessage::Cancelled { request: crate::ids::RequestId(2) },
        );
        let cancelled = |delivered: Vec<u32>| {
            TraceBuilder::new()
                .at(1_000)
                .server(session_created(&a, "app"))
                .app(app_call(0, true))
                .client(call_sent(2, Some(&a), 2, 0))
                .at(2_000)
                .server(stored(&a, 1, 0, Some(0), None))
                .stored_range(&a, 1, Some(0), 1..=3)
                .delivered_range(&a, 1, Some(0), delivered)
                .at(60_000)
                .client(StepKind::Send { conn: crate::ids::ConnId(3), request: cancel.clone() })
                .app(app_error(0))
                .at(60_007)
                .stored_range(&a, 1, Some(0), 4..=4)
                .build()
        };
        assert_eq!(silent_losses(&cancelled(vec![1, 2, 3])), vec![]);
        // What was still on its way when the client cancelled (after the last event handed
        // over: progress waiting for a resume) is given up with the request; a hole before the
        // last one handed over is not.
        assert_eq!(silent_losses(&cancelled(vec![1, 2])), vec![]);
        let v = silent_losses(&cancelled(vec![1, 3]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.starts_with("1 events") && v[0].detail.ends_with("(seq 2 to 2)"), "{}", v[0].detail);
        // A client that had given the stream up before its time-out (its retries spent, the call
        // left pending) lost the tail to that give-up: it still counts.
        let mut gave_up = cancelled(vec![1]);
        let decision = StepKind::Decision {
            call: Some(CallKey(0)),
            outcome: None,
            action: None,
            error: Some(format!("{}: the call stays pending until its request timeout", crate::client::ERR_EXHAUSTED)),
        };
        let at =
            gave_up.steps.iter().position(|s| matches!(s.kind, StepKind::Send { conn: crate::ids::ConnId(3), .. }));
        let at = at.expect("the cancel is in the trace");
        let mut step = gave_up.steps[at].clone();
        step.kind = decision;
        gave_up.steps.insert(at, step);
        for (seq, s) in gave_up.steps.iter_mut().enumerate() {
            s.seq = seq as u64;
        }
        let v = silent_losses(&gave_up);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.ends_with("(seq 2 to 3)"), "{}", v[0].detail);
    }

    /// A client that deletes its session stops reading its streams: a notification the server
    /// stores before the `DELETE` lands is owed to nobody, nor is what was still on its way then;
    /// a hole before the last event handed over still counts.
    #[test]
    fn what_a_session_stores_after_its_client_sent_its_delete_is_not_owed() {
        let a = sid("A");
        let deleted = |delivered: Vec<u32>| {
            TraceBuilder::new()
                .client(get_standalone(1, &a))
                .at(1_000)
                .stored_range(&a, 0, None, 1..=3)
                .delivered_range(&a, 0, None, delivered)
                .at(120_000)
                .client(StepKind::Send {
                    conn: crate::ids::ConnId(2),
                    request: crate::http::Request::delete(a.clone()),
                })
                .stored_range(&a, 0, None, 4..=4)
                .build()
        };
        assert_eq!(silent_losses(&deleted(vec![1, 2, 3])), vec![]);
        // What was still on its way when the DELETE went out (after the last event handed
        // over) is given up with the session; a hole before the last one handed over is not.
        assert_eq!(silent_losses(&deleted(vec![1, 2])), vec![]);
        let v = silent_losses(&deleted(vec![1, 3]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.ends_with("(seq 2 to 2)"), "{}", v[0].detail);
    }

    #[test]
    fn events_handed_over_without_ids_are_matched_by_their_message() {
        // A server without an event store sends no `id:`: the application gets each event with
        // none, and the oracle finds it by its message (a hook for `server.event_store = none`).
        let a = sid("A");
        let without_ids = |steps: &[u32]| {
            let mut t = call_stream().at(5_000);
            for step in steps {
                let kind = StepKind::AppEvent {
                    session: a.clone(),
                    id: None,
                    call: Some(CallKey(0)),
                    message: progress(0, *step),
                };
                t = t.app(kind);
            }
            t.app(app_result(0, &a, None)).build()
        };
        assert_eq!(silent_losses(&without_ids(&[1, 2, 3, 4, 5])), vec![]);
        let v = silent_losses(&without_ids(&[1, 2, 5]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.starts_with("2 events"), "{}", v[0].detail);
    }

    #[test]
    fn two_clients_sessionless_requests_of_one_id_handed_over_without_ids_are_told_apart_by_their_calls() {
        // Two modern clients each send their request 1 (call0 and call1) with no session; the
        // server streams each its progress, and the clients hand it over without ids. Matched
        // by (request, step) alone, both clients' step 1 found the later-stored event, and the
        // other stream read as never delivered (a swarm sweep of stateless-2026 × rmcp).
        let none = sid("");
        let step = |call: u32, n: u32| ServerMessage::Progress {
            request: crate::ids::RequestId(1),
            call: CallKey(call),
            step: n,
        };
        let mut t = TraceBuilder::new().at(1_000).by(0).app(app_call(0, true)).by(1).app(app_call(1, true));
        for n in 1..=3 {
            t = t.at(u64::from(n) * 10_000);
            for (stream, call) in [(1, 0), (2, 1)] {
                let mut kind = stored(&none, stream, n - 1, Some(call), Some(step(call, n)));
                if let StepKind::EventStored { id, .. } = &mut kind {
                    *id = EventId::from(format!("0.{}/{stream}", n - 1));
                }
                t = t.server(kind);
            }
            for call in [0, 1] {
                let kind = StepKind::AppEvent {
                    session: none.clone(),
                    id: None,
                    call: Some(CallKey(call)),
                    message: step(call, n),
                };
                t = t.by(call).app(kind);
            }
        }
        let t = t.at(50_000).by(0).app(app_result(0, &none, None)).by(1).app(app_result(1, &none, None)).build();
        assert_eq!(silent_losses(&t), vec![]);
    }

    #[test]
    fn a_missing_progress_event_is_reported_once_per_stream_at_its_stored_time() {
        let a = sid("A");
        let trace = call_stream()
            .at(5_000)
            .delivered_range(&a, 1, Some(0), [1, 4])
            .app(app_result(0, &a, Some(ev(1, 6))))
            .build();
        let v = silent_losses(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].invariant, "no-silent-event-loss");
        assert_eq!(v[0].at, Instant(3_001));
        assert_eq!(v[0].subject, "session A stream1 event 1-2");
        assert!(v[0].detail.starts_with("3 events"), "{}", v[0].detail);
    }

    #[test]
    fn a_stream_the_client_abandoned_for_a_re_sent_request_is_not_owed() {
        // Stream 1 (the first execution's) is never read; the call is sent again, and stream 2
        // answers it in full.
        let a = sid("A");
        let answered_from = |stream: u32| {
            call_stream()
                .at(5_000)
                .server(stored(&a, 2, 0, Some(0), None))
                .stored_range(&a, 2, Some(0), 1..=5)
                .server(stored(&a, 2, 6, Some(0), Some(tool_result(2, 0))))
                .at(6_000)
                .delivered_range(&a, 2, Some(0), [1, 2, 3, 4, 5])
                .app(app_result(0, &a, Some(ev(stream, 6))))
                .build()
        };
        assert_eq!(silent_losses(&answered_from(2)), vec![]);
        // Answered from stream 1 (which nobody read): its progress was lost.
        let v = silent_losses(&answered_from(1));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, "session A stream1 event 1-1");
    }

    #[test]
    fn failed_unknown_or_unresolved_calls_and_lost_sessions_excuse_their_streams() {
        let a = sid("A");
        for told in
            [Some(app_error(0)), Some(app_unknown(0)), Some(StepKind::AppSessionLost { session: a.clone() }), None]
        {
            let mut b = call_stream().at(5_000);
            if let Some(told) = told {
                b = b.app(told);
            }
            assert_eq!(silent_losses(&b.build()), vec![]);
        }
    }

    #[test]
    fn a_gap_covers_after_exclusive_to_head_inclusive_on_the_heads_stream() {
        let a = sid("A");
        let with_gap = |after: Option<EventId>, head: EventId| {
            call_stream()
                .at(5_000)
                .delivered_range(&a, 1, Some(0), [1, 5])
                .app(app_gap(&a, after, head))
                .app(app_result(0, &a, Some(ev(1, 6))))
                .build()
        };
        assert_eq!(silent_losses(&with_gap(Some(ev(1, 1)), ev(1, 4))), vec![]);
        assert_eq!(silent_losses(&with_gap(None, ev(1, 4))), vec![]);
        // Head one short: event 4 is still lost.
        let short = silent_losses(&with_gap(Some(ev(1, 1)), ev(1, 3)));
        assert_eq!(short[0].subject, "session A stream1 event 1-4");
        // `after` itself is not covered.
        let after_lost = silent_losses(&with_gap(Some(ev(1, 2)), ev(1, 4)));
        assert_eq!(after_lost[0].subject, "session A stream1 event 1-2");
        assert!(after_lost[0].detail.starts_with("1 events"), "{}", after_lost[0].detail);
        // A head the session never stored covers nothing.
        assert_eq!(silent_losses(&with_gap(None, ev(2, 4))).len(), 1);
    }

    #[test]
    fn merged_gaps_cover_exactly_what_one_of_the_gaps_covers() {
        // Overlapping, adjacent, nested, empty (after >= head) and unbounded gaps.
        let gap = |after: Option<u32>, head: u32| Gap { after_seq: after, head_seq: head };
        let sets = [
            vec![gap(Some(3), 7), gap(Some(5), 9), gap(Some(12), 14), gap(Some(9), 10), gap(Some(20), 20)],
            vec![gap(None, 2), gap(Some(1), 4), gap(Some(30), 40), gap(Some(32), 35), gap(Some(40), u32::MAX)],
            vec![gap(Some(u32::MAX), u32::MAX), gap(Some(6), 5)],
            vec![],
        ];
        for gaps in &sets {
            let covered = Covered::new(gaps);
            for seq in (0..60).chain([u32::MAX - 1, u32::MAX]) {
                let any = gaps.iter().any(|g| g.after_seq.is_none_or(|after| seq > after) && seq <= g.head_seq);
                assert_eq!(covered.covers(seq), any, "seq {seq} in {:?}", covered.0);
            }
        }
    }

    #[test]
    fn events_are_judged_against_the_session_that_stored_them() {
        // B stores ids equal to A's; B's events reaching the app do not make up for A's.
        let (a, b) = (sid("A"), sid("B"));
        let trace = call_stream()
            .at(4_500)
            .stored_range(&b, 1, Some(0), 1..=5)
            .at(5_000)
            .delivered_range(&b, 1, Some(0), 1..=5)
            .app(app_result(0, &a, Some(ev(1, 6))))
            .build();
        let v = silent_losses(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].subject, "session A stream1 event 1-1");
    }

    #[test]
    fn the_standalone_stream_is_owed_from_the_get_that_opened_it() {
        let a = sid("A");
        let base = || {
            TraceBuilder::new()
                .at(1_000)
                .stored_range(&a, 0, None, 1..=2)
                .at(2_000)
                .client(get_standalone(1, &a))
                .at(3_000)
                .stored_range(&a, 0, None, 3..=6)
        };
        let clean = base().at(4_000).delivered_range(&a, 0, None, 3..=6).build();
        assert_eq!(silent_losses(&clean), vec![]);
        let lossy = base().at(4_000).delivered_range(&a, 0, None, [3, 6]).build();
        let v = silent_losses(&lossy);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(3_001), "session A stream0 event 0-4"));
        // Told the session was lost, the application knows not to expect its events.
        let told = base().at(4_000).app(StepKind::AppSessionLost { session: a.clone() }).build();
        assert_eq!(silent_losses(&told), vec![]);
        // Never opened: nobody was reading.
        let unread = TraceBuilder::new().stored_range(&a, 0, None, 1..=3).build();
        assert_eq!(silent_losses(&unread), vec![]);
        // Once the server answers the GET, the stream is read from its head: an event stored
        // while the GET was on its way (the server had no stream to put it on, and a fresh GET
        // replays nothing) is not owed; one stored after the head and never handed over is.
        let answered = |delivered: &[u32]| {
            TraceBuilder::new()
                .at(2_000)
                .client(get_standalone(1, &a))
                .at(2_016)
                .stored_range(&a, 0, None, 1..=1)
                .at(2_400)
                .client(response(1, crate::http::Status::OK))
                .at(3_000)
                .stored_range(&a, 0, None, 2..=3)
                .at(4_000)
                .delivered_range(&a, 0, None, delivered.iter().copied())
                .build()
        };
        assert_eq!(silent_losses(&answered(&[2, 3])), vec![]);
        let v = silent_losses(&answered(&[3]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, "session A stream0 event 0-2");
    }

    #[test]
    fn a_standalone_stream_reported_lost_excuses_what_followed_the_last_event_seen() {
        let a = sid("A");
        let trace = |after: Option<EventId>| {
            TraceBuilder::new()
                .client(get_standalone(1, &a))
                .at(1_000)
                .stored_range(&a, 0, None, 1..=6)
                .delivered_range(&a, 0, None, 1..=2)
                .app(StepKind::AppStreamLost { session: a.clone(), after })
                .build()
        };
        assert_eq!(silent_losses(&trace(Some(ev(0, 2)))), vec![]);
        assert_eq!(silent_losses(&trace(None)), vec![]);
        // Event 2 was missed before the last one seen (3): the notice does not cover it.
        let missed = TraceBuilder::new()
            .client(get_standalone(1, &a))
            .at(1_000)
            .stored_range(&a, 0, None, 1..=6)
            .delivered_range(&a, 0, None, [1, 3])
            .app(StepKind::AppStreamLost { session: a.clone(), after: Some(ev(0, 3)) })
            .build();
        assert_eq!(silent_losses(&missed)[0].subject, "session A stream0 event 0-2");
    }

    #[test]
    fn a_tail_stored_after_the_heal_is_in_flight_only_in_the_session_still_held() {
        let (a, b) = (sid("A"), sid("B"));
        let trace = |held: &SessionId| {
            TraceBuilder::new()
                .client(get_standalone(1, &a))
                .at(1_000)
                .stored_range(&a, 0, None, 1..=2)
                .delivered_range(&a, 0, None, 1..=2)
                .at(2_000)
                .run(StepKind::Liveness { deadline: 9_000 })
                .at(8_000)
                .stored_range(&a, 0, None, 3..=4)
                .at(9_000)
                .run(run_end(Some(held), &[&a, &b]))
                .build()
        };
        assert_eq!(silent_losses(&trace(&a)), vec![]);
        assert_eq!(silent_losses(&trace(&b)).len(), 1);
        // Only the tail is in flight: an event skipped before a later one was delivered is lost.
        let skipped = TraceBuilder::new()
            .client(get_standalone(1, &a))
            .run(StepKind::Liveness { deadline: 9_000 })
            .at(8_000)
            .stored_range(&a, 0, None, 1..=2)
            .delivered_range(&a, 0, None, 2..=2)
            .at(9_000)
            .run(run_end(Some(&a), &[&a]))
            .build();
        assert_eq!(silent_losses(&skipped)[0].subject, "session A stream0 event 0-1");
    }

    /// typescript-sdk#2098: a client that gave its standalone stream up for good (its retries
    /// spent, the application not told) is not waiting for the tail the server stores after
    /// that, however quiet the rest of the run: lost, not in flight. A fresh `GET` that opens the
    /// stream again makes the tail in flight again.
    #[test]
    fn a_tail_stored_after_the_standalone_stream_was_given_up_is_not_in_flight() {
        let a = sid("A");
        let given_up = StepKind::Decision {
            call: None,
            outcome: None,
            action: None,
            error: Some(crate::client::NOTE_STANDALONE_GIVEN_UP.to_string()),
        };
        let trace = |reopened: bool| {
            let mut b = TraceBuilder::new()
                .client(get_standalone(1, &a))
                .run(StepKind::Liveness { deadline: 9_000 })
                .at(1_000)
                .stored_range(&a, 0, None, 1..=2)
                .delivered_range(&a, 0, None, 1..=2)
                .at(2_000)
                .client(given_up.clone());
            if reopened {
                b = b.at(3_000).client(get_standalone(2, &a));
            }
            b.at(8_000).stored_range(&a, 0, None, 3..=4).at(9_000).run(run_end(Some(&a), &[&a])).build()
        };
        let lost = silent_losses(&trace(false));
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(lost[0].subject, "session A stream0 event 0-3");
        assert_eq!(silent_losses(&trace(true)), vec![]);
    }

    /// typescript-sdk#943, #2560: a resume of the standalone stream answered with an empty `200`
    /// left open attaches the connection to no stream; what the server stores on the stream
    /// after it goes nowhere, however quiet the rest of the run (lost, not in flight), until the
    /// client sends another `GET` of it.
    #[test]
    fn a_tail_stored_while_the_resumed_standalone_connection_is_attached_nowhere_is_not_in_flight() {
        let a = sid("A");
        let trace = |again: bool| {
            let mut b = TraceBuilder::new()
                .client(get_standalone(1, &a))
                .run(StepKind::Liveness { deadline: 9_000 })
                .at(1_000)
                .stored_range(&a, 0, None, 1..=2)
                .delivered_range(&a, 0, None, 1..=2)
                .at(2_000)
                .client(get_resume(2, &a, ev(0, 2)))
                .server(resume(&a, ev(0, 2), ResumeOutcome::Empty { open: true }));
            if again {
                b = b.at(3_000).client(get_standalone(3, &a));
            }
            b.at(8_000).stored_range(&a, 0, None, 3..=4).at(9_000).run(run_end(Some(&a), &[&a])).build()
        };
        let lost = silent_losses(&trace(false));
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(lost[0].subject, "session A stream0 event 0-3");
        assert_eq!(silent_losses(&trace(true)), vec![]);
    }

    #[test]
    fn an_event_numbered_like_the_last_one_delivered_is_not_in_the_tail_after_it() {
        // Events 1 and 2 delivered; after the heal the server stores a second event numbered 2
        // (another id): not after the last delivered, so not in flight, but lost.
        let a = sid("A");
        let twin = StepKind::EventStored {
            session: a.clone(),
            stream: StreamNo(0),
            seq: 2,
            id: EventId::from("0-2b"),
            call: None,
            message: Some(ServerMessage::Notification { seq: 20 }),
        };
        let trace = TraceBuilder::new()
            .client(get_standalone(1, &a))
            .at(1_000)
            .stored_range(&a, 0, None, 1..=2)
            .delivered_range(&a, 0, None, 1..=2)
            .at(2_000)
            .run(StepKind::Liveness { deadline: 9_000 })
            .at(8_000)
            .server(twin)
            .stored_range(&a, 0, None, 3..=3)
            .at(9_000)
            .run(run_end(Some(&a), &[&a]))
            .build();
        let v = silent_losses(&trace);
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session A stream0 event 0-2b"), "{v:#?}");
        assert!(v[0].detail.starts_with("1 events stored on this stream"), "{}", v[0].detail);
    }

    #[test]
    fn a_tail_is_in_flight_in_a_session_any_client_still_held() {
        // Client 1 reads B's standalone stream; client 0 holds A.
        let (a, b) = (sid("A"), sid("B"));
        let trace = |held_by_1: Option<&SessionId>| {
            TraceBuilder::new()
                .by(1)
                .client(get_standalone(1, &b))
                .run(StepKind::Liveness { deadline: 9_000 })
                .at(8_000)
                .stored_range(&b, 0, None, 1..=2)
                .at(9_000)
                .run(run_end_of_clients(&[Some(&a), held_by_1], &[&a, &b]))
                .build()
        };
        assert_eq!(silent_losses(&trace(Some(&b))), vec![]);
        let v = silent_losses(&trace(None));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session B stream0 event 0-1"));
    }

    #[test]
    fn a_tail_stored_before_the_heal_was_lost_not_in_flight() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .client(get_standalone(1, &a))
            .at(1_000)
            .stored_range(&a, 0, None, 1..=2)
            .delivered_range(&a, 0, None, 1..=1)
            .at(2_000)
            .run(StepKind::Liveness { deadline: 9_000 })
            .at(9_000)
            .run(run_end(Some(&a), &[&a]))
            .build();
        let v = silent_losses(&trace);
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session A stream0 event 0-2"));
    }

    #[test]
    fn two_calls_streams_stored_interleaved_are_judged_each_on_its_own() {
        // call0 on stream 1 and call1 on stream 2 of session A, their events stored in turn; the
        // application got all of stream 1 and stream 2's result, but not stream 2's second event.
        let a = sid("A");
        let mut t = TraceBuilder::new().at(1_000).app(app_call(0, false)).app(app_call(1, false)).at(2_000);
        for seq in 1..=3 {
            for (stream, call) in [(1, 0), (2, 1)] {
                let message = if seq == 3 { tool_result(stream, call) } else { progress(call, seq) };
                t = t.server(stored(&a, stream, seq, Some(call), Some(message)));
            }
        }
        let t = t
            .at(3_000)
            .app(app_event(&a, ev(1, 1), Some(0)))
            .app(app_event(&a, ev(2, 1), Some(1)))
            .app(app_event(&a, ev(1, 2), Some(0)))
            .app(app_result(0, &a, Some(ev(1, 3))))
            .app(app_result(1, &a, Some(ev(2, 3))))
            .build();
        let v = silent_losses(&t);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].step, v[0].subject.as_str()), (5, "session A stream2 event 2-2"));
        assert!(v[0].detail.starts_with("1 events"), "{}", v[0].detail);
    }

    #[test]
    fn one_stream_number_in_two_server_processes_names_two_streams() {
        // A sessionless server numbers its streams from 1 in each process: call0 on stream 1
        // before a restart, call1 on stream 1 after it (a swarm sweep of stateless-2026 × py-sdk ×
        // chatty-tool judged call1's stream as call0's, owed). The application was told call1's
        // outcome is unknown, so its stream owes nothing; call0's lost event is still lost.
        let none = sid("");
        let event = |epoch: u32, seq: u32, call: u32, message| StepKind::EventStored {
            session: none.clone(),
            stream: StreamNo(1),
            seq,
            id: EventId::from(format!("{epoch}.1-{seq}")),
            call: Some(CallKey(call)),
            message: Some(message),
        };
        let t = TraceBuilder::new()
            .at(1_000)
            .app(app_call(0, false))
            .server(event(0, 1, 0, progress(0, 1)))
            .server(event(0, 2, 0, progress(0, 2)))
            .server(event(0, 3, 0, tool_result(1, 0)))
            .app(app_event(&none, EventId("0.1-1".into()), Some(0)))
            .app(app_result(0, &none, Some(EventId("0.1-3".into()))))
            .at(2_000)
            .server(StepKind::ServerStart { epoch: 1, sessions_share_store: false, bounds: Default::default() })
            .app(app_call(1, false))
            .server(event(1, 1, 1, progress(1, 1)))
            .at(3_000)
            .app(app_unknown(1))
            .build();
        let v = silent_losses(&t);
        assert_eq!(v.iter().map(|v| v.subject.as_str()).collect::<Vec<_>>(), vec!["session  stream1 event 0.1-2"]);
    }

    #[test]
    fn the_stream_of_a_call_the_application_never_issued_is_owed_to_nobody() {
        // call0's progress 1..=5 and its result on stream 1; the application got only the result.
        let a = sid("A");
        let trace = |issued: bool| {
            let t = TraceBuilder::new().at(1_000);
            let t = if issued { t.app(app_call(0, false)) } else { t };
            t.at(2_000)
                .stored_range(&a, 1, Some(0), 1..=5)
                .server(stored(&a, 1, 6, Some(0), Some(tool_result(1, 0))))
                .at(3_000)
                .app(app_result(0, &a, Some(ev(1, 6))))
                .build()
        };
        let v = silent_losses(&trace(true));
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "session A stream1 event 1-1"), "{v:#?}");
        // A result for a call it never issued is every-call-resolves' to report; the stream's
        // progress was never the application's to read.
        assert_eq!(silent_losses(&trace(false)), vec![]);
    }
}
