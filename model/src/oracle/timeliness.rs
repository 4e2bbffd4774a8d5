//! `timely-delivery`: an event stored while a connection to its reader was open reaches the
//! application within a bound, or a fault explains the delay.
//!
//! Nothing else notices an event that arrives minutes late in one chunk: it is neither lost nor
//! out of order. A proxy that buffers responses (`HopConfig::buffer`, `flush_interval`) does
//! exactly that to an SSE stream. The bound is the trace's `Bounds` step's
//! `max_delivery_delay_us`, else [`DEFAULT_MAX_DELIVERY_DELAY_US`] (5 s).
//!
//! Judged from the steps alone: an event with a message, handed to the application later than
//! the bound after it was stored, when between the two
//!
//! - no client re-attached a stream of the session (a `GET`): otherwise the event may have been
//!   stored while no connection was open, and came with the replay, which is resumption's
//!   business (`no-silent-event-loss`, `bounded-reconnects`), not this one's; and
//! - nothing explains the delay: no planned fault, no balancer or hop cut, no server restart, no
//!   connection of the client that broke or was refused.

use super::{sorted, Invariant, InvariantId, TraceIndex, Violation};
use crate::http::{ConnEnd, Method};
use crate::ids::SessionId;
use crate::time::{format_micros, Instant};
use crate::trace::{StepKind, DEFAULT_MAX_DELIVERY_DELAY_US};
use std::collections::{BTreeMap, BTreeSet};

pub(super) const TIMELY_DELIVERY: Invariant = Invariant {
    id: InvariantId::TimelyDelivery,
    name: InvariantId::TimelyDelivery.name(),
    description: "An event stored while a connection to its reader was open reaches the application within \
                  max_delivery_delay (default 5 s), unless a fault explains the delay.",
    check: late_deliveries_in,
};

/// The bound the trace records, else the default, in µs.
fn max_delivery_delay_us(ix: &TraceIndex<'_>) -> u64 {
    ix.others()
        .find_map(|(_, s)| match s.kind {
            StepKind::Bounds { max_delivery_delay_us, .. } => max_delivery_delay_us,
            _ => None,
        })
        .unwrap_or(DEFAULT_MAX_DELIVERY_DELAY_US)
}

/// One violation per session, at the first late delivery.
fn late_deliveries_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let bound = max_delivery_delay_us(ix);
    // When each session had a stream re-attached, and when anything happened that explains a
    // delay (the same for every session).
    let mut reattached: BTreeMap<&SessionId, Vec<Instant>> = BTreeMap::new();
    let mut explained: Vec<Instant> = Vec::new();
    for (_, step) in ix.others() {
        match &step.kind {
            StepKind::Send { request, .. } if request.method == Method::Get => {
                if let Some(session) = &request.session {
                    reattached.entry(session).or_default().push(step.at());
                }
            }
            StepKind::Fault { .. }
            | StepKind::LbIdleCut { .. }
            | StepKind::ClientTimedOut { .. }
            | StepKind::LbLifetimeCut { .. }
            | StepKind::LbTimedOut { .. }
            | StepKind::ServerStart { .. }
            | StepKind::ConnEnd { end: ConnEnd::Reset | ConnEnd::Refused, .. } => explained.push(step.at()),
            _ => {}
        }
    }
    let within = |times: Option<&Vec<Instant>>, from: Instant, to: Instant| {
        times.is_some_and(|ts| ts.iter().any(|t| *t > from && *t <= to))
    };
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut violations: BTreeMap<&SessionId, Violation> = BTreeMap::new();
    for (d, stored) in ix.resolved_deliveries() {
        let Some(e) = stored else { continue };
        if e.message.is_none() || !seen.insert(e.key) || violations.contains_key(e.session) {
            continue;
        }
        let delay = d.at.0.saturating_sub(e.at.0);
        if delay <= bound || within(reattached.get(e.session), e.at, d.at) || within(Some(&explained), e.at, d.at) {
            continue;
        }
        violations.insert(
            e.session,
            Violation {
                invariant: InvariantId::TimelyDelivery,
                step: d.order,
                at: d.at,
                subject: super::event_subject(e.session, Some(e.stream), e.id),
                detail: format!(
                    "stored at {} while its reader's connection was open, it reached the application at {}: {} \
                     later, over the bound of {}, with no fault, cut or reconnect in between (a proxy holding \
                     the stream back?)",
                    format_micros(e.at.0),
                    format_micros(d.at.0),
                    format_micros(delay),
                    format_micros(bound)
                ),
            },
        );
    }
    sorted(violations.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::*;
    use crate::trace::Trace;

    fn late(trace: &Trace) -> Vec<Violation> {
        late_deliveries_in(&TraceIndex::new(trace))
    }

    /// Event 1-1 of session A stored at 1 s with the standalone GET open since 0, handed over
    /// at `delivered_s`; `between` happens at 2 s.
    fn held(delivered_s: u64, between: Option<StepKind>) -> TraceBuilder {
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a)).at(1_000_000).server(stored(
            &a,
            1,
            1,
            Some(0),
            Some(progress(0, 1)),
        ));
        if let Some(step) = between {
            b = b.at(2_000_000).client(step);
        }
        b.at(delivered_s * 1_000_000).app(app_event(&a, ev(1, 1), Some(0)))
    }

    #[test]
    fn an_event_held_back_past_the_bound_on_an_open_connection_is_late() {
        let v = late(&held(90, None).build());
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!((v[0].invariant, v[0].at), (InvariantId::TimelyDelivery, Instant(90_000_000)));
        assert!(v[0].detail.contains("1m29.000s later, over the bound of 5.000s"), "{}", v[0].detail);
        assert_eq!(late(&held(7, None).build()).len(), 1, "6 s is past 5 s");
        assert_eq!(late(&held(6, None).build()), vec![], "5 s is within the bound");
    }

    #[test]
    fn a_reconnect_or_a_fault_in_between_explains_the_delay() {
        let a = sid("A");
        assert_eq!(late(&held(90, Some(get_resume(2, &a, ev(1, 0)))).build()), vec![]);
        assert_eq!(late(&held(90, Some(conn_end(1, ConnEnd::Reset))).build()), vec![]);
        assert_eq!(late(&held(90, Some(lb_idle_cut(1))).build()), vec![]);
        // A clean end of another connection explains nothing.
        assert_eq!(late(&held(90, Some(conn_end(7, ConnEnd::Clean))).build()).len(), 1);
    }

    #[test]
    fn a_stream_opened_at_the_instant_its_event_is_stored_was_open_for_it() {
        // The standalone GET goes out at 1 s and the event is stored at that same instant, after
        // it: stored while the reader's connection was open, the event is late at 90 s.
        let a = sid("A");
        let t = TraceBuilder::new()
            .at(1_000_000)
            .client(get_standalone(1, &a))
            .server(stored(&a, 1, 1, Some(0), Some(progress(0, 1))))
            .at(90_000_000)
            .app(app_event(&a, ev(1, 1), Some(0)))
            .build();
        let v = late(&t);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.contains("1m29.000s later"), "{}", v[0].detail);
    }

    #[test]
    fn a_request_posted_in_the_session_is_no_reconnect_and_explains_no_delay() {
        use crate::http::{ClientMessage, Request, ToolCall};
        use crate::ids::{CallKey, ConnId, RequestId};
        let a = sid("A");
        let call = ToolCall { tool: "pay".into(), key: CallKey(1), idempotency_key: None, tasks: false };
        let post = Request::post(Some(a.clone()), ClientMessage::CallTool { id: RequestId(5), call });
        let v = late(&held(90, Some(StepKind::Send { conn: ConnId(2), request: post })).build());
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].at, Instant(90_000_000));
    }

    #[test]
    fn the_bound_is_read_from_the_bounds_step() {
        let set = |us| StepKind::Bounds { max_reconnects_per_hour: 120, max_delivery_delay_us: Some(us) };
        let trace = |us| {
            let mut b = TraceBuilder::new().run(set(us));
            for s in held(90, None).build().steps {
                b = b.at(s.t).step(s.actor, s.kind);
            }
            b.build()
        };
        assert_eq!(late(&trace(120_000_000)), vec![]);
        assert_eq!(late(&trace(60_000_000)).len(), 1);
    }

    #[test]
    fn an_event_judged_once_at_its_first_delivery() {
        // Handed over in time at 2 s, and again at 90 s (a duplicate delivery, judged by its own
        // invariant): not late.
        let a = sid("A");
        let t = held(2, None).at(90_000_000).app(app_event(&a, ev(1, 1), Some(0))).build();
        assert_eq!(late(&t), vec![]);
    }
}
