//! The predicted safe retention: the design note's condition 2, worked out as arithmetic.
//!
//! Condition 2 says the server must retain a session's events for longer than the client's
//! worst-case reconnect latency. This module computes that latency from a client's
//! [`ReconnectPolicy`] and turns it into the three server settings that must exceed it:
//!
//! - the count bound `R` per stream: `R > r·(D + L)` — the events produced while disconnected
//!   (rate `r`, outage `D`, extra latency `L` after the outage) must all still be held, and so
//!   must the last event the client saw, since a server finds the resume position by that id;
//! - the time window `W`: `W > a + D + L`, where `a` is how old the last event the client saw
//!   already was when the stream broke (that event must still be held when the client is back);
//! - the idle TTL, under idle rules whose countdown runs while the client is away.
//!
//! Assumptions, each chosen as the worst case:
//! - Jitter never shortens a delay: the full backoff is waited.
//! - Every break is a stream error (reset, partition, load-balancer cut), so the profile's
//!   immediate first attempt applies; detection takes no time, because every fault of
//!   `faults.rs` resets the client's connections when it starts (none is a silent black hole).
//! - The client has seen the server's `retry:` field if the server sends one with its priming
//!   event on POST streams.
//! - An attempt made while the network is still cut fails at once and counts against
//!   `max_attempts`; the first attempt at or after the outage's end gets back in.

use crate::error::SimError;
use crate::faults::Fault;
use crate::scenario::Scenario;
use mcpsim_model::config::{IdleRule, ReconnectPolicy, RetryField};
use mcpsim_model::time::format_duration;
use std::fmt::Write as _;
use std::time::Duration;

/// What the prediction depends on besides the client and server policies.
#[derive(Clone, Debug, PartialEq)]
pub struct AdviseInput {
    /// The load balancer's idle timeout: a stream silent this long is cut.
    pub lb_idle: Option<Duration>,
    /// The server's keep-alive interval: comments below `lb_idle` keep a stream from being cut.
    pub keepalive: Option<Duration>,
    /// Events per second on the stream (0 for a silent tool).
    pub event_rate: f64,
    /// The longest network outage to survive; `None` for none (only load-balancer cuts).
    pub max_outage: Option<Duration>,
    /// Under the `last-request` idle rule: time from the client's last request to the outage.
    pub request_age_at_outage: Option<Duration>,
    /// How long a stream lives (the tool's run): the oldest its last event can get.
    pub stream_lifetime: Option<Duration>,
}

impl AdviseInput {
    /// The input a scenario implies: its load balancer, keep-alive, tool rate and duration, and
    /// its longest partition.
    pub fn from_scenario(s: &Scenario) -> AdviseInput {
        let tool = s.tools.first();
        let partitions = s.faults.faults().iter().filter(|f| matches!(f.fault, Fault::Partition { .. }));
        let first_partition = partitions.clone().next();
        let request_age = first_partition.map(|p| {
            let last_call = s.calls.iter().map(|c| c.at).filter(|at| *at <= p.at).max().unwrap_or(Duration::ZERO);
            p.at - last_call
        });
        AdviseInput {
            lb_idle: s.lb.idle_timeout,
            keepalive: s.server.keepalive,
            event_rate: tool.and_then(|t| t.event_interval).map_or(0.0, rate_of),
            max_outage: partitions.map(|p| p.fault.duration()).max(),
            request_age_at_outage: request_age,
            stream_lifetime: tool.map(|t| t.duration.mul_f64(1.0 + s.tool_jitter)),
        }
    }

    /// The interval between events, if the stream has any.
    fn event_interval(&self) -> Option<Duration> {
        (self.event_rate > 0.0).then(|| Duration::from_secs_f64(1.0 / self.event_rate))
    }

    /// Whether the load balancer cuts the stream between events.
    fn lb_cuts(&self) -> Option<Duration> {
        let idle = self.lb_idle?;
        let quiet_enough = |interval: Option<Duration>| interval.is_none_or(|i| i >= idle);
        (quiet_enough(self.event_interval()) && quiet_enough(self.keepalive)).then_some(idle)
    }
}

/// Events per second of an interval.
fn rate_of(interval: Duration) -> f64 {
    if interval.is_zero() {
        0.0
    } else {
        1.0 / interval.as_secs_f64()
    }
}

/// Parses `--event-rate`: `2/s`, `30/m`, `0.5/s`, or a bare number of events per second.
pub fn parse_rate(text: &str) -> Result<f64, SimError> {
    let bad =
        |problem: &str| SimError::BadValue { key: "--event-rate".into(), value: text.into(), problem: problem.into() };
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
    Back { attempts: Vec<Attempt>, latency: Duration },
    /// `max_attempts` ran out while the network was still cut: no retention saves the stream.
    GivesUp { attempts: Vec<Attempt> },
    /// The delays do not grow and never reach the outage's end (zero backoff).
    NeverBack { attempts: Vec<Attempt> },
}

impl Reconnect {
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            Reconnect::Back { attempts, .. } | Reconnect::GivesUp { attempts } | Reconnect::NeverBack { attempts } => {
                attempts
            }
        }
    }
}

/// Safety bound on the attempts computed for an unlimited policy.
const MAX_SCHEDULE: u32 = 100_000;

/// The delay before attempt `n + 1` after `n` consecutive failures, at its worst (no jitter).
/// The client's rule: immediate first attempt after an error if the profile says so; else
/// `min(initial·factor^n, max)`, then the server's `retry:` replaces it or is a floor for it.
pub fn worst_case_delay(policy: &ReconnectPolicy, n: u32, server_retry_ms: Option<u64>) -> Duration {
    if policy.first_immediate && n == 0 {
        return Duration::ZERO;
    }
    let exponent = i32::try_from(n).unwrap_or(i32::MAX);
    let us = policy.initial.as_micros() as f64 * policy.factor.powi(exponent);
    let cap = policy.max.as_micros() as f64;
    let backoff = Duration::from_micros(if us.is_finite() { us.min(cap) } else { cap }.max(0.0) as u64);
    match (policy.retry_field, server_retry_ms) {
        (RetryField::Ignore, _) | (_, None) => backoff,
        (RetryField::Replaces, Some(ms)) => Duration::from_millis(ms),
        (RetryField::AtLeast, Some(ms)) => backoff.max(Duration::from_millis(ms)),
    }
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
    fn and(self, other: Need) -> Need {
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
            Need::Above(x) => Some(x.floor() + 1.0),
            _ => None,
        }
    }
}

/// One way the stream breaks, and what surviving it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakCase {
    /// What breaks the stream, in words.
    pub cause: String,
    /// How long the network stays cut after the break.
    pub outage: Duration,
    pub reconnect: Reconnect,
    /// The count bound this case needs.
    pub retention: Need,
    pub window: Need,
    pub idle_ttl: Need,
    /// The arithmetic, one line a step.
    pub steps: Vec<String>,
}

/// The whole prediction for one client against one server.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    pub client: String,
    pub server: String,
    pub input: AdviseInput,
    /// The `retry:` the client is assumed to have seen.
    pub server_retry_ms: Option<u64>,
    pub cases: Vec<BreakCase>,
    /// Events per stream.
    pub retention: Need,
    /// Seconds.
    pub window: Need,
    /// Seconds.
    pub idle_ttl: Need,
}

/// The predicted safe retention of the scenario's server for the scenario's client under `input`.
pub fn advise(scenario: &Scenario, input: &AdviseInput) -> Advice {
    let server = &scenario.server;
    let server_retry_ms = if server.priming.post { server.retry_ms } else { None };
    let mut cases = Vec::new();
    if let Some(idle) = input.lb_cuts() {
        cases.push(lb_cut_case(scenario, input, idle, server_retry_ms));
    }
    if let Some(outage) = input.max_outage {
        cases.push(outage_case(scenario, input, outage, server_retry_ms));
    }
    let none = || Need::NotNeeded("nothing breaks the stream: no outage and no load-balancer cut".into());
    let fold = |pick: fn(&BreakCase) -> &Need| cases.iter().map(|c| pick(c).clone()).reduce(Need::and);
    Advice {
        client: scenario.client.name.clone(),
        server: server.name.clone(),
        input: input.clone(),
        server_retry_ms,
        retention: fold(|c| &c.retention).unwrap_or_else(none),
        window: fold(|c| &c.window).unwrap_or_else(none),
        idle_ttl: fold(|c| &c.idle_ttl).unwrap_or_else(none),
        cases,
    }
}

/// A load-balancer idle cut: the network is fine, the client reconnects after its first delay.
fn lb_cut_case(scenario: &Scenario, input: &AdviseInput, idle: Duration, retry: Option<u64>) -> BreakCase {
    let cause = format!("load-balancer idle cut after {} of silence (network up)", format_duration(idle));
    // The stream was silent for `idle`, so its last event is that old; without a priming event on
    // resume, cut after cut leaves the client holding the same old id until the next real event.
    let age = if scenario.server.priming.resume {
        Some((idle, "the stream was silent that long; this server primes every resume with a fresh id"))
    } else {
        let why = "cut after cut, no priming on resume: the client keeps the id of the last real event";
        input.event_interval().or(input.stream_lifetime).map(|a| (a, why))
    };
    let request_age = Some(idle);
    break_case(scenario, input, cause, Duration::ZERO, age, request_age, retry)
}

/// A network outage of `outage`: connections are reset when it starts and refused until it ends.
fn outage_case(scenario: &Scenario, input: &AdviseInput, outage: Duration, retry: Option<u64>) -> BreakCase {
    let cause = format!("network outage of {} (connections reset at its start)", format_duration(outage));
    let age = match (input.event_interval(), input.lb_cuts()) {
        (Some(i), _) => Some((i, "at worst one event interval")),
        (None, Some(idle)) if scenario.server.priming.resume => {
            Some((idle, "a silent stream is cut and resumed (with a fresh priming id) every idle timeout"))
        }
        (None, _) => input.stream_lifetime.map(|l| (l, "a silent stream keeps its first id for the tool's whole run")),
    };
    break_case(scenario, input, cause, outage, age, input.request_age_at_outage, retry)
}

fn break_case(
    scenario: &Scenario,
    input: &AdviseInput,
    cause: String,
    outage: Duration,
    last_event_age: Option<(Duration, &str)>,
    request_age: Option<Duration>,
    retry: Option<u64>,
) -> BreakCase {
    let reconnect = reconnect_schedule(&scenario.client.reconnect, retry, outage);
    let mut steps = schedule_steps(&reconnect, outage);
    let Reconnect::Back { latency, .. } = &reconnect else {
        let why =
            format!("the client never gets back after a {} outage: no retention saves it", format_duration(outage));
        steps.push(why.clone());
        return BreakCase {
            cause,
            outage,
            reconnect: reconnect.clone(),
            retention: Need::Impossible(why.clone()),
            window: Need::Impossible(why.clone()),
            idle_ttl: Need::Impossible(why),
            steps,
        };
    };
    let away = outage + *latency;
    let (d, l, dl) = (secs(outage), secs(*latency), secs(away));
    steps.push(format!("L = {} − {} = {}; away D + L = {}", show_s(d + l), show_s(d), show_s(l), show_s(dl)));
    let missed = input.event_rate * dl;
    steps.push(format!(
        "events produced while away: r·(D + L) = {} × {} = {}",
        show_n(input.event_rate),
        show_s(dl),
        show_n(missed)
    ));
    steps.push(format!("count bound: R > {}", show_n(missed)));
    let window = match last_event_age {
        Some((a, why)) => {
            let bound = secs(a) + dl;
            steps.push(format!(
                "window: the last event seen was a = {} old at the break ({why}); W > a + D + L = {}",
                show_s(secs(a)),
                show_s(bound)
            ));
            Need::Above(bound)
        }
        None => {
            let why = "a silent stream keeps its first event id indefinitely: no time window is safe";
            steps.push(format!("window: {why}"));
            Need::Impossible(why.into())
        }
    };
    let idle_ttl = idle_need(scenario.server.idle_rule, dl, request_age);
    steps.push(format!("idle TTL ({}): {}", idle_rule_name(scenario.server.idle_rule), describe_need(&idle_ttl, "s")));
    BreakCase { cause, outage, reconnect, retention: Need::Above(missed), window, idle_ttl, steps }
}

/// What the idle TTL must exceed when the client is away for `away` seconds.
fn idle_need(rule: IdleRule, away: f64, request_age: Option<Duration>) -> Need {
    match rule {
        IdleRule::NeverWhileBusy => Need::NotNeeded("the countdown is held while a tool runs".into()),
        IdleRule::NoOpenRequest => Need::Above(away),
        // The countdown started at the client's last request, before the break.
        IdleRule::LastRequest => Need::Above(request_age.map_or(0.0, secs) + away),
    }
}

fn idle_rule_name(rule: IdleRule) -> &'static str {
    match rule {
        IdleRule::NeverWhileBusy => "held while a tool runs",
        IdleRule::NoOpenRequest => "runs while no request is open: from the break",
        IdleRule::LastRequest => "runs from the last request received",
    }
}

/// The attempt lines: the first and last few of a long schedule.
fn schedule_steps(reconnect: &Reconnect, outage: Duration) -> Vec<String> {
    let attempts = reconnect.attempts();
    let mut lines = Vec::new();
    let mut previous = Duration::ZERO;
    for (i, a) in attempts.iter().enumerate() {
        let shown = i < 6 || i + 4 >= attempts.len();
        if shown {
            let verdict = if a.at >= outage { "network up: back in" } else { "network still cut: fails" };
            lines.push(format!(
                "attempt {:>3} at {} + {} = {}  ({verdict})",
                a.number,
                show_s(secs(previous)),
                show_s(secs(a.delay)),
                show_s(secs(a.at))
            ));
        } else if i == 6 {
            lines.push(format!("… attempts 7 to {} …", attempts.len() - 4));
        }
        previous = a.at;
    }
    match reconnect {
        Reconnect::GivesUp { attempts } => {
            lines.push(format!("max_attempts = {} spent: the client gives up", attempts.len()))
        }
        Reconnect::NeverBack { .. } => {
            lines.push("the delays never add up to the outage: the client never gets back".into())
        }
        Reconnect::Back { .. } => {}
    }
    lines
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// Seconds as a duration the command line reads (`241s`, `4m`, `1.5s`).
fn show_s(x: f64) -> String {
    format_duration(Duration::from_micros((x * 1e6).round().max(0.0) as u64))
}

/// A number without needless decimals.
fn show_n(x: f64) -> String {
    let rounded = (x * 1000.0).round() / 1000.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded}")
    }
}

fn describe_need(need: &Need, unit: &str) -> String {
    match (need, unit) {
        (Need::Above(x), "events") => {
            format!("> {} → at least {} events per stream", show_n(*x), show_n(x.floor() + 1.0))
        }
        (Need::Above(x), _) => format!("> {} → at least {}", show_s(*x), show_s(x.floor() + 1.0)),
        (Need::NotNeeded(why), _) => format!("any ({why})"),
        (Need::Impossible(why), _) => format!("none works ({why})"),
    }
}

/// The advice with its arithmetic, step by step.
pub fn render(advice: &Advice) -> String {
    let mut out = String::new();
    let p = &advice.input;
    let _ = writeln!(out, "client {} against server {}", advice.client, advice.server);
    let _ = writeln!(
        out,
        "inputs: event rate {}/s, max outage {}, load-balancer idle {}, server retry: {}",
        show_n(p.event_rate),
        p.max_outage.map_or("none".into(), format_duration),
        p.lb_idle.map_or("none".into(), format_duration),
        advice.server_retry_ms.map_or("none".into(), |ms| format_duration(Duration::from_millis(ms))),
    );
    let _ =
        writeln!(out, "assumed: jitter never shortens a delay; a break is detected at once (faults reset connections)");
    if advice.cases.is_empty() {
        let _ = writeln!(out, "nothing breaks the stream: no outage given and the load balancer never cuts it");
    }
    for (i, case) in advice.cases.iter().enumerate() {
        let _ = writeln!(out, "\nbreak {}: {}", i + 1, case.cause);
        for step in &case.steps {
            let _ = writeln!(out, "  {step}");
        }
    }
    let _ = writeln!(out, "\nminimal safe settings (the strictest over the breaks above):");
    let _ = writeln!(out, "  server.retention         {}", describe_need(&advice.retention, "events"));
    let _ = writeln!(out, "  server.retention_window  {}", describe_need(&advice.window, "s"));
    let _ = writeln!(out, "  server.idle_ttl          {}", describe_need(&advice.idle_ttl, "s"));
    out
}

// ---------------------------------------------------------------------------------------------
// Predicted boundaries for sweeps
// ---------------------------------------------------------------------------------------------

/// The predicted boundary of one settable key.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub key: &'static str,
    /// The value must exceed this (events, or seconds for durations).
    pub exceed: f64,
    /// The smallest whole value above it.
    pub minimal: f64,
}

/// The keys a prediction exists for.
pub const PREDICTED_KEYS: &[&str] = &["server.retention", "server.retention_window", "server.idle_ttl"];

/// The predicted boundary of `key` in `scenario`, if the key is one advise predicts and the
/// scenario has one.
pub fn predict(scenario: &Scenario, key: &str) -> Option<Prediction> {
    let key = *PREDICTED_KEYS.iter().find(|k| **k == key)?;
    let advice = advise(scenario, &AdviseInput::from_scenario(scenario));
    let need = match key {
        "server.retention" => advice.retention,
        "server.retention_window" => advice.window,
        _ => advice.idle_ttl,
    };
    let Need::Above(exceed) = need else { return None };
    Some(Prediction { key, exceed, minimal: exceed.floor() + 1.0 })
}

/// A value of a predicted key as the key writes it: a count of events, or a duration.
pub fn show_value(key: &str, x: f64) -> String {
    if key == "server.retention" {
        show_n(x)
    } else {
        show_s(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpsim_model::profiles;

    fn policy(name: &str) -> ReconnectPolicy {
        profiles::client(name).expect("a known profile").reconnect
    }

    fn times(r: &Reconnect) -> Vec<u64> {
        r.attempts().iter().map(|a| a.at.as_millis() as u64).collect()
    }

    #[test]
    fn the_reference_schedule_doubles_to_its_cap_and_stops_at_the_first_attempt_after_the_outage() {
        let r = reconnect_schedule(&policy("reference"), None, Duration::from_secs(240));
        let secs: Vec<u64> = times(&r).iter().map(|ms| ms / 1000).collect();
        assert_eq!(secs, [1, 3, 7, 15, 31, 61, 91, 121, 151, 181, 211, 241]);
        assert_eq!(r, Reconnect::Back { attempts: r.attempts().to_vec(), latency: Duration::from_secs(1) });
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
    fn the_chatty_incident_needs_more_than_241_events_and_a_242_second_window() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let input = AdviseInput::from_scenario(&s);
        assert_eq!((input.event_rate, input.max_outage), (1.0, Some(Duration::from_secs(240))));
        let a = advise(&s, &input);
        assert_eq!(a.cases.len(), 1, "events every second keep the load balancer from cutting");
        assert_eq!(a.retention, Need::Above(241.0));
        assert_eq!(a.retention.minimal(), Some(242.0));
        assert_eq!(a.window, Need::Above(242.0));
        assert!(matches!(a.idle_ttl, Need::NotNeeded(_)));
        let text = render(&a);
        assert!(text.contains("attempt  12 at 211s + 30s = 241s  (network up: back in)"), "{text}");
        assert!(text.contains("r·(D + L) = 1 × 241s = 241"), "{text}");
        assert!(text.contains("server.retention         > 241 → at least 242 events per stream"), "{text}");
    }

    #[test]
    fn a_silent_tool_behind_an_idle_timeout_needs_a_window_longer_than_the_timeout() {
        let s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert_eq!(a.cases.len(), 1);
        // Cut after 60 s of silence, back after the 1 s initial delay: the priming id is 61 s old.
        assert_eq!(a.window, Need::Above(61.0));
        assert_eq!(a.retention, Need::Above(0.0));
    }

    #[test]
    fn idle_rules_that_run_while_away_constrain_the_ttl() {
        let mut s = Scenario::build("chatty-tool", "rmcp", "py-sdk").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        // rmcp against a server without retry: 0, 2, 4, 8, 16, 32, 64, 128 → 254 s, L = 14 s.
        assert_eq!(a.retention, Need::Above(254.0));
        assert_eq!(a.idle_ttl, Need::Above(254.0), "the Python rule counts from the break");
        s.server.idle_rule = IdleRule::LastRequest;
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert_eq!(a.idle_ttl, Need::Above(59.0 + 254.0), "counted from the call at 1 s, partition at 60 s");
    }

    #[test]
    fn a_client_that_gives_up_makes_every_setting_impossible() {
        let s = Scenario::build("chatty-tool", "ts-sdk", "reference").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert!(matches!(a.retention, Need::Impossible(_)));
        assert!(render(&a).contains("the client gives up"), "{}", render(&a));
        assert_eq!(predict(&s, "server.retention"), None);
    }

    #[test]
    fn predictions_name_the_smallest_safe_value() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let p = predict(&s, "server.retention").unwrap();
        assert_eq!((p.exceed, p.minimal), (241.0, 242.0));
        assert_eq!(predict(&s, "lb.idle_timeout"), None);
    }

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(parse_rate("2/s").unwrap(), 2.0);
        assert_eq!(parse_rate("30/m").unwrap(), 0.5);
        assert_eq!(parse_rate("1.5").unwrap(), 1.5);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("2/day").is_err());
        assert!(parse_rate("-1/s").is_err());
    }
}
