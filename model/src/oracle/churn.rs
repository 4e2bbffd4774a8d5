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
//! partition refused or cut before any answer is the fault's, not churn; and so is one an
//! intermediary answered with a 5xx of its own (no replica reachable while a deploy drains the
//! only one, a held response cut): the server never saw it, and the outage, not the pair, set
//! how often the client met it (its backoff is all that paces it). So is the one
//! re-attachment that follows each intermediary cut the client felt (an idle timeout or a
//! lifetime cap of the balancer or a hop): resuming after it is the design note's right answer,
//! and a stream cut at every idle timeout is the deployment's (keep-alives longer than the
//! timeout), not the client's or server's churn (issue 22: the reference pair behind a 16 s idle
//! cut). What is left is churn the pair drives itself: a resume answered and looped on
//! (rust-sdk#958), a server closing streams cleanly every few seconds, a loop against refusals.

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

/// How many re-attachments of one stream in a row, at a steady period, make a periodic reconnect
/// that is judged by its period: at this count the period is known, whatever the run's length.
pub const PERIODIC_AFTER: usize = 10;

/// How far the intervals of a periodic reconnect may stray from their median (a tenth).
const STEADY: f64 = 0.1;

/// Which stream a re-attaching `GET` is for: the stream its `Last-Event-ID` was stored on, or
/// the standalone stream for a fresh one (`None` when the id names nothing stored).
type StreamKey<'a> = (Option<&'a SessionId>, Option<crate::ids::StreamNo>);

/// The re-attachments of each stream of a client, and whether they run at a steady period.
#[derive(Default)]
struct Periods<'a> {
    times: BTreeMap<StreamKey<'a>, Vec<Instant>>,
}

impl<'a> Periods<'a> {
    fn push(&mut self, stream: StreamKey<'a>, at: Instant) {
        self.times.entry(stream).or_default().push(at);
    }

    /// The median interval of the last [`PERIODIC_AFTER`] re-attachments of `stream` when they
    /// are steady (every interval within a tenth of it), in µs.
    fn steady_period(&self, stream: &StreamKey<'a>) -> Option<u64> {
        let times = self.times.get(stream)?;
        if times.len() < PERIODIC_AFTER {
            return None;
        }
        let last = &times[times.len() - PERIODIC_AFTER..];
        let mut gaps: Vec<u64> = last.windows(2).map(|w| w[1].0 - w[0].0).collect();
        gaps.sort_unstable();
        let median = gaps[gaps.len() / 2];
        let tolerance = (median as f64 * STEADY) as u64;
        (median > 0 && gaps.iter().all(|g| g.abs_diff(median) <= tolerance)).then_some(median)
    }

    /// The period of the stream re-attached most often, if it is steady: what the detail reports.
    fn dominant_period(&self) -> Option<u64> {
        let (stream, _) = self.times.iter().max_by_key(|(_, ts)| ts.len())?;
        self.steady_period(stream)
    }
}

/// The re-attachments counted against the bound: per client, those of the last hour (each with
/// whether the server asked for it), and per stream the times of each.
#[derive(Default)]
struct Tally<'a> {
    windows: BTreeMap<u32, VecDeque<(Instant, bool)>>,
    periods: BTreeMap<u32, Periods<'a>>,
}

/// A client's re-attachments going over the bound, as [`Tally::push`] found it.
struct Crossing {
    /// The hour's re-attachments, the first one's time and how many the server asked for.
    count: usize,
    first: Instant,
    asked: usize,
    /// Over the bound by the count in an hour.
    over_count: bool,
    /// Over the bound by a steady period (µs).
    over_period: Option<u64>,
    /// The period of the stream re-attached most often, if steady.
    dominant: Option<u64>,
}

impl<'a> Tally<'a> {
    /// Counts a re-attachment of `client`'s `stream` at `now`; `asked`: the server asked for it.
    /// Some when the client is over `bound` with it.
    fn push(&mut self, client: u32, stream: StreamKey<'a>, now: Instant, asked: bool, bound: u32) -> Option<Crossing> {
        let window = self.windows.entry(client).or_default();
        window.push_back((now, asked));
        while window.front().is_some_and(|(t, _)| t.0 + HOUR_US <= now.0) {
            window.pop_front();
        }
        let client_periods = self.periods.entry(client).or_default();
        client_periods.push(stream, now);
        let over_count = window.len() as u64 > u64::from(bound);
        // A steady period short enough that an hour of it would go over the bound.
        let over_period = client_periods.steady_period(&stream).filter(|p| HOUR_US / (*p).max(1) > u64::from(bound));
        (over_count || over_period.is_some()).then(|| Crossing {
            count: window.len(),
            first: window.front().map_or(now, |(t, _)| *t),
            asked: window.iter().filter(|(_, asked)| *asked).count(),
            over_count,
            over_period,
            dominant: over_period.or_else(|| client_periods.dominant_period()),
        })
    }
}

/// One violation per logical client, at the reconnect that first went over the bound: more than
/// the bound in an hour, or a stream re-attached [`PERIODIC_AFTER`] times in a row at a steady
/// period short enough to go over the bound within an hour.
fn churn_in(ix: &TraceIndex<'_>) -> Vec<Violation> {
    let (violations, _) = tally(ix);
    sorted(violations.into_values().collect())
}

/// The steps of the `bounded-reconnects` violations ([`churn_in`]) that the server's own close
/// timers account for: their client would not have gone over the bound anywhere in the run
/// without the re-attachments that followed a stream the server closed itself
/// ([`StepKind::ServerClosedStream`]). The spec lets a server end a stream's connection and name
/// the `retry` its client comes back after (SEP-1699), so that rate is the setting's; it still
/// breaks the bound, as an idle close every 30 s should, and `oracle::conditions` explains it
/// by the setting rather than calling it the pair's bug.
pub(crate) fn paced_by_server(ix: &TraceIndex<'_>) -> BTreeSet<usize> {
    let (violations, self_driven) = tally(ix);
    violations.into_iter().filter(|(client, _)| !self_driven.contains(client)).map(|(_, v)| v.step).collect()
}

/// Each client's violation, and the clients whose re-attachments go over the bound even without
/// those the server asked for.
fn tally(ix: &TraceIndex<'_>) -> (BTreeMap<u32, Violation>, BTreeSet<u32>) {
    let bound = max_reconnects_per_hour(ix);
    let log = ix.log();
    let mut opened: BTreeSet<(u32, Option<&SessionId>)> = BTreeSet::new();
    let mut pending: BTreeMap<(u32, ConnId), StreamKey<'_>> = BTreeMap::new();
    let (mut all, mut own) = (Tally::default(), Tally::default());
    let mut violations: BTreeMap<u32, Violation> = BTreeMap::new();
    let mut self_driven: BTreeSet<u32> = BTreeSet::new();
    // Intermediary cuts (idle timeout, lifetime): each one the client felt explains the one
    // re-attachment that follows it — the deployment's doing, not churn.
    let mut cut_at: BTreeSet<u64> = BTreeSet::new();
    let mut excused: BTreeMap<u32, u32> = BTreeMap::new();
    // Streams the server closed itself on a timer (`server-closed-stream`): the next
    // re-attachment of each is the one it asked for.
    let mut asked: BTreeSet<StreamKey<'_>> = BTreeSet::new();
    // 5xx answers an intermediary gave by itself, not yet matched to the client response that
    // carried them: the outage's, not churn. The balancer numbers its connections its own way in
    // a single-replica run, so they are matched as `oracle::conditions` matches them: first
    // come, first served, by status.
    let mut refused_by_hop: VecDeque<crate::http::Status> = VecDeque::new();
    for (order, step) in ix.others() {
        let client = client_of(step);
        match &step.kind {
            StepKind::LbAnswered { status, .. } if status.0 >= 500 => {
                refused_by_hop.push_back(*status);
                continue;
            }
            StepKind::LbIdleCut { .. } | StepKind::LbLifetimeCut { .. } => {
                cut_at.insert(step.t);
                continue;
            }
            StepKind::ConnEnd { end: crate::http::ConnEnd::Reset, .. } if cut_at.contains(&step.t) => {
                *excused.entry(client).or_default() += 1;
                continue;
            }
            StepKind::ServerClosedStream { session, stream: Some(stream), .. } => {
                asked.insert((Some(session), Some(*stream)));
                continue;
            }
            _ => {}
        }
        let stream = match &step.kind {
            StepKind::Send { conn, request } if request.method == Method::Get => {
                let session = request.session.as_ref();
                let fresh = request.last_event_id.is_none();
                if !(fresh && opened.insert((client, session))) {
                    let stream = match (&request.last_event_id, session) {
                        (None, _) => Some(crate::ids::StreamNo::STANDALONE),
                        (Some(id), Some(s)) => log.get(s, id).map(|e| e.stream),
                        (Some(_), None) => None,
                    };
                    pending.insert((client, *conn), (session, stream));
                }
                continue;
            }
            StepKind::Response { conn, head } => {
                let by_hop = refused_by_hop.iter().position(|s| *s == head.status);
                let by_hop = by_hop.and_then(|k| refused_by_hop.remove(k)).is_some();
                match pending.remove(&(client, *conn)) {
                    Some(stream) if !by_hop => stream,
                    _ => continue,
                }
            }
            _ => continue,
        };
        let server_asked = asked.remove(&stream);
        if let Some(n) = excused.get_mut(&client).filter(|n| **n > 0) {
            *n -= 1;
            continue;
        }
        let now = step.at();
        if !server_asked && own.push(client, stream, now, false, bound).is_some() {
            self_driven.insert(client);
        }
        let Some(crossing) = all.push(client, stream, now, server_asked, bound) else { continue };
        if violations.contains_key(&client) {
            continue;
        }
        let session = stream.0;
        let several = session.is_some() && ix.several_clients();
        let subject = match session {
            Some(session) if several => format!("client {client} session {session}"),
            Some(session) => format!("session {session}"),
            None => format!("client {client}"),
        };
        let periodic = crossing
            .dominant
            .map(|p| format!("; periodic: a re-attachment every {}", format_micros(p)))
            .unwrap_or_default();
        let mut detail = if crossing.over_count {
            format!(
                "{} reconnects between {} and {}: more than the bound of {bound} in an hour{periodic}",
                crossing.count,
                format_micros(crossing.first.0),
                format_micros(now.0)
            )
        } else {
            let p = crossing.over_period.expect("over the bound by its period");
            format!(
                "a stream re-attached {PERIODIC_AFTER} times in a row every {} (by {}): {} an hour at that period, \
                 more than the bound of {bound}",
                format_micros(p),
                format_micros(now.0),
                HOUR_US / p.max(1)
            )
        };
        if crossing.asked > 0 {
            detail.push_str(&format!(
                "; {} of the hour's {} followed a stream the server closed itself on a timer",
                crossing.asked, crossing.count
            ));
        }
        violations.insert(
            client,
            Violation { invariant: InvariantId::BoundedReconnects, step: order, at: now, subject, detail },
        );
    }
    (violations, self_driven)
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

    /// A re-attachment the balancer answered with a 5xx of its own (no replica reachable) is the
    /// outage's, as a refused one is; the server's own 503, and the balancer's 4xx, are answers.
    #[test]
    fn re_attachments_an_intermediary_answered_with_its_own_5xx_are_the_outages_not_churn() {
        let a = sid("A");
        let resumes = |status: Status, by_lb: bool| {
            let mut b = TraceBuilder::new().client(get_standalone(1, &a));
            for i in 1..=100 {
                b = b.at(i * 1_000_000).client(get_resume(i + 1, &a, ev(0, 3)));
                if by_lb {
                    // The balancer's own number for the connection, not the client's.
                    b = b.lb(StepKind::LbAnswered { conn: ConnId(1_000 + i), status, hop: None });
                }
                b = b.client(response(i + 1, status));
            }
            churn(&b.build()).len()
        };
        assert_eq!(resumes(Status(503), true), 0);
        assert_eq!(resumes(Status(503), false), 1);
        assert_eq!(resumes(Status(429), true), 1);
    }

    /// Resumes at irregular times (1 s, then 3 s, then 1 s, ...): never a steady period.
    fn irregular(n: u64) -> TraceBuilder {
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a));
        let mut t = 0;
        for i in 1..=n {
            t += if i % 2 == 0 { 3_000_000 } else { 1_000_000 };
            b = b.at(t).client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
        }
        b
    }

    #[test]
    fn more_re_attachments_in_an_hour_than_the_default_bound_break_it() {
        let bound = u64::from(DEFAULT_MAX_RECONNECTS_PER_HOUR);
        let v = churn(&irregular(bound + 1).build());
        assert_eq!(v.len(), 1, "one per client: {v:#?}");
        assert_eq!(v[0].subject.as_str(), "session A");
        let expected = format!("{} reconnects between 1.000s and", bound + 1);
        assert!(v[0].detail.starts_with(&expected), "{}", v[0].detail);
        assert!(!v[0].detail.contains("periodic"), "irregular: no period to report: {}", v[0].detail);
        assert_eq!(churn(&irregular(bound).build()), vec![], "the bound itself is within it");
    }

    #[test]
    fn a_steady_period_is_judged_by_its_period_and_reported() {
        // Every second: 3600 an hour at that period, known at the tenth re-attachment.
        let v = churn(&resumes(200, 1_000_000).build());
        assert_eq!((v.len(), v[0].at), (1, Instant(10_000_000)), "{v:#?}");
        assert!(
            v[0].detail.contains("re-attached 10 times in a row every 1.000s (by 10.000s): 3600 an hour"),
            "{}",
            v[0].detail
        );
        // Every 16 s (issue 22's balancer idle timeout): over the default bound by its period.
        let v = churn(&resumes(20, 16_000_000).build());
        assert!(v[0].detail.contains("every 16.000s"), "{}", v[0].detail);
        // Every 2 minutes: 30 an hour, within the default bound however long it goes on.
        assert_eq!(churn(&resumes(200, 120_000_000).build()), vec![]);
        // Nine in a row are not yet a period.
        assert_eq!(churn(&resumes(9, 1_000_000).build()), vec![]);
    }

    #[test]
    fn each_intermediary_cut_excuses_the_re_attachment_that_follows_it() {
        let a = sid("A");
        let cut_every = |n: u64, every_us: u64, cut: bool| {
            let mut b = TraceBuilder::new().client(get_standalone(1, &a));
            for i in 1..=n {
                b = b.at(i * every_us);
                if cut {
                    b = b.lb(lb_idle_cut(99)).client(conn_end(i, ConnEnd::Reset));
                }
                b = b.client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
            }
            b.build()
        };
        // Cut by a 16 s idle timeout and resumed each time: the deployment's, not churn.
        assert_eq!(churn(&cut_every(200, 16_000_000, true)), vec![]);
        // The same re-attachments with no cut before them: churn, judged by its period.
        assert_eq!(churn(&cut_every(200, 16_000_000, false)).len(), 1);
    }

    #[test]
    fn a_reset_without_an_intermediary_cut_at_its_instant_excuses_nothing() {
        // Every 16 s the stream is reset (by the server, not a balancer's timeout) and resumed:
        // the pair's own churn, judged by its period; a cut a second earlier is another event's.
        let a = sid("A");
        let reset_every = |cut_before: bool| {
            let mut b = TraceBuilder::new().client(get_standalone(1, &a));
            for i in 1..=20 {
                if cut_before {
                    b = b.at(i * 16_000_000 - 1_000_000).lb(lb_idle_cut(99));
                }
                b = b.at(i * 16_000_000).client(conn_end(i, ConnEnd::Reset));
                b = b.client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
            }
            churn(&b.build())
        };
        for cut_before in [false, true] {
            let v = reset_every(cut_before);
            assert_eq!(v.len(), 1, "{v:#?}");
            assert!(v[0].detail.contains("re-attached 10 times in a row every 16.000s"), "{}", v[0].detail);
        }
    }

    #[test]
    fn one_cut_excuses_one_re_attachment_and_no_more() {
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a)).at(500_000).lb(lb_idle_cut(99));
        b = b.client(conn_end(1, ConnEnd::Reset));
        for i in 1..=200 {
            b = b.at(i * 1_000_000).client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
        }
        let v = churn(&b.build());
        assert_eq!(v.len(), 1, "{v:#?}");
        // The first re-attachment is the cut's; the period is known at the eleventh.
        assert_eq!(v[0].at, Instant(11_000_000), "{v:#?}");
    }

    #[test]
    fn over_the_count_the_detail_names_the_steady_period_of_the_busiest_stream() {
        // Session A's stream re-attached every 2 minutes (30 an hour: within the bound by its
        // period), and session B's three extra re-attachments push the hour's count over it.
        let (a, bs) = (sid("A"), sid("B"));
        let mut b = TraceBuilder::new().client(get_standalone(1, &a)).client(get_standalone(1000, &bs));
        for i in 1..=31 {
            b = b.at(i * 120_000_000).client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
            if i >= 29 {
                b = b.client(get_standalone(1000 + i, &bs)).client(response(1000 + i, Status::OK));
            }
        }
        let v = churn(&b.build());
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.contains("more than the bound of 30 in an hour"), "{}", v[0].detail);
        assert!(v[0].detail.contains("; periodic: a re-attachment every 2m"), "{}", v[0].detail);
    }

    #[test]
    fn the_window_slides_an_hour() {
        let bounded = |b: TraceBuilder| {
            let mut t =
                TraceBuilder::new().run(StepKind::Bounds { max_reconnects_per_hour: 120, max_delivery_delay_us: None });
            for s in b.build().steps {
                t = t.at(s.t).step(s.actor, s.kind);
            }
            t.build()
        };
        // One resume every 30 s for three hours: 120 in any hour, never more.
        assert_eq!(churn(&bounded(resumes(360, 30_000_000))), vec![]);
        // Every 29 s: 124 an hour at that period.
        assert_eq!(churn(&bounded(resumes(360, 29_000_000))).len(), 1);
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

    #[test]
    fn requests_posted_in_a_session_are_no_re_attachments() {
        // A busy session: one call a second for a minute, each POST answered 200, then the
        // session's standalone stream opened once. None of it re-attaches a stream.
        use crate::http::{ClientMessage, Request, ToolCall};
        use crate::ids::{CallKey, RequestId};
        let a = sid("A");
        let mut b = TraceBuilder::new();
        for i in 1..=60u64 {
            let call = ToolCall { tool: "pay".into(), key: CallKey(i as u32), idempotency_key: None, tasks: false };
            let request = Request::post(Some(a.clone()), ClientMessage::CallTool { id: RequestId(i), call });
            b = b.at(i * 1_000_000).client(StepKind::Send { conn: ConnId(i), request }).client(response(i, Status::OK));
        }
        let b = b.at(61_000_000).client(get_standalone(61, &a)).client(response(61, Status::OK));
        assert_eq!(churn(&b.build()), vec![]);
    }

    #[test]
    fn the_period_is_judged_on_the_last_ten_re_attachments_only() {
        // A re-attachment at 1 s, then one every second from 5 s: the first ten are not steady
        // (a 4 s interval among them), the ten from 5 s are, known at the one at 14 s.
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a));
        for (i, t) in [1].into_iter().chain(5..=20).enumerate() {
            let conn = i as u64 + 2;
            b = b.at(t * 1_000_000).client(get_resume(conn, &a, ev(0, 3))).client(response(conn, Status::OK));
        }
        let v = churn(&b.build());
        assert_eq!((v.len(), v[0].at), (1, Instant(14_000_000)), "{v:#?}");
        assert!(v[0].detail.contains("re-attached 10 times in a row every 1.000s (by 14.000s)"), "{}", v[0].detail);
    }

    #[test]
    fn re_attachments_at_one_instant_have_no_period_and_are_judged_by_their_count() {
        let burst = |n: u64| {
            let a = sid("A");
            let mut b = TraceBuilder::new()
                .run(StepKind::Bounds { max_reconnects_per_hour: 20, max_delivery_delay_us: None })
                .client(get_standalone(1, &a))
                .at(5_000_000);
            for i in 1..=n {
                b = b.client(get_resume(i + 1, &a, ev(0, 3))).client(response(i + 1, Status::OK));
            }
            churn(&b.build())
        };
        assert_eq!(burst(20), vec![], "twenty at once are within the bound of 20");
        let v = burst(21);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.starts_with("21 reconnects between 5.000s and 5.000s"), "{}", v[0].detail);
        assert!(!v[0].detail.contains("periodic"), "{}", v[0].detail);
    }

    #[test]
    fn the_period_reported_is_the_median_interval() {
        // Ten re-attachments 100, 100, 104, 104, 104, 104, 108, 108 and 108 s apart: steady (each
        // within a tenth of the median), every 1m44 s: 34 an hour, over the bound of 30.
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a));
        let mut t = 0;
        for (i, gap) in [1u64, 100, 100, 104, 104, 104, 104, 108, 108, 108].into_iter().enumerate() {
            t += gap * 1_000_000;
            let n = i as u64 + 2;
            b = b.at(t).client(get_resume(n, &a, ev(0, 3))).client(response(n, Status::OK));
        }
        let v = churn(&b.build());
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.contains("every 1m44.000s"), "{}", v[0].detail);
    }

    /// `n` re-attachments of session A's standalone stream, one every `every_us`, each a fresh
    /// `GET` answered 200; the server closed the stream on a timer before each of the first
    /// `asked` of them.
    fn polled(n: u64, every_us: u64, asked: u64) -> Trace {
        let a = sid("A");
        let mut b = TraceBuilder::new().client(get_standalone(1, &a)).client(response(1, Status::OK));
        for i in 1..=n {
            let t = i * every_us;
            if i <= asked {
                let close = StepKind::ServerClosedStream {
                    conn: ConnId(i),
                    session: a.clone(),
                    stream: Some(crate::ids::StreamNo::STANDALONE),
                    rule: crate::trace::CloseRule::IdleStandalone,
                    after_us: every_us - 4_000_000,
                };
                b = b.at(t - 4_000_000).server(close).client(conn_end(i, ConnEnd::Clean));
            }
            b = b.at(t).client(get_standalone(i + 1, &a)).client(response(i + 1, Status::OK));
        }
        b.build()
    }

    /// A server that closes its idle standalone stream every 66 s, its client back 4 s later as
    /// the `retry` asked: 51 an hour, over the bound (issue 22's finding). It still breaks the
    /// bound, as issue 19 asks of a clean idle close every 30 s, and the violation says how many
    /// of the re-attachments the server asked for; `paced_by_server` names it, for the
    /// conditions to explain by the setting.
    #[test]
    fn re_attachments_the_server_asked_for_by_closing_on_a_timer_break_the_bound_and_are_its_pacing() {
        let trace = polled(12, 70_000_000, 12);
        let v = churn(&trace);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].detail.contains("every 1m10.000s"), "{}", v[0].detail);
        assert!(v[0].detail.contains("of the hour's 10 followed a stream the server closed itself"), "{}", v[0].detail);
        assert_eq!(paced_by_server(&TraceIndex::new(&trace)), BTreeSet::from([v[0].step]));
        // Without the server's closes the same re-attachments are the pair's own: no pacing.
        let own = polled(12, 70_000_000, 0);
        assert_eq!(churn(&own).len(), 1);
        assert!(!churn(&own)[0].detail.contains("closed itself"), "{}", churn(&own)[0].detail);
        assert_eq!(paced_by_server(&TraceIndex::new(&own)), BTreeSet::new());
    }

    /// When the client goes over the bound by its own re-attachments too, the server's closes
    /// do not account for the violation, however many there were.
    #[test]
    fn a_client_over_the_bound_by_its_own_re_attachments_is_not_paced_by_the_server() {
        // 40 re-attachments a minute apart; the server closed before the first 9 of them, so 31
        // are the client's own: over the bound of 30 (and at a period that would be) without
        // the server's.
        let trace = polled(40, 60_000_000, 9);
        assert_eq!(churn(&trace).len(), 1);
        assert_eq!(paced_by_server(&TraceIndex::new(&trace)), BTreeSet::new());
        // The server's ten, then two of the client's own: the server's pacing still.
        let trace = polled(12, 70_000_000, 10);
        assert_eq!(paced_by_server(&TraceIndex::new(&trace)).len(), 1);
    }

    /// The conditions explain the churn the server paced by its setting, and nothing else by it;
    /// the same churn without the server's closes stays unexplained (a bug of the pair).
    #[test]
    fn the_conditions_explain_paced_churn_by_the_server_setting_and_nothing_else() {
        use crate::oracle::conditions::{can_cause, Condition, Conditions, Effect, Explanation};
        let trace = polled(12, 70_000_000, 12);
        let v = churn(&trace);
        let conditions = Conditions::judge(&trace);
        assert!(conditions.all_held(), "the server's pacing breaks no condition");
        let Explanation::ExplainedBy(breaches) = conditions.explain(&v[0]) else {
            panic!("not explained: {}", conditions.explain(&v[0]))
        };
        assert_eq!(breaches.iter().map(|b| b.condition).collect::<Vec<_>>(), vec![Condition::ServerPaced]);
        assert!(breaches[0].to_string().contains("server.close_idle_standalone = 1m06.000s"), "{}", breaches[0]);
        for other in [InvariantId::NoSilentEventLoss, InvariantId::BoundedReconnects, InvariantId::EveryCallResolves] {
            assert!(!can_cause(breaches[0], Effect::Of(other)), "{other:?}");
        }
        let own = polled(12, 70_000_000, 0);
        let conditions = Conditions::judge(&own);
        assert_eq!(conditions.explain(&churn(&own)[0]), Explanation::Unexplained);
        // The client's own churn beside the server's closes: the closes do not explain it.
        let mixed = polled(40, 60_000_000, 9);
        let conditions = Conditions::judge(&mixed);
        assert_eq!(conditions.explain(&churn(&mixed)[0]), Explanation::Unexplained);
    }
}
