//! The load balancer: proxies connections to server replicas, routes each new connection, and
//! cuts those that stay silent too long or live too long.
//!
//! It sees each proxied connection only as "bytes went by at `now`" — SSE comments count, which
//! is why keep-alives shorter than the idle timeout save a stream. It owns no sockets: the actor
//! tells it what passed and carries out the cuts it asks for.
//!
//! Call order: `handle_open`, then `route` (once the request is known, for session routing),
//! `handle_session` when a response head names a session, `handle_bytes`/`handle_close` as things
//! pass, then drain `poll_output`; sleep until `poll_timeout`, then `handle_timeout(now)` and
//! drain again. `set_draining` takes a replica out of (or back into) the rotation.

use crate::config::{CutMode, LbConfig, Routing};
use crate::http::Status;
use crate::ids::{ConnId, SessionId};
use crate::rng::SplitMix64;
use crate::time::{micros, Instant};
use crate::trace::StepKind;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A backend (server replica) the load balancer can route to, numbered from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Backend(pub u32);

/// Something the load balancer asks its actor to do or record.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum LbOutput {
    /// Cut the connection, as an abrupt close of the client side; of the upstream side too
    /// unless `keep_upstream` (`lb.cut_mode = "client-side"`).
    Cut {
        /// The connection.
        conn: ConnId,
        /// Leave the upstream connection to the replica open.
        keep_upstream: bool,
        /// Answer the client this status before closing its side (`lb.hold_headers`: the
        /// response's head was still held, no body frame had come).
        answer: Option<Status>,
    },
    /// Record a step.
    Record(StepKind),
}

/// What the balancer knows of one open connection.
#[derive(Clone, Copy, Debug)]
struct Proxied {
    opened: Instant,
    last_bytes: Instant,
    /// A response head arrived and no body frame yet (only tracked with `hold_headers`).
    holding: bool,
}

/// Where a new connection goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// To this replica.
    To(Backend),
    /// Nowhere: the balancer answers this status itself (every replica is draining).
    Answer(Status),
}

/// The load balancer's state.
#[derive(Debug)]
pub struct LoadBalancer {
    config: LbConfig,
    conns: BTreeMap<ConnId, Proxied>,
    /// The replica the next round-robin connection tries first.
    next_turn: u32,
    /// Replicas out of the rotation (a rolling deploy drains them).
    draining: BTreeSet<Backend>,
    /// Sessions learned from response heads (sticky-session routing).
    sessions: BTreeMap<SessionId, Backend>,
    /// Draws for random routing.
    rng: SplitMix64,
    outputs: VecDeque<LbOutput>,
}

impl LoadBalancer {
    /// A load balancer with no connections, its random routing seeded with 0.
    pub fn new(config: LbConfig) -> Self {
        LoadBalancer::with_seed(config, 0)
    }

    /// A load balancer whose random routing draws from `seed` (the simulator derives it from the
    /// run's seed).
    pub fn with_seed(config: LbConfig, seed: u64) -> Self {
        LoadBalancer {
            config,
            conns: BTreeMap::new(),
            next_turn: 0,
            draining: BTreeSet::new(),
            sessions: BTreeMap::new(),
            rng: SplitMix64::new(seed),
            outputs: VecDeque::new(),
        }
    }

    /// The replicas behind the balancer.
    pub fn replicas(&self) -> u32 {
        self.config.replicas.max(1)
    }

    /// Whether `route` needs the request's `Mcp-Session-Id` (the actor then reads the request
    /// before it connects upstream).
    pub fn routes_by_session(&self) -> bool {
        self.config.routing == Routing::StickySession && self.replicas() > 1
    }

    /// Picks the replica for `conn`'s request. `session` is the request's `Mcp-Session-Id` (read
    /// only when [`LoadBalancer::routes_by_session`]), `client` a number standing for the client's
    /// address. A draining replica gets no new connection; with every one draining the balancer
    /// answers 503 itself. With several replicas the choice is recorded.
    pub fn route(&mut self, conn: ConnId, session: Option<&SessionId>, client: u64) -> Route {
        let n = self.replicas();
        let available: Vec<Backend> = (0..n).map(Backend).filter(|b| !self.draining.contains(b)).collect();
        if available.is_empty() {
            self.outputs.push_back(LbOutput::Record(StepKind::LbAnswered { conn, status: Status::UNAVAILABLE }));
            return Route::Answer(Status::UNAVAILABLE);
        }
        let preferred = match self.config.routing {
            Routing::RoundRobin => None,
            Routing::StickySession => session.and_then(|s| self.sessions.get(s)).copied(),
            Routing::StickyClient => Some(Backend((client % u64::from(n)) as u32)),
            Routing::Random => Some(Backend((self.rng.next_u64() % u64::from(n)) as u32)),
        };
        let backend = match preferred {
            Some(b) if available.contains(&b) => b,
            // The preferred replica is draining: the next one in turn from it.
            Some(b) => next_from(&available, b.0),
            None => {
                let b = next_from(&available, self.next_turn);
                self.next_turn = (b.0 + 1) % n;
                b
            }
        };
        if n > 1 {
            self.outputs.push_back(LbOutput::Record(StepKind::LbRouted {
                conn,
                replica: backend.0,
                session: session.filter(|_| self.routes_by_session()).cloned(),
            }));
        }
        Route::To(backend)
    }

    /// A response head from `backend` named `session` (the answer to `initialize`): sticky
    /// routing sends the session's later requests there.
    pub fn handle_session(&mut self, session: SessionId, backend: Backend) {
        if self.routes_by_session() {
            self.sessions.insert(session, backend);
        }
    }

    /// Takes `backend` out of the rotation (`true`) or puts it back.
    pub fn set_draining(&mut self, backend: Backend, draining: bool) {
        if draining {
            self.draining.insert(backend);
        } else {
            self.draining.remove(&backend);
        }
    }

    /// A client opened a connection through the balancer.
    pub fn handle_open(&mut self, now: Instant, conn: ConnId) {
        self.conns.insert(conn, Proxied { opened: now, last_bytes: now, holding: false });
    }

    /// Whether response heads wait for their first body frame (`lb.hold_headers`).
    pub fn holds_headers(&self) -> bool {
        self.config.hold_headers
    }

    /// With `hold_headers`: the response head of `conn` arrived and is held (`true`), or its first
    /// body frame came and the head went out with it (`false`).
    pub fn handle_holding(&mut self, conn: ConnId, holding: bool) {
        if let Some(p) = self.conns.get_mut(&conn) {
            p.holding = holding && self.config.hold_headers;
        }
    }

    /// Bytes passed on `conn`, in either direction.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId) {
        if let Some(p) = self.conns.get_mut(&conn) {
            p.last_bytes = now;
        }
    }

    /// One side closed `conn`; the balancer forgets it.
    pub fn handle_close(&mut self, _now: Instant, conn: ConnId) {
        self.conns.remove(&conn);
    }

    /// Cuts every connection past its lifetime, then every one silent for the idle timeout.
    pub fn handle_timeout(&mut self, now: Instant) {
        let keep_upstream = self.config.cut_mode == CutMode::ClientSide;
        let expired: Vec<(ConnId, Proxied)> = self
            .conns
            .iter()
            .filter(|(_, p)| self.deadline(p).is_some_and(|d| d <= now))
            .map(|(c, p)| (*c, *p))
            .collect();
        for (conn, p) in expired {
            self.conns.remove(&conn);
            let lifetime_due = self.config.max_lifetime.is_some_and(|l| p.opened + l <= now);
            let step = if lifetime_due {
                StepKind::LbLifetimeCut { conn, age_us: micros(now - p.opened) }
            } else {
                StepKind::LbIdleCut { conn, idle_us: micros(now - p.last_bytes) }
            };
            self.outputs.push_back(LbOutput::Record(step));
            if keep_upstream {
                self.outputs.push_back(LbOutput::Record(StepKind::LbUpstreamKept { conn }));
            }
            let answer = p.holding.then_some(Status::BAD_GATEWAY);
            if let Some(status) = answer {
                self.outputs.push_back(LbOutput::Record(StepKind::LbAnswered { conn, status }));
            }
            self.outputs.push_back(LbOutput::Cut { conn, keep_upstream, answer });
        }
    }

    /// When `p` is next due for a cut.
    fn deadline(&self, p: &Proxied) -> Option<Instant> {
        let idle = self.config.idle_timeout.map(|i| p.last_bytes + i);
        let lifetime = self.config.max_lifetime.map(|l| p.opened + l);
        [idle, lifetime].into_iter().flatten().min()
    }

    /// When the next cut is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.conns.values().filter_map(|p| self.deadline(p)).min()
    }

    /// The next output, if any; drain it after every input.
    pub fn poll_output(&mut self) -> Option<LbOutput> {
        self.outputs.pop_front()
    }

    /// Connections currently proxied.
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }
}

/// The first of `available` (sorted, not empty) at or after replica `from`, wrapping around.
fn next_from(available: &[Backend], from: u32) -> Backend {
    available.iter().find(|b| b.0 >= from).or_else(|| available.first()).copied().expect("available is not empty")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReplicaStore;
    use std::time::Duration;

    fn lb(idle: Option<u64>) -> LoadBalancer {
        LoadBalancer::new(LbConfig { idle_timeout: idle.map(Duration::from_secs), ..LbConfig::default() })
    }

    fn replicated(n: u32, routing: Routing) -> LoadBalancer {
        LoadBalancer::with_seed(LbConfig { replicas: n, routing, store: ReplicaStore::Local, ..LbConfig::default() }, 7)
    }

    fn drain(lb: &mut LoadBalancer) -> Vec<LbOutput> {
        std::iter::from_fn(|| lb.poll_output()).collect()
    }

    fn secs(s: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(s)
    }

    #[test]
    fn a_silent_connection_is_cut_at_the_idle_timeout() {
        let mut lb = lb(Some(60));
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(60)));
        lb.handle_timeout(secs(59));
        assert!(drain(&mut lb).is_empty());
        lb.handle_timeout(secs(60));
        let out = drain(&mut lb);
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }));
        assert_eq!(lb.open_connections(), 0);
        assert_eq!(lb.poll_timeout(), None);
    }

    #[test]
    fn bytes_such_as_keepalive_comments_hold_a_connection_open() {
        let mut lb = lb(Some(60));
        lb.handle_open(Instant::ZERO, ConnId(1));
        for s in (15..=300).step_by(15) {
            lb.handle_timeout(secs(s));
            lb.handle_bytes(secs(s), ConnId(1));
        }
        assert!(drain(&mut lb).is_empty());
        assert_eq!(lb.open_connections(), 1);
    }

    #[test]
    fn without_an_idle_timeout_nothing_is_ever_cut() {
        let mut lb = lb(None);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.poll_timeout(), None);
        lb.handle_timeout(Instant(u64::MAX / 2));
        assert!(drain(&mut lb).is_empty());
    }

    #[test]
    fn a_busy_connection_is_still_cut_at_its_lifetime_and_client_side_cuts_keep_the_upstream() {
        let config = LbConfig {
            idle_timeout: Some(Duration::from_secs(60)),
            max_lifetime: Some(Duration::from_secs(100)),
            cut_mode: CutMode::ClientSide,
            ..LbConfig::default()
        };
        let mut lb = LoadBalancer::new(config);
        lb.handle_open(Instant::ZERO, ConnId(1));
        for s in (10..100).step_by(10) {
            lb.handle_bytes(secs(s), ConnId(1));
        }
        assert_eq!(lb.poll_timeout(), Some(secs(100)));
        lb.handle_timeout(secs(100));
        assert_eq!(
            drain(&mut lb),
            vec![
                LbOutput::Record(StepKind::LbLifetimeCut { conn: ConnId(1), age_us: 100_000_000 }),
                LbOutput::Record(StepKind::LbUpstreamKept { conn: ConnId(1) }),
                LbOutput::Cut { conn: ConnId(1), keep_upstream: true, answer: None },
            ]
        );
    }

    #[test]
    fn a_cut_while_the_head_is_held_answers_502_and_a_body_frame_releases_it() {
        let config =
            LbConfig { max_lifetime: Some(Duration::from_secs(125)), hold_headers: true, ..LbConfig::default() };
        let mut lb = LoadBalancer::new(config);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_open(Instant::ZERO, ConnId(2));
        lb.handle_holding(ConnId(1), true);
        lb.handle_holding(ConnId(2), true);
        lb.handle_holding(ConnId(2), false);
        lb.handle_timeout(secs(125));
        let out = drain(&mut lb);
        let bad = Some(Status::BAD_GATEWAY);
        assert!(out.contains(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: bad }));
        assert!(out.contains(&LbOutput::Cut { conn: ConnId(2), keep_upstream: false, answer: None }));
        let answered = LbOutput::Record(StepKind::LbAnswered { conn: ConnId(1), status: Status::BAD_GATEWAY });
        assert!(out.contains(&answered));
        // Without hold_headers nothing is held.
        let mut lb =
            LoadBalancer::new(LbConfig { max_lifetime: Some(Duration::from_secs(125)), ..LbConfig::default() });
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_holding(ConnId(1), true);
        lb.handle_timeout(secs(125));
        assert!(drain(&mut lb).contains(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }));
    }

    #[test]
    fn one_replica_routes_everything_to_it_and_records_nothing() {
        let mut lb = lb(None);
        for c in 1..5 {
            assert_eq!(lb.route(ConnId(c), None, c), Route::To(Backend(0)));
        }
        assert!(drain(&mut lb).is_empty());
    }

    #[test]
    fn round_robin_takes_turns_and_skips_a_draining_replica() {
        let mut lb = replicated(3, Routing::RoundRobin);
        let picks: Vec<Route> = (1..5).map(|c| lb.route(ConnId(c), None, 0)).collect();
        assert_eq!(picks, [0, 1, 2, 0].map(|b| Route::To(Backend(b))));
        lb.set_draining(Backend(1), true);
        let picks: Vec<Route> = (5..8).map(|c| lb.route(ConnId(c), None, 0)).collect();
        assert_eq!(picks, [2, 0, 2].map(|b| Route::To(Backend(b))));
        lb.set_draining(Backend(0), true);
        lb.set_draining(Backend(2), true);
        assert_eq!(lb.route(ConnId(9), None, 0), Route::Answer(Status::UNAVAILABLE));
    }

    #[test]
    fn sticky_session_routing_follows_the_replica_that_created_the_session() {
        let mut lb = replicated(2, Routing::StickySession);
        assert!(lb.routes_by_session());
        assert_eq!(lb.route(ConnId(1), None, 0), Route::To(Backend(0)));
        assert_eq!(lb.route(ConnId(2), None, 0), Route::To(Backend(1)));
        let s = SessionId("1-1".into());
        lb.handle_session(s.clone(), Backend(1));
        for c in 3..6 {
            assert_eq!(lb.route(ConnId(c), Some(&s), 0), Route::To(Backend(1)));
        }
        let routed = drain(&mut lb).into_iter().filter(|o| matches!(o, LbOutput::Record(StepKind::LbRouted { .. })));
        assert_eq!(routed.count(), 5);
    }

    #[test]
    fn sticky_client_routing_keeps_a_client_on_one_replica_and_random_routing_follows_its_seed() {
        let mut lb = replicated(3, Routing::StickyClient);
        let picks: BTreeSet<u32> = (1..10).map(|c| replica(lb.route(ConnId(c), None, 4))).collect();
        assert_eq!(picks.len(), 1);
        let draw = |seed| {
            let mut lb = LoadBalancer::with_seed(
                LbConfig { replicas: 3, routing: Routing::Random, ..LbConfig::default() },
                seed,
            );
            (1..30).map(|c| lb.route(ConnId(c), None, 0)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        assert_eq!(draw(1).into_iter().map(replica).collect::<BTreeSet<_>>().len(), 3);
    }

    fn replica(r: Route) -> u32 {
        match r {
            Route::To(b) => b.0,
            Route::Answer(s) => panic!("answered {s:?}"),
        }
    }
}
