//! `bounded-reconnects`: a logical client reconnects its streams at most a bounded number of
//! times in any hour.
//!
//! Resuming after a break is what a client should do; resuming every second forever is churn
//! (rust-sdk#958: a failed resume answered with an empty 200 that the client takes for a graceful
//! close, resets its retries and resumes with the same id again, at 1 Hz, for good), and so is a
//! stream an intermediary cuts every few minutes, reconnected without end. The bound is the
//! scenario's `max_reconnects_per_hour`, read from the trace's `Bounds` step (a trace without one
//! has [`DEFAULT_MAX_RECONNECTS_PER_HOUR`]).
//!
//! A reconnect is a `GET` that re-attaches a stream — one carrying `Last-Event-ID`, or a fresh
//! `GET` in a session whose standalone stream was opened before — and that the server answered:
//! the bound is about a network healthy apart from the scenario's faults, so an attempt a
//! partition refused or cut before any answer is the fault's, not churn.

use super::{client_of, sorted, Invariant, InvariantId, TraceIndex, Violation};
use crate::http::Method;
use crate::ids::{ConnId, SessionId};
use crate::time::{format_micros, Instant};
use crate::trace::{StepKind, DEFAULT_MAX_RECONNECTS_PER_HOUR};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub(super) const BOUNDED_RECONNECTS: Invariant = Invariant {
    id: InvariantId::BoundedReconnects,
    name: InvariantId::BoundedReconnects.name(),
    description: "A logical client re-attaches its streams (GET with Last-Event-ID, or a fresh GET again) at most \
                  max_reconnects_per_hour times in any hour of the run.",
    check: churn_in,
};

/// One hour, in µs.
const HOUR_US: u64 = 3_600_000_000;

/// The bound the trace records, else the default.
fn max_reconnects_per_hour(ix: &TraceIndex<'_>) -> u32 {
    ix.others()
        .find_map(|(_, s)| match s.kind {
            StepKind::Bounds { max_reconnects_per_hour, .. } => Some(max_reconnects_per_hour),
            _ => None,
        })
        .unwrap_or(DEFAULT_MAX_RECONNECTS_PER_HOUR)
}

/// One violation per logical client, at the reconnect that first went over the bound.
fn churn_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let bound = max_reconnects_per_hour(ix);
    let mut opened: BTreeSet<(u32, Option<&SessionId>)> = BTreeSet::new();
    let mut pending: BTreeMap<(u32, ConnId), Option<&SessionId>> = BTreeMap::new();
    let mut windows: BTreeMap<u32, VecDeque<Instant>> = BTreeMap::new();
    let mut violations: BTreeMap<u32, Violation> = BTreeMap::new();
    for (order, step) in ix.others() {
        let client = client_of(step);
        let session = match &step.kind {
            StepKind::Send { conn, request } if request.method == Method::Get => {
                let fresh = request.last_event_id.is_none();
                if !(fresh && opened.insert((client, request.session.as_ref()))) {
                    pending.insert((client, *conn), request.session.as_ref());
                }
                continue;
            }
            StepKind::Response { conn, .. } => match pending.remove(&(client, *conn)) {
                Some(session) => session,
                None => continue,
            },
            _ => continue,
        };
        let window = windows.entry(client).or_default();
        let now = step.at();
        window.push_back(now);
        while window.front().is_some_and(|t| t.0 + HOUR_US <= now.0) {
            window.pop_front();
        }
        if window.len() as u64 > u64::from(bound) && !violations.contains_key(&client) {
            let first = window.front().copied().unwrap_or(now);
            let several = session.is_some() && ix.several_clients();
            let subject = match session {
                Some(session) if several => {
                    format!("client {client} session {session}")
                }
                Some(session) => format!("session {session}"),
                None => format!("client {client}"),
            };
            violations.insert(
                client,
                Violation {
                    invariant: InvariantId::BoundedReconnects,
                    step: order,
                    at: now,
                    subject,
                    detail: format!(
                        "{} reconnects between {} and {}: more than the bound of {bound} in an hour",
                        window.len(),
                        format_micros(first.0),
                        format_micros(now.0)
                    ),
                },
            );
        }
    }
    sorted(violations.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::http::{ConnEnd, Status};

    use crate::trace::Trace;

    fn max_reconnects_per_hour(trace: &Trace) -> u32 {
        super::max_reconnects_per_hour(&TraceIndex::new(trace))
    }

    fn churn(trace: &Trace) -> Vec<Violation> {
        churn_in(&TraceIndex::new(trace))
    }

    /// A fresh GET at 0, then `n` resumes, one every `every_us`, each answered 200 at once.
    fn resumes(n: u64, every_us: u64) -> TraceBuilder {
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a));
        for i in 1..=n {
            b = b.at(i * every_us).client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
        }
        b
    }

    #[test]
    fn attempts_no_server_answered_are_the_faults_not_churn() {
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a));
        for i in 1..=500 {
            b = b.at(i * 1_000_000).client(get_resume(i + 1, &a, ev(0, 3))).client(conn_end(i + 1, ConnEnd::Refused));
        }
        assert_eq!(churn(&b.build()), vec![]);
        // A 410 is an answer: a client that resumes into it every second churns.
        let mut b = TraceBuilder::new().client(get_standalone(1, &a));
        for i in 1..=200 {
            b = b.at(i * 1_000_000).client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::GONE));
        }
        assert_eq!(churn(&b.build()).len(), 1);
    }

    #[test]
    fn resuming_every_second_goes_over_the_default_bound_at_the_121st() {
        let v = churn(&resumes(200, 1_000_000).build());
        assert_eq!(v.len(), 1, "one per client: {v:#?}");
        assert_eq!((v[0].at, v[0].subject.as_str()), (Instant(121_000_000), "session A"));
        assert!(v[0].detail.starts_with("121 reconnects between 1.000s and 2m01.000s"), "{}", v[0].detail);
        assert_eq!(churn(&resumes(120, 1_000_000).build()), vec![], "120 is within the bound");
    }

    #[test]
    fn the_window_slides_an_hour() {
        // One resume every 30 s for three hours: 120 in any hour, never more.
        assert_eq!(churn(&resumes(360, 30_000_000).build()), vec![]);
        // Every 29 s: 125 in the first hour.
        assert_eq!(churn(&resumes(360, 29_000_000).build()).len(), 1);
    }

    #[test]
    fn the_bound_is_read_from_the_bounds_step() {
        let bounded =
            TraceBuilder::new().run(StepKind::Bounds { max_reconnects_per_hour: 3, max_delivery_delay_us: None });
        assert_eq!(max_reconnects_per_hour(&bounded.build()), 3);
        let a = sid("A");
        let mut b = TraceBuilder::new()
            .run(StepKind::Bounds { max_reconnects_per_hour: 3, max_delivery_delay_us: None })
            .client(get_standalone(1, &a));
        for i in 1..=4 {
            // A fresh GET in a session whose stream was opened before is a reconnect too.
            b = b.at(i * 300_000_000).client(get_standalone(i + 1, &a)).client(response(i + 1, Status::OK));
        }
        let v = churn(&b.build());
        assert_eq!((v.len(), v[0].at), (1, Instant(1_200_000_000)));
        assert_eq!(max_reconnects_per_hour(&TraceBuilder::new().build()), DEFAULT_MAX_RECONNECTS_PER_HOUR);
    }

    #[test]
    fn the_first_fresh_get_of_each_session_is_no_reconnect() {
        let mut b =
            TraceBuilder::new().run(StepKind::Bounds { max_reconnects_per_hour: 0, max_delivery_delay_us: None });
        for i in 0..5u64 {
            b = b.at(i).client(get_standalone(i, &sid(&format!("S{i}"))));
        }
        assert_eq!(churn(&b.build()), vec![]);
    }

    #[test]
    fn each_client_has_its_own_count() {
        let (a, b) = (sid("A"), sid("B"));
        let two_each = || {
            let mut t =
                TraceBuilder::new().run(StepKind::Bounds { max_reconnects_per_hour: 2, max_delivery_delay_us: None });
            for i in 1..=2 {
                t = t.by(0).at(i).client(get_resume(i, &a, ev(0, 1))).client(response(i, Status::OK));
                t = t.by(1).client(get_resume(i, &b, ev(0, 1))).client(response(i, Status::OK));
            }
            t
        };
        assert_eq!(churn(&two_each().build()), vec![]);
        let v =
            churn(&two_each().by(1).at(9).client(get_resume(9, &b, ev(0, 1))).client(response(9, Status::OK)).build());
        assert_eq!((v.len(), v[0].subject.as_str()), (1, "client 1 session B"));
    }
}
