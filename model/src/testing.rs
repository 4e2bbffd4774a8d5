//! A madsim-free harness: a client, a load balancer and a server wired together in memory.
//!
//! [`Pair`] carries every output of one machine to the others at once (no latency, no loss), in
//! the spirit of quinn-proto's test `Pair`: act on it (`call`, `reset`, `restart_server`, ...),
//! then let virtual time run with [`Pair::step`] or [`Pair::advance_to`], and judge the trace it
//! recorded with the oracles ([`Pair::run_until`]). Every loop is bounded: a pump that never
//! settles, or a timer that keeps firing at the same instant, is reported as a [`HarnessError`].
//!
//! The harness also keeps a ledger of the connections it carried ([`Pair::connections`]): how
//! often each was opened and how often it was ended, by whom.
//!
//! ```
//! use mcpsim_model::config::ToolSpec;
//! use mcpsim_model::testing::Pair;
//! use mcpsim_model::trace::StepKind;
//! use mcpsim_model::Instant;
//! use std::time::Duration;
//!
//! let tool = ToolSpec { name: "pay".into(), duration: Duration::from_secs(30), event_interval: None, idempotent: false, ..ToolSpec::default() };
//! let mut pair = Pair::new("reference", "reference", tool, None)?;
//! pair.call(1, "pay", false)?;
//! let violations = pair.run_until(Instant(60_000_000))?;
//! assert!(violations.is_empty());
//! assert_eq!(pair.side_effects(), 1);
//! assert!(matches!(pair.resolutions()[..], [StepKind::AppResult { .. }]));
//! # Ok::<(), mcpsim_model::testing::HarnessError>(())
//! ```

use crate::client::{Client, ClientOutput, DurableState};
use crate::config::{ClientPolicy, LbConfig, ServerPolicy, ToolSpec};
use crate::http::ConnEnd;
use crate::ids::{CallKey, ConnId};
use crate::lb::{LbOutput, LoadBalancer};
use crate::oracle::{self, Violation};
use crate::profiles;
use crate::server::{Server, ServerOutput};
use crate::time::Instant;
use crate::trace::{Actor, Step, StepKind, Trace};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use thiserror::Error;

/// The most outputs one [`Pair::pump`] carries before it reports [`HarnessError::Unsettled`].
pub const PUMP_BOUND: usize = 100_000;

/// The most timer steps one [`Pair::advance_to`] takes before it reports
/// [`HarnessError::TooManySteps`].
pub const STEP_BOUND: usize = 100_000;

/// The seed the client's backoff jitter is drawn from.
const CLIENT_SEED: u64 = 1;
/// The seed of the server's opaque ids.
const SERVER_SEED: u64 = 2;

/// One of the three machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// The [`Client`].
    Client,
    /// The [`Server`].
    Server,
    /// The [`LoadBalancer`].
    Lb,
}

/// Why the harness stopped.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum HarnessError {
    /// [`Pair::new`] was given a profile name that is not listed.
    #[error("no {kind} profile is named {name:?}")]
    UnknownProfile {
        /// `"client"` or `"server"`.
        kind: &'static str,
        /// The name given.
        name: String,
    },
    /// The machines kept producing outputs for [`PUMP_BOUND`] carries.
    #[error("the machines did not settle after {steps} outputs at {at}")]
    Unsettled {
        /// Outputs carried.
        steps: usize,
        /// The virtual time.
        at: Instant,
    },
    /// After `handle_timeout(at)` the machine still asked to be woken at or before `at`: a
    /// timer that fires must be consumed.
    #[error("the {machine:?}'s timer at {at} was not consumed: it asks again for {next}")]
    StuckTimer {
        /// The machine whose timer stayed.
        machine: Machine,
        /// When it fired.
        at: Instant,
        /// What its `poll_timeout` said afterwards.
        next: Instant,
    },
    /// [`Pair::advance_to`] took [`STEP_BOUND`] steps without reaching its end.
    #[error("{steps} timer steps did not reach {until}")]
    TooManySteps {
        /// Steps taken.
        steps: usize,
        /// The end it was asked to reach.
        until: Instant,
    },
}

/// What the harness did with one connection. A connection is opened by the client and ended
/// once, by whichever comes first: the client's abort, the server's close, a load-balancer cut,
/// a reset the test injects, or a restart of either process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnRecord {
    /// Times the client asked to open it (1 for a sound client).
    pub opened: u32,
    /// Times the harness ended it (at most 1; exactly 1 after [`Pair::shutdown`]).
    pub ended: u32,
    /// Times the client asked to abort it.
    pub client_aborts: u32,
    /// Times the server asked to close it.
    pub server_closes: u32,
    /// Times the load balancer asked to cut it.
    pub lb_cuts: u32,
}

/// A client, a load balancer and a server wired together, with a shared virtual clock and the
/// trace of everything they recorded.
#[derive(Debug)]
pub struct Pair {
    client: Client,
    server: Server,
    lb: LoadBalancer,
    client_policy: ClientPolicy,
    server_policy: ServerPolicy,
    tools: Vec<ToolSpec>,
    /// Restarts of the server so far (its epoch).
    epoch: u32,
    /// Restarts of the client so far.
    client_restarts: u64,
    /// The client's state as last persisted.
    durable: Option<DurableState>,
    now: Instant,
    /// Connections the harness has not ended yet.
    open: BTreeSet<ConnId>,
    ledger: BTreeMap<ConnId, ConnRecord>,
    trace: Trace,
}

impl Pair {
    /// The named client and server profiles ([`profiles::CLIENT_NAMES`],
    /// [`profiles::SERVER_NAMES`]) with one tool, behind a load balancer that cuts connections
    /// silent for `lb_idle`. The client is started and the pair pumped until it settles.
    pub fn new(client: &str, server: &str, tool: ToolSpec, lb_idle: Option<Duration>) -> Result<Pair, HarnessError> {
        let unknown = |kind, name: &str| HarnessError::UnknownProfile { kind, name: name.to_string() };
        let client_policy = profiles::client(client).ok_or_else(|| unknown("client", client))?;
        let server_policy = profiles::server(server).ok_or_else(|| unknown("server", server))?;
        Pair::with_policies(
            client_policy,
            server_policy,
            vec![tool],
            LbConfig { idle_timeout: lb_idle, ..LbConfig::default() },
        )
    }

    /// A pair from explicit policies. The client is started and the pair pumped until it settles.
    pub fn with_policies(
        client: ClientPolicy,
        server: ServerPolicy,
        tools: Vec<ToolSpec>,
        lb: LbConfig,
    ) -> Result<Pair, HarnessError> {
        let mut pair = Pair {
            client: Client::new(client.clone(), "app", None, CLIENT_SEED),
            server: Server::new(server.clone(), tools.clone(), 0, SERVER_SEED),
            lb: LoadBalancer::new(lb),
            client_policy: client,
            server_policy: server,
            tools,
            epoch: 0,
            client_restarts: 0,
            durable: None,
            now: Instant::ZERO,
            open: BTreeSet::new(),
            ledger: BTreeMap::new(),
            trace: Trace::new(0, serde_json::Value::Null),
        };
        pair.client.start(Instant::ZERO);
        pair.pump()?;
        Ok(pair)
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The client machine.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The server machine.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The load balancer.
    pub fn lb(&self) -> &LoadBalancer {
        &self.lb
    }

    /// Everything recorded so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Every connection the client opened, with what became of it.
    pub fn connections(&self) -> &BTreeMap<ConnId, ConnRecord> {
        &self.ledger
    }

    /// Connections opened and not yet ended, in number order.
    pub fn open_connections(&self) -> Vec<ConnId> {
        self.open.iter().copied().collect()
    }

    /// The application calls `tool` under the logical call `key`.
    pub fn call(&mut self, key: u32, tool: &str, idempotent: bool) -> Result<(), HarnessError> {
        self.client.call_tool(self.now, CallKey(key), tool, idempotent);
        self.pump()
    }

    /// The application ends its session.
    pub fn delete_session(&mut self) -> Result<(), HarnessError> {
        self.client.delete_session(self.now);
        self.pump()
    }

    /// The server appends a notification to every live session's standalone stream.
    pub fn notify_all(&mut self) -> Result<(), HarnessError> {
        self.server.notify_all(self.now);
        self.pump()
    }

    /// The network resets `conn`: both ends see it break. Returns false (and does nothing) if
    /// the connection is not open.
    pub fn reset(&mut self, conn: ConnId) -> Result<bool, HarnessError> {
        if !self.end(conn) {
            return Ok(false);
        }
        self.lb.handle_close(self.now, conn);
        self.client.handle_conn_end(self.now, conn, ConnEnd::Reset);
        self.server.handle_disconnect(self.now, conn);
        self.pump()?;
        Ok(true)
    }

    /// The server process crashes and a new one starts (the next epoch) with the same policy and
    /// tools: its open connections are reset, its sessions and streams are gone.
    pub fn restart_server(&mut self) -> Result<(), HarnessError> {
        self.server.crash(self.now);
        self.pump()?;
        self.epoch += 1;
        self.server = Server::new(self.server_policy.clone(), self.tools.clone(), self.epoch, SERVER_SEED);
        self.pump()
    }

    /// The client process crashes and a new one starts from the state it last persisted (none
    /// unless its policy is durable). Its connections die with it: the server and the load
    /// balancer see them close. The new process numbers its connections after the old one's.
    pub fn restart_client(&mut self) -> Result<(), HarnessError> {
        for conn in self.open_connections() {
            self.end(conn);
            self.lb.handle_close(self.now, conn);
            self.server.handle_disconnect(self.now, conn);
        }
        // What the old process had queued but not yet carried dies with it.
        while self.client.poll_output().is_some() {}
        self.pump()?;
        let next_conn = self.client.next_connection_number();
        self.client_restarts += 1;
        let seed = CLIENT_SEED.wrapping_add(self.client_restarts);
        self.client = Client::new(self.client_policy.clone(), "app", self.durable.clone(), seed);
        self.client.number_connections_from(next_conn);
        self.client.start(self.now);
        self.pump()
    }

    /// Resets every open connection (as [`Pair::reset`] does), so that each connection the
    /// ledger lists has been ended.
    pub fn shutdown(&mut self) -> Result<(), HarnessError> {
        for _ in 0..PUMP_BOUND {
            let Some(conn) = self.open.iter().next().copied() else { return Ok(()) };
            self.reset(conn)?;
        }
        Err(HarnessError::Unsettled { steps: PUMP_BOUND, at: self.now })
    }

    /// When the next timer of any machine is due.
    pub fn next_timeout(&self) -> Option<Instant> {
        [self.client.poll_timeout(), self.server.poll_timeout(), self.lb.poll_timeout()].into_iter().flatten().min()
    }

    /// Moves the clock to the next timer due at or before `limit` and fires it on every machine
    /// that has one due, then pumps. Returns the instant it fired at, or `None` (and leaves the
    /// clock alone) when no timer is due by `limit`. A machine whose `poll_timeout` still says
    /// `at` or earlier right after `handle_timeout(at)` is a [`HarnessError::StuckTimer`].
    pub fn step(&mut self, limit: Instant) -> Result<Option<Instant>, HarnessError> {
        let Some(at) = self.next_timeout().filter(|t| *t <= limit) else { return Ok(None) };
        // Time never goes back: a timer set in the past fires now.
        let at = at.max(self.now);
        self.now = at;
        if self.client.poll_timeout().is_some_and(|t| t <= at) {
            self.client.handle_timeout(at);
            check_consumed(Machine::Client, at, self.client.poll_timeout())?;
        }
        if self.server.poll_timeout().is_some_and(|t| t <= at) {
            self.server.handle_timeout(at);
            check_consumed(Machine::Server, at, self.server.poll_timeout())?;
        }
        if self.lb.poll_timeout().is_some_and(|t| t <= at) {
            self.lb.handle_timeout(at);
            check_consumed(Machine::Lb, at, self.lb.poll_timeout())?;
        }
        self.pump()?;
        Ok(Some(at))
    }

    /// Runs every timer due up to `until`, then sets the clock to `until` (if it is later).
    pub fn advance_to(&mut self, until: Instant) -> Result<(), HarnessError> {
        for _ in 0..STEP_BOUND {
            if self.step(until)?.is_none() {
                self.now = self.now.max(until);
                return Ok(());
            }
        }
        Err(HarnessError::TooManySteps { steps: STEP_BOUND, until })
    }

    /// Runs every timer up to `end`, records the final state (`RunEnd`) and judges the trace with
    /// every invariant oracle.
    pub fn run_until(&mut self, end: Instant) -> Result<Vec<Violation>, HarnessError> {
        self.advance_to(end)?;
        let client_session = self.client.session().cloned();
        let server_sessions = self.server.live_sessions();
        self.record(Actor::Run, StepKind::RunEnd { client_session, server_sessions, other_client_sessions: vec![] });
        Ok(oracle::check_all(&self.trace))
    }

    /// Carries every queued output to its destination until all three machines are idle.
    pub fn pump(&mut self) -> Result<(), HarnessError> {
        for _ in 0..PUMP_BOUND {
            if let Some(out) = self.client.poll_output() {
                self.carry_client(out);
            } else if let Some(out) = self.server.poll_output() {
                self.carry_server(out);
            } else if let Some(out) = self.lb.poll_output() {
                self.carry_lb(out);
            } else {
                return Ok(());
            }
        }
        Err(HarnessError::Unsettled { steps: PUMP_BOUND, at: self.now })
    }

    /// Steps recorded whose kind `which` accepts.
    pub fn count(&self, which: impl Fn(&StepKind) -> bool) -> usize {
        self.trace.steps.iter().filter(|s| which(&s.kind)).count()
    }

    /// Side effects the server executed.
    pub fn side_effects(&self) -> usize {
        self.count(|k| matches!(k, StepKind::SideEffect { .. }))
    }

    /// How the application's calls resolved, in order.
    pub fn resolutions(&self) -> Vec<StepKind> {
        self.trace.app_view().filter(|s| s.kind.resolves().is_some()).map(|s| s.kind.clone()).collect()
    }

    /// Marks `conn` ended in the ledger; false if it was not open.
    fn end(&mut self, conn: ConnId) -> bool {
        if !self.open.remove(&conn) {
            return false;
        }
        self.ledger.entry(conn).or_default().ended += 1;
        true
    }

    fn carry_client(&mut self, out: ClientOutput) {
        match out {
            ClientOutput::Open { conn, request } => {
                self.ledger.entry(conn).or_default().opened += 1;
                self.open.insert(conn);
                self.lb.handle_open(self.now, conn);
                self.server.handle_request(self.now, conn, request);
            }
            ClientOutput::Abort { conn } => {
                self.ledger.entry(conn).or_default().client_aborts += 1;
                if self.end(conn) {
                    self.lb.handle_close(self.now, conn);
                    self.server.handle_disconnect(self.now, conn);
                }
            }
            ClientOutput::Persist(state) => self.durable = Some(state),
            ClientOutput::Record(kind) => {
                let actor = if kind.is_app() { Actor::App } else { Actor::Client };
                self.record(actor, kind);
            }
        }
    }

    fn carry_server(&mut self, out: ServerOutput) {
        match out {
            ServerOutput::Send { conn, frame } if self.open.contains(&conn) => {
                self.lb.handle_bytes(self.now, conn);
                self.client.handle_frame(self.now, conn, frame);
            }
            ServerOutput::Send { .. } => {}
            ServerOutput::Close { conn, abrupt } => {
                self.ledger.entry(conn).or_default().server_closes += 1;
                if self.end(conn) {
                    self.lb.handle_close(self.now, conn);
                    let end = if abrupt { ConnEnd::Reset } else { ConnEnd::Clean };
                    self.client.handle_conn_end(self.now, conn, end);
                }
            }
            ServerOutput::Record(kind) => self.record(Actor::Server, kind),
            // The supervisor starts the next process at once (what the old one held is already
            // recorded lost and its connections closed).
            ServerOutput::Exit => {
                self.epoch += 1;
                self.server = Server::new(self.server_policy.clone(), self.tools.clone(), self.epoch, SERVER_SEED);
            }
        }
    }

    fn carry_lb(&mut self, out: LbOutput) {
        match out {
            LbOutput::Cut { conn, .. } => {
                self.ledger.entry(conn).or_default().lb_cuts += 1;
                if self.end(conn) {
                    self.client.handle_conn_end(self.now, conn, ConnEnd::Reset);
                    self.server.handle_disconnect(self.now, conn);
                }
            }
            // The harness's balancer has no hops, so nothing is ever buffered.
            LbOutput::Deliver { .. } => {}
            LbOutput::Record(kind) => self.record(Actor::Lb, kind),
        }
    }

    fn record(&mut self, actor: Actor, kind: StepKind) {
        let seq = self.trace.steps.len() as u64;
        self.trace.steps.push(Step { seq, t: self.now.0, actor, client: None, replica: None, conn_client: None, kind });
    }
}

/// A timer that fired at `at` must not still be due at `at`.
fn check_consumed(machine: Machine, at: Instant, next: Option<Instant>) -> Result<(), HarnessError> {
    match next {
        Some(next) if next <= at => Err(HarnessError::StuckTimer { machine, at, next }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::SessionEndReason;

    #[test]
    fn a_timer_still_due_after_it_fired_is_reported_stuck() {
        let at = Instant(5);
        assert!(check_consumed(Machine::Client, at, None).is_ok());
        assert!(check_consumed(Machine::Client, at, Some(Instant(6))).is_ok());
        for next in [Instant(5), Instant(4)] {
            assert!(matches!(
                check_consumed(Machine::Server, at, Some(next)),
                Err(HarnessError::StuckTimer { machine: Machine::Server, .. })
            ));
        }
    }

    /// The reference pair with a 60 s tool that reports progress every `progress` and a client
    /// that gives a request up after `timeout`, behind a balancer that cuts after `lb_idle`.
    fn timed(progress: Option<u64>, timeout: Option<u64>, lb_idle: Option<u64>) -> Result<Pair, HarnessError> {
        let secs = Duration::from_secs;
        let tool = ToolSpec {
            name: "pay".into(),
            duration: secs(60),
            event_interval: progress.map(secs),
            ..ToolSpec::default()
        };
        let mut client = profiles::client("reference").expect("listed");
        client.request_timeout = timeout.map(secs);
        client.open_standalone_stream = false;
        let server = profiles::server("reference").expect("listed");
        let lb = LbConfig { idle_timeout: lb_idle.map(secs), ..LbConfig::default() };
        let mut pair = Pair::with_policies(client, server, vec![tool], lb)?;
        pair.call(1, "pay", false)?;
        Ok(pair)
    }

    /// The connection that carried call 1's POST.
    fn post_of_call(pair: &Pair) -> ConnId {
        pair.trace()
            .steps
            .iter()
            .find_map(|s| match &s.kind {
                StepKind::Send { conn, request }
                    if matches!(request.body, Some(crate::http::ClientMessage::CallTool { .. })) =>
                {
                    Some(*conn)
                }
                _ => None,
            })
            .expect("call 1 was sent")
    }

    #[test]
    fn the_ledger_says_who_ended_each_connection() -> Result<(), HarnessError> {
        let at = |s: u64| Instant::ZERO + Duration::from_secs(s);
        // The balancer cuts a silent POST stream.
        let mut pair = timed(None, None, Some(10))?;
        pair.advance_to(at(11))?;
        let cut = pair.connections()[&post_of_call(&pair)];
        assert_eq!((cut.opened, cut.ended, cut.lb_cuts, cut.client_aborts), (1, 1, 1, 0), "{cut:?}");
        // The client gives the request up.
        let mut pair = timed(None, Some(5), None)?;
        pair.advance_to(at(6))?;
        let aborted = pair.connections()[&post_of_call(&pair)];
        assert_eq!((aborted.ended, aborted.client_aborts, aborted.lb_cuts), (1, 1, 0), "{aborted:?}");
        Ok(())
    }

    #[test]
    fn a_frame_the_server_sent_on_a_connection_the_client_aborted_at_that_instant_is_not_delivered(
    ) -> Result<(), HarnessError> {
        // Progress is due at 5 s, when the client gives the request up: the client's abort is
        // carried first, so the progress event finds the connection gone.
        let mut pair = timed(Some(5), Some(5), None)?;
        pair.advance_to(Instant::ZERO + Duration::from_secs(6))?;
        let post = post_of_call(&pair);
        let steps = &pair.trace().steps;
        assert_eq!(pair.connections()[&post].client_aborts, 1);
        let on_post = |k: &StepKind| match k {
            StepKind::Event { conn, .. } | StepKind::Comment { conn, .. } | StepKind::Json { conn, .. } => {
                *conn == post
            }
            _ => false,
        };
        // Its priming event came at 0 s; the first progress event was due at the abort.
        let delivered: Vec<&Step> = steps.iter().filter(|s| s.t > 0 && on_post(&s.kind)).collect();
        assert_eq!(delivered, Vec::<&Step>::new());
        assert!(
            steps.iter().any(|s| s.t == 5_000_000 && matches!(s.kind, StepKind::EventStored { .. })),
            "produced at 5 s"
        );
        Ok(())
    }

    #[test]
    fn the_clock_stands_where_the_pair_was_last_advanced_to() -> Result<(), HarnessError> {
        let mut pair = timed(None, None, None)?;
        assert_eq!(pair.now(), Instant::ZERO);
        let later = Instant::ZERO + Duration::from_millis(7_250);
        pair.advance_to(later)?;
        assert_eq!(pair.now(), later);
        Ok(())
    }

    /// Resets the client's standalone GET and returns the delay of the reconnect it schedules.
    fn standalone_backoff_after_reset(pair: &mut Pair) -> Result<u64, HarnessError> {
        let get = pair
            .trace()
            .steps
            .iter()
            .rev()
            .find_map(|s| match &s.kind {
                StepKind::Send { conn, request } if request.method == crate::http::Method::Get => Some(*conn),
                _ => None,
            })
            .expect("the standalone stream was opened");
        let before = pair.trace().steps.len();
        assert!(pair.reset(get)?, "the standalone stream is open");
        let delay = pair.trace().steps[before..].iter().find_map(|s| match s.kind {
            StepKind::Backoff { call: None, attempt: 1, delay_us } => Some(delay_us),
            _ => None,
        });
        Ok(delay.expect("the standalone stream is reconnected after a backoff"))
    }

    #[test]
    fn a_reset_ends_an_open_connection_on_both_sides_and_reports_it_ended() -> Result<(), HarnessError> {
        let mut pair = timed(None, None, None)?;
        let post = post_of_call(&pair);
        assert!(pair.open_connections().contains(&post));
        assert!(pair.reset(post)?, "an open connection is reset");
        assert!(!pair.open_connections().contains(&post));
        assert_eq!(pair.connections()[&post].ended, 1);
        // The client saw its call's stream break and schedules its resumption.
        assert_eq!(pair.count(|k| matches!(k, StepKind::Backoff { call: Some(CallKey(1)), attempt: 1, .. })), 1);
        assert!(!pair.reset(post)?, "and only once");
        Ok(())
    }

    #[test]
    fn each_client_process_draws_its_backoff_jitter_from_a_seed_of_its_own() -> Result<(), HarnessError> {
        let mut client = profiles::client("reference").expect("listed");
        client.open_standalone_stream = true;
        client.reconnect.jitter = 1.0;
        let mut server = profiles::server("reference").expect("listed");
        server.retry_ms = None;
        let tool = ToolSpec { name: "pay".into(), duration: Duration::from_secs(1), ..ToolSpec::default() };
        let mut pair = Pair::with_policies(client, server, vec![tool], LbConfig::default())?;
        let mut delays = vec![standalone_backoff_after_reset(&mut pair)?];
        for _ in 0..2 {
            pair.restart_client()?;
            delays.push(standalone_backoff_after_reset(&mut pair)?);
        }
        // Each delay is the first draw of its process: a restarted client replaying its
        // predecessor's seed would wait exactly as long.
        assert!(delays[0] != delays[1] && delays[1] != delays[2] && delays[0] != delays[2], "{delays:?}");
        Ok(())
    }

    #[test]
    fn a_notification_to_all_reaches_the_client_on_its_standalone_stream() -> Result<(), HarnessError> {
        let mut client = profiles::client("reference").expect("listed");
        client.open_standalone_stream = true;
        let server = profiles::server("reference").expect("listed");
        let mut pair = Pair::with_policies(client, server, vec![], LbConfig::default())?;
        let notification = |k: &StepKind| matches!(k, StepKind::Event { event, .. } if event.data == Some(crate::http::ServerMessage::Notification { seq: 1 }));
        assert_eq!(pair.count(notification), 0);
        pair.notify_all()?;
        assert_eq!(pair.count(notification), 1);
        Ok(())
    }

    #[test]
    fn the_ledger_counts_a_connection_the_server_closed() -> Result<(), HarnessError> {
        let tool = ToolSpec { name: "pay".into(), duration: Duration::from_secs(1), ..ToolSpec::default() };
        let mut pair = Pair::new("reference", "reference", tool, None)?;
        pair.call(1, "pay", false)?;
        pair.advance_to(Instant::ZERO + Duration::from_secs(2))?;
        // The call's POST stream ends with its result: the server closes it.
        let post = pair.connections()[&post_of_call(&pair)];
        assert_eq!((post.opened, post.ended, post.server_closes, post.client_aborts, post.lb_cuts), (1, 1, 1, 0, 0));
        Ok(())
    }

    #[test]
    fn a_shutdown_resets_every_open_connection_once() -> Result<(), HarnessError> {
        let mut pair = timed(None, None, None)?;
        let post = post_of_call(&pair);
        assert_eq!(pair.open_connections(), vec![post], "the call's stream is open");
        pair.shutdown()?;
        assert!(pair.open_connections().is_empty());
        assert_eq!(pair.connections()[&post].ended, 1);
        // The client saw the reset: it schedules its resume.
        assert_eq!(pair.count(|k| matches!(k, StepKind::Backoff { call: Some(CallKey(1)), .. })), 1);
        Ok(())
    }

    #[test]
    fn a_server_restart_ends_its_sessions_and_starts_the_next_epoch() -> Result<(), HarnessError> {
        let tool = ToolSpec { name: "pay".into(), duration: Duration::from_secs(1), ..ToolSpec::default() };
        let mut pair = Pair::new("reference", "reference", tool, None)?;
        pair.advance_to(pair.now() + Duration::from_secs(1))?;
        let before = pair.server().live_sessions();
        assert_eq!(before.len(), 1, "the client's handshake made one session");
        pair.restart_server()?;
        assert!(pair.server().live_sessions().is_empty(), "the new process holds none");
        assert_eq!(pair.count(|k| matches!(k, StepKind::ServerStart { epoch: 1, .. })), 1);
        let ended = |k: &StepKind| matches!(k, StepKind::SessionEnded { reason: SessionEndReason::ServerRestart, .. });
        assert_eq!(pair.count(ended), 1);
        // Every connection opened so far was ended once, and none is open after the shutdown.
        pair.shutdown()?;
        assert!(pair.open_connections().is_empty());
        assert!(!pair.connections().is_empty());
        for (conn, record) in pair.connections() {
            assert_eq!((record.opened, record.ended), (1, 1), "{conn}");
        }
        // A client restart starts a new client process.
        let starts = |p: &Pair| p.count(|k| matches!(k, StepKind::ClientStart { .. }));
        let before = starts(&pair);
        pair.restart_client()?;
        assert_eq!(starts(&pair), before + 1);
        // A reset of a connection that is no longer open is refused.
        let first = *pair.connections().keys().next().expect("some connection");
        assert!(!pair.reset(first)?);
        Ok(())
    }
}
