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
//! - The attempt schedule is shown with every delay in full; the latency that counts is the worst
//!   over all jitter draws ([`worst_latency`]): shorter delays can land an attempt just before the
//!   network heals, and then a full delay follows.
//! - Every break is a stream error (reset, partition, load-balancer cut), so the profile's
//!   immediate first attempt applies; detection takes no time, because every fault of
//!   `faults.rs` but `blackhole` resets the client's connections when it starts. A black hole is
//!   detected only by a timer of the client's own (its request timeout, or TCP's
//!   `tcp_retries2` give-up after a write), which this prediction does not add: it does not
//!   predict a pair under one.
//! - The client has seen the server's `retry:` field if the server sends one with its priming
//!   event on POST streams.
//! - An attempt made while the network is still cut fails at once and counts against
//!   `max_attempts`; the first attempt at or after the outage's end gets back in.

use crate::error::SimError;
use crate::scenario::faults::Fault;
use crate::scenario::Scenario;
use crate::studies::pool::{run_cells, PoolCell, Progress, RunFn};
use crate::studies::tally::{Outcome, Tally};
use mcpsim_model::config::{EventStoreMode, IdleRule, ReconnectPolicy};
use mcpsim_model::schedule::{event_interval, idle_need, lb_cuts, rate_of, retention_bounds, smallest_whole_above};
// The schedule arithmetic lives in the model (`mcpsim_model::schedule`); these are its answers.
pub use mcpsim_model::schedule::{
    reconnect_schedule, worst_case_delay, worst_latency, Attempt, Need, Reconnect, RetentionBounds, WorstLatency,
};
use mcpsim_model::time::{format_duration, parse_duration};
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
    /// The longest one-way network latency: the resume reaches the server this much later.
    pub latency: Duration,
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
            latency: s.net.latency_max,
        }
    }

    /// The input with the command line's flags over it: `--lb-idle` (a duration or `none`),
    /// `--event-rate` (`2/s`, `30/m`), `--max-outage` (a duration or `none`). An outage given
    /// here has no start time, so rules that count from the client's last request count from
    /// the start of the stream (the worst case).
    pub fn with_flags(
        mut self,
        lb_idle: Option<&str>,
        event_rate: Option<&str>,
        max_outage: Option<&str>,
    ) -> Result<AdviseInput, SimError> {
        let duration = |flag: &str, v: &str| -> Result<Option<Duration>, SimError> {
            if v == "none" {
                return Ok(None);
            }
            parse_duration(v).map(Some).map_err(|problem| SimError::BadValue {
                key: flag.into(),
                value: v.into(),
                problem,
            })
        };
        if let Some(v) = lb_idle {
            self.lb_idle = duration("--lb-idle", v)?;
        }
        if let Some(v) = event_rate {
            self.event_rate = parse_rate(v)?;
        }
        if let Some(v) = max_outage {
            self.max_outage = duration("--max-outage", v)?;
            self.request_age_at_outage = None;
        }
        Ok(self)
    }

    /// The interval between events, if the stream has any (saturating for a tiny rate).
    fn event_interval(&self) -> Option<Duration> {
        event_interval(self.event_rate)
    }

    /// Whether the load balancer cuts the stream between events.
    fn lb_cuts(&self) -> Option<Duration> {
        lb_cuts(self.lb_idle, self.event_rate, self.keepalive)
    }
}

/// The slowest positive rate `--event-rate` accepts, in events per second (0.001/h).
pub const MIN_RATE: f64 = 0.001 / 3600.0;
/// The fastest rate `--event-rate` accepts, in events per second: the simulator's clock ticks in
/// microseconds, so a million events a second is one a tick.
pub const MAX_RATE: f64 = 1e6;

/// Parses `--event-rate`: a number of events and a unit, `2/s`, `30/m`, `0.5/h`. The rate is 0
/// (a silent stream) or between [`MIN_RATE`] and [`MAX_RATE`]: beyond those the arithmetic
/// leaves what a duration or a count can hold.
pub fn parse_rate(text: &str) -> Result<f64, SimError> {
    let bad =
        |problem: &str| SimError::BadValue { key: "--event-rate".into(), value: text.into(), problem: problem.into() };
    let Some((number, per)) = text.split_once('/') else {
        return Err(bad("a rate needs a unit: write e.g. 10/s, 600/m or 2/h"));
    };
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
    let rate = count / seconds;
    if rate != 0.0 && !(MIN_RATE..=MAX_RATE).contains(&rate) {
        return Err(bad("a rate is 0, or between 0.001/h and 1000000/s"));
    }
    Ok(rate)
}

// ---------------------------------------------------------------------------------------------
// Requirements
// ---------------------------------------------------------------------------------------------

/// One way the stream breaks, and what surviving it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakCase {
    /// What breaks the stream, in words.
    pub cause: String,
    /// How long the network stays cut after the break.
    pub outage: Duration,
    /// How the client fares after the outage: back after its attempts, or gone.
    pub reconnect: Reconnect,
    /// From the break until the client is back, at worst (`None` if it may never be).
    pub away: Option<Duration>,
    /// The count bound this case needs.
    pub retention: Need,
    /// The time window (`server.retention_window`) this case needs, in seconds.
    pub window: Need,
    /// The session idle TTL (`server.idle_ttl`) this case needs, in seconds.
    pub idle_ttl: Need,
    /// The arithmetic, one line a step.
    pub steps: Vec<String>,
}

/// The whole prediction for one client against one server.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// The client profile's name.
    pub client: String,
    /// The server profile's name.
    pub server: String,
    /// The numbers the arithmetic used (scenario values, flags on top).
    pub input: AdviseInput,
    /// The `retry:` the client is assumed to have seen.
    pub server_retry_ms: Option<u64>,
    /// Every way the stream breaks, each with its need; the answer is the strictest.
    pub cases: Vec<BreakCase>,
    /// Events per stream.
    pub retention: Need,
    /// Seconds.
    pub window: Need,
    /// Seconds.
    pub idle_ttl: Need,
    /// The server keeps no event store (`server.event_store = none`): nothing can be resumed.
    pub no_store: bool,
}

/// The predicted safe retention of the scenario's server for the scenario's client under `input`.
/// It reasons about one client profile (`scenario.client`): the commands refuse a mixed fleet
/// first ([`Scenario::require_one_client_profile`]).
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
    if server.event_store == EventStoreMode::NoStore {
        // No store, no ids: a client never holds a Last-Event-ID, so no retention is worth
        // computing; the idle TTL still decides whether the session outlives the break.
        for case in &mut cases {
            case.steps.push(NO_STORE.to_string());
            case.retention = Need::Impossible(NO_STORE.into());
            case.window = Need::Impossible(NO_STORE.into());
        }
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
        no_store: server.event_store == EventStoreMode::NoStore,
        cases,
    }
}

/// Why no retention helps a server without an event store.
pub const NO_STORE: &str = "resumption is impossible: the server keeps no event store (server.event_store = none), so \
                            its events carry no id and nothing is replayed; a broken stream's events are lost";

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
    // Without a known start, the outage may come when the client's last request is as old as
    // the stream itself.
    let request_age = input.request_age_at_outage.or(input.stream_lifetime);
    break_case(scenario, input, cause, outage, age, request_age, retry)
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
    let policy = &scenario.client.reconnect;
    let worst = worst_latency(policy, retry, outage);
    let gives_up = match &reconnect {
        Reconnect::Back { latency, .. } => {
            let (d, l) = (secs(outage), secs(*latency));
            steps.push(format!("without jitter: L = {} − {} = {}", show_s(d + l), show_s(d), show_s(l)));
            if worst.may_give_up {
                Some(format!(
                    "with jitter {} the {} attempts can all come before the outage ends: the client may give up, \
                     and no retention saves it then",
                    policy.jitter,
                    attempt_count(policy)
                ))
            } else {
                None
            }
        }
        Reconnect::GivesUp { attempts } => Some(format!(
            "the client gives up after {} attempts, before the {} outage ends: no retention saves it",
            attempts.len(),
            format_duration(outage)
        )),
        Reconnect::NeverBack { .. } => Some(format!(
            "the client never gets back after a {} outage: no retention saves it",
            format_duration(outage)
        )),
    };
    let (Some(latency), None) = (worst.latency, gives_up.clone()) else {
        let why = gives_up.unwrap_or_else(|| "the client never gets back".into());
        steps.push(why.clone());
        return BreakCase {
            cause,
            outage,
            reconnect,
            away: None,
            retention: Need::Impossible(why.clone()),
            window: Need::Impossible(why.clone()),
            idle_ttl: Need::Impossible(why),
            steps,
        };
    };
    let plain = match &reconnect {
        Reconnect::Back { latency, .. } => Some(*latency),
        _ => None,
    };
    if plain != Some(latency) {
        let before = worst.attempt.saturating_sub(1);
        steps.push(format!(
            "with jitter {}: delays can be cut to {}× their length, so attempt {before} can come just before the \
             network heals and attempt {} a full {} later: worst L = {}",
            policy.jitter,
            show_n(1.0 - policy.jitter),
            worst.attempt,
            show_s(secs(worst_case_delay(policy, before, retry))),
            show_s(secs(latency))
        ));
    } else if policy.jitter > 0.0 {
        steps.push(format!(
            "jitter {} only brings attempts earlier here: worst L = {}",
            policy.jitter,
            show_s(secs(latency))
        ));
    }
    let away = outage + latency;
    let dl = secs(away);
    steps.push(format!("away D + L = {} + {} = {}", show_s(secs(outage)), show_s(secs(latency)), show_s(dl)));
    let hop = secs(input.latency);
    steps.push(format!(
        "the resume reaches the server ℓ = {} (one network latency, at most) after it is sent",
        show_s(hop)
    ));
    // The bounds themselves are the model's (`schedule::retention_bounds`); the lines below show
    // how they come about.
    let (retention, window) =
        match retention_bounds(input.event_rate, last_event_age.map(|(a, _)| a), away, input.latency) {
            Ok(RetentionBounds { retention, window }) => (retention, window),
            Err(e) => (Need::Impossible(e.to_string()), Need::Impossible(e.to_string())),
        };
    let shown = |need: &Need| match need {
        Need::Above(x) => show_n(*x),
        other => describe_need(other, ""),
    };
    let shown_s = |need: &Need| match need {
        Need::Above(x) => show_s(*x),
        other => describe_need(other, ""),
    };
    match last_event_age {
        Some((a, why)) => {
            let span = secs(a) + dl + hop;
            steps.push(format!("the last event the client saw was a = {} old at the break ({why})", show_s(secs(a))));
            steps.push(format!(
                "every event after it must still be held: they were produced over a + D + L + ℓ = {}",
                show_s(span)
            ));
            if input.event_rate > 0.0 {
                steps.push(format!(
                    "count bound: R ≥ r·(a + D + L + ℓ) = {} × {} = {} events after the last seen, i.e. R > {}",
                    show_n(input.event_rate),
                    show_s(span),
                    show_n(input.event_rate * span),
                    shown(&retention)
                ));
                steps.push(format!(
                    "window: the oldest event needed is one interval younger than the last seen: W > a + D + L + ℓ − 1/r = {}",
                    shown_s(&window)
                ));
            } else {
                steps.push(format!(
                    "count bound: r = 0, no event is produced while away; one must still be held: R > {}",
                    shown(&retention)
                ));
                steps.push(format!(
                    "window: r = 0, only the result comes after the last seen, which must reach back: W > a + D + L + ℓ = {}",
                    shown_s(&window)
                ));
            }
        }
        None => {
            steps.push(format!(
                "count bound: no event is produced while away; the last one seen must stay: R > {}",
                shown(&retention)
            ));
            let window_text = match &window {
                Need::Impossible(why) => why.clone(),
                other => describe_need(other, "s"),
            };
            steps.push(format!("window: {window_text}"));
        }
    }
    let idle_ttl = idle_need(scenario.server.idle_rule, dl + hop, request_age);
    steps.push(format!("idle TTL ({}): {}", idle_rule_name(scenario.server.idle_rule), describe_need(&idle_ttl, "s")));
    BreakCase { cause, outage, reconnect, away: Some(away), retention, window, idle_ttl, steps }
}

fn idle_rule_name(rule: IdleRule) -> &'static str {
    match rule {
        IdleRule::NeverWhileBusy => "held while a tool runs",
        IdleRule::NoOpenRequest => "runs while no request is open: from the break",
        IdleRule::NoOpenPost => "runs while no POST is open: from the break",
        IdleRule::LastRequest => "runs from the last request received",
    }
}

fn attempt_count(policy: &ReconnectPolicy) -> String {
    policy.max_attempts.map_or("unlimited".into(), |m| m.to_string())
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
    let d = Duration::from_micros((x * 1e6).round().max(0.0) as u64);
    if d.subsec_nanos() != 0 && d >= Duration::from_secs(1) {
        // `242.01s`: parse_duration reads decimal seconds, and they read better than `242010ms`.
        return format!("{}s", show_n(d.as_secs_f64()));
    }
    format_duration(d)
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
            let minimal = smallest_whole_above(*x);
            let noun = if minimal == 1.0 { "event" } else { "events" };
            format!("> {} → at least {} {noun} per stream", show_n(*x), show_n(minimal))
        }
        (Need::Above(x), _) => format!("> {} → at least {}", show_s(*x), show_s(smallest_whole_above(*x))),
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
    let _ = writeln!(
        out,
        "assumed: a break is detected at once (faults reset connections); the worst case over jitter draws counts"
    );
    if advice.cases.is_empty() {
        let _ = writeln!(out, "nothing breaks the stream: no outage given and the load balancer never cuts it");
    }
    for (i, case) in advice.cases.iter().enumerate() {
        let _ = writeln!(out, "\nbreak {}: {}", i + 1, case.cause);
        for step in &case.steps {
            let _ = writeln!(out, "  {step}");
        }
    }
    if advice.no_store {
        let _ = writeln!(out, "\n{NO_STORE}");
    }
    let _ = writeln!(out, "\nminimal safe settings (the strictest over the breaks above):");
    let _ = writeln!(out, "  server.retention         {}", describe_need(&advice.retention, "events"));
    let _ = writeln!(out, "  server.retention_window  {}", describe_need(&advice.window, "s"));
    let _ = writeln!(out, "  server.idle_ttl          {}", describe_need(&advice.idle_ttl, "s"));
    out
}

// ---------------------------------------------------------------------------------------------
// --verify: a short confirming sweep
// ---------------------------------------------------------------------------------------------

/// How `advise --verify` runs.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Seeds `0..seeds` per probe.
    pub seeds: u64,
    /// How far below and above the answer to probe (events for the count, seconds for the window).
    pub margin: u32,
    /// Worker threads; 0 for the machine's available parallelism.
    pub jobs: usize,
}

/// One probe: a setting's value and what the runs at it came to.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The value of the probed key, as `--set` writes it.
    pub value: String,
    /// The runs at that value.
    pub result: Tally,
}

/// Below and above one predicted setting.
#[derive(Clone, Debug)]
pub struct Verification {
    /// The probed key (`server.retention` or `server.retention_window`).
    pub key: &'static str,
    /// `None` when the answer is within the margin of zero.
    pub below: Option<Probe>,
    /// Just above the answer: every run should be loss-free.
    pub above: Probe,
}

/// What `--verify` found.
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// The command-line arguments of the probed scenario, before the probed key.
    pub scenario_args: String,
    /// Seeds run per probe.
    pub seeds: u64,
    /// One entry per probed key.
    pub checks: Vec<Verification>,
    /// Why a setting was not probed.
    pub notes: Vec<String>,
}

/// The chatty-tool scenario that reproduces the advice's inputs: the same profiles and `--set`
/// overrides, events at the advised rate, a partition of the advised outage from 60 s on, the
/// advised load-balancer timeout, and a tool that runs well past the client's return.
pub(crate) fn verify_scenario(base: &Scenario, advice: &Advice) -> Result<Scenario, SimError> {
    let input = &advice.input;
    if input.event_rate <= 0.0 {
        return Err(SimError::Usage("--verify needs an event rate above zero (--event-rate)".into()));
    }
    let mut s = Scenario::build("chatty-tool", &base.client.name, &base.server.name)?;
    s.apply_overrides(&base.overrides)?;
    let away = advice.cases.iter().filter_map(|c| c.away).max().unwrap_or(Duration::ZERO);
    let start = Duration::from_secs(60);
    let run_for = (start + away + Duration::from_secs(120)).as_secs_f64() / (1.0 - s.tool_jitter);
    let interval = Duration::from_micros((1e6 / input.event_rate).round().max(1.0) as u64);
    let partition = match input.max_outage.filter(|d| !d.is_zero()) {
        Some(d) => format!("{}..{}", format_duration(start), format_duration(start + d)),
        None => "none".into(),
    };
    let set = |k: &str, v: String| (k.to_string(), v);
    s.apply_overrides(&[
        set("tool.event_interval", format_duration(interval)),
        set("tool.duration", format_duration(Duration::from_secs(run_for.ceil() as u64))),
        set("fault.partition", partition),
        set("lb.idle_timeout", input.lb_idle.map_or("none".into(), format_duration)),
    ])?;
    Ok(s)
}

/// Runs the advised count bound and time window just below and just above the answer.
pub fn verify(
    base: &Scenario,
    advice: &Advice,
    opts: &VerifyOptions,
    runner: &RunFn,
    progress: &dyn Progress,
) -> Result<VerifyReport, SimError> {
    if opts.seeds == 0 {
        return Err(SimError::Usage("--verify needs at least one seed".into()));
    }
    let scenario = verify_scenario(base, advice)?;
    let mut notes = Vec::new();
    let mut plans = Vec::new();
    // Each setting is probed with the other bound switched off, so only it can evict.
    let settings = [
        ("server.retention", &advice.retention, ("server.retention_window", "none")),
        ("server.retention_window", &advice.window, ("server.retention", "unbounded")),
    ];
    for (key, need, (other, off)) in settings {
        let Some(minimal) = need.minimal() else {
            notes.push(format!("{key} not probed: {}", describe_need(need, "")));
            continue;
        };
        let margin = f64::from(opts.margin);
        let below = (minimal - margin >= 1.0).then(|| show_value(key, minimal - margin));
        let mut s = scenario.clone();
        s.apply_overrides(&[(other.to_string(), off.to_string())])?;
        plans.push((key, below, show_value(key, minimal + margin), s));
    }
    let mut scenarios = Vec::new();
    for (key, below, above, s) in &plans {
        for value in below.iter().chain([above]) {
            let mut s = s.clone();
            s.apply_overrides(&[(key.to_string(), value.clone())])?;
            scenarios.push(s);
        }
    }
    let cells: Vec<PoolCell> = scenarios.iter().map(|scenario| PoolCell { scenario, seeds: 0..opts.seeds }).collect();
    let mut results = run_cells(&cells, opts.jobs, runner, progress, |_, _| Ok(()))?.into_iter();
    let mut probe = |value| Probe { value, result: results.next().expect("one result per probe, in order") };
    let checks = plans
        .into_iter()
        .map(|(key, below, above, _)| {
            let below = below.map(&mut probe);
            Verification { key, below, above: probe(above) }
        })
        .collect();
    Ok(VerifyReport { scenario_args: scenario.cli_args(), seeds: opts.seeds, checks, notes })
}

/// The verdicts, one line per probe.
pub fn render_verify(report: &VerifyReport) -> String {
    let mut out = format!("verify: {} seeds per probe of {}\n", report.seeds, report.scenario_args);
    let tally = |p: &Probe| {
        let r = &p.result;
        let (lo, hi) = r.interval(Outcome::LossFree);
        format!("loss-free {}/{} (95% CI [{lo:.2}, {hi:.2}])", r.count(Outcome::LossFree), r.n)
    };
    for check in &report.checks {
        match &check.below {
            Some(below) => {
                let lossy = below.result.n - below.result.count(Outcome::LossFree);
                let verdict = if lossy > 0 {
                    "loss or gap below the answer, as predicted".to_string()
                } else {
                    "clean below the answer too: no seed drew the worst case, or the bound is loose".to_string()
                };
                let _ = writeln!(out, "  {}={}: {} — {verdict}", check.key, below.value, tally(below));
                if let Some(replay) = first_loss(&below.result) {
                    let _ = writeln!(out, "    e.g. {replay}");
                }
            }
            None => {
                let _ =
                    writeln!(out, "  {}: the answer is within the margin of zero, nothing to probe below", check.key);
            }
        }
        let above = &check.above;
        let clean = above.result.count(Outcome::LossFree) == above.result.n;
        let verdict = if clean {
            "clean above the answer, as predicted"
        } else {
            "NOT clean above the answer: the prediction is wrong"
        };
        let _ = writeln!(out, "  {}={}: {} — {verdict}", check.key, above.value, tally(above));
        if let Some(replay) = first_loss(&above.result).filter(|_| !clean) {
            let _ = writeln!(out, "    e.g. {replay}");
        }
    }
    for note in &report.notes {
        let _ = writeln!(out, "  {note}");
    }
    out
}

/// The replay command of a run that was not loss-free.
fn first_loss(r: &Tally) -> Option<&String> {
    [Outcome::SilentLoss, Outcome::GapReported, Outcome::Unresolved, Outcome::CallFailed, Outcome::SessionLost]
        .iter()
        .find_map(|o| r.replays.get(o))
}

// ---------------------------------------------------------------------------------------------
// Predicted boundaries for sweeps
// ---------------------------------------------------------------------------------------------

/// The predicted boundary of one settable key.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// The key (`server.retention`, `server.retention_window` or `server.idle_ttl`).
    pub key: &'static str,
    /// The value must exceed this (events, or seconds for durations).
    pub exceed: f64,
    /// The smallest whole value above it.
    pub minimal: f64,
}

/// The keys a prediction exists for.
pub(crate) const PREDICTED_KEYS: &[&str] = &["server.retention", "server.retention_window", "server.idle_ttl"];

/// The predicted boundary of `key` in `scenario`: `None` if advise predicts nothing for the
/// key, `Some(Err(why))` when no value or any value works.
pub fn predict(scenario: &Scenario, key: &str) -> Option<Result<Prediction, String>> {
    let key = *PREDICTED_KEYS.iter().find(|k| **k == key)?;
    if scenario.is_mixed() {
        // One client profile's arithmetic would speak for clients that run another.
        return Some(Err("no prediction for a fleet of several client profiles (client_profiles)".into()));
    }
    let advice = advise(scenario, &AdviseInput::from_scenario(scenario));
    let need = match key {
        "server.retention" => advice.retention,
        "server.retention_window" => advice.window,
        _ => advice.idle_ttl,
    };
    Some(match need {
        Need::Above(exceed) => Ok(Prediction { key, exceed, minimal: smallest_whole_above(exceed) }),
        other => Err(describe_need(&other, "")),
    })
}

/// A value of a predicted key as the key writes it: a count of events, or a duration.
pub(crate) fn show_value(key: &str, x: f64) -> String {
    if key == "server.retention" {
        show_n(x)
    } else {
        show_s(x)
    }
}

// ---------------------------------------------------------------------------------------------
// The longest outage a server's retention survives
// ---------------------------------------------------------------------------------------------

/// What ends the range of outages a client survives against a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutageLimit {
    /// The client gives up (its attempts are spent before the network heals): no retention helps.
    Attempts,
    /// The server keeps no event store (`server.event_store = none`): nothing can be resumed.
    NoStore,
    /// The count bound `server.retention` no longer holds the events of the absence.
    Retention,
    /// The time window `server.retention_window` no longer reaches back to the last event seen.
    Window,
    /// The session's idle TTL runs out before the resume arrives.
    IdleTtl,
    /// Nothing: every outage scanned is survived.
    Unbounded,
}

impl OutageLimit {
    /// How the limit is written in reports (`idle TTL`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            OutageLimit::Attempts => "attempts",
            OutageLimit::NoStore => "no event store",
            OutageLimit::Retention => "retention",
            OutageLimit::Window => "window",
            OutageLimit::IdleTtl => "idle TTL",
            OutageLimit::Unbounded => "none",
        }
    }
}

/// The longest outage survived, and what ends it.
#[derive(Clone, Debug, PartialEq)]
pub struct LongestOutage {
    /// On the scan's grid; `None` when not even an outage of zero (a bare reset) is survived.
    pub outage: Option<Duration>,
    /// What fails the next outage of the grid; `Unbounded` when the scan ran out first.
    pub limit: OutageLimit,
    /// The advice at the first outage that fails, for its arithmetic.
    pub failing: Option<Advice>,
}

/// The longest network outage the scenario's client survives without loss against the scenario's
/// server as configured — its count bound, time window and idle TTL — at `input`'s event rate.
///
/// Outages `0, step, 2·step, …` up to `until` go through [`advise`] in order, and the first one
/// a setting cannot cover ends the scan. That is sound because every need grows with the outage:
/// the client is away until the first attempt at or after the outage's end, a time that only
/// moves later as the outage grows, and a longer outage only spends more attempts.
pub fn longest_outage(scenario: &Scenario, input: &AdviseInput, step: Duration, until: Duration) -> LongestOutage {
    let step = step.max(Duration::from_millis(1));
    let mut survived = None;
    let mut outage = Duration::ZERO;
    while outage <= until {
        let advice = advise(scenario, &AdviseInput { max_outage: Some(outage), ..input.clone() });
        if let Some(limit) = first_unmet(scenario, &advice) {
            return LongestOutage { outage: survived, limit, failing: Some(advice) };
        }
        survived = Some(outage);
        outage += step;
    }
    LongestOutage { outage: survived, limit: OutageLimit::Unbounded, failing: None }
}

/// The first of the server's settings the advice's needs exceed, if any.
fn first_unmet(scenario: &Scenario, advice: &Advice) -> Option<OutageLimit> {
    if scenario.server.event_store == EventStoreMode::NoStore {
        return Some(OutageLimit::NoStore);
    }
    // Only a client that gives up (or never gets back) makes the count bound impossible.
    if matches!(advice.retention, Need::Impossible(_)) {
        return Some(OutageLimit::Attempts);
    }
    let server = &scenario.server;
    let falls_short = |need: &Need, have: Option<f64>| match (need, have) {
        (_, None) | (Need::NotNeeded(_), _) => false,
        (Need::Impossible(_), Some(_)) => true,
        (Need::Above(x), Some(have)) => have <= *x,
    };
    [
        (OutageLimit::Retention, &advice.retention, server.retention.max_events.map(f64::from)),
        (OutageLimit::Window, &advice.window, server.retention.window.map(secs)),
        (OutageLimit::IdleTtl, &advice.idle_ttl, server.idle_ttl.map(secs)),
    ]
    .into_iter()
    .find(|(_, need, have)| falls_short(need, *have))
    .map(|(limit, _, _)| limit)
}

/// The answer in one paragraph: the longest outage, what bounds it, and the need that fails.
pub fn render_longest(scenario: &Scenario, input: &AdviseInput, longest: &LongestOutage) -> String {
    let server = &scenario.server;
    let mut out = format!(
        "longest outage survived: client {} against server {} (server.retention={}, server.retention_window={}, \
         server.idle_ttl={}) at {}/s\n",
        scenario.client.name,
        server.name,
        server.retention.max_events.map_or("unbounded".into(), |n| n.to_string()),
        server.retention.window.map_or("none".into(), format_duration),
        server.idle_ttl.map_or("none".into(), format_duration),
        show_n(input.event_rate),
    );
    let answer = match longest.outage {
        Some(d) if longest.limit == OutageLimit::Unbounded => {
            format!("at least {}: every outage up to the scan's end is survived", format_duration(d))
        }
        Some(d) => format!("{} (bounded by {})", show_s(secs(d)), longest.limit.name()),
        None => format!("none, not even a bare reset (bounded by {})", longest.limit.name()),
    };
    let _ = writeln!(out, "  {answer}");
    if let Some(advice) = &longest.failing {
        let outage = advice.input.max_outage.map_or("none".into(), |d| show_s(secs(d)));
        let why = match (longest.limit, &advice.retention) {
            (OutageLimit::Attempts | OutageLimit::NoStore, Need::Impossible(why)) => why.clone(),
            (OutageLimit::Window, _) => format!("needs server.retention_window {}", describe_need(&advice.window, "s")),
            (OutageLimit::IdleTtl, _) => format!("needs server.idle_ttl {}", describe_need(&advice.idle_ttl, "s")),
            (_, need) => format!("needs server.retention {}", describe_need(need, "events")),
        };
        let _ = writeln!(out, "  an outage of {outage}: {why}");
    }
    out
}

/// `advise --tasks`: what the TTL arithmetic was given, and its answer.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskTtl {
    /// The scenario's longest tool.
    pub duration: Duration,
    /// The interval the client polls at (the server's suggestion, or its own).
    pub poll_interval: Duration,
    /// The longest outage to survive.
    pub max_outage: Duration,
    /// The server's expiry rule.
    pub rule: mcpsim_model::tasks::ExpiryRule,
    /// The TTL the server gives today (`server.tasks.ttl`).
    pub configured: Option<Duration>,
    /// The answer, with the arithmetic.
    pub advice: mcpsim_model::tasks::TtlAdvice,
    /// The tool that asks for input a client never answers (`client.tasks.answer_input_after =
    /// none`): no TTL lets its task end.
    pub unanswered: Option<String>,
}

/// The TTL a task of the scenario's longest tool needs (`mcpsim_model::tasks::ttl_needed`): the
/// server's expiry rule and poll interval, the client's poll policy, and `max_outage` (none: no
/// outage, only the poll interval).
pub fn task_ttl(scenario: &Scenario, max_outage: Option<Duration>) -> TaskTtl {
    let tasks = &scenario.server.tasks;
    let poll_interval = scenario.client.tasks.poll_interval(tasks.poll_interval);
    let answer = scenario.client.tasks.answer_input_after;
    // The longest run a draw can give: each run stretches a tool by up to `tool_jitter`; a tool
    // that asks for input (`input_after`, before its end) also waits for the poll that sees it
    // and the application's answer, and the TTL runs through that wait.
    let stretch = 1.0 + scenario.tool_jitter.max(0.0);
    let asks = |t: &&mcpsim_model::config::ToolSpec| t.asks_for_input_within(t.duration.mul_f64(stretch));
    let wait = scenario.client.tasks.input_wait(tasks.poll_interval).unwrap_or_default();
    let longest =
        scenario.tools.iter().max_by_key(|t| t.duration.mul_f64(stretch) + if asks(t) { wait } else { Duration::ZERO });
    let duration = longest.map_or(Duration::ZERO, |t| t.duration.mul_f64(stretch));
    let asking = longest.filter(asks);
    let max_outage = max_outage.unwrap_or_default();
    let mut advice = mcpsim_model::tasks::ttl_needed(
        &tasks.expiry,
        duration + asking.map_or(Duration::ZERO, |_| wait),
        poll_interval,
        max_outage,
    );
    if let Some(t) = asking {
        let line = match answer {
            Some(a) => format!(
                "{} asks for input: duration = its run {} + the poll that sees input_required {} + the answer {} = {}",
                t.name,
                format_duration(duration),
                format_duration(poll_interval),
                format_duration(a),
                format_duration(duration + wait)
            ),
            None => format!(
                "{} asks for input and the client never answers (client.tasks.answer_input_after = none): no TTL lets it end; \
                 the figures below count no wait",
                t.name
            ),
        };
        advice.lines.insert(0, line);
    }
    let duration = duration + asking.map_or(Duration::ZERO, |_| wait);
    let unanswered = asking.filter(|_| answer.is_none()).map(|t| t.name.clone());
    TaskTtl { duration, poll_interval, max_outage, rule: tasks.expiry, configured: tasks.ttl, advice, unanswered }
}

/// The answer of [`task_ttl`] in words, the arithmetic line by line, and whether the configured
/// TTL is enough.
pub fn render_task_ttl(t: &TaskTtl) -> String {
    let mut out = format!(
        "task TTL for a tool running up to {} (its longest jittered run), polled every {}, surviving a {} outage \
         (expiry: {:?} at the TTL, result kept {} × ttl after the end, swept {:?})\n",
        format_duration(t.duration),
        format_duration(t.poll_interval),
        format_duration(t.max_outage),
        t.rule.working_at_ttl,
        t.rule.terminal_kept_ttls,
        t.rule.sweep,
    );
    for line in &t.advice.lines {
        out.push_str(&format!("  {line}\n"));
    }
    let verdict = match t.configured {
        _ if t.unanswered.is_some() => format!(
            "no TTL is enough: {} waits for input the client never sends (set client.tasks.answer_input_after)",
            t.unanswered.as_deref().unwrap_or_default()
        ),
        None => "the server's TTL is unlimited: enough (but nothing is ever freed)".to_string(),
        Some(c) if c >= t.advice.ttl => format!("the server's TTL {} is enough", format_duration(c)),
        Some(c) => format!(
            "the server's TTL {} is too short: set server.tasks.ttl={}",
            format_duration(c),
            format_duration(t.advice.ttl)
        ),
    };
    out.push_str(&format!("{verdict}\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::studies::pool::Silent;
    use mcpsim_model::profiles;

    #[test]
    fn task_ttl_reads_the_longest_tool_the_servers_rule_and_the_clients_poll() {
        let mut s = Scenario::build("long-tool", "rmcp", "rmcp").unwrap();
        let t = task_ttl(&s, Some(Duration::from_secs(120)));
        // The 5-minute payment runs up to 5m30s under the family's 10% jitter.
        assert_eq!((t.duration, t.poll_interval), (Duration::from_secs(330), Duration::from_secs(1)));
        // rmcp's default 5-minute TTL is shorter than the payment: a task still working at it is aborted.
        assert_eq!(t.advice.ttl, Duration::from_millis(330_001));
        assert!(render_task_ttl(&t).contains("is too short: set server.tasks.ttl=330001ms"), "{}", render_task_ttl(&t));
        // A client polling every 10 min on its own: the late poll decides.
        s.apply_overrides(&[
            ("client.tasks.honour_poll_interval".into(), "false".into()),
            ("client.tasks.poll_every".into(), "10m".into()),
        ])
        .unwrap();
        let t = task_ttl(&s, Some(Duration::from_secs(120)));
        assert_eq!(t.advice.ttl, Duration::from_millis(720_001));
        s.apply_overrides(&[("server.tasks.ttl".into(), "13m".into())]).unwrap();
        assert!(render_task_ttl(&task_ttl(&s, Some(Duration::from_secs(120)))).contains("13m is enough"));
    }

    fn assert_above(need: &Need, expected: f64) {
        assert!(matches!(need, Need::Above(x) if (x - expected).abs() < 1e-9), "{need:?} is not Above({expected})");
    }

    fn policy(name: &str) -> ReconnectPolicy {
        profiles::client(name).expect("a known profile").reconnect
    }

    // The reconnect schedule itself is tested where it lives, in `mcpsim_model::schedule`.

    #[test]
    fn the_chatty_incident_without_jitter_needs_242_events_and_a_241_second_window() {
        let mut s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        s.client.reconnect.jitter = 0.0;
        let input = AdviseInput::from_scenario(&s);
        assert_eq!((input.event_rate, input.max_outage), (1.0, Some(Duration::from_secs(240))));
        let a = advise(&s, &input);
        assert_eq!(a.cases.len(), 1, "events every second keep the load balancer from cutting");
        // a = 1 s, D + L = 241 s, ℓ = 10 ms: 242.01 s of events after the last one seen, of
        // which the oldest is one interval younger than it.
        assert_above(&a.retention, 241.01);
        assert_eq!(a.retention.minimal(), Some(242.0));
        assert_above(&a.window, 241.01);
        assert!(matches!(a.idle_ttl, Need::NotNeeded(_)));
        let text = render(&a);
        assert!(text.contains("attempt  12 at 211s + 30s = 241s  (network up: back in)"), "{text}");
        assert!(text.contains("R ≥ r·(a + D + L + ℓ) = 1 × 242.01s = 242.01 events after the last seen"), "{text}");
        assert!(text.contains("server.retention         > 241.01 → at least 242 events per stream"), "{text}");
    }

    #[test]
    fn jitter_can_land_an_attempt_just_before_the_network_heals_and_add_a_full_delay() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        // Attempt 12 can come as early as 0.8 × 241 s, before the outage ends at 240 s; then
        // attempt 13 comes a full 30 s later: L up to 30 s, not the 1 s of the plain schedule.
        assert_above(&a.retention, 270.01);
        assert_above(&a.window, 270.01);
        let text = render(&a);
        assert!(text.contains("without jitter: L = 241s − 4m = 1s"), "{text}");
        assert!(text.contains("worst L = 30s"), "{text}");
    }

    #[test]
    fn a_client_that_may_give_up_before_the_outage_ends_has_no_safe_retention() {
        // Twelve attempts reach 241 s without jitter but can all come before 240 s with 0.2
        // (`mcpsim_model::schedule` tests the schedule itself).
        let mut p = policy("reference");
        p.jitter = 0.2;
        p.max_attempts = Some(12);
        let mut s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        s.client.reconnect = p;
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert!(matches!(&a.retention, Need::Impossible(why) if why.contains("may give up")), "{:?}", a.retention);
    }

    #[test]
    fn a_server_without_an_event_store_says_resumption_is_impossible_instead_of_a_retention() {
        let mut s = Scenario::build("chatty-tool", "reference", "py-sdk").unwrap();
        s.server.event_store = EventStoreMode::NoStore;
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert!(matches!(&a.retention, Need::Impossible(why) if why == NO_STORE), "{:?}", a.retention);
        assert!(matches!(&a.window, Need::Impossible(why) if why == NO_STORE), "{:?}", a.window);
        // The idle TTL is still worked out: the session may outlive the break.
        assert!(matches!(&a.idle_ttl, Need::Above(_)), "{:?}", a.idle_ttl);
        assert!(render(&a).contains("resumption is impossible"), "{}", render(&a));
        let input = AdviseInput::from_scenario(&s);
        let longest = longest_outage(&s, &input, Duration::from_secs(10), Duration::from_secs(60));
        assert_eq!((longest.outage, longest.limit), (None, OutageLimit::NoStore));
        assert!(render_longest(&s, &input, &longest).contains("no event store"));
    }

    #[test]
    fn a_silent_tool_behind_an_idle_timeout_needs_a_window_longer_than_the_timeout() {
        let s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert_eq!(a.cases.len(), 1);
        // Cut after 60 s of silence, back after the 1 s initial delay: the priming id is 61 s old.
        assert_above(&a.window, 61.01);
        assert_above(&a.retention, 0.0);
    }

    #[test]
    fn idle_rules_that_run_while_away_constrain_the_ttl() {
        let mut s = Scenario::build("chatty-tool", "rmcp", "py-sdk").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        // rmcp against a server without retry: 0, 2, 4, 8, 16, 32, 64, 128 → 254 s, L = 14 s.
        assert_above(&a.retention, 254.01);
        assert_above(&a.idle_ttl, 254.01);
        s.server.idle_rule = IdleRule::LastRequest;
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        // Counted from the call at 1 s; the partition starts at 60 s.
        assert_above(&a.idle_ttl, 59.0 + 254.01);
    }

    #[test]
    fn a_client_that_gives_up_makes_every_setting_impossible() {
        let s = Scenario::build("chatty-tool", "ts-sdk", "reference").unwrap();
        let a = advise(&s, &AdviseInput::from_scenario(&s));
        assert!(matches!(a.retention, Need::Impossible(_)));
        assert!(render(&a).contains("the client gives up"), "{}", render(&a));
        let why = predict(&s, "server.retention").unwrap().unwrap_err();
        assert!(why.contains("gives up"), "{why}");
    }

    #[test]
    fn predictions_name_the_smallest_safe_value() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let p = predict(&s, "server.retention").unwrap().unwrap();
        assert!((p.exceed - 270.01).abs() < 1e-9 && p.minimal == 271.0, "{p:?}");
        assert_eq!(predict(&s, "lb.idle_timeout"), None);
    }

    fn fake_run(trace_kinds: Vec<mcpsim_model::trace::StepKind>) -> crate::studies::pool::RunOutcome {
        let mut trace = mcpsim_model::trace::Trace::new(0, serde_json::json!({}));
        for (i, kind) in trace_kinds.into_iter().enumerate() {
            trace.steps.push(mcpsim_model::trace::Step {
                seq: i as u64,
                t: 0,
                actor: mcpsim_model::trace::Actor::App,
                client: None,
                replica: None,
                conn_client: None,
                kind,
            });
        }
        crate::studies::pool::RunOutcome { trace, violations: vec![], explained_by: vec![] }
    }

    /// Loss-free exactly when the count and the window hold the advised 271 events / 271 s.
    fn as_advised(s: &Scenario, _seed: u64) -> Result<crate::studies::pool::RunOutcome, SimError> {
        let count_ok = s.server.retention.max_events.is_none_or(|r| r >= 271);
        let window_ok = s.server.retention.window.is_none_or(|w| w >= Duration::from_secs(271));
        let gap =
            mcpsim_model::trace::StepKind::AppGap { session: "s".into(), call: None, after: None, head: "1-1".into() };
        Ok(fake_run(if count_ok && window_ok { vec![] } else { vec![gap] }))
    }

    fn verify_options() -> VerifyOptions {
        VerifyOptions { seeds: 3, margin: 2, jobs: 2 }
    }

    #[test]
    fn verify_builds_the_chatty_scenario_of_the_advice() {
        let mut base = Scenario::build("long-tool", "reference", "reference").unwrap();
        base.apply_overrides(&[("client.backoff_max".into(), "30s".into())]).unwrap();
        let input = AdviseInput {
            event_rate: 2.0,
            max_outage: Some(Duration::from_secs(100)),
            lb_idle: None,
            ..AdviseInput::from_scenario(&base)
        };
        let advice = advise(&base, &input);
        let s = verify_scenario(&base, &advice).unwrap();
        assert_eq!(s.name, "chatty-tool");
        assert_eq!(s.tools[0].event_interval, Some(Duration::from_millis(500)));
        assert_eq!(s.faults.heal_time(), Duration::from_secs(160));
        assert_eq!(s.lb.idle_timeout, None);
        assert!(s.tools[0].duration.mul_f64(0.9) > Duration::from_secs(160) + Duration::from_secs(30));
        assert!(s.cli_args().contains("--set client.backoff_max=30s"), "{}", s.cli_args());
        let silent = advise(&base, &AdviseInput { event_rate: 0.0, ..input });
        assert!(matches!(verify_scenario(&base, &silent), Err(SimError::Usage(_))));
    }

    #[test]
    fn verify_probes_below_and_above_the_answer() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let advice = advise(&s, &AdviseInput::from_scenario(&s));
        let report = verify(&s, &advice, &verify_options(), &as_advised, &Silent).unwrap();
        let probed: Vec<(&str, Option<&str>, &str)> = report
            .checks
            .iter()
            .map(|c| (c.key, c.below.as_ref().map(|p| p.value.as_str()), c.above.value.as_str()))
            .collect();
        assert_eq!(
            probed,
            [("server.retention", Some("269"), "273"), ("server.retention_window", Some("269s"), "273s")]
        );
        let text = render_verify(&report);
        assert_eq!(text.matches("as predicted").count(), 4, "{text}");
        assert!(text.contains("server.retention=269: loss-free 0/3"), "{text}");
        assert!(text.contains(" run --client reference --server reference --scenario chatty-tool"), "{text}");
        let never = |_: &Scenario, _: u64| {
            Ok(fake_run(vec![mcpsim_model::trace::StepKind::AppSessionLost { session: "s".into() }]))
        };
        let text = render_verify(&verify(&s, &advice, &verify_options(), &never, &Silent).unwrap());
        assert!(text.contains("NOT clean above the answer"), "{text}");
    }

    #[test]
    fn flags_override_what_the_scenario_implies() {
        let s = Scenario::build("long-tool", "reference", "reference").unwrap();
        let input = AdviseInput::from_scenario(&s).with_flags(Some("none"), Some("2/s"), Some("90s")).unwrap();
        assert_eq!((input.lb_idle, input.event_rate, input.max_outage), (None, 2.0, Some(Duration::from_secs(90))));
        assert!(matches!(
            AdviseInput::from_scenario(&s).with_flags(Some("soon"), None, None),
            Err(SimError::BadValue { key, .. }) if key == "--lb-idle"
        ));
        assert!(AdviseInput::from_scenario(&s).with_flags(None, Some("lots"), None).is_err());
        // 90 s outage, reference backoff: attempts at …, 61, 91 s: L = 1 s without jitter.
        let mut s = s;
        s.client.reconnect.jitter = 0.0;
        let a = advise(&s, &input);
        assert_above(&a.retention, 2.0 * (0.5 + 91.0 + 0.01) - 1.0);
    }

    /// Real runs: rmcp has no jitter, so the answer is sharp and both sides show it.
    #[test]
    fn verify_confirms_the_rmcp_answer_with_real_runs() {
        let s = Scenario::build("chatty-tool", "rmcp", "reference").unwrap();
        let advice = advise(&s, &AdviseInput::from_scenario(&s));
        let opts = VerifyOptions { seeds: 2, margin: 2, jobs: 2 };
        let report = verify(&s, &advice, &opts, &crate::engine::runner::run, &Silent).unwrap();
        let text = render_verify(&report);
        assert_eq!(text.matches("as predicted").count(), 4, "{text}");
        assert!(text.contains("server.retention=253: loss-free 0/2"), "{text}");
        assert!(text.contains("server.retention_window=257s: loss-free 2/2"), "{text}");
    }

    /// A cell of the SDK table: the client's profile against `server` holding `retention` events
    /// per stream, at `rate` events a second; outages scanned in 100 ms steps up to 10 minutes.
    fn longest(client: &str, server: &str, retention: &str, rate: f64) -> LongestOutage {
        let mut s = Scenario::build("chatty-tool", client, server).unwrap();
        s.apply_overrides(&[("server.retention".into(), retention.into())]).unwrap();
        let input = AdviseInput { event_rate: rate, ..AdviseInput::from_scenario(&s) };
        longest_outage(&s, &input, Duration::from_millis(100), Duration::from_secs(600))
    }

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    #[test]
    fn two_attempts_bound_the_sdk_clients_when_the_buffer_is_ample() {
        // TypeScript tries at 1 s and 2.5 s, Python at 1 s and 2 s, then both give up.
        let ts = longest("ts-sdk", "reference", "16", 1.0);
        assert_eq!((ts.outage, ts.limit), (ms(2500), OutageLimit::Attempts));
        let py = longest("py-sdk", "reference", "unbounded", 100.0);
        assert_eq!((py.outage, py.limit), (ms(2000), OutageLimit::Attempts));
        let failing = py.failing.expect("the first outage that fails");
        assert_eq!(failing.input.max_outage, ms(2100));
    }

    #[test]
    fn the_count_bound_ends_the_range_when_events_come_fast() {
        // Past 1 s the TypeScript client is away until 2.5 s: 10 × (0.1 + 2.5 + 0.01) = 26.1 > 16.
        let ts = longest("ts-sdk", "reference", "16", 10.0);
        assert_eq!((ts.outage, ts.limit), (ms(1000), OutageLimit::Retention));
        // At 100/s even a bare reset costs Python's 1 s delay: 100 × (0.01 + 1 + 0.01) = 102 > 16.
        let py = longest("py-sdk", "reference", "16", 100.0);
        assert_eq!((py.outage, py.limit), (None, OutageLimit::Retention));
        // rmcp tries at once, so a bare reset costs nothing; any outage waits for the 2 s attempt.
        let rmcp = longest("rmcp", "reference", "16", 100.0);
        assert_eq!((rmcp.outage, rmcp.limit), (ms(0), OutageLimit::Retention));
    }

    #[test]
    fn without_a_bound_on_attempts_or_events_every_outage_scanned_is_survived() {
        let rmcp = longest("rmcp", "reference", "unbounded", 1.0);
        assert_eq!((rmcp.outage, rmcp.limit, rmcp.failing), (ms(600_000), OutageLimit::Unbounded, None));
        // The reference client's 20 attempts reach 481 s in full, but with jitter 0.2 they can
        // all come by 0.8 × 481 s = 384.8 s: the worst case gives up on anything longer.
        let reference = longest("reference", "reference", "unbounded", 1.0);
        assert_eq!((reference.outage, reference.limit), (ms(384_800), OutageLimit::Attempts));
    }

    #[test]
    fn an_idle_ttl_that_runs_while_away_bounds_an_unlimited_client() {
        // The TypeScript server keeps everything but counts its 30-minute TTL while no request
        // is open; rmcp's attempts at 0, 2, 6, … s reach 1 710 s, then 2 010 s: past 1 710 s the
        // resume arrives after the session has expired.
        let rmcp = longest("rmcp", "ts-sdk", "unbounded", 1.0);
        assert_eq!(rmcp.limit, OutageLimit::Unbounded, "the scan stops at 10 minutes");
        let mut s = Scenario::build("chatty-tool", "rmcp", "ts-sdk").unwrap();
        let input = AdviseInput::from_scenario(&s);
        let found = longest_outage(&s, &input, Duration::from_secs(1), Duration::from_secs(3600));
        assert_eq!((found.outage, found.limit), (Some(Duration::from_secs(1710)), OutageLimit::IdleTtl));
        let away = found.failing.as_ref().and_then(|a| a.cases.last()).and_then(|c| c.away).unwrap();
        assert!(away.as_secs_f64() + 0.01 >= 1800.0, "{away:?}");
        s.apply_overrides(&[("server.retention_window".into(), "2m".into())]).unwrap();
        let windowed = longest_outage(&s, &input, Duration::from_secs(1), Duration::from_secs(3600));
        assert_eq!(windowed.limit, OutageLimit::Window);
        let text = render_longest(&s, &input, &windowed);
        assert!(text.contains("(bounded by window)") && text.contains("needs server.retention_window >"), "{text}");
    }

    #[test]
    fn the_longest_outage_reads_as_one_answer_and_the_need_that_fails() {
        let mut s = Scenario::build("chatty-tool", "ts-sdk", "reference").unwrap();
        s.apply_overrides(&[("server.retention".into(), "16".into())]).unwrap();
        let input = AdviseInput { event_rate: 10.0, ..AdviseInput::from_scenario(&s) };
        let found = longest_outage(&s, &input, Duration::from_millis(100), Duration::from_secs(600));
        let text = render_longest(&s, &input, &found);
        assert!(text.contains("  1s (bounded by retention)"), "{text}");
        assert!(text.contains("an outage of 1.1s: needs server.retention > 25.1 → at least 26 events"), "{text}");
        let input = AdviseInput { event_rate: 1.0, ..input };
        let found = longest_outage(&s, &input, Duration::from_millis(100), Duration::from_secs(600));
        let text = render_longest(&s, &input, &found);
        assert!(text.contains("2.5s (bounded by attempts)") && text.contains("the client gives up after 2"), "{text}");
    }

    #[test]
    fn a_bound_that_is_a_whole_number_needs_the_next_one_despite_float_rounding() {
        // 100 events/s over 2.02 s is 202 events in exact arithmetic, 201.99999999999997 in f64.
        let x = 100.0 * (0.01 + 2.0 + 0.01);
        assert!(x < 202.0);
        assert_eq!(Need::Above(x).minimal(), Some(203.0));
        assert_eq!(describe_need(&Need::Above(x), "events"), "> 202 → at least 203 events per stream");
        assert_eq!(Need::Above(242.01).minimal(), Some(243.0));
        assert_eq!(Need::Above(0.0).minimal(), Some(1.0));
    }

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(parse_rate("2/s").unwrap(), 2.0);
        assert_eq!(parse_rate("30/m").unwrap(), 0.5);
        assert_eq!(parse_rate("0/s").unwrap(), 0.0);
        assert_eq!(parse_rate("1000000/s").unwrap(), MAX_RATE);
        assert!((parse_rate("0.001/h").unwrap() - MIN_RATE).abs() < 1e-18);
        let problem = |text: &str| parse_rate(text).unwrap_err().to_string();
        assert!(problem("1.5").contains("needs a unit"), "{}", problem("1.5"));
        assert!(problem("10").contains("write e.g. 10/s"), "{}", problem("10"));
        assert!(problem("fast").contains("needs a unit"));
        assert!(problem("fast/s").contains("not a number"));
        assert!(problem("2/day").contains("/s, /m or /h"));
        assert!(problem("-1/s").contains("zero or positive"));
        assert!(problem("NaN/s").contains("zero or positive"));
        assert!(problem("1e-20/s").contains("between 0.001/h and 1000000/s"));
        assert!(problem("1e308/s").contains("between"));
        assert!(problem("1e400/s").contains("zero or positive"), "inf");
    }

    #[test]
    fn a_silent_stream_needs_one_event_held_not_minus_one() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        let input = AdviseInput::from_scenario(&s).with_flags(None, Some("0/s"), None).unwrap();
        let text = render(&advise(&s, &input));
        assert!(!text.contains("R > -"), "{text}");
        assert!(!text.contains("inf"), "{text}");
        assert!(text.contains("r = 0, no event is produced while away; one must still be held: R > 0"), "{text}");
        assert!(text.contains("server.retention         > 0 → at least 1 event per stream"), "{text}");
        // Fewer than one event while away (a slow stream): still one held, never a negative bound.
        let input = AdviseInput::from_scenario(&s).with_flags(None, Some("1/h"), Some("10s")).unwrap();
        let text = render(&advise(&s, &input));
        assert!(!text.contains("R > -"), "{text}");
    }

    #[test]
    fn rates_below_what_parse_accepts_do_not_panic_in_the_library() {
        let s = Scenario::build("chatty-tool", "reference", "reference").unwrap();
        for rate in [1e-20, f64::MIN_POSITIVE, 1e-300] {
            let input = AdviseInput { event_rate: rate, ..AdviseInput::from_scenario(&s) };
            let advice = advise(&s, &input);
            assert!(advice.retention.minimal().is_some(), "{:?}", advice.retention);
            let _ = render(&advice);
        }
    }
}
