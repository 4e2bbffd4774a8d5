//! What the application was handed: each event once (`no-duplicate-delivery`), each stream in
//! order (`in-order-delivery`), and only events of the session it came through
//! (`no-cross-session-delivery`).

use super::TraceIndex;
use super::{event_subject, sorted, EventLog, IdMap, Invariant, InvariantId, Violation};
use crate::ids::{CallKey, EventId, SessionId, StreamNo};
use crate::time::{format_micros, Instant};
use crate::trace::StepKind;
#[cfg(test)]
use crate::trace::Trace;
use std::collections::BTreeMap;

pub(super) const NO_DUPLICATE_DELIVERY: Invariant = Invariant {
    id: InvariantId::NoDuplicateDelivery,
    name: InvariantId::NoDuplicateDelivery.name(),
    description: "The application is never handed the same event of a session twice, nor two results for one call.",
    check: duplicate_deliveries_in,
};

pub(super) const IN_ORDER_DELIVERY: Invariant = Invariant {
    id: InvariantId::InOrderDelivery,
    name: InvariantId::InOrderDelivery.name(),
    description: "The events of each stream reach the application in the order the server stored them.",
    check: out_of_order_deliveries_in,
};

pub(super) const NO_CROSS_SESSION_DELIVERY: Invariant = Invariant {
    id: InvariantId::NoCrossSessionDelivery,
    name: InvariantId::NoCrossSessionDelivery.name(),
    description: "The application is handed, through a session, only events that session stored.",
    check: cross_session_deliveries_in,
};

/// The subject of a delivered event, with its stream when the session stored it.
fn subject(log: &EventLog<'_>, session: &SessionId, id: &EventId) -> String {
    event_subject(session, log.get(session, id).map(|e| e.stream), id)
}

/// A second delivery of one `(session, id)`, or a second result for one issue of a call. One
/// violation per step: a result delivered twice under the same id is one duplicate, not two.
#[cfg(test)]
fn duplicate_deliveries(trace: &Trace) -> Vec<Violation> {
    duplicate_deliveries_in(&TraceIndex::new(trace))
}

/// [`duplicate_deliveries`] over a shared index.
fn duplicate_deliveries_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let log = ix.log();
    // When each stored event was first handed over, by key; ids the session never stored by name.
    let mut seen_stored: Vec<Option<Instant>> = vec![None; log.len()];
    let mut seen_other: BTreeMap<(&SessionId, &EventId), Instant> = BTreeMap::new();
    // The result handed over since the call was last issued.
    let mut result_given: BTreeMap<CallKey, Instant> = BTreeMap::new();
    let mut violations = Vec::new();
    // The `AppCall` steps, merged in trace order with the deliveries.
    let mut calls = ix.others().filter_map(|(order, step)| match &step.kind {
        StepKind::AppCall { call, .. } => Some((order, *call)),
        _ => None,
    });
    let mut next_call = calls.next();
    for (d, stored) in ix.resolved_deliveries() {
        while let Some((_, call)) = next_call.filter(|(order, _)| *order < d.order) {
            result_given.remove(&call);
            next_call = calls.next();
        }
        let first_seen = match (d.id, stored) {
            (None, _) => None,
            (Some(_), Some(e)) => seen_stored[e.key],
            (Some(id), None) => seen_other.get(&(d.session, id)).copied(),
        };
        let first_result = d.result_of.and_then(|call| result_given.get(&call).copied());
        if let (Some(id), Some(first)) = (d.id, first_seen) {
            violations.push(Violation {
                invariant: InvariantId::NoDuplicateDelivery,
                step: d.order,
                at: d.at,
                subject: subject(log, d.session, id),
                detail: format!(
                    "event {id} of session {} was handed to the application again (first at {})",
                    d.session,
                    format_micros(first.0)
                ),
            });
        } else if let (Some(call), Some(first)) = (d.result_of, first_result) {
            violations.push(Violation {
                invariant: InvariantId::NoDuplicateDelivery,
                step: d.order,
                at: d.at,
                subject: call.to_string(),
                detail: format!(
                    "a second result for {call} was handed to the application (first at {})",
                    format_micros(first.0)
                ),
            });
        }
        match (d.id, stored) {
            (None, _) => {}
            (Some(_), Some(e)) => {
                seen_stored[e.key].get_or_insert(d.at);
            }
            (Some(id), None) => {
                seen_other.entry((d.session, id)).or_insert(d.at);
            }
        }
        if let Some(call) = d.result_of {
            result_given.entry(call).or_insert(d.at);
        }
    }
    sorted(violations)
}

/// Per stream, a delivered event whose seq is not above every seq delivered before it. A second
/// delivery of the same event is no-duplicate-delivery's to report, and an event the session
/// never stored no-cross-session-delivery's.
#[cfg(test)]
fn out_of_order_deliveries(trace: &Trace) -> Vec<Violation> {
    out_of_order_deliveries_in(&TraceIndex::new(trace))
}

/// [`out_of_order_deliveries`] over a shared index.
fn out_of_order_deliveries_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    // By (session, epoch, stream): the session is the one the event was looked up in, by number.
    let mut highest: IdMap<(u32, u32, StreamNo), u32> = IdMap::default();
    let mut seen = vec![false; ix.log().len()];
    let mut violations = Vec::new();
    for (d, stored) in ix.resolved_deliveries() {
        let (Some(id), Some(event)) = (d.id, stored) else { continue };
        if std::mem::replace(&mut seen[event.key], true) {
            continue;
        }
        let top = highest.get_or_insert_with((event.session_no, event.epoch, event.stream), || event.seq);
        if event.seq < *top {
            violations.push(Violation {
                invariant: InvariantId::InOrderDelivery,
                step: d.order,
                at: d.at,
                subject: event_subject(d.session, Some(event.stream), id),
                detail: format!("seq {} was handed to the application after seq {}", event.seq, top),
            });
        }
        *top = (*top).max(event.seq);
    }
    sorted(violations)
}

/// A delivered event id the session it came through never stored.
#[cfg(test)]
fn cross_session_deliveries(trace: &Trace) -> Vec<Violation> {
    cross_session_deliveries_in(&TraceIndex::new(trace))
}

/// [`cross_session_deliveries`] over a shared index.
fn cross_session_deliveries_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let log = ix.log();
    let violations = ix
        .resolved_deliveries()
        .iter()
        .filter_map(|(d, stored)| {
            let id = d.id?;
            if stored.is_some() {
                return None;
            }
            let storers = log.other_storers(d.session, id);
            let detail = if storers.is_empty() {
                format!(
                    "session {} never stored event {id}, yet the application was handed it as that session's",
                    d.session
                )
            } else {
                let names: Vec<String> = storers.iter().map(|s| s.to_string()).collect();
                format!(
                    "event {id} was stored by session {}, but handed to the application as session {}'s",
                    names.join(", "),
                    d.session
                )
            };
            Some(Violation {
                invariant: InvariantId::NoCrossSessionDelivery,
                step: d.order,
                at: d.at,
                subject: event_subject(d.session, None, id),
                detail,
            })
        })
        .collect();
    sorted(violations)
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;

    /// Session A stores events 1..=4 on stream 1 (call 0) and the call's result as seq 5.
    fn stored_stream() -> TraceBuilder {
        let a = sid("A");
        TraceBuilder::new()
            .app(app_call(0, true))
            .at(1_000)
            .stored_range(&a, 1, Some(0), 1..=4)
            .server(stored(&a, 1, 5, Some(0), Some(tool_result(1, 0))))
            .at(2_000)
    }

    #[test]
    fn a_clean_delivery_breaks_none_of_the_three() {
        let a = sid("A");
        let trace =
            stored_stream().delivered_range(&a, 1, Some(0), 1..=4).app(app_result(0, &a, Some(ev(1, 5)))).build();
        assert_eq!(duplicate_deliveries(&trace), vec![]);
        assert_eq!(out_of_order_deliveries(&trace), vec![]);
        assert_eq!(cross_session_deliveries(&trace), vec![]);
    }

    #[test]
    fn an_event_handed_over_twice_is_a_duplicate_not_also_out_of_order() {
        let a = sid("A");
        let trace = stored_stream().delivered_range(&a, 1, Some(0), [1, 2, 3, 2, 4]).build();
        let v = duplicate_deliveries(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].invariant.name(), v[0].at, v[0].subject.as_str()),
            ("no-duplicate-delivery", Instant(2_003), "session A stream1 event 1-2")
        );
        assert_eq!(out_of_order_deliveries(&trace), vec![]);
    }

    #[test]
    fn two_results_for_one_call_are_a_duplicate_even_under_different_ids() {
        let a = sid("A");
        let trace =
            stored_stream().app(app_result(0, &a, Some(ev(1, 5)))).at(3_000).app(app_result(0, &a, None)).build();
        let v = duplicate_deliveries(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(3_000), "call0"));
        // Issued again, it may be answered again.
        let reissued = stored_stream()
            .app(app_result(0, &a, Some(ev(1, 5))))
            .app(app_call(0, true))
            .app(app_result(0, &a, None))
            .build();
        assert_eq!(duplicate_deliveries(&reissued), vec![]);
    }

    #[test]
    fn a_stream_delivered_out_of_order_is_reported_at_the_late_event() {
        let a = sid("A");
        let trace = stored_stream().delivered_range(&a, 1, Some(0), [1, 3, 2, 4]).build();
        let v = out_of_order_deliveries(&trace);
        assert_eq!(v.len(), 1);
        assert_eq!(
            (v[0].invariant.name(), v[0].at, v[0].subject.as_str()),
            ("in-order-delivery", Instant(2_002), "session A stream1 event 1-2")
        );
        assert_eq!(v[0].detail, "seq 2 was handed to the application after seq 3");
    }

    /// call0's progress step `seq` stored as `id` on stream 1 with no session.
    fn sessionless_progress(id: &str, seq: u32) -> StepKind {
        let mut kind = stored(&sid(""), 1, seq, Some(0), Some(progress(0, seq)));
        if let StepKind::EventStored { id: stored_id, .. } = &mut kind {
            *stored_id = EventId::from(id);
        }
        kind
    }

    #[test]
    fn stream_numbers_restart_with_a_new_server_process() {
        // A session-less server keeps one (empty) session name across a restart; its streams
        // are numbered again from 1, so order is judged per server process.
        let none = sid("");
        // Whatever else the process says of itself (a store shared across sessions).
        for sessions_share_store in [false, true] {
            let trace = TraceBuilder::new()
                .at(1_000)
                .server(StepKind::ServerStart { epoch: 0, sessions_share_store, bounds: Default::default() })
                .server(sessionless_progress("0.1-5", 5))
                .app(app_event(&none, EventId::from("0.1-5"), Some(0)))
                .at(2_000)
                .server(StepKind::ServerStart { epoch: 1, sessions_share_store, bounds: Default::default() })
                .server(sessionless_progress("1.1-1", 1))
                .app(app_event(&none, EventId::from("1.1-1"), Some(0)))
                .build();
            assert_eq!(out_of_order_deliveries(&trace), vec![], "sessions_share_store: {sessions_share_store}");
        }
    }

    #[test]
    fn replicas_with_stores_of_their_own_number_their_streams_each_from_1() {
        // Two replicas' processes start side by side (epochs 0 and 1), each serving session-less
        // requests (the 2026-07-28 revision) on its own stream 1: a request re-issued to the
        // second replica is another stream, whatever seq the first one's had reached. A sweep
        // of stateless-2026 × stateless-2026 behind two replicas read 435 of these as out of order.
        let none = sid("");
        let start = |epoch| StepKind::ServerStart { epoch, sessions_share_store: false, bounds: Default::default() };
        let on = |second: u32| {
            TraceBuilder::new()
                .at(1_000)
                .replica(0, start(0))
                .replica(1, start(1))
                .replica(0, sessionless_progress("0.1-145", 145))
                .app(app_event(&none, EventId::from("0.1-145"), Some(0)))
                .at(2_000)
                .replica(second, sessionless_progress(&format!("{second}.1-1"), 1))
                .app(app_event(&none, EventId::from(format!("{second}.1-1").as_str()), Some(0)))
                .build()
        };
        assert_eq!(out_of_order_deliveries(&on(1)), vec![]);
        // The same process's stream going back is still out of order.
        let v = out_of_order_deliveries(&on(0));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].detail, "seq 1 was handed to the application after seq 145");
    }

    #[test]
    fn order_is_per_stream_and_per_session() {
        let (a, b) = (sid("A"), sid("B"));
        let trace = stored_stream()
            .stored_range(&a, 0, None, 1..=2)
            .stored_range(&b, 1, Some(0), 1..=2)
            .at(3_000)
            .delivered_range(&a, 1, Some(0), [3, 4])
            .delivered_range(&a, 0, None, [1, 2])
            .delivered_range(&b, 1, Some(0), [1, 2])
            .build();
        assert_eq!(out_of_order_deliveries(&trace), vec![]);
    }

    /// Two clients, sessions A and B, both on request #2: a store keyed by request id alone hands
    /// client 1 (session B) an event A stored, and each client its own events too.
    #[test]
    fn two_clients_on_one_request_id_are_judged_by_the_session_each_event_came_through() {
        let (a, b) = (sid("A"), sid("B"));
        let trace = TraceBuilder::new()
            .by(0)
            .app(app_call(0, true))
            .by(1)
            .app(app_call(1, true))
            .at(1_000)
            .stored_range(&a, 1, Some(0), 1..=2)
            .stored_range(&b, 2, Some(1), 1..=1)
            .at(2_000)
            .by(0)
            .delivered_range(&a, 1, Some(0), 1..=2)
            .by(1)
            .delivered_range(&b, 2, Some(1), 1..=1)
            .app(app_event(&b, ev(1, 2), Some(1)))
            .build();
        let v = cross_session_deliveries(&trace);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].subject, "session B event 1-2");
        assert_eq!(v[0].detail, "event 1-2 was stored by session A, but handed to the application as session B's");
        assert_eq!(duplicate_deliveries(&trace), vec![], "one event in two sessions is not a duplicate");
    }

    #[test]
    fn an_event_of_another_session_or_of_none_is_cross_session() {
        let (a, b) = (sid("A"), sid("B"));
        let trace = stored_stream()
            .stored_range(&b, 2, Some(0), 1..=1)
            .at(3_000)
            .app(app_event(&a, ev(2, 1), Some(0)))
            .at(4_000)
            .app(app_result(0, &b, Some(ev(9, 9))))
            .build();
        let v = cross_session_deliveries(&trace);
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].invariant.name(), v[0].at, v[0].subject.as_str()),
            ("no-cross-session-delivery", Instant(3_000), "session A event 2-1")
        );
        assert_eq!(v[0].detail, "event 2-1 was stored by session B, but handed to the application as session A's");
        assert_eq!((v[1].at, v[1].subject.as_str()), (Instant(4_000), "session B event 9-9"));
        assert!(v[1].detail.starts_with("session B never stored event 9-9"));
    }
}
