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

use crate::config::{CutMode, HopConfig, LbConfig, Routing};
use crate::http::Status;
use crate::ids::{ConnId, SessionId};
use crate::rng::SplitMix64;
use crate::time::{micros, Instant, TimerTable};
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
    /// unless `keep_upstream` (`cut_mode = "client-side"`).
    Cut {
        /// The connection.
        conn: ConnId,
        /// Leave the upstream connection to the replica open.
        keep_upstream: bool,
        /// Answer the client this status before closing its side (a held head, a first-byte
        /// timeout, a restarted hop behind the one that answers).
        answer: Option<Status>,
    },
    /// Write these frames (already encoded) to the client of `conn`: a buffering hop released
    /// them on its timer.
    Deliver {
        /// The connection.
        conn: ConnId,
        /// The frames, as they go on the wire.
        bytes: Vec<u8>,
    },
    /// Record a step.
    Record(StepKind),
}

/// What one frame of a response is, as far as the intermediaries care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// The status line and headers (always the first frame).
    Head,
    /// An SSE event or a JSON body.
    Body,
    /// An SSE comment (`: keepalive`).
    Comment,
    /// The end of the response.
    End,
}

/// Response frames on their way to the client: each with its kind and its wire bytes.
pub type Frames = Vec<(FrameKind, Vec<u8>)>;

/// What one intermediary knows of one open connection.
#[derive(Clone, Debug)]
struct AtHop {
    last_bytes: Instant,
    /// The response head went on through this intermediary.
    headed: bool,
    /// `hold_headers`: the head waits here for the first body frame.
    held: Frames,
    /// Response buffering: frames held back, and since when.
    buffer: Frames,
    buffered_since: Option<Instant>,
    /// `hold_tail`: the last frame that reached this hop, kept until the next one pushes it out,
    /// and since when.
    tail: Option<(Instant, (FrameKind, Vec<u8>))>,
}

impl AtHop {
    fn new(now: Instant) -> Self {
        AtHop { last_bytes: now, headed: false, held: Vec::new(), buffer: Vec::new(), buffered_since: None, tail: None }
    }
}

/// What the chain knows of one open connection: one [`AtHop`] per intermediary.
#[derive(Clone, Debug)]
struct Proxied {
    /// When the connection opened, or when its current request came (kept alive): the start of
    /// the lifetime and first-byte clocks, which are per response.
    opened: Instant,
    at: Vec<AtHop>,
    /// Kept alive between two exchanges: only the idle timeouts apply.
    between: bool,
}

/// Where a new connection goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// To this replica.
    To(Backend),
    /// Nowhere: the balancer answers this status itself (every replica is draining).
    Answer(Status),
}

/// Something due on a connection at one intermediary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// Past its maximum lifetime.
    Lifetime,
    /// Silent for the idle timeout.
    Idle,
    /// No response head within the first-byte timeout.
    FirstByte,
    /// Buffered frames reached the flush interval.
    Flush,
}

/// The load balancer's state, with the chain of hops in front of it.
#[derive(Debug)]
pub struct LoadBalancer {
    config: LbConfig,
    /// Every intermediary a connection passes, the client's side first: the hops, then the
    /// balancer itself (as a hop with only its idle timeout, lifetime, cut mode and held heads).
    chain: Vec<HopConfig>,
    conns: BTreeMap<ConnId, Proxied>,
    /// The replica the next round-robin connection tries first.
    next_turn: u32,
    /// Replicas out of the rotation (a rolling deploy drains them).
    draining: BTreeSet<Backend>,
    /// Sessions learned from response heads (sticky-session routing).
    sessions: BTreeMap<SessionId, Backend>,
    /// Intermediaries answering every new request themselves, with the status they answer (a
    /// route reload or a deploy of the proxy: [`LoadBalancer::set_answering`]).
    answering: BTreeMap<usize, Status>,
    /// Draws for random routing.
    rng: SplitMix64,
    outputs: VecDeque<LbOutput>,
    /// The timer table: each connection's next due instant ([`LoadBalancer::next_due`]) ordered
    /// by time, refreshed whenever a connection changes, so `poll_timeout` costs the same however
    /// many connections are open.
    timers: TimerTable<ConnId>,
}

impl LoadBalancer {
    /// A load balancer with no connections, its random routing seeded with 0.
    pub fn new(config: LbConfig) -> Self {
        LoadBalancer::with_seed(config, 0)
    }

    /// A load balancer whose random routing draws from `seed` (the simulator derives it from the
    /// run's seed).
    pub fn with_seed(config: LbConfig, seed: u64) -> Self {
        let own = HopConfig {
            idle_timeout: config.idle_timeout,
            max_lifetime: config.max_lifetime,
            cut_mode: config.cut_mode,
            hold_headers: config.hold_headers,
            keep_alive_timeout: config.keep_alive_timeout,
            ..HopConfig::default()
        };
        let chain = config.hops.iter().cloned().chain([own]).collect();
        LoadBalancer {
            config,
            chain,
            conns: BTreeMap::new(),
            next_turn: 0,
            draining: BTreeSet::new(),
            sessions: BTreeMap::new(),
            answering: BTreeMap::new(),
            rng: SplitMix64::new(seed),
            outputs: VecDeque::new(),
            timers: TimerTable::default(),
        }
    }

    /// Files `conn`'s next due instant in the timer table (after any change to it).
    fn refresh(&mut self, conn: ConnId) {
        let due = self.next_due(conn).map(|(at, ..)| at);
        self.timers.set(conn, due);
    }

    /// The replicas behind the balancer.
    pub fn replicas(&self) -> u32 {
        self.config.replicas.max(1)
    }

    /// The intermediaries a connection passes: the hops and the balancer.
    pub fn chain_len(&self) -> usize {
        self.chain.len()
    }

    /// The balancer's own index in the chain (the last).
    fn own(&self) -> usize {
        self.chain.len() - 1
    }

    /// The index written into steps: none with the balancer alone (old traces keep their bytes).
    fn label(&self, hop: usize) -> Option<u32> {
        (self.chain.len() > 1).then_some(hop as u32)
    }

    /// Whether response frames pass untouched and need no kinds: the balancer alone, holding no
    /// heads. The actor then only reports that bytes passed ([`LoadBalancer::handle_bytes`]).
    pub fn is_transparent(&self) -> bool {
        self.chain.len() == 1 && !self.config.hold_headers
    }

    /// Whether [`LoadBalancer::handle_response`] needs to tell comments and the end from other
    /// body frames (some hop ignores comments or buffers); otherwise `Body` for all is enough.
    pub fn needs_frame_kinds(&self) -> bool {
        self.chain.iter().any(|h| !h.comments_count || h.buffers() || h.hold_tail)
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
        // An intermediary answering by itself answers before any behind it sees the request: the
        // one nearest the client.
        if let Some((&at, &status)) = self.answering.first_key_value() {
            let hop = self.label(at);
            self.outputs.push_back(LbOutput::Record(StepKind::LbAnswered { conn, status, hop }));
            return Route::Answer(status);
        }
        let n = self.replicas();
        let hop = self.label(self.own());
        let available: Vec<Backend> = (0..n).map(Backend).filter(|b| !self.draining.contains(b)).collect();
        if available.is_empty() {
            let status = Status::UNAVAILABLE;
            self.outputs.push_back(LbOutput::Record(StepKind::LbAnswered { conn, status, hop }));
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
                hop,
            }));
        }
        Route::To(backend)
    }

    /// Picks the replica for a `tasks/*` request whose `Mcp-Name` names a task held by `holder`
    /// (routing by `Mcp-Name`, ext-tasks tasks.md "Streamable HTTP: Routing Headers"): that
    /// replica while it takes connections, else what [`LoadBalancer::route`] picks. Recorded as
    /// any routing choice.
    pub fn route_to_holder(
        &mut self,
        conn: ConnId,
        holder: Backend,
        session: Option<&SessionId>,
        client: u64,
    ) -> Route {
        let n = self.replicas();
        if holder.0 >= n || self.draining.contains(&holder) {
            return self.route(conn, session, client);
        }
        if n > 1 {
            let hop = self.label(self.own());
            self.outputs.push_back(LbOutput::Record(StepKind::LbRouted {
                conn,
                replica: holder.0,
                session: session.filter(|_| self.routes_by_session()).cloned(),
                hop,
            }));
        }
        Route::To(holder)
    }

    /// The balancer could not reach the replica: it answers 502 itself. Recorded with several
    /// replicas or hops.
    pub fn handle_unreachable(&mut self, conn: ConnId) -> Status {
        if self.replicas() > 1 || self.chain.len() > 1 {
            let hop = self.label(self.own());
            self.outputs.push_back(LbOutput::Record(StepKind::LbAnswered { conn, status: Status::BAD_GATEWAY, hop }));
        }
        Status::BAD_GATEWAY
    }

    /// A response head from `backend` named `session` (the answer to `initialize`): sticky
    /// routing sends the session's later requests there.
    pub fn handle_session(&mut self, session: SessionId, backend: Backend) {
        if self.routes_by_session() {
            self.sessions.insert(session, backend);
        }
    }

    /// Intermediary `hop` (the balancer is the last) answers every new request itself with
    /// `status` (`Some`), without passing it on, or stops doing so (`None`): a proxy reloading its
    /// routes or being deployed, which answers 404 (or 400, 405, 503) for a window. Connections
    /// already proxied are not touched. Returns whether the hop exists.
    pub fn set_answering(&mut self, hop: usize, status: Option<Status>) -> bool {
        if hop >= self.chain.len() {
            return false;
        }
        match status {
            Some(status) => self.answering.insert(hop, status),
            None => self.answering.remove(&hop),
        };
        true
    }

    /// Takes `backend` out of the rotation (`true`) or puts it back.
    pub fn set_draining(&mut self, backend: Backend, draining: bool) {
        if draining {
            self.draining.insert(backend);
        } else {
            self.draining.remove(&backend);
        }
    }

    /// A client opened a connection through the chain.
    pub fn handle_open(&mut self, now: Instant, conn: ConnId) {
        let at = vec![AtHop::new(now); self.chain.len()];
        self.conns.insert(conn, Proxied { opened: now, at, between: false });
        self.refresh(conn);
    }

    /// `conn`'s response is complete and the client keeps the connection alive: until its next
    /// request only the idle timeouts apply (every intermediary's idle clock starts now), so a
    /// kept-alive connection left idle is closed like a silent stream.
    pub fn handle_response_end(&mut self, now: Instant, conn: ConnId) {
        if let Some(p) = self.conns.get_mut(&conn) {
            p.between = true;
            p.at = vec![AtHop::new(now); p.at.len()];
        }
        self.refresh(conn);
    }

    /// A new request came on kept-alive `conn`: the per-response clocks (lifetime, first byte)
    /// start again, as each intermediary sees a new response.
    pub fn handle_request(&mut self, now: Instant, conn: ConnId) {
        if let Some(p) = self.conns.get_mut(&conn) {
            p.between = false;
            p.opened = now;
            p.at = vec![AtHop::new(now); p.at.len()];
        }
        self.refresh(conn);
    }

    /// Bytes passed on `conn` that no hop holds back (the request, or any frame when
    /// [`LoadBalancer::is_transparent`]): every intermediary's idle clock restarts.
    pub fn handle_bytes(&mut self, now: Instant, conn: ConnId) {
        if let Some(p) = self.conns.get_mut(&conn) {
            p.at.iter_mut().for_each(|a| a.last_bytes = now);
        }
        self.refresh(conn);
    }

    /// Response frames arrived from the replica on `conn`: they pass the chain from the balancer
    /// outwards, each intermediary holding back what it holds. Returns the bytes that reach the
    /// client now (maybe none). Drain `poll_output` after it (a buffer may have been flushed).
    pub fn handle_response(&mut self, now: Instant, conn: ConnId, frames: Frames) -> Vec<u8> {
        let from = self.own();
        let out = self.carry(now, conn, from, frames);
        self.refresh(conn);
        concat(out)
    }

    /// The replica ended `conn`'s response (its socket closed): everything held back anywhere goes
    /// out to the client, the oldest first.
    pub fn handle_upstream_end(&mut self, conn: ConnId) -> Vec<u8> {
        let Some(p) = self.conns.get_mut(&conn) else { return Vec::new() };
        let mut out = Vec::new();
        for at in &mut p.at {
            out.extend(std::mem::take(&mut at.held));
            out.extend(std::mem::take(&mut at.buffer));
            at.buffered_since = None;
            out.extend(at.tail.take().map(|(_, frame)| frame));
        }
        self.refresh(conn);
        concat(out)
    }

    /// Passes `frames` through intermediaries `from`, `from - 1`, …, 0; returns what leaves hop 0.
    fn carry(&mut self, now: Instant, conn: ConnId, from: usize, mut frames: Frames) -> Frames {
        for hop in (0..=from).rev() {
            if frames.is_empty() {
                break;
            }
            frames = self.pass(now, conn, hop, frames);
        }
        frames
    }

    /// `frames` reach intermediary `hop` on `conn`: what it sends on. A hop that holds its tail
    /// (`HopConfig::hold_tail`) keeps the last frame of what it would send until the next frame
    /// (or the end of the response) pushes it out; a cut loses it.
    fn pass(&mut self, now: Instant, conn: ConnId, hop: usize, frames: Frames) -> Frames {
        let frames = self.pass_held(now, conn, hop, frames);
        if !self.chain[hop].hold_tail || frames.is_empty() {
            return frames;
        }
        let label = self.label(hop);
        let Some(at) = self.conns.get_mut(&conn).map(|p| &mut p.at[hop]) else { return frames };
        let mut out: Frames = Vec::new();
        if let Some((since, frame)) = at.tail.take() {
            // A tail pushed out later than it came was held back: recorded as a buffer's release is.
            if now > since {
                let held_us = micros(now - since);
                self.outputs.push_back(LbOutput::Record(StepKind::LbFlushed { conn, frames: 1, held_us, hop: label }));
            }
            out.push(frame);
        }
        for frame in frames {
            match frame.0 {
                FrameKind::Head => out.push(frame),
                // The end of the response flushes everything.
                FrameKind::End => {
                    out.push(frame);
                    return out;
                }
                FrameKind::Body | FrameKind::Comment => out.push(frame),
            }
        }
        // The last body frame or comment of what passes stays here.
        if out.last().is_some_and(|(k, _)| *k != FrameKind::Head) {
            at.tail = out.pop().map(|frame| (now, frame));
        }
        out
    }

    /// `pass` before the tail rule: held heads and response buffering.
    fn pass_held(&mut self, now: Instant, conn: ConnId, hop: usize, frames: Frames) -> Frames {
        let label = self.label(hop);
        let config = &self.chain[hop];
        let Some(at) = self.conns.get_mut(&conn).map(|p| &mut p.at[hop]) else { return frames };
        // A head that came alone waits for the first body frame; nothing went on, so nothing
        // passed for the idle clock either.
        if config.hold_headers
            && !at.headed
            && at.held.is_empty()
            && frames.len() == 1
            && frames[0].0 == FrameKind::Head
        {
            at.held = frames;
            return Vec::new();
        }
        let mut frames = if at.held.is_empty() {
            frames
        } else {
            let mut all = std::mem::take(&mut at.held);
            all.extend(frames);
            all
        };
        at.headed |= frames.iter().any(|(k, _)| *k == FrameKind::Head);
        if frames.iter().any(|(k, _)| *k != FrameKind::Comment || config.comments_count) {
            at.last_bytes = now;
        }
        if !config.buffers() {
            return frames;
        }
        // Buffering: the head goes on (or, with `buffer_head`, waits with the body), body frames
        // wait for the size threshold, the flush interval or the end of the response.
        let body_from = match config.buffer_head {
            true => 0,
            false => frames.iter().rposition(|(k, _)| *k == FrameKind::Head).map_or(0, |i| i + 1),
        };
        at.buffer.extend(frames.split_off(body_from));
        let size: u64 = at.buffer.iter().map(|(_, b)| b.len() as u64).sum();
        let ended = at.buffer.iter().any(|(k, _)| *k == FrameKind::End);
        if at.buffer.is_empty() {
            return frames;
        }
        let since = *at.buffered_since.get_or_insert(now);
        if ended || config.buffer.is_some_and(|limit| size >= limit) {
            let released = std::mem::take(&mut at.buffer);
            at.buffered_since = None;
            let flushed =
                StepKind::LbFlushed { conn, frames: released.len() as u32, held_us: micros(now - since), hop: label };
            self.outputs.push_back(LbOutput::Record(flushed));
            frames.extend(released);
        }
        frames
    }

    /// What the intermediaries still hold back of each open connection's response at `now` (the
    /// run's end): one `lb-holding` step per hop and connection, in connection order, the hops
    /// from the client's side. A held head counts from the exchange's start, a buffer from its
    /// first frame, a held tail from its arrival.
    pub fn holding(&self, now: Instant) -> Vec<StepKind> {
        let mut out = Vec::new();
        for (conn, p) in &self.conns {
            for (hop, frames, held_us) in self.held_back(p, now) {
                out.push(StepKind::LbHolding { conn: *conn, frames, held_us, hop });
            }
        }
        out
    }

    /// What each intermediary holds back of `p`'s response at `now`: per hop that holds any, from
    /// the client's side, its label, how many frames, and for how long the first. A held head
    /// counts from the exchange's start, a buffer from its first frame, a held tail from its
    /// arrival.
    fn held_back(&self, p: &Proxied, now: Instant) -> Vec<(Option<u32>, u32, u64)> {
        let mut out = Vec::new();
        for (hop, at) in p.at.iter().enumerate() {
            let frames = at.held.len() + at.buffer.len() + usize::from(at.tail.is_some());
            if frames == 0 {
                continue;
            }
            let since = [
                (!at.held.is_empty()).then_some(p.opened),
                at.buffered_since,
                at.tail.as_ref().map(|(since, _)| *since),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now);
            out.push((self.label(hop), frames as u32, micros(now - since)));
        }
        out
    }

    /// `conn` goes with whatever the intermediaries still hold back of its response: one
    /// `lb-discarded` step per hop that holds any, from the client's side.
    fn discard(&mut self, now: Instant, conn: ConnId) {
        let Some(p) = self.conns.get(&conn) else { return };
        for (hop, frames, held_us) in self.held_back(p, now) {
            self.outputs.push_back(LbOutput::Record(StepKind::LbDiscarded { conn, frames, held_us, hop }));
        }
    }

    /// The network reset `conn` (a fault, not either side's close): what the intermediaries held
    /// back of its response goes with it; the chain forgets it.
    pub fn handle_reset(&mut self, now: Instant, conn: ConnId) {
        self.discard(now, conn);
        self.handle_close(now, conn);
    }

    /// One side closed `conn`; the chain forgets it.
    pub fn handle_close(&mut self, _now: Instant, conn: ConnId) {
        self.conns.remove(&conn);
        self.refresh(conn);
    }

    /// Carries out what is due: cuts of connections past a lifetime or silent for an idle
    /// timeout, first-byte timeouts, buffer flushes; the intermediary nearest the client first.
    pub fn handle_timeout(&mut self, now: Instant) {
        // Only the connections the timer table says are due, in connection order as a scan of
        // every connection would meet them.
        for conn in self.timers.due_by(now) {
            while let Some((_, hop, due)) = self.next_due(conn).filter(|(at, ..)| *at <= now) {
                if !self.carry_out(now, conn, hop, due) {
                    break;
                }
            }
            self.refresh(conn);
        }
    }

    /// Does what is due at `hop` on `conn`; false once the connection is gone.
    fn carry_out(&mut self, now: Instant, conn: ConnId, hop: usize, due: Due) -> bool {
        let Some(p) = self.conns.get(&conn) else { return false };
        let config = &self.chain[hop];
        let label = self.label(hop);
        // Between two exchanges there is no upstream to keep.
        let keep_upstream = config.cut_mode == CutMode::ClientSide && !p.between;
        let mut records = Vec::new();
        // Both due (a late timer): the lifetime names the cut.
        let lifetime_due = !p.between && config.max_lifetime.is_some_and(|l| p.opened + l <= now);
        let due = if due == Due::Idle && lifetime_due { Due::Lifetime } else { due };
        let answer = match due {
            Due::Flush => {
                let Some(p) = self.conns.get_mut(&conn) else { return false };
                let at = &mut p.at[hop];
                let released = std::mem::take(&mut at.buffer);
                let since = at.buffered_since.take().unwrap_or(now);
                let flushed = StepKind::LbFlushed {
                    conn,
                    frames: released.len() as u32,
                    held_us: micros(now - since),
                    hop: label,
                };
                self.outputs.push_back(LbOutput::Record(flushed));
                let out = match hop {
                    0 => released,
                    _ => self.carry(now, conn, hop - 1, released),
                };
                if !out.is_empty() {
                    self.outputs.push_back(LbOutput::Deliver { conn, bytes: concat(out) });
                }
                return true;
            }
            Due::FirstByte => {
                records.push(StepKind::LbTimedOut { conn, waited_us: micros(now - p.opened), hop: label });
                Some(Status(config.timeout_status))
            }
            Due::Lifetime => {
                records.push(StepKind::LbLifetimeCut { conn, age_us: micros(now - p.opened), hop: label });
                self.held_head(p, hop)
            }
            Due::Idle => {
                records.push(StepKind::LbIdleCut { conn, idle_us: micros(now - p.at[hop].last_bytes), hop: label });
                self.held_head(p, hop)
            }
        };
        if keep_upstream {
            records.push(StepKind::LbUpstreamKept { conn, hop: label });
        }
        // A hop that buffers the head with the body (`buffer_head`, nginx forced to buffer),
        // at or in front of the one that cuts, and released nothing yet, sends the head alone,
        // then closes without the last chunk; what body it held is lost (measured on nginx
        // 1.22.1 with proxy_read_timeout: docs/reality.md, 'Proxies'). Sent on through the hops
        // in front, as any frame it releases.
        let head = match (due, answer) {
            (Due::Idle | Due::Lifetime, None) => self.take_buffered_head(conn, hop),
            _ => None,
        };
        if let Some((at_hop, since, head)) = head {
            let hop = self.label(at_hop);
            records.push(StepKind::LbFlushed { conn, frames: 1, held_us: micros(now - since), hop });
            self.outputs.extend(records.drain(..).map(LbOutput::Record));
            let out = match at_hop {
                0 => vec![head],
                _ => self.carry(now, conn, at_hop - 1, vec![head]),
            };
            if !out.is_empty() {
                self.outputs.push_back(LbOutput::Deliver { conn, bytes: concat(out) });
            }
        }
        if let Some(status) = answer {
            // A hop behind the one that cut holds the head: the one in front answers 502.
            records.push(StepKind::LbAnswered { conn, status, hop: label });
        }
        self.outputs.extend(records.into_iter().map(LbOutput::Record));
        self.discard(now, conn);
        self.conns.remove(&conn);
        self.outputs.push_back(LbOutput::Cut { conn, keep_upstream, answer });
        false
    }

    /// The response head that an intermediary at or in front of `hop` holds in its buffer on
    /// `conn`, taken out: which one, when it began to buffer, and the head. The body frames
    /// buffered with it stay, to be lost with the cut.
    fn take_buffered_head(&mut self, conn: ConnId, hop: usize) -> Option<(usize, Instant, (FrameKind, Vec<u8>))> {
        let p = self.conns.get_mut(&conn)?;
        let (at_hop, at) = p.at[..=hop]
            .iter_mut()
            .enumerate()
            .rev()
            .find(|(_, a)| a.buffer.iter().any(|(k, _)| *k == FrameKind::Head))?;
        let i = at.buffer.iter().position(|(k, _)| *k == FrameKind::Head)?;
        Some((at_hop, at.buffered_since.unwrap_or(Instant::ZERO), at.buffer.remove(i)))
    }

    /// 502 when an intermediary at or in front of `hop` holds `p`'s response head (the client
    /// got no status yet and will get no body).
    fn held_head(&self, p: &Proxied, hop: usize) -> Option<Status> {
        p.at[..=hop].iter().any(|a| !a.held.is_empty()).then_some(Status::BAD_GATEWAY)
    }

    /// What is next due on `conn`: when, where, and what.
    fn next_due(&self, conn: ConnId) -> Option<(Instant, usize, Due)> {
        let p = self.conns.get(&conn)?;
        let mut best: Option<(Instant, usize, Due)> = None;
        for (hop, (config, at)) in self.chain.iter().zip(&p.at).enumerate() {
            if p.between {
                // Kept alive with no request on it: nothing but silence can be due, by the hop's
                // rule between exchanges (its idle timeout unless `keep_alive_timeout` says).
                let between = config.keep_alive_timeout.between(config.idle_timeout);
                if let Some(when) = between.map(|i| at.last_bytes + i) {
                    if best.is_none_or(|(b, bh, bd)| (when, hop, Due::Idle) < (b, bh, bd)) {
                        best = Some((when, hop, Due::Idle));
                    }
                }
                continue;
            }
            let candidates = [
                config.max_lifetime.map(|l| (p.opened + l, Due::Lifetime)),
                config.idle_timeout.map(|i| (at.last_bytes + i, Due::Idle)),
                config.first_byte_timeout.filter(|_| !at.headed).map(|t| (p.opened + t, Due::FirstByte)),
                config.flush_interval.zip(at.buffered_since).map(|(f, since)| (since + f, Due::Flush)),
            ];
            for (when, due) in candidates.into_iter().flatten() {
                // Earliest first; at one instant the hop nearest the client, a cut before a flush.
                if best.is_none_or(|(b, bh, bd)| (when, hop, due) < (b, bh, bd)) {
                    best = Some((when, hop, due));
                }
            }
        }
        best
    }

    /// When the next thing is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let earliest = self.timers.first().map(|(at, _)| at);
        debug_assert_eq!(
            earliest,
            self.conns.keys().filter_map(|c| self.next_due(*c)).map(|(at, ..)| at).min(),
            "the timer table is refreshed after every change to a connection"
        );
        earliest
    }

    /// Intermediary `hop` fails (a fault): every connection through it goes. With `restart`,
    /// the intermediary in front of it answers 502 where it had passed no response head yet (its
    /// upstream went away mid-request), and a restarted balancer forgets its sticky sessions.
    /// Returns whether `hop` names an intermediary.
    pub fn fail_hop(&mut self, now: Instant, hop: usize, restart: bool) -> bool {
        if hop >= self.chain.len() {
            return false;
        }
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for conn in conns {
            self.discard(now, conn);
            let Some(p) = self.conns.remove(&conn) else { continue };
            self.refresh(conn);
            let answer = (restart && hop > 0 && !p.at[hop - 1].headed).then_some(Status::BAD_GATEWAY);
            if let Some(status) = answer {
                let label = self.label(hop - 1);
                self.outputs.push_back(LbOutput::Record(StepKind::LbAnswered { conn, status, hop: label }));
            }
            self.outputs.push_back(LbOutput::Cut { conn, keep_upstream: false, answer });
        }
        if restart && hop == self.own() {
            self.sessions.clear();
        }
        true
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

fn concat(frames: Frames) -> Vec<u8> {
    frames.into_iter().flat_map(|(_, b)| b).collect()
}

/// The first of `available` (sorted, not empty) at or after replica `from`, wrapping around.
fn next_from(available: &[Backend], from: u32) -> Backend {
    available.iter().find(|b| b.0 >= from).or_else(|| available.first()).copied().expect("available is not empty")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{KeepAliveIdle, ReplicaStore};
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

    /// A balancer with a 60 s idle timeout and a 100 s lifetime, connection 1 open at 0 s.
    fn idle_60_lifetime_100() -> LoadBalancer {
        let config = LbConfig {
            idle_timeout: Some(Duration::from_secs(60)),
            max_lifetime: Some(Duration::from_secs(100)),
            ..LbConfig::default()
        };
        let mut lb = LoadBalancer::new(config);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb
    }

    /// What a cut of connection 1 that drops its upstream outputs: its record, then the cut.
    fn cut_1(record: StepKind) -> Vec<LbOutput> {
        vec![LbOutput::Record(record), LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }]
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
    fn a_kept_alive_connection_between_requests_is_cut_only_by_silence() {
        let hop = HopConfig {
            max_lifetime: Some(Duration::from_secs(100)),
            first_byte_timeout: Some(Duration::from_secs(30)),
            ..HopConfig::default()
        };
        let config = LbConfig { idle_timeout: Some(Duration::from_secs(60)), hops: vec![hop], ..LbConfig::default() };
        let mut lb = LoadBalancer::new(config);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_response(secs(1), ConnId(1), vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
        // The response is complete at 1 s: no first-byte timeout, no lifetime, only the 60 s idle clock.
        lb.handle_response_end(secs(1), ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(61)));
        lb.handle_timeout(secs(60));
        assert!(drain(&mut lb).is_empty());
        // A request at 60 s: the per-response clocks start again from it (first byte by 90 s).
        lb.handle_request(secs(60), ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(90)));
        lb.handle_response(secs(61), ConnId(1), vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
        lb.handle_response_end(secs(61), ConnId(1));
        lb.handle_timeout(secs(121));
        let out = drain(&mut lb);
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }), "{out:?}");
        assert!(matches!(out[0], LbOutput::Record(StepKind::LbIdleCut { idle_us: 60_000_000, hop: Some(1), .. })));
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
                LbOutput::Record(StepKind::LbLifetimeCut { conn: ConnId(1), age_us: 100_000_000, hop: None }),
                LbOutput::Record(StepKind::LbUpstreamKept { conn: ConnId(1), hop: None }),
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
        assert!(lb.handle_response(Instant::ZERO, ConnId(1), head()).is_empty());
        assert!(lb.handle_response(Instant::ZERO, ConnId(2), head()).is_empty());
        assert_eq!(lb.handle_response(secs(1), ConnId(2), body(1)), [b"H".as_slice(), b"e"].concat());
        lb.handle_timeout(secs(125));
        let out = drain(&mut lb);
        let bad = Some(Status::BAD_GATEWAY);
        assert!(out.contains(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: bad }));
        assert!(out.contains(&LbOutput::Cut { conn: ConnId(2), keep_upstream: false, answer: None }));
        let answered =
            LbOutput::Record(StepKind::LbAnswered { conn: ConnId(1), status: Status::BAD_GATEWAY, hop: None });
        assert!(out.contains(&answered));
        // Without hold_headers nothing is held.
        let mut lb =
            LoadBalancer::new(LbConfig { max_lifetime: Some(Duration::from_secs(125)), ..LbConfig::default() });
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(1), head()), b"H");
        lb.handle_timeout(secs(125));
        assert!(drain(&mut lb).contains(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }));
    }

    fn head() -> Frames {
        vec![(FrameKind::Head, b"H".to_vec())]
    }

    fn body(n: usize) -> Frames {
        vec![(FrameKind::Body, b"e".to_vec()); n]
    }

    fn chain(hops: Vec<HopConfig>, idle: u64) -> LoadBalancer {
        LoadBalancer::new(LbConfig { idle_timeout: Some(Duration::from_secs(idle)), hops, ..LbConfig::default() })
    }

    #[test]
    fn each_hop_cuts_by_its_own_clock_and_names_itself() {
        // A CDN with a 100 s lifetime in front of a balancer with a 60 s idle timeout.
        let cdn = HopConfig { max_lifetime: Some(Duration::from_secs(100)), ..HopConfig::default() };
        let mut lb = chain(vec![cdn.clone()], 60);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(60)));
        lb.handle_timeout(secs(60));
        let idle = StepKind::LbIdleCut { conn: ConnId(1), idle_us: 60_000_000, hop: Some(1) };
        assert_eq!(drain(&mut lb)[0], LbOutput::Record(idle));
        // Busy, the same connection lives until the CDN's lifetime.
        let mut lb = chain(vec![cdn], 60);
        lb.handle_open(Instant::ZERO, ConnId(1));
        for s in (10..=100).step_by(10) {
            let _ = lb.handle_response(secs(s), ConnId(1), body(1));
        }
        assert_eq!(lb.poll_timeout(), Some(secs(100)));
        lb.handle_timeout(secs(100));
        let cut = StepKind::LbLifetimeCut { conn: ConnId(1), age_us: 100_000_000, hop: Some(0) };
        assert_eq!(drain(&mut lb)[0], LbOutput::Record(cut));
    }

    #[test]
    fn a_hop_that_ignores_comments_cuts_a_stream_kept_alive_by_them() {
        let strict =
            HopConfig { idle_timeout: Some(Duration::from_secs(30)), comments_count: false, ..HopConfig::default() };
        let mut lb = chain(vec![strict], 60);
        lb.handle_open(Instant::ZERO, ConnId(1));
        for s in (10..=30).step_by(10) {
            let comment = vec![(FrameKind::Comment, b":".to_vec())];
            assert_eq!(lb.handle_response(secs(s), ConnId(1), comment), b":");
            lb.handle_timeout(secs(s));
        }
        let out = drain(&mut lb);
        assert!(matches!(out[0], LbOutput::Record(StepKind::LbIdleCut { hop: Some(0), .. })), "{out:?}");
    }

    #[test]
    fn a_buffering_hop_releases_by_size_by_interval_and_at_the_end() {
        let buffering =
            HopConfig { buffer: Some(3), flush_interval: Some(Duration::from_secs(10)), ..HopConfig::default() };
        let mut lb = chain(vec![buffering], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        // The head passes; body frames wait.
        let mut first = head();
        first.extend(body(1));
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(1), first), b"H");
        assert!(lb.handle_response(secs(1), ConnId(1), body(1)).is_empty());
        // The third byte reaches the threshold: all three go at once.
        assert_eq!(lb.handle_response(secs(2), ConnId(1), body(1)), b"eee");
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 3, held_us: 2_000_000, hop: Some(0) };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(flushed)]);
        // One more waits for the interval.
        assert!(lb.handle_response(secs(3), ConnId(1), body(1)).is_empty());
        assert_eq!(lb.poll_timeout(), Some(secs(13)));
        lb.handle_timeout(secs(13));
        let out = drain(&mut lb);
        assert_eq!(out.last(), Some(&LbOutput::Deliver { conn: ConnId(1), bytes: b"e".to_vec() }));
        // The end of the response releases at once.
        assert!(lb.handle_response(secs(14), ConnId(1), body(1)).is_empty());
        assert_eq!(lb.handle_response(secs(15), ConnId(1), vec![(FrameKind::End, b"$".to_vec())]), b"e$");
    }

    #[test]
    fn a_hop_buffering_its_head_sends_it_with_the_first_release_only() {
        // nginx with proxy_buffering forced on (docs/reality.md, 'Proxies'): the head waits in
        // the buffer with the body until the size threshold or the end of the response.
        let nginx = HopConfig { buffer: Some(4), buffer_head: true, ..HopConfig::default() };
        let mut lb = chain(vec![nginx], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert!(lb.handle_response(Instant::ZERO, ConnId(1), head()).is_empty());
        assert!(lb.handle_response(secs(1), ConnId(1), body(1)).is_empty());
        assert!(lb.handle_response(secs(2), ConnId(1), body(1)).is_empty());
        // Head and three body bytes reach the threshold: they go together.
        assert_eq!(lb.handle_response(secs(3), ConnId(1), body(1)), b"Heee");
        // A small response is held whole until its end.
        lb.handle_response_end(secs(4), ConnId(1));
        lb.handle_request(secs(5), ConnId(1));
        assert!(lb.handle_response(secs(5), ConnId(1), head()).is_empty());
        assert!(lb.handle_response(secs(6), ConnId(1), body(1)).is_empty());
        assert_eq!(lb.handle_response(secs(7), ConnId(1), vec![(FrameKind::End, b"$".to_vec())]), b"He$");
    }

    #[test]
    fn a_hop_buffering_its_head_that_times_out_sends_the_head_alone_and_loses_the_body() {
        // nginx 1.22.1, proxy_buffering forced, proxy_read_timeout 3s: a head and three small
        // events held in the buffer; 3 s of silence; the client gets `200` and its headers,
        // none of the events, and a close without the last chunk (docs/reality.md, 'Proxies').
        let nginx = HopConfig {
            buffer: Some(4096),
            buffer_head: true,
            idle_timeout: Some(Duration::from_secs(3)),
            ..HopConfig::default()
        };
        // Behind a plain hop, which passes the head on.
        let mut lb = chain(vec![HopConfig::default(), nginx.clone()], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(body(3));
        assert!(lb.handle_response(Instant::ZERO, ConnId(1), first).is_empty());
        lb.handle_timeout(secs(3));
        let out = drain(&mut lb);
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 1, held_us: 3_000_000, hop: Some(1) };
        assert!(out.contains(&LbOutput::Record(flushed)), "{out:?}");
        let delivered: Vec<_> = out.iter().filter(|o| matches!(o, LbOutput::Deliver { .. })).collect();
        assert_eq!(delivered, vec![&LbOutput::Deliver { conn: ConnId(1), bytes: b"H".to_vec() }]);
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }));
        // A head already released: what stays in the buffer is lost, nothing more is sent.
        let mut lb = chain(vec![HopConfig { buffer: Some(2), ..nginx }], 600);
        lb.handle_open(Instant::ZERO, ConnId(2));
        let mut first = head();
        first.extend(body(1));
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(2), first), b"He");
        assert!(lb.handle_response(secs(1), ConnId(2), body(1)).is_empty());
        lb.handle_timeout(secs(4));
        let out = drain(&mut lb);
        assert!(!out.iter().any(|o| matches!(o, LbOutput::Deliver { .. })), "{out:?}");
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(2), keep_upstream: false, answer: None }));
    }

    #[test]
    fn a_read_timeout_of_open_responses_leaves_kept_alive_connections_to_the_keep_alive_timeout() {
        // nginx: proxy_read_timeout cuts a silent open response, keepalive_timeout an idle
        // kept-alive client connection (docs/reality.md, 'Proxies').
        let config = LbConfig {
            idle_timeout: Some(Duration::from_secs(3)),
            keep_alive_timeout: KeepAliveIdle::After(Duration::from_secs(75)),
            ..LbConfig::default()
        };
        let mut lb = LoadBalancer::new(config);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_response(secs(1), ConnId(1), vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
        lb.handle_response_end(secs(1), ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(76)));
        lb.handle_timeout(secs(10));
        assert!(drain(&mut lb).is_empty());
        // An open response silent for 3 s is cut.
        lb.handle_request(secs(10), ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(13)));
        lb.handle_timeout(secs(13));
        let out = drain(&mut lb);
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }));
        // `none`: never cut between exchanges.
        let never = HopConfig {
            idle_timeout: Some(Duration::from_secs(3)),
            keep_alive_timeout: KeepAliveIdle::Never,
            ..HopConfig::default()
        };
        let mut lb = chain(vec![never], 600);
        lb.handle_open(Instant::ZERO, ConnId(2));
        lb.handle_response_end(secs(1), ConnId(2));
        assert_eq!(lb.poll_timeout(), Some(secs(601)));
    }

    #[test]
    fn a_first_byte_timeout_answers_its_status_and_restarting_a_hop_makes_the_one_in_front_answer() {
        let cf = HopConfig {
            first_byte_timeout: Some(Duration::from_secs(100)),
            timeout_status: 524,
            ..HopConfig::default()
        };
        let mut lb = chain(vec![cf.clone()], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_open(Instant::ZERO, ConnId(2));
        let _ = lb.handle_response(secs(5), ConnId(2), head());
        lb.handle_timeout(secs(100));
        let out = drain(&mut lb);
        assert!(out.contains(&LbOutput::Record(StepKind::LbTimedOut {
            conn: ConnId(1),
            waited_us: 100_000_000,
            hop: Some(0)
        })));
        assert!(out.contains(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: Some(Status(524)) }));
        assert_eq!(lb.open_connections(), 1, "the answered connection is not timed out");
        // The balancer (hop 1) restarts: hop 0 answers 502 where no head came through.
        lb.handle_open(secs(101), ConnId(3));
        assert!(lb.fail_hop(secs(101), 1, true));
        let out = drain(&mut lb);
        assert!(out.contains(&LbOutput::Cut { conn: ConnId(2), keep_upstream: false, answer: None }));
        assert!(out.contains(&LbOutput::Cut {
            conn: ConnId(3),
            keep_upstream: false,
            answer: Some(Status::BAD_GATEWAY)
        }));
        assert!(!lb.fail_hop(secs(101), 2, false));
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

    #[test]
    fn a_hop_holding_its_tail_lags_one_frame_flushes_at_the_end_and_a_cut_loses_the_tail() {
        let gzip = HopConfig { hold_tail: true, ..HopConfig::default() };
        let mut lb = chain(vec![gzip], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(vec![(FrameKind::Body, b"a".to_vec()), (FrameKind::Body, b"b".to_vec())]);
        // The head and every frame but the last go on; the last waits for the next.
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(1), first), b"Ha");
        assert!(!drain(&mut lb).iter().any(|o| matches!(o, LbOutput::Record(StepKind::LbFlushed { .. }))));
        // Were the run to end now, the tail would be what the hop still holds.
        let holding = StepKind::LbHolding { conn: ConnId(1), frames: 1, held_us: 500_000, hop: Some(0) };
        assert_eq!(lb.holding(Instant(500_000)), vec![holding]);
        assert_eq!(lb.handle_response(secs(1), ConnId(1), vec![(FrameKind::Comment, b":".to_vec())]), b"b");
        // What was held back, and for how long, is recorded as a buffer's release is.
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 1, held_us: 1_000_000, hop: Some(0) };
        assert!(drain(&mut lb).contains(&LbOutput::Record(flushed)));
        // The end pushes the tail out with it.
        assert_eq!(lb.handle_response(secs(2), ConnId(1), vec![(FrameKind::End, b"$".to_vec())]), b":$");
        // A cut while a tail is held loses it.
        lb.handle_open(secs(3), ConnId(2));
        let mut burst = head();
        burst.extend(body(3));
        assert_eq!(lb.handle_response(secs(3), ConnId(2), burst), b"Hee");
        assert!(lb.fail_hop(secs(3), 0, false));
        assert!(drain(&mut lb).contains(&LbOutput::Cut { conn: ConnId(2), keep_upstream: false, answer: None }));
        // Without hold_tail everything passes at once.
        let mut plain = chain(vec![HopConfig::default()], 600);
        plain.handle_open(Instant::ZERO, ConnId(1));
        let mut frames = head();
        frames.extend(body(2));
        assert_eq!(plain.handle_response(Instant::ZERO, ConnId(1), frames), b"Hee");
    }

    #[test]
    fn an_answering_hop_answers_every_new_request_itself_until_it_stops() {
        let mut lb = chain(vec![HopConfig::default()], 600);
        assert!(lb.set_answering(1, Some(Status::UNAVAILABLE)));
        assert!(lb.set_answering(0, Some(Status::NOT_FOUND)));
        assert!(!lb.set_answering(2, Some(Status::NOT_FOUND)));
        // The hop nearest the client answers first.
        assert_eq!(lb.route(ConnId(1), None, 0), Route::Answer(Status::NOT_FOUND));
        let answered = StepKind::LbAnswered { conn: ConnId(1), status: Status::NOT_FOUND, hop: Some(0) };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(answered)]);
        assert!(lb.set_answering(0, None));
        assert_eq!(lb.route(ConnId(2), None, 0), Route::Answer(Status::UNAVAILABLE));
        let _ = drain(&mut lb);
        assert!(lb.set_answering(1, None));
        assert_eq!(lb.route(ConnId(3), None, 0), Route::To(Backend(0)));
        assert!(drain(&mut lb).is_empty());
    }

    fn replica(r: Route) -> u32 {
        match r {
            Route::To(b) => b.0,
            Route::Answer(s) => panic!("answered {s:?}"),
        }
    }

    #[test]
    fn a_holder_outside_the_fleet_is_routed_as_any_request() {
        let mut lb = replicated(2, Routing::RoundRobin);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.route_to_holder(ConnId(1), Backend(1), None, 0), Route::To(Backend(1)));
        // Recorded as any routing choice among several replicas.
        let routed = StepKind::LbRouted { conn: ConnId(1), replica: 1, session: None, hop: None };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(routed)]);
        // Replica 2 of two does not exist (the fleet shrank): routed by the rule, to one that does.
        match lb.route_to_holder(ConnId(1), Backend(2), None, 0) {
            Route::To(b) => assert!(b.0 < 2, "{b:?}"),
            other => panic!("{other:?}"),
        }
        // In front of one replica there is no routing to record.
        let mut one = LoadBalancer::new(LbConfig::default());
        one.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(one.route_to_holder(ConnId(1), Backend(0), None, 0), Route::To(Backend(0)));
        assert!(drain(&mut one).is_empty());
    }

    #[test]
    fn an_unreachable_replica_is_answered_502_and_recorded_only_in_front_of_several() {
        let mut one = lb(None);
        assert_eq!(one.handle_unreachable(ConnId(1)), Status::BAD_GATEWAY);
        assert!(drain(&mut one).is_empty(), "one replica, no hops: nothing to name");
        let mut two = replicated(2, Routing::RoundRobin);
        assert_eq!(two.handle_unreachable(ConnId(1)), Status::BAD_GATEWAY);
        assert!(matches!(
            &drain(&mut two)[..],
            [LbOutput::Record(StepKind::LbAnswered { status: Status::BAD_GATEWAY, .. })]
        ));
    }

    #[test]
    fn frame_kinds_are_needed_when_any_hop_ignores_comments_buffers_or_holds_its_tail() {
        // Hops that count comments and pass frames at once treat every body frame alike.
        assert!(!chain(vec![HopConfig::default(), HopConfig::default()], 60).needs_frame_kinds());
        let ignores_comments = HopConfig { comments_count: false, ..HopConfig::default() };
        let by_size = HopConfig { buffer: Some(3), ..HopConfig::default() };
        let by_interval = HopConfig { flush_interval: Some(Duration::from_secs(10)), ..HopConfig::default() };
        let holds_tail = HopConfig { hold_tail: true, ..HopConfig::default() };
        for hop in [ignores_comments, by_size, by_interval, holds_tail] {
            // Alone, or behind a plain hop: one such hop is enough.
            assert!(chain(vec![hop.clone()], 60).needs_frame_kinds(), "{hop:?}");
            assert!(chain(vec![HopConfig::default(), hop.clone()], 60).needs_frame_kinds(), "{hop:?}");
        }
    }

    #[test]
    fn only_sticky_session_routing_over_several_replicas_reads_and_records_the_session() {
        let s = SessionId("1-1".into());
        // Round robin does not route by the session: its choice is recorded without it.
        let mut lb = replicated(2, Routing::RoundRobin);
        assert!(!lb.routes_by_session());
        assert_eq!(lb.route(ConnId(1), Some(&s), 0), Route::To(Backend(0)));
        let routed = StepKind::LbRouted { conn: ConnId(1), replica: 0, session: None, hop: None };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(routed)]);
        // One replica has nothing to choose: no need to read the session.
        assert!(!replicated(1, Routing::StickySession).routes_by_session());
        // Sticky sessions over two: the session is read and recorded with the choice.
        let mut sticky = replicated(2, Routing::StickySession);
        assert_eq!(sticky.route(ConnId(1), Some(&s), 0), Route::To(Backend(0)));
        let routed = StepKind::LbRouted { conn: ConnId(1), replica: 0, session: Some(s), hop: None };
        assert_eq!(drain(&mut sticky), vec![LbOutput::Record(routed)]);
    }

    #[test]
    fn a_preferred_replica_that_is_draining_gets_no_new_request_the_next_one_in_turn_does() {
        // Sticky sessions: the session's replica drains, its requests go to the next one.
        let mut lb = replicated(3, Routing::StickySession);
        let s = SessionId("1-1".into());
        lb.handle_session(s.clone(), Backend(1));
        lb.set_draining(Backend(1), true);
        assert_eq!(lb.route(ConnId(1), Some(&s), 0), Route::To(Backend(2)));
        lb.set_draining(Backend(1), false);
        assert_eq!(lb.route(ConnId(2), Some(&s), 0), Route::To(Backend(1)));
        // Sticky clients: client 5 of three replicas belongs on replica 2; drained, it wraps to 0.
        let mut lb = replicated(3, Routing::StickyClient);
        assert_eq!(lb.route(ConnId(1), None, 5), Route::To(Backend(2)));
        lb.set_draining(Backend(2), true);
        assert_eq!(lb.route(ConnId(2), None, 5), Route::To(Backend(0)));
    }

    #[test]
    fn a_restarted_balancer_forgets_its_sticky_sessions_a_restarted_hop_in_front_does_not() {
        let config = LbConfig {
            replicas: 2,
            routing: Routing::StickySession,
            store: ReplicaStore::Local,
            hops: vec![HopConfig::default()],
            ..LbConfig::default()
        };
        let mut lb = LoadBalancer::with_seed(config, 7);
        let s = SessionId("1-1".into());
        lb.handle_session(s.clone(), Backend(1));
        // The CDN in front restarts, and the balancer fails without restarting: still sticky.
        assert!(lb.fail_hop(Instant::ZERO, 0, true));
        assert!(lb.fail_hop(Instant::ZERO, 1, false));
        assert_eq!(lb.route(ConnId(1), Some(&s), 0), Route::To(Backend(1)));
        // The balancer itself restarts: the session is routed as a new one, by turn.
        assert!(lb.fail_hop(Instant::ZERO, 1, true));
        assert_eq!(lb.route(ConnId(2), Some(&s), 0), Route::To(Backend(0)));
    }

    #[test]
    fn a_connection_passes_every_hop_and_then_the_balancer() {
        assert_eq!(lb(None).chain_len(), 1, "the balancer alone");
        let cdn = HopConfig { max_lifetime: Some(Duration::from_secs(100)), ..HopConfig::default() };
        assert_eq!(chain(vec![cdn.clone(), HopConfig::default()], 60).chain_len(), 3);
        // The last of the chain is the balancer: a hop index past it names no intermediary.
        let mut lb = chain(vec![cdn], 60);
        assert!(lb.set_answering(lb.chain_len() - 1, Some(Status::UNAVAILABLE)));
        assert!(!lb.set_answering(lb.chain_len(), Some(Status::UNAVAILABLE)));
    }

    #[test]
    fn a_buffering_hop_behind_another_flushes_through_the_hops_in_front_to_the_client() {
        let buffering = HopConfig { flush_interval: Some(Duration::from_secs(10)), ..HopConfig::default() };
        let mut lb = chain(vec![HopConfig::default(), buffering], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(body(1));
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(1), first), b"H");
        assert_eq!(lb.poll_timeout(), Some(secs(10)));
        lb.handle_timeout(secs(10));
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 1, held_us: 10_000_000, hop: Some(1) };
        let delivered = LbOutput::Deliver { conn: ConnId(1), bytes: b"e".to_vec() };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(flushed), delivered]);
        // Nothing is left held: only the idle timeouts remain.
        assert_eq!(lb.poll_timeout(), Some(secs(600)));
    }

    #[test]
    fn an_unreachable_single_replica_behind_hops_is_answered_502_by_the_balancer_and_recorded() {
        let mut lb = chain(vec![HopConfig::default()], 60);
        assert_eq!(lb.handle_unreachable(ConnId(1)), Status::BAD_GATEWAY);
        let answered = StepKind::LbAnswered { conn: ConnId(1), status: Status::BAD_GATEWAY, hop: Some(1) };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(answered)]);
    }

    #[test]
    fn the_replicas_end_releases_everything_held_the_oldest_first() {
        // hop 1 releases by two frames into hop 0, which holds up to 100 bytes.
        let near = HopConfig { buffer: Some(100), ..HopConfig::default() };
        let far = HopConfig { buffer: Some(2), flush_interval: Some(Duration::from_secs(10)), ..HopConfig::default() };
        let mut lb = chain(vec![near, far], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(1), head()), b"H");
        for (s, byte) in [(1, b"a"), (2, b"b"), (3, b"c")] {
            assert!(lb.handle_response(secs(s), ConnId(1), vec![(FrameKind::Body, byte.to_vec())]).is_empty());
        }
        // `a` and `b` wait in hop 0, `c` in hop 1 (to be flushed at 13 s).
        assert_eq!(lb.poll_timeout(), Some(secs(13)));
        assert_eq!(lb.handle_upstream_end(ConnId(1)), b"abc");
        // Nothing is left to flush: only the balancer's idle timeout remains.
        assert_eq!(lb.poll_timeout(), Some(secs(603)));
        assert!(lb.handle_upstream_end(ConnId(1)).is_empty());
        assert!(lb.handle_upstream_end(ConnId(2)).is_empty(), "no such connection");
    }

    #[test]
    fn a_closed_connection_is_forgotten_and_none_of_its_timeouts_fire() {
        let mut lb = chain(vec![HopConfig::default()], 60);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_open(Instant::ZERO, ConnId(2));
        lb.handle_close(secs(1), ConnId(1));
        assert_eq!(lb.open_connections(), 1);
        lb.handle_close(secs(2), ConnId(2));
        assert_eq!(lb.open_connections(), 0);
        assert_eq!(lb.poll_timeout(), None);
        lb.handle_timeout(secs(600));
        assert!(drain(&mut lb).is_empty());
    }

    #[test]
    fn a_hop_buffering_its_head_cut_for_idleness_sends_the_head_alone_and_loses_the_body() {
        // nginx nearest the client, forced to buffer, with a 30 s read timeout.
        let nginx = HopConfig {
            buffer: Some(100),
            buffer_head: true,
            idle_timeout: Some(Duration::from_secs(30)),
            ..HopConfig::default()
        };
        let mut lb = chain(vec![nginx], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(body(1));
        assert!(lb.handle_response(Instant::ZERO, ConnId(1), first).is_empty());
        lb.handle_timeout(secs(30));
        let out = drain(&mut lb);
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 1, held_us: 30_000_000, hop: Some(0) };
        assert!(out.contains(&LbOutput::Record(flushed)), "{out:?}");
        assert!(out.contains(&LbOutput::Deliver { conn: ConnId(1), bytes: b"H".to_vec() }), "{out:?}");
        assert!(out.iter().any(|o| matches!(o, LbOutput::Cut { conn: ConnId(1), answer: None, .. })), "{out:?}");
    }

    #[test]
    fn a_hop_that_ignores_comments_still_counts_events_as_activity() {
        let strict =
            HopConfig { idle_timeout: Some(Duration::from_secs(30)), comments_count: false, ..HopConfig::default() };
        let mut lb = chain(vec![strict], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        for s in (10..=50).step_by(10) {
            assert_eq!(lb.handle_response(secs(s), ConnId(1), body(1)), b"e");
            lb.handle_timeout(secs(s));
        }
        assert!(drain(&mut lb).is_empty(), "events every 10 s keep a 30 s idle timeout away");
        assert_eq!(lb.poll_timeout(), Some(secs(80)));
    }

    #[test]
    fn a_restart_of_the_hop_nearest_the_client_cuts_its_connections_with_no_one_in_front_to_answer() {
        let mut lb = chain(vec![HopConfig::default()], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert!(lb.fail_hop(Instant::ZERO, 0, true));
        assert_eq!(drain(&mut lb), vec![LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }]);
        assert_eq!(lb.open_connections(), 0);
    }

    #[test]
    fn sticky_client_routing_sends_each_client_to_its_own_replica() {
        let mut lb = replicated(2, Routing::StickyClient);
        let routes: Vec<Route> = (0..4).map(|client| lb.route(ConnId(client + 1), None, client)).collect();
        let to = |b| Route::To(Backend(b));
        assert_eq!(routes, vec![to(0), to(1), to(0), to(1)]);
    }

    #[test]
    fn between_exchanges_the_hop_with_the_shortest_idle_timeout_cuts_a_kept_alive_connection() {
        // A CDN that drops idle connections after 30 s in front of a balancer that waits 60 s:
        // the kept-alive connection dies at the CDN's 30 s, not the balancer's 60 s.
        let cdn = HopConfig { idle_timeout: Some(Duration::from_secs(30)), ..HopConfig::default() };
        let mut lb = chain(vec![cdn], 60);
        lb.handle_open(Instant::ZERO, ConnId(1));
        lb.handle_response(secs(1), ConnId(1), vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
        lb.handle_response_end(secs(1), ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(31)));
        lb.handle_timeout(secs(31));
        let out = drain(&mut lb);
        let idle = StepKind::LbIdleCut { conn: ConnId(1), idle_us: 30_000_000, hop: Some(0) };
        assert_eq!(out.first(), Some(&LbOutput::Record(idle)), "{out:?}");
        assert_eq!(out.last(), Some(&LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None }));
        // The other way round: a patient CDN (120 s) in front of the 60 s balancer.
        let cdn = HopConfig { idle_timeout: Some(Duration::from_secs(120)), ..HopConfig::default() };
        let mut lb = chain(vec![cdn], 60);
        lb.handle_open(Instant::ZERO, ConnId(2));
        lb.handle_response(secs(1), ConnId(2), vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
        lb.handle_response_end(secs(1), ConnId(2));
        assert_eq!(lb.poll_timeout(), Some(secs(61)));
        lb.handle_timeout(secs(61));
        let idle = StepKind::LbIdleCut { conn: ConnId(2), idle_us: 60_000_000, hop: Some(1) };
        assert_eq!(drain(&mut lb).first(), Some(&LbOutput::Record(idle)));
    }

    #[test]
    fn a_502_for_a_restarted_hop_is_recorded_as_answered_by_the_hop_in_front() {
        // CDN (hop 0), proxy (hop 1), balancer (hop 2): the proxy restarts while a request waits
        // for its head, and the CDN in front answers 502 and is named for it.
        let mut lb = chain(vec![HopConfig::default(), HopConfig::default()], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert!(lb.fail_hop(Instant::ZERO, 1, true));
        let out = drain(&mut lb);
        let answered = StepKind::LbAnswered { conn: ConnId(1), status: Status::BAD_GATEWAY, hop: Some(0) };
        assert_eq!(
            out,
            vec![
                LbOutput::Record(answered),
                LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: Some(Status::BAD_GATEWAY) }
            ]
        );
    }

    #[test]
    fn a_timeout_carries_out_everything_due_by_then_a_flush_and_then_a_cut() {
        // A CDN buffering the body for 10 s in front of a balancer that cuts after 10 s of
        // silence: at 10 s the CDN flushes what it held, and the balancer cuts, in one timeout.
        let buffering =
            HopConfig { buffer: Some(100), flush_interval: Some(Duration::from_secs(10)), ..HopConfig::default() };
        let mut lb = chain(vec![buffering], 10);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(body(1));
        assert_eq!(lb.handle_response(Instant::ZERO, ConnId(1), first), b"H");
        assert_eq!(lb.poll_timeout(), Some(secs(10)));
        lb.handle_timeout(secs(10));
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 1, held_us: 10_000_000, hop: Some(0) };
        let idle = StepKind::LbIdleCut { conn: ConnId(1), idle_us: 10_000_000, hop: Some(1) };
        assert_eq!(
            drain(&mut lb),
            vec![
                LbOutput::Record(flushed),
                LbOutput::Deliver { conn: ConnId(1), bytes: b"e".to_vec() },
                LbOutput::Record(idle),
                LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None },
            ]
        );
        assert_eq!(lb.poll_timeout(), None);
    }

    #[test]
    fn a_kept_alive_connection_cut_for_silence_past_its_lifetime_is_an_idle_cut() {
        // The lifetime bounds a connection's exchanges; between them only silence cuts, and the
        // cut is named for it even when the connection is older than its lifetime by then.
        let mut lb = idle_60_lifetime_100();
        lb.handle_response(secs(50), ConnId(1), vec![(FrameKind::Head, vec![1]), (FrameKind::End, vec![2])]);
        lb.handle_response_end(secs(50), ConnId(1));
        assert_eq!(lb.poll_timeout(), Some(secs(110)));
        lb.handle_timeout(secs(110));
        assert_eq!(drain(&mut lb), cut_1(StepKind::LbIdleCut { conn: ConnId(1), idle_us: 60_000_000, hop: None }));
    }

    #[test]
    fn a_hop_buffering_a_head_that_came_alone_sends_it_when_cut_for_idleness() {
        // nginx forced to buffer, with a 30 s read timeout: a head and nothing after it.
        let nginx = HopConfig {
            buffer: Some(100),
            buffer_head: true,
            idle_timeout: Some(Duration::from_secs(30)),
            ..HopConfig::default()
        };
        let mut lb = chain(vec![nginx], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        assert!(lb.handle_response(Instant::ZERO, ConnId(1), head()).is_empty());
        lb.handle_timeout(secs(30));
        let idle = StepKind::LbIdleCut { conn: ConnId(1), idle_us: 30_000_000, hop: Some(0) };
        let flushed = StepKind::LbFlushed { conn: ConnId(1), frames: 1, held_us: 30_000_000, hop: Some(0) };
        assert_eq!(
            drain(&mut lb),
            vec![
                LbOutput::Record(idle),
                LbOutput::Record(flushed),
                LbOutput::Deliver { conn: ConnId(1), bytes: b"H".to_vec() },
                LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: None },
            ]
        );
    }

    #[test]
    fn a_restarted_hop_holding_the_head_in_its_buffer_is_answered_502_by_the_hop_in_front() {
        // A CDN (hop 0) in front of nginx buffering the head (hop 1): the head reached nginx
        // and went no further when nginx restarts, so the CDN, which passed nothing, answers 502.
        let nginx = HopConfig { buffer: Some(4096), buffer_head: true, ..HopConfig::default() };
        let mut lb = chain(vec![HopConfig::default(), nginx], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(body(1));
        assert!(lb.handle_response(Instant::ZERO, ConnId(1), first).is_empty());
        assert!(lb.fail_hop(secs(2), 1, true));
        let answered = StepKind::LbAnswered { conn: ConnId(1), status: Status::BAD_GATEWAY, hop: Some(0) };
        // What nginx held goes with the connection, and the step says so.
        let discarded = StepKind::LbDiscarded { conn: ConnId(1), frames: 2, held_us: 2_000_000, hop: Some(1) };
        assert_eq!(
            drain(&mut lb),
            vec![
                LbOutput::Record(discarded),
                LbOutput::Record(answered),
                LbOutput::Cut { conn: ConnId(1), keep_upstream: false, answer: Some(Status::BAD_GATEWAY) }
            ]
        );
    }

    /// A connection that goes while a hop still buffers part of its response (a cut by the
    /// hop's idle timeout, a reset by the network) takes the frames with it, and a step says so:
    /// without it a loss the buffering caused would read as nobody's.
    #[test]
    fn frames_a_hop_still_buffers_go_with_their_connection_and_a_step_says_so() {
        // A CDN buffering 4 KiB with no flush interval: the stream's small frames stay in it, no
        // byte reaches the client, and its idle timeout cuts the connection after 47 s.
        let cdn = HopConfig { buffer: Some(4096), idle_timeout: Some(Duration::from_secs(47)), ..HopConfig::default() };
        let mut lb = chain(vec![cdn.clone()], 600);
        lb.handle_open(Instant::ZERO, ConnId(1));
        let mut first = head();
        first.extend(body(2));
        // The head goes through; the body stays.
        assert_eq!(lb.handle_response(secs(1), ConnId(1), first), b"H");
        assert_eq!(lb.poll_timeout(), Some(secs(48)));
        lb.handle_timeout(secs(48));
        let out = drain(&mut lb);
        let discarded = StepKind::LbDiscarded { conn: ConnId(1), frames: 2, held_us: 47_000_000, hop: Some(0) };
        let at = out.iter().position(|o| *o == LbOutput::Record(discarded.clone()));
        let cut = out.iter().position(|o| matches!(o, LbOutput::Cut { conn: ConnId(1), .. }));
        assert!(matches!((at, cut), (Some(a), Some(c)) if a < c), "{out:?}");
        // A reset: the same, and the chain forgets the connection.
        let mut lb = chain(vec![cdn.clone()], 600);
        lb.handle_open(Instant::ZERO, ConnId(2));
        let mut first = head();
        first.extend(body(1));
        assert_eq!(lb.handle_response(secs(1), ConnId(2), first), b"H");
        lb.handle_reset(secs(4), ConnId(2));
        let discarded = StepKind::LbDiscarded { conn: ConnId(2), frames: 1, held_us: 3_000_000, hop: Some(0) };
        assert_eq!(drain(&mut lb), vec![LbOutput::Record(discarded)]);
        assert_eq!(lb.open_connections(), 0);
        // Nothing held, nothing recorded: a reset of a connection whose frames all went out.
        let mut lb = chain(vec![HopConfig::default()], 600);
        lb.handle_open(Instant::ZERO, ConnId(3));
        assert!(!lb.handle_response(secs(1), ConnId(3), head()).is_empty());
        lb.handle_reset(secs(4), ConnId(3));
        assert_eq!(drain(&mut lb), vec![]);
    }

    #[test]
    fn a_silent_connection_within_its_lifetime_is_cut_for_idleness() {
        let mut lb = idle_60_lifetime_100();
        assert_eq!(lb.poll_timeout(), Some(secs(60)));
        lb.handle_timeout(secs(60));
        assert_eq!(drain(&mut lb), cut_1(StepKind::LbIdleCut { conn: ConnId(1), idle_us: 60_000_000, hop: None }));
    }

    #[test]
    fn a_late_timer_that_finds_both_silence_and_the_lifetime_past_names_the_lifetime() {
        let mut lb = idle_60_lifetime_100();
        // The timer due at 60 s fires only at 120 s.
        lb.handle_timeout(secs(120));
        assert_eq!(drain(&mut lb), cut_1(StepKind::LbLifetimeCut { conn: ConnId(1), age_us: 120_000_000, hop: None }));
    }

    #[test]
    fn only_a_lone_balancer_holding_no_heads_passes_frames_untouched() {
        assert!(LoadBalancer::new(LbConfig::default()).is_transparent());
        let holding = LbConfig { hold_headers: true, ..LbConfig::default() };
        assert!(!LoadBalancer::new(holding).is_transparent());
        let behind_a_hop = LbConfig { hops: vec![HopConfig::default()], ..LbConfig::default() };
        assert!(!LoadBalancer::new(behind_a_hop).is_transparent());
    }
}
