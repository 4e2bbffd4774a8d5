//! Reconnect schedules and retention bounds: the pure arithmetic behind the design note's
//! condition 2 (a server must retain a session's events for longer than the client's worst-case
//! reconnect latency), read off a client's [`ReconnectPolicy`].
//!
//! - [`reconnect_schedule`]: the attempts after a break followed by an outage, every delay in full;
//! - [`worst_latency`]: the worst extra wait after the outage over every jitter draw;
//! - [`retention_bounds`]: the count bound `R > r·(a + D + L + ℓ) − 1` and the time window
//!   `W > a + D + L + ℓ − 1/r` that follow, and [`idle_need`] for the idle TTL.
//!
//! Assumptions, each the worst case: every break is a stream error (so an immediate first attempt
//! applies), an attempt made while the network is still cut fails at once and counts against
//! `max_attempts`, and the first attempt at or after the outage's end gets back in.
//!
//! Rates are events per second as `f64`. A rate too small for its interval to be a `Duration`
//! (e.g. `1e-20`/s) saturates to [`Duration::MAX`]; a negative or non-finite rate is a
//! [`ScheduleError`] where it would otherwise reach arithmetic.

use crate::client::reconnect_delay;
use crate::config::{IdleRule, ReconnectPolicy};
use std::time::Duration;
use thiserror::Error;

/// A value the schedule arithmetic cannot use.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum ScheduleError {
    /// A textual setting did not parse (the command line's `--event-rate`, say).
    #[error("{key} = {value:?}: {problem}")]
    BadValue {
        /// The setting.
        key: String,
        /// The text given.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An event rate that is negative, infinite or NaN.
    #[error("the event rate {0} is not a finite number of events per second, zero or more")]
    BadRate(f64),
}

// ---------------------------------------------------------------------------------------------
// Rates
// ---------------------------------------------------------------------------------------------

/// Events per second of an interval (0 for a zero interval: no events).
pub fn rate_of(interval: Duration) -> f64 {
    if interval.is_zero() {
        0.0
    } else {
        1.0 / interval.as_secs_f64()
    }
}

/// The interval between events at `rate` events per second; `None` if there are none (a rate
/// of zero, a negative rate or NaN). An interval too long for a `Duration` saturates to
/// [`Duration::MAX`]; an infinite rate gives a zero interval. Never panics.
pub fn event_interval(rate: f64) -> Option<Duration> {
    (rate > 0.0).then(|| Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::MAX))
}

/// Whether a load balancer that cuts after `lb_idle` of silence cuts a stream with `event_rate`
/// events per second and keep-alive comments every `keepalive`: `Some(idle)` when neither comes
/// often enough.
pub fn lb_cuts(lb_idle: Option<Duration>, event_rate: f64, keepalive: Option<Duration>) -> Option<Duration> {
    let idle = lb_idle?;
    let quiet_enough = |interval: Option<Duration>| interval.is_none_or(|i| i >= idle);
    (quiet_enough(event_interval(event_rate)) && quiet_enough(keepalive)).then_some(idle)
}

/// Parses an event rate: `2/s`, `30/m`, `0.5/s`, `1/h`, or a bare number of events per second.
pub fn parse_rate(text: &str) -> Result<f64, ScheduleError> {
    let bad = |problem: &str| ScheduleError::BadValue {
        key: "--event-rate".into(),
        value: text.into(),
        problem: problem.into(),
    };
    let (number, per) = text.split_once('/').unwrap_or((text, "s"));
    let count: f64 = number.trim().parse().map_err(|_| bad("not a number of events (write e.g. 2/s)"))?;
    let seconds = match per.trim() {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad("the unit must be /s, /m or /h")),
    };
    if !count.is_finite() || count < 0.0 {
        return Err(bad("the rate must be zero or positive"));
    }
    Ok(count / seconds)
}

// ---------------------------------------------------------------------------------------------
// The attempt schedule
// ---------------------------------------------------------------------------------------------

/// One reconnect attempt, timed from the break.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// The wait before it.
    pub delay: Duration,
    /// When it is made, since the break.
    pub at: Duration,
}

/// How a client fares after an outage.
#[derive(Clone, Debug, PartialEq)]
pub enum Reconnect {
    /// The last attempt is the first at or after the outage's end; `latency` is the extra wait
    /// after the network healed.
    Back {
        /// Every attempt, the last one back in.
        attempts: Vec<Attempt>,
        /// From the outage's end to the last attempt.
        latency: Duration,
    },
    /// `max_attempts` ran out while the network was still cut: no retention saves the stream.
    GivesUp {
        /// Every attempt, all failed.
        attempts: Vec<Attempt>,
    },
    /// The delays do not grow and never reach the outage's end (zero backoff).
    NeverBack {
        /// The attempts computed before the safety bound.
        attempts: Vec<Attempt>,
    },
}

impl Reconnect {
    /// The attempts, whatever the outcome.
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            Reconnect::Back { attempts, .. } | Reconnect::GivesUp { attempts } | Reconnect::NeverBack { attempts } => {
                attempts
            }
        }
    }
}

/// Safety bound on the attempts computed for an unlimited policy.
pub const MAX_SCHEDULE: u32 = 100_000;

/// The delay before attempt `n + 1` after `n` consecutive failures, in full: the client's own
/// rule ([`reconnect_delay`]) with a jitter draw that shortens nothing. Every break is a stream
/// error, so an immediate first attempt applies.
pub fn worst_case_delay(policy: &ReconnectPolicy, n: u32, server_retry_ms: Option<u64>) -> Duration {
    reconnect_delay(policy, n, server_retry_ms, true, 0.0)
}

/// The attempts after a break followed by an outage of `outage`: each at the sum of the delays
/// before it, until the first at or after `outage`.
pub fn reconnect_schedule(policy: &ReconnectPolicy, server_retry_ms: Option<u64>, outage: Duration) -> Reconnect {
    let mut attempts = Vec::new();
    let mut at = Duration::ZERO;
    for n in 0..MAX_SCHEDULE {
        if policy.max_attempts.is_some_and(|max| n >= max) {
            return Reconnect::GivesUp { attempts };
        }
        let delay = worst_case_delay(policy, n, server_retry_ms);
        at += delay;
        attempts.push(Attempt { number: n + 1, delay, at });
        if at >= outage {
            return Reconnect::Back { attempts, latency: at - outage };
        }
    }
    Reconnect::NeverBack { attempts }
}

/// The shortest the delay before attempt `n + 1` can be: the jitter draw that shortens most
/// (the client's jitter cuts its own backoff, never the server's `retry:`).
pub fn shortest_delay(policy: &ReconnectPolicy, n: u32, server_retry_ms: Option<u64>) -> Duration {
    reconnect_delay(policy, n, server_retry_ms, true, 1.0)
}

/// The latency after an outage over every jitter draw.
#[derive(Clone, Debug, PartialEq)]
pub struct WorstLatency {
    /// The largest extra wait after the outage (`None` if the client never gets back).
    pub latency: Option<Duration>,
    /// The attempt that makes it the largest.
    pub attempt: u32,
    /// Some draws spend every attempt before the outage ends.
    pub may_give_up: bool,
}

/// The worst extra latency over all jitter draws. Jitter makes delays *shorter*, yet it can make
/// the latency *longer*: attempt `k − 1` can then land just before the network heals, so attempt
/// `k` comes a full delay later. Attempt `k` lands in `[Σ shortest, Σ full]` of the delays before
/// it; it is the first at or after `D` when attempt `k − 1` is before `D`. So the latency reaches
/// (as a supremum) `min(T(k−1), D) + b(k−1) − D` for every `k` whose `k − 1` can be before `D`
/// and whose `k` can be after it. Without jitter this is exactly the plain schedule's `L`.
pub fn worst_latency(policy: &ReconnectPolicy, server_retry_ms: Option<u64>, outage: Duration) -> WorstLatency {
    let mut worst = WorstLatency { latency: None, attempt: 0, may_give_up: false };
    let (mut earliest, mut latest) = (Duration::ZERO, Duration::ZERO);
    for n in 0..MAX_SCHEDULE {
        if n >= 1 && earliest >= outage {
            break;
        }
        if policy.max_attempts.is_some_and(|max| n >= max) {
            worst.may_give_up = true;
            break;
        }
        let full = worst_case_delay(policy, n, server_retry_ms);
        if latest + full >= outage {
            let before = if n == 0 { Duration::ZERO } else { latest.min(outage) };
            let latency = before + full - outage;
            if worst.latency.is_none_or(|w| latency > w) {
                worst = WorstLatency { latency: Some(latency), attempt: n + 1, ..worst };
            }
        }
        earliest += shortest_delay(policy, n, server_retry_ms);
        latest += full;
    }
    worst
}

// ---------------------------------------------------------------------------------------------
// Requirements
// ---------------------------------------------------------------------------------------------

/// What one server setting must be.
#[derive(Clone, Debug, PartialEq)]
pub enum Need {
    /// Strictly above this (events, or seconds).
    Above(f64),
    /// Any value works, for this reason.
    NotNeeded(String),
    /// No value works, for this reason.
    Impossible(String),
}

impl Need {
    /// The stricter of two needs.
    pub fn and(self, other: Need) -> Need {
        match (self, other) {
            (Need::Impossible(r), _) | (_, Need::Impossible(r)) => Need::Impossible(r),
            (Need::Above(a), Need::Above(b)) => Need::Above(a.max(b)),
            (Need::Above(a), Need::NotNeeded(_)) | (Need::NotNeeded(_), Need::Above(a)) => Need::Above(a),
            (Need::NotNeeded(r), Need::NotNeeded(_)) => Need::NotNeeded(r),
        }
    }

    /// The smallest whole value (events or seconds) strictly above the bound.
    pub fn minimal(&self) -> Option<f64> {
        match self {
            Need::Above(x) => Some(smallest_whole_above(*x)),
            _ => None,
        }
    }
}

/// The smallest whole number strictly above `x`. The bounds are sums and products of decimal
/// seconds, so a bound that is a whole number in exact arithmetic can come out a hair below it
/// (100 × 2.02 s = 201.99999999999997): `x` is first rounded to a millionth.
pub fn smallest_whole_above(x: f64) -> f64 {
    ((x * 1e6).round() / 1e6).floor() + 1.0
}

/// The count bound and the time window one break needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RetentionBounds {
    /// Events per stream: `R > r·(a + D + L + ℓ) − 1`.
    pub retention: Need,
    /// Seconds: `W > a + D + L + ℓ − 1/r`.
    pub window: Need,
}

/// The reason a silent stream has no safe time window.
pub const SILENT_STREAM_NO_WINDOW: &str =
    "a silent stream keeps its first event id indefinitely: no time window is safe";

/// What retention a server needs so that a resume is honoured, for events at `event_rate` per
/// second, a last event the client saw `last_event_age` old at the break (`None`: a silent stream
/// that keeps its first id), the client back `away` (`D + L`) after the break and its resume
/// arriving `hop` (`ℓ`) later.
///
/// The server can honour the resume if every event after the last one the client saw is still
/// held when the resume arrives (the last seen itself may be gone: nothing after it is lost).
/// Those events were produced over `span = a + D + L + ℓ`: `r·span` of them, so `R > r·span − 1`
/// counting the last seen; the oldest of them is one interval younger than the last seen, so
/// `W > span − 1/r` (the whole span for a stream without events, whose result must be held).
/// A rate that is negative or not finite is [`ScheduleError::BadRate`].
pub fn retention_bounds(
    event_rate: f64,
    last_event_age: Option<Duration>,
    away: Duration,
    hop: Duration,
) -> Result<RetentionBounds, ScheduleError> {
    if !event_rate.is_finite() || event_rate < 0.0 {
        return Err(ScheduleError::BadRate(event_rate));
    }
    let Some(a) = last_event_age else {
        return Ok(RetentionBounds {
            retention: Need::Above(0.0),
            window: Need::Impossible(SILENT_STREAM_NO_WINDOW.into()),
        });
    };
    let span = a.as_secs_f64() + away.as_secs_f64() + hop.as_secs_f64();
    let interval = 1.0 / event_rate;
    let count = event_rate * span;
    let oldest_needed = if interval.is_finite() { span - interval } else { span };
    Ok(RetentionBounds { retention: Need::Above((count - 1.0).max(0.0)), window: Need::Above(oldest_needed) })
}

/// What the idle TTL must exceed when the client's resume arrives `away` seconds after the break,
/// under `rule`; `request_age` is how long before the break the client's last request was.
pub fn idle_need(rule: IdleRule, away: f64, request_age: Option<Duration>) -> Need {
    match rule {
        IdleRule::NeverWhileBusy => Need::NotNeeded("the countdown is held while a tool runs".into()),
        IdleRule::NoOpenRequest | IdleRule::NoOpenPost => Need::Above(away),
        // The countdown started at the client's last request, before the break.
        IdleRule::LastRequest => Need::Above(request_age.map_or(0.0, |d| d.as_secs_f64()) + away),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles;

    fn assert_above(need: &Need, expected: f64) {
        assert!(matches!(need, Need::Above(x) if (x - expected).abs() < 1e-9), "{need:?} is not Above({expected})");
    }

    fn policy(name: &str) -> ReconnectPolicy {
        profiles::client(name).expect("a known profile").reconnect
    }

    fn times(r: &Reconnect) -> Vec<u64> {
        r.attempts().iter().map(|a| a.at.as_millis() as u64).collect()
    }

    #[test]
    fn a_rate_and_its_interval_are_inverse_and_zero_means_none() {
        assert_eq!(rate_of(Duration::from_millis(500)), 2.0);
        assert_eq!(rate_of(Duration::ZERO), 0.0);
        assert_eq!(event_interval(rate_of(Duration::from_millis(250))), Some(Duration::from_millis(250)));
        assert_eq!(event_interval(0.0), None);
    }

    #[test]
    fn the_reference_schedule_doubles_to_its_cap_and_stops_at_the_first_attempt_after_the_outage() {
        let r = reconnect_schedule(&policy("reference"), None, Duration::from_secs(240));
        let secs: Vec<u64> = times(&r).iter().map(|ms| ms / 1000).collect();
        assert_eq!(secs, [1, 3, 7, 15, 31, 61, 91, 121, 151, 181, 211, 241]);
        assert_eq!(r, Reconnect::Back { attempts: r.attempts().to_vec(), latency: Duration::from_secs(1) });
    }

    #[test]
    fn the_attempts_are_numbered_from_one_with_their_own_delay() {
        let r = reconnect_schedule(&policy("py-sdk"), None, Duration::from_secs(2));
        let first = Attempt { number: 1, delay: Duration::from_secs(1), at: Duration::from_secs(1) };
        let second = Attempt { number: 2, delay: Duration::from_secs(1), at: Duration::from_secs(2) };
        assert_eq!(r.attempts(), [first, second]);
    }

    #[test]
    fn sdk_clients_with_two_attempts_give_up_on_a_long_outage() {
        // TypeScript: 1 s then 1.5 s; Python: 1 s twice.
        let ts = reconnect_schedule(&policy("ts-sdk"), None, Duration::from_secs(60));
        assert!(matches!(ts, Reconnect::GivesUp { .. }));
        assert_eq!(times(&ts), [1000, 2500]);
        let py = reconnect_schedule(&policy("py-sdk"), None, Duration::from_secs(2));
        assert_eq!(
            (times(&py), py.clone()),
            (vec![1000, 2000], Reconnect::Back { attempts: py.attempts().to_vec(), latency: Duration::ZERO })
        );
    }

    #[test]
    fn rmcp_tries_at_once_and_the_server_retry_is_a_floor() {
        let p = policy("rmcp");
        assert_eq!(times(&reconnect_schedule(&p, None, Duration::from_secs(5))), [0, 2000, 6000]);
        // rmcp's own server sends retry: 3000, a floor under 2 s and no change above it.
        assert_eq!(times(&reconnect_schedule(&p, Some(3000), Duration::from_secs(5))), [0, 3000, 7000]);
        // An outage of zero (a load-balancer cut): back at once.
        let cut = reconnect_schedule(&p, Some(3000), Duration::ZERO);
        assert_eq!(cut, Reconnect::Back { attempts: cut.attempts().to_vec(), latency: Duration::ZERO });
    }

    #[test]
    fn a_server_retry_replaces_the_typescript_backoff() {
        assert_eq!(times(&reconnect_schedule(&policy("ts-sdk"), Some(3000), Duration::from_secs(5))), [3000, 6000]);
    }

    #[test]
    fn zero_delays_never_reach_the_end_of_an_outage() {
        let p =
            ReconnectPolicy { initial: Duration::ZERO, max: Duration::ZERO, max_attempts: None, ..policy("reference") };
        let r = reconnect_schedule(&p, None, Duration::from_secs(1));
        assert!(matches!(r, Reconnect::NeverBack { .. }), "{:?}", &r.attempts()[..3]);
    }

    #[test]
    fn the_worst_latency_over_jitter_is_the_plain_latency_without_jitter() {
        let mut p = policy("reference");
        let d = Duration::from_secs(240);
        p.jitter = 0.0;
        assert_eq!(
            worst_latency(&p, None, d),
            WorstLatency { latency: Some(Duration::from_secs(1)), attempt: 12, may_give_up: false }
        );
        p.jitter = 0.2;
        assert_eq!(worst_latency(&p, None, d).latency, Some(Duration::from_secs(30)));
        // A load-balancer cut (no outage): the first delay, whole.
        assert_eq!(worst_latency(&p, None, Duration::ZERO).latency, Some(Duration::from_secs(1)));
        // Twelve attempts reach 241 s without jitter, but can all come before 240 s with it.
        p.max_attempts = Some(12);
        assert!(matches!(reconnect_schedule(&p, None, d), Reconnect::Back { .. }));
        assert!(worst_latency(&p, None, d).may_give_up);
    }

    #[test]
    fn the_chatty_incident_without_jitter_needs_242_events_and_a_241_second_window() {
        // a = 1 s, D + L = 241 s, ℓ = 10 ms: 242.01 s of events after the last one seen, of
        // which the oldest is one interval younger than it (sim's advise test, arithmetic only).
        let hop = Duration::from_millis(10);
        let b = retention_bounds(1.0, Some(Duration::from_secs(1)), Duration::from_secs(241), hop).expect("a rate");
        assert_above(&b.retention, 241.01);
        assert_eq!(b.retention.minimal(), Some(242.0));
        assert_above(&b.window, 241.01);
    }

    #[test]
    fn the_window_is_the_span_less_one_event_interval_at_any_rate() {
        // 2 events/s, a = 1 s, D + L = 9 s: 20 events over the 10 s span, the oldest of them
        // half a second younger than the last one seen.
        let b = retention_bounds(2.0, Some(Duration::from_secs(1)), Duration::from_secs(9), Duration::ZERO)
            .expect("a rate");
        assert_above(&b.retention, 19.0);
        assert_above(&b.window, 9.5);
        // One event every 4 s over the same span: 2.5 events, the oldest 4 s younger.
        let b = retention_bounds(0.25, Some(Duration::from_secs(1)), Duration::from_secs(9), Duration::ZERO)
            .expect("a rate");
        assert_above(&b.retention, 1.5);
        assert_above(&b.window, 6.0);
    }

    #[test]
    fn a_silent_stream_needs_one_event_and_has_no_safe_window() {
        let b = retention_bounds(0.0, None, Duration::from_secs(61), Duration::ZERO).expect("a rate");
        assert_above(&b.retention, 0.0);
        assert_eq!(b.window, Need::Impossible(SILENT_STREAM_NO_WINDOW.into()));
        // No events but a known age: the whole span must be held for the result.
        let b = retention_bounds(0.0, Some(Duration::from_secs(60)), Duration::from_secs(1), Duration::ZERO)
            .expect("a rate");
        assert_above(&b.window, 61.0);
    }

    #[test]
    fn idle_rules_that_run_while_away_constrain_the_ttl() {
        assert!(matches!(idle_need(IdleRule::NeverWhileBusy, 254.01, None), Need::NotNeeded(_)));
        assert_above(&idle_need(IdleRule::NoOpenRequest, 254.01, None), 254.01);
        assert_above(&idle_need(IdleRule::LastRequest, 254.01, Some(Duration::from_secs(59))), 59.0 + 254.01);
    }

    #[test]
    fn needs_combine_to_the_stricter() {
        let no = || Need::NotNeeded("no".into());
        assert_eq!(Need::Above(1.0).and(Need::Above(2.0)), Need::Above(2.0));
        assert_eq!(no().and(Need::Above(3.0)), Need::Above(3.0));
        assert_eq!(Need::Above(3.0).and(Need::Impossible("x".into())), Need::Impossible("x".into()));
        assert_eq!(no().and(Need::NotNeeded("other".into())), no());
    }

    #[test]
    fn a_bound_that_is_a_whole_number_needs_the_next_one_despite_float_rounding() {
        // 100 events/s over 2.02 s is 202 events in exact arithmetic, 201.99999999999997 in f64.
        let x = 100.0 * (0.01 + 2.0 + 0.01);
        assert!(x < 202.0);
        assert_eq!(Need::Above(x).minimal(), Some(203.0));
        assert_eq!(Need::Above(242.01).minimal(), Some(243.0));
        assert_eq!(Need::Above(0.0).minimal(), Some(1.0));
    }

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(parse_rate("2/s"), Ok(2.0));
        assert_eq!(parse_rate("30/m"), Ok(0.5));
        assert_eq!(parse_rate("7200/h"), Ok(2.0));
        assert_eq!(parse_rate("120/min"), Ok(2.0));
        assert_eq!(parse_rate("1.5"), Ok(1.5));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("2/day").is_err());
        assert!(parse_rate("-1/s").is_err());
        assert!(parse_rate("inf/s").is_err());
    }

    #[test]
    fn the_worst_latency_names_the_first_attempt_that_reaches_it() {
        // With 20 % jitter over a 240 s outage, attempts 13 and 14 (30 s apart, both capped) can
        // each come a whole 30 s after the network healed: the first of them is named.
        let mut p = policy("reference");
        p.jitter = 0.2;
        assert_eq!(
            worst_latency(&p, None, Duration::from_secs(240)),
            WorstLatency { latency: Some(Duration::from_secs(30)), attempt: 13, may_give_up: false }
        );
    }

    #[test]
    fn a_rate_of_zero_parses_as_no_events_and_only_a_negative_one_is_refused() {
        assert_eq!(parse_rate("0/s"), Ok(0.0));
        assert_eq!(parse_rate("0"), Ok(0.0));
        assert_eq!(parse_rate("0/s").map(event_interval), Ok(None));
        let refused = ScheduleError::BadValue {
            key: "--event-rate".into(),
            value: "-0.5/m".into(),
            problem: "the rate must be zero or positive".into(),
        };
        assert_eq!(parse_rate("-0.5/m"), Err(refused));
    }

    #[test]
    fn tiny_huge_and_non_finite_rates_never_panic() {
        // 1e-20 events/s: an interval of 1e20 s, beyond any Duration: it saturates.
        assert_eq!(event_interval(1e-20), Some(Duration::MAX));
        assert_eq!(event_interval(f64::MIN_POSITIVE), Some(Duration::MAX));
        assert_eq!(event_interval(f64::INFINITY), Some(Duration::ZERO));
        assert_eq!(event_interval(f64::NAN), None);
        assert_eq!(event_interval(-1.0), None);
        assert_eq!(event_interval(0.0), None);
        assert_eq!(event_interval(2.0), Some(Duration::from_millis(500)));
        // A stream that almost never speaks is cut by any load balancer without keep-alives.
        let idle = Some(Duration::from_secs(60));
        assert_eq!(lb_cuts(idle, 1e-20, None), idle);
        assert_eq!(lb_cuts(idle, 1.0, None), None);
        assert_eq!(lb_cuts(idle, 1e-20, Some(Duration::from_secs(30))), None);
        // The bounds take tiny rates and refuse non-finite or negative ones.
        let (d, hop) = (Duration::from_secs(10), Duration::ZERO);
        assert!(retention_bounds(1e-20, Some(d), d, hop).is_ok());
        assert!(matches!(retention_bounds(f64::NAN, Some(d), d, hop), Err(ScheduleError::BadRate(_))));
        assert!(matches!(retention_bounds(f64::INFINITY, Some(d), d, hop), Err(ScheduleError::BadRate(_))));
        assert!(matches!(retention_bounds(-1.0, Some(d), d, hop), Err(ScheduleError::BadRate(_))));
    }
}
