//! The transport: the project's own connections between the machines, on madsim's executor and
//! clock, in place of madsim's simulated TCP.
//!
//! A connection is two pipes, one per direction. A pipe is a FIFO of writes: each flushed write
//! (one or more frames, see the sibling `net` module) gets a latency drawn from the run's seeded
//! network stream ([`SeedPurpose::Network`]) within `net.latency_min..latency_max`, and arrives at
//! `max(the previous write's arrival, now + latency)`, so a pipe never reorders. The reader is
//! woken once per write, by a timer on madsim's clock at its arrival; nothing else runs per write (madsim's TCP
//! bound a port, kept SipHash maps, and ran every message through a timer in an `async_stream`).
//!
//! - **Open.** [`Net::connect`] finds the listener bound at the address and queues the server's
//!   end for its [`Listener::accept`]; no listener (its node is down) or a partition across the
//!   edge is `ConnectionRefused`, at once.
//! - **Close.** Dropping a [`Stream`] closes both of its directions: the peer reads what is still
//!   in flight, then the end (as with madsim, a graceful close and an abrupt one look alike on the
//!   wire: what tells them apart at the client is whether `Frame::End` came first); a write to a
//!   peer that has let go fails with `ConnectionReset`, at once. A node kill drops its tasks and
//!   with them their streams; [`Net::unbind`] takes its listeners away at the moment of the kill.
//! - **Partitions** cut the edge (every client ↔ the load balancer): connects across it are
//!   refused while one is in force, and a write across it (the injector resets the connections a
//!   partition catches, so only a straggler can write) waits for the heal before its latency.
//! - **Bounded buffers.** A pipe holds at most [`MAX_IN_FLIGHT`] writes; a writer past it waits
//!   for the reader (the back-pressure of a full TCP window).
//! - **Black holes** ([`Net::blackhole`], `fault.blackhole`) catch every connection crossing the
//!   edge (of one client, or every client) when they open, and leave it dead for good: what was in
//!   flight is lost, each later write is accepted by its writer and dropped (never queued), and
//!   neither end hears of the other's close. The reader just sees nothing. An end that wrote into
//!   it gives up [`TCP_RETRIES2_TIMEOUT`] after its first unacknowledged write (its reads end, its
//!   writes fail with `TimedOut`), as Linux does; an end that only reads waits for a timer of its
//!   own. While the hole is open a connect across the edge gets no answer ([`Net::dial`]): its SYN
//!   goes again on Linux's schedule ([`SYN_SENT_AT`]) and gets through at the first one sent after
//!   the hole closes, or the connect fails `TimedOut` at [`SYN_GIVE_UP`]. Only a run that plans a
//!   black hole keeps the list of open edge connections that one needs ([`Net::track_edge`]).
//!
//! The run happens on one thread, so every lock here is uncontended; they are there because
//! madsim's tasks must be `Send`.

use super::actors::{derive_seed, SeedPurpose};
use super::addr::LB_ADDR;
use madsim::time::{Instant, TimeHandle};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::future::{poll_fn, Future};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Writes a pipe holds before its writer waits for the reader.
pub(crate) const MAX_IN_FLIGHT: usize = 4096;

/// The first port handed to a connecting end (ports below are the listeners').
const FIRST_PORT: u16 = 1024;

/// How long an end whose data goes unacknowledged keeps retransmitting before it gives the
/// connection up: Linux's `tcp_retries2` at its default, 15 ("The default value of 15 yields a
/// hypothetical timeout of 924.6 seconds and is a lower bound for the effective timeout",
/// Documentation/networking/ip-sysctl.rst; RTO from `TCP_RTO_MIN` = 200 ms doubling up to
/// `TCP_RTO_MAX` = 120 s). The one way a black-holed end that writes learns, without a timer of
/// the application's: its reads end and its writes fail (`ETIMEDOUT`). One place for it.
pub(crate) const TCP_RETRIES2_TIMEOUT: Duration = Duration::from_millis(924_600);

/// When a connect's SYN goes out, from the connect: at once, then again after each
/// retransmission timeout, Linux's initial RTO of 1 s (`TCP_TIMEOUT_INIT`, RFC 6298 §2.1) doubling,
/// `tcp_syn_retries` = 6 times. (Linux 6.5 and later first retransmit at 1 s intervals,
/// `tcp_syn_linear_timeouts` = 4, and give up at about 131 s: the same order.)
pub(crate) const SYN_SENT_AT: [Duration; 7] = [
    Duration::from_secs(0),
    Duration::from_secs(1),
    Duration::from_secs(3),
    Duration::from_secs(7),
    Duration::from_secs(15),
    Duration::from_secs(31),
    Duration::from_secs(63),
];

/// When an unanswered connect fails with `ETIMEDOUT`, from the connect: the last SYN's timeout
/// (tcp(7): `tcp_syn_retries` 6 "corresponds to retrying for up to approximately 127 seconds").
pub(crate) const SYN_GIVE_UP: Duration = Duration::from_secs(127);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One run's network: listeners, latency draws, partitions.
pub(crate) struct Net {
    state: Mutex<NetState>,
    /// madsim's clock, read through its handle (`Instant::now` goes through libc's
    /// `clock_gettime`, which madsim answers more slowly).
    clock: TimeHandle,
}

struct NetState {
    rng: ChaCha8Rng,
    latency_min: Duration,
    latency_max: Duration,
    listeners: BTreeMap<SocketAddr, Arc<Backlog>>,
    next_port: u16,
    /// Partitions of the edge in force (plans may overlap them).
    partitions: u32,
    /// When the last partition in force ends: writes across the edge wait until then.
    edge_blocked_until: Option<Instant>,
    /// Black holes open, each by its key (the plan's index) with the client whose edge it covers
    /// (`None`: every client's).
    holes: Vec<(usize, Option<IpAddr>)>,
    /// Connects a black hole holds waiting for a SYN to get through ([`Net::dial`]).
    dialing: u32,
    /// Every edge connection opened and not yet found closed, in the order they opened, while the
    /// run plans a black hole ([`Net::track_edge`]); `None` otherwise, so that a run without one
    /// pays nothing for it.
    edge: Option<EdgeLinks>,
}

/// The edge connections a black hole may catch: weak handles on both pipes of each, pruned of
/// the closed ones whenever the list doubles.
#[derive(Default)]
struct EdgeLinks {
    links: Vec<EdgeLink>,
    prune_at: usize,
}

/// One edge connection as [`EdgeLinks`] holds it.
struct EdgeLink {
    /// The client's end's address (the client's machine is its IP).
    client: SocketAddr,
    /// Client to load balancer.
    up: std::sync::Weak<Pipe>,
    /// Load balancer to client.
    down: std::sync::Weak<Pipe>,
}

impl EdgeLinks {
    fn push(&mut self, link: EdgeLink) {
        if self.links.len() >= self.prune_at {
            self.links.retain(|l| l.up.strong_count() > 0);
            self.prune_at = (2 * self.links.len()).max(64);
        }
        self.links.push(link);
    }
}

impl Net {
    /// The network of a run under `seed`, latencies drawn from `min..max` (`min` when equal).
    /// Call inside the simulation.
    pub(crate) fn new(seed: u64, min: Duration, max: Duration) -> Arc<Net> {
        let rng = ChaCha8Rng::seed_from_u64(derive_seed(seed, SeedPurpose::Network, 0));
        Arc::new(Net {
            state: Mutex::new(NetState {
                rng,
                latency_min: min,
                latency_max: max.max(min),
                listeners: BTreeMap::new(),
                next_port: FIRST_PORT,
                partitions: 0,
                edge_blocked_until: None,
                holes: Vec::new(),
                dialing: 0,
                edge: None,
            }),
            clock: TimeHandle::current(),
        })
    }

    /// Listens at `addr` (a restarted node binds the address its dead incarnation held).
    pub(crate) fn bind(self: &Arc<Self>, addr: SocketAddr) -> Listener {
        let backlog = Arc::new(Backlog::default());
        if let Some(old) = lock(&self.state).listeners.insert(addr, backlog.clone()) {
            old.close();
        }
        Listener { net: self.clone(), addr, backlog }
    }

    /// Every listener on `ip` goes (its node is killed): connects are refused from now on, and
    /// connections not yet accepted end.
    pub(crate) fn unbind(&self, ip: IpAddr) {
        let gone: Vec<Arc<Backlog>> = {
            let mut state = lock(&self.state);
            let addrs: Vec<SocketAddr> = state.listeners.keys().filter(|a| a.ip() == ip).copied().collect();
            addrs.iter().filter_map(|a| state.listeners.remove(a)).collect()
        };
        gone.iter().for_each(|backlog| backlog.close());
    }

    /// Keeps a list of the edge connections from now on, for black holes to catch: a run that
    /// plans one calls it before any connection opens.
    pub(crate) fn track_edge(&self) {
        lock(&self.state).edge.get_or_insert_with(EdgeLinks::default);
    }

    /// Whether a black hole swallows a connect from `from` to `to` now.
    pub(crate) fn swallows(&self, from: IpAddr, to: SocketAddr) -> bool {
        to == LB_ADDR && lock(&self.state).holes.iter().any(|(_, ip)| ip.is_none_or(|ip| ip == from))
    }

    /// Whether a connect is waiting for one of its SYNs to get through a black hole: the run is
    /// not over while one is (what it opens carries what the client waits for).
    pub(crate) fn dialing(&self) -> bool {
        lock(&self.state).dialing > 0
    }

    /// Opens a connection from the machine at `from` to the listener at `to`, as [`Net::connect`]
    /// does, unless a black hole swallows its SYN: then the SYN goes again at each of
    /// [`SYN_SENT_AT`] and the connection opens at the first one sent once no hole swallows it;
    /// `TimedOut` at [`SYN_GIVE_UP`] if none gets through. Returns without waiting when nothing
    /// swallows it (so that a caller may name the stream before its listener accepts it).
    /// Dropping the future abandons the connect.
    pub(crate) async fn dial(self: &Arc<Self>, from: IpAddr, to: SocketAddr) -> io::Result<Stream> {
        match self.connect(from, to) {
            // Only a black hole times a connect out.
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
            answered => return answered,
        }
        let start = self.clock.now_instant();
        let _waiting = Dialing::new(self);
        for at in &SYN_SENT_AT[1..] {
            self.sleep_until(start + *at).await;
            if !self.swallows(from, to) {
                return self.connect(from, to);
            }
        }
        self.sleep_until(start + SYN_GIVE_UP).await;
        Err(io::Error::new(io::ErrorKind::TimedOut, "no answer to the SYN (black hole)"))
    }

    /// Waits until `at` exactly (see [`wake_at`]).
    async fn sleep_until(&self, at: Instant) {
        let mut sleep = std::pin::pin!(self.clock.sleep_until(at));
        sleep.as_mut().reset(at);
        sleep.await;
    }

    /// Opens a connection from the machine at `from` to the listener at `to`. A connect a black
    /// hole swallows fails `TimedOut` at once here: [`Net::dial`] is the one that waits.
    pub(crate) fn connect(self: &Arc<Self>, from: IpAddr, to: SocketAddr) -> io::Result<Stream> {
        let edge = to == LB_ADDR;
        let (backlog, local, tracked) = {
            let mut state = lock(&self.state);
            if edge && state.partitions > 0 {
                return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "partitioned"));
            }
            if edge && state.holes.iter().any(|(_, ip)| ip.is_none_or(|ip| ip == from)) {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer to the SYN (black hole)"));
            }
            let refused = || io::Error::new(io::ErrorKind::ConnectionRefused, "no listener");
            let backlog = state.listeners.get(&to).cloned().ok_or_else(refused)?;
            let port = state.next_port;
            state.next_port = state.next_port.checked_add(1).unwrap_or(FIRST_PORT);
            (backlog, SocketAddr::new(from, port), edge && state.edge.is_some())
        };
        let (up, down) = (Arc::new(Pipe::default()), Arc::new(Pipe::default()));
        if tracked {
            if let Some(links) = lock(&self.state).edge.as_mut() {
                links.push(EdgeLink { client: local, up: Arc::downgrade(&up), down: Arc::downgrade(&down) });
            }
        }
        let client = Stream::new(self.clone(), local, to, edge, down.clone(), up.clone());
        let server = Stream::new(self.clone(), to, local, edge, up, down);
        backlog.push(server)?;
        Ok(client)
    }

    /// A partition of the edge starts; it lasts `duration`.
    pub(crate) fn partition(&self, duration: Duration) {
        let mut state = lock(&self.state);
        state.partitions += 1;
        let until = self.clock.now_instant() + duration;
        state.edge_blocked_until = Some(state.edge_blocked_until.map_or(until, |at| at.max(until)));
    }

    /// A partition ends; the edge carries traffic again once no other one is in force. Returns
    /// whether it did.
    pub(crate) fn heal(&self) -> bool {
        let mut state = lock(&self.state);
        state.partitions = state.partitions.saturating_sub(1);
        if state.partitions == 0 {
            state.edge_blocked_until = None;
        }
        state.partitions == 0
    }

    /// A black hole (keyed `key`) opens over the edge of the client at `client` (`None`: every
    /// client's) until [`Net::close_blackhole`]: every connection of that edge open and not
    /// closing is caught ([`Pipe::catch`]) and stays dead for good. Returns the client-side
    /// addresses of the connections it caught, in the order they opened. Needs
    /// [`Net::track_edge`] (without it, it catches nothing and only swallows connects).
    pub(crate) fn blackhole(&self, key: usize, client: Option<IpAddr>) -> Vec<SocketAddr> {
        let links: Vec<(SocketAddr, Arc<Pipe>, Arc<Pipe>)> = {
            let mut state = lock(&self.state);
            state.holes.push((key, client));
            let Some(edge) = state.edge.as_mut() else { return Vec::new() };
            edge.links.retain(|l| l.up.strong_count() > 0);
            edge.links
                .iter()
                .filter(|l| client.is_none_or(|ip| ip == l.client.ip()))
                .filter_map(|l| Some((l.client, l.up.upgrade()?, l.down.upgrade()?)))
                .collect()
        };
        let now = self.clock.now_instant();
        let open = |p: &Pipe| {
            let state = lock(&p.state);
            !(state.dead || state.writer_closed || state.reader_gone)
        };
        links
            .into_iter()
            .filter(|(_, up, down)| open(up) && open(down))
            .map(|(client, up, down)| {
                up.catch(now);
                down.catch(now);
                client
            })
            .collect()
    }

    /// The black hole keyed `key` closes: new connections get through again (once no other one
    /// swallows them). What it caught stays dead. Returns whether it was open.
    pub(crate) fn close_blackhole(&self, key: usize) -> bool {
        let mut state = lock(&self.state);
        let before = state.holes.len();
        state.holes.retain(|(k, _)| *k != key);
        state.holes.len() < before
    }

    /// When a write made now (across the edge when `edge`) arrives, if the previous one on its
    /// pipe arrives at `previous`.
    fn arrival(&self, edge: bool, previous: Option<Instant>) -> Instant {
        let mut state = lock(&self.state);
        let (min, max) = (state.latency_min, state.latency_max);
        let latency = if min < max { state.rng.gen_range(min..max) } else { min };
        let now = self.clock.now_instant();
        let from = match state.edge_blocked_until.filter(|_| edge) {
            Some(heal) => heal.max(now),
            None => now,
        };
        let at = from + latency;
        previous.map_or(at, |p| p.max(at))
    }
}

/// A connect held by a black hole, counted in [`Net::dialing`] until it ends (or its task is
/// dropped).
struct Dialing<'a> {
    net: &'a Net,
}

impl<'a> Dialing<'a> {
    fn new(net: &'a Net) -> Self {
        lock(&net.state).dialing += 1;
        Dialing { net }
    }
}

impl Drop for Dialing<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.net.state);
        state.dialing = state.dialing.saturating_sub(1);
    }
}

/// Connections to a listener that it has not accepted yet.
#[derive(Default)]
struct Backlog {
    state: Mutex<BacklogState>,
}

#[derive(Default)]
struct BacklogState {
    queue: VecDeque<Stream>,
    acceptor: Option<Waker>,
    closed: bool,
}

impl Backlog {
    fn push(&self, stream: Stream) -> io::Result<()> {
        let mut state = lock(&self.state);
        if state.closed {
            return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "listener gone"));
        }
        state.queue.push_back(stream);
        if let Some(waker) = state.acceptor.take() {
            waker.wake();
        }
        Ok(())
    }

    /// No more connections; the queued ones end (dropped outside the lock).
    fn close(&self) {
        let queued = {
            let mut state = lock(&self.state);
            state.closed = true;
            std::mem::take(&mut state.queue)
        };
        drop(queued);
    }
}

/// A bound address accepting connections.
pub(crate) struct Listener {
    net: Arc<Net>,
    addr: SocketAddr,
    backlog: Arc<Backlog>,
}

impl Listener {
    /// The next connection and its peer's address. Waits forever once the listener is gone (its
    /// node was killed; its tasks are about to be dropped).
    pub(crate) async fn accept(&self) -> (Stream, SocketAddr) {
        poll_fn(|cx| {
            let mut state = lock(&self.backlog.state);
            match state.queue.pop_front() {
                Some(stream) => {
                    let peer = stream.peer;
                    Poll::Ready((stream, peer))
                }
                None => {
                    state.acceptor = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut state = lock(&self.net.state);
        if state.listeners.get(&self.addr).is_some_and(|b| Arc::ptr_eq(b, &self.backlog)) {
            state.listeners.remove(&self.addr);
        }
        drop(state);
        self.backlog.close();
    }
}

/// One direction of a connection.
#[derive(Default)]
struct Pipe {
    state: Mutex<PipeState>,
}

#[derive(Default)]
struct PipeState {
    /// Writes in flight or arrived and unread, each with its arrival.
    writes: VecDeque<(Instant, Vec<u8>)>,
    last_arrival: Option<Instant>,
    writer_closed: bool,
    reader_gone: bool,
    /// The reader waiting for a write (none in flight).
    reader: Option<Waker>,
    /// The reader's wake-up set on madsim's clock for the first write's arrival, and whom it
    /// wakes: a poll before then sets no second one.
    armed: Option<(Instant, Waker)>,
    writer: Option<Waker>,
    /// A black hole caught the connection: nothing written from then on arrives, and neither
    /// end's close reaches the other.
    dead: bool,
    /// When this pipe's writer gives the dead connection up: [`TCP_RETRIES2_TIMEOUT`] after its
    /// first write that went unacknowledged (one lost in flight when the hole caught it, or one
    /// made into it).
    gives_up_at: Option<Instant>,
}

impl Pipe {
    /// A black hole catches this pipe at `now`: the writes still in flight are lost (those that
    /// arrived stay readable: they are in the reader's buffer), and if any was, its writer has
    /// unacknowledged data and starts counting towards its give-up. Whoever waits on the pipe is
    /// woken to look again.
    fn catch(&self, now: Instant) {
        let wakers = {
            let mut pipe = lock(&self.state);
            pipe.dead = true;
            let before = pipe.writes.len();
            pipe.writes.retain(|(at, _)| *at <= now);
            if pipe.writes.len() < before {
                pipe.gives_up_at = Some(now + TCP_RETRIES2_TIMEOUT);
            }
            pipe.last_arrival = pipe.writes.back().map(|(at, _)| *at);
            let armed = pipe.armed.take().map(|(_, w)| w);
            [pipe.reader.take(), armed, pipe.writer.take()]
        };
        wakers.into_iter().flatten().for_each(Waker::wake);
    }
}

/// Has madsim's clock wake `waker` at `at` (a `Sleep` polled on its behalf adds exactly that
/// timer). `sleep_until` alone would wait at least 1 ms, as tokio's does; `reset` sets the
/// deadline as it is.
fn wake_at(clock: &TimeHandle, at: Instant, waker: &Waker) {
    let mut sleep = std::pin::pin!(clock.sleep_until(at));
    sleep.as_mut().reset(at);
    if sleep.as_mut().poll(&mut Context::from_waker(waker)).is_ready() {
        waker.wake_by_ref();
    }
}

/// One end of a connection: reads the peer's writes as they arrive, writes (on flush) to the peer.
pub(crate) struct Stream {
    net: Arc<Net>,
    local: SocketAddr,
    peer: SocketAddr,
    /// Whether the connection crosses the edge (a client ↔ the load balancer).
    edge: bool,
    incoming: Arc<Pipe>,
    outgoing: Arc<Pipe>,
}

impl Stream {
    fn new(
        net: Arc<Net>,
        local: SocketAddr,
        peer: SocketAddr,
        edge: bool,
        incoming: Arc<Pipe>,
        outgoing: Arc<Pipe>,
    ) -> Self {
        Stream { net, local, peer, edge, incoming, outgoing }
    }

    /// This end's address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The far end's address.
    pub(crate) fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// Whether this end gave its connection up: a black hole caught it, and what it wrote went
    /// unacknowledged for [`TCP_RETRIES2_TIMEOUT`] (its reads have ended, its writes fail).
    pub(crate) fn gave_up(&self) -> bool {
        let now = self.net.clock.now_instant();
        lock(&self.outgoing.state).gives_up_at.is_some_and(|at| at <= now)
    }
}

impl Stream {
    /// The next write of the peer, whole, once it has arrived; `None` at the end (the peer let
    /// go and every write it made has been read). Cancel-safe: a write leaves the pipe only in
    /// the poll that returns it.
    pub(crate) async fn recv(&mut self) -> Option<Vec<u8>> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// A write that has arrived, or the end; else the reader waits: for the first write in
    /// flight, by a wake-up at its arrival (set once, here or by the writer), or, with nothing in
    /// flight, for the writer.
    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Vec<u8>>> {
        let mut pipe = lock(&self.incoming.state);
        let due = match pipe.writes.front() {
            Some((at, _)) => *at,
            // Nothing more will ever arrive, the peer's close included.
            None if pipe.dead => {
                let gives_up_at = lock(&self.outgoing.state).gives_up_at;
                let now = self.net.clock.now_instant();
                return match gives_up_at {
                    Some(at) if at <= now => Poll::Ready(None),
                    Some(at) => {
                        let set = pipe.armed.as_ref().is_some_and(|(a, w)| *a == at && w.will_wake(cx.waker()));
                        if !set {
                            wake_at(&self.net.clock, at, cx.waker());
                            pipe.armed = Some((at, cx.waker().clone()));
                        }
                        Poll::Pending
                    }
                    // Woken by a write of its own end (which starts its count), or never.
                    None => {
                        pipe.reader = Some(cx.waker().clone());
                        Poll::Pending
                    }
                };
            }
            None if pipe.writer_closed => return Poll::Ready(None),
            None => {
                pipe.reader = Some(cx.waker().clone());
                return Poll::Pending;
            }
        };
        if due <= self.net.clock.now_instant() {
            let (_, bytes) = pipe.writes.pop_front().expect("the front was just read");
            if let Some(writer) = pipe.writer.take() {
                writer.wake();
            }
            return Poll::Ready(Some(bytes));
        }
        let set = pipe.armed.as_ref().is_some_and(|(at, waker)| *at == due && waker.will_wake(cx.waker()));
        if !set {
            wake_at(&self.net.clock, due, cx.waker());
            pipe.armed = Some((due, cx.waker().clone()));
        }
        Poll::Pending
    }

    /// Puts `bytes` on the wire as one write: it arrives whole, after its latency. Fails at once
    /// when the peer has let go; waits while the pipe holds [`MAX_IN_FLIGHT`] writes.
    pub(crate) async fn send(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        let mut bytes = Some(bytes);
        poll_fn(|cx| {
            let previous = {
                let mut pipe = lock(&self.outgoing.state);
                if pipe.dead {
                    return Poll::Ready(self.lose(pipe, bytes.take()));
                }
                if pipe.reader_gone {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionReset, "the peer let go")));
                }
                if pipe.writes.len() >= MAX_IN_FLIGHT {
                    pipe.writer = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                pipe.last_arrival
            };
            let at = self.net.arrival(self.edge, previous);
            let mut pipe = lock(&self.outgoing.state);
            pipe.last_arrival = Some(at);
            pipe.writes.push_back((at, bytes.take().unwrap_or_default()));
            // A reader waiting on an empty pipe is woken when this write arrives, not now.
            if let Some(reader) = pipe.reader.take() {
                wake_at(&self.net.clock, at, &reader);
                pipe.armed = Some((at, reader));
            }
            Poll::Ready(Ok(()))
        })
        .await
    }
}

impl Stream {
    /// A write into a dead connection (`pipe` is the outgoing one, locked): accepted and dropped
    /// until this end gives up, [`TCP_RETRIES2_TIMEOUT`] after the first such write; then
    /// `TimedOut`. The first one also wakes this end's reader at the give-up, if it waits.
    fn lose(&self, mut pipe: MutexGuard<'_, PipeState>, bytes: Option<Vec<u8>>) -> io::Result<()> {
        drop(bytes);
        let now = self.net.clock.now_instant();
        let first = pipe.gives_up_at.is_none();
        let gives_up_at = *pipe.gives_up_at.get_or_insert(now + TCP_RETRIES2_TIMEOUT);
        drop(pipe);
        if gives_up_at <= now {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "retransmissions unanswered (black hole)"));
        }
        if first {
            let mut incoming = lock(&self.incoming.state);
            if let Some(reader) = incoming.reader.take() {
                wake_at(&self.net.clock, gives_up_at, &reader);
                incoming.armed = Some((gives_up_at, reader));
            }
        }
        Ok(())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let reader = {
            let mut pipe = lock(&self.outgoing.state);
            pipe.writer_closed = true;
            pipe.reader.take()
        };
        let (writer, unread) = {
            let mut pipe = lock(&self.incoming.state);
            pipe.reader_gone = true;
            (pipe.writer.take(), std::mem::take(&mut pipe.writes))
        };
        drop(unread);
        reader.into_iter().chain(writer).for_each(Waker::wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::addr::{replica_addr, CLIENT_IP};

    const MS: Duration = Duration::from_millis(1);

    fn run<F: Future>(f: F) -> F::Output {
        madsim::runtime::Runtime::with_seed_and_config(1, madsim::Config::default()).block_on(f)
    }

    async fn write(s: &mut Stream, bytes: &[u8]) -> io::Result<()> {
        s.send(bytes.to_vec()).await
    }

    /// Reads one write (empty at the end) and when it arrived, since `t0`, to the microsecond
    /// (madsim's clock moves on by some nanoseconds as tasks run).
    async fn read(s: &mut Stream, t0: Instant) -> (Vec<u8>, Duration) {
        let bytes = s.recv().await.unwrap_or_default();
        (bytes, Duration::from_micros((Instant::now() - t0).as_micros() as u64))
    }

    #[test]
    fn writes_arrive_in_order_after_a_latency_drawn_in_range() {
        let arrivals = run(async {
            let net = Net::new(7, 2 * MS, 9 * MS);
            let listener = net.bind(replica_addr(0));
            let t0 = Instant::now();
            let mut client = net.connect(CLIENT_IP, replica_addr(0)).unwrap();
            let (mut server, peer) = listener.accept().await;
            assert_eq!((peer, server.peer_addr()), (client.local_addr(), client.local_addr()));
            for i in 0..20u8 {
                write(&mut client, &[i]).await.unwrap();
            }
            let mut got = Vec::new();
            for _ in 0..20 {
                got.push(read(&mut server, t0).await);
            }
            got
        });
        let bytes: Vec<u8> = arrivals.iter().map(|(b, _)| b[0]).collect();
        assert_eq!(bytes, (0..20).collect::<Vec<u8>>(), "FIFO");
        assert!(arrivals.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!(arrivals.iter().all(|(_, t)| *t >= 2 * MS && *t < 9 * MS), "{arrivals:?}");
        assert!(arrivals.iter().any(|(_, t)| *t != arrivals[0].1), "latencies are drawn, not fixed");
    }

    #[test]
    fn the_same_seed_draws_the_same_latencies_and_another_seed_others() {
        let draws = |seed| {
            run(async move {
                let net = Net::new(seed, MS, 100 * MS);
                (0..8).map(|_| net.arrival(false, None) - Instant::now()).collect::<Vec<_>>()
            })
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }

    #[test]
    fn a_close_arrives_after_the_data_in_flight_and_a_write_to_a_gone_peer_fails() {
        run(async {
            let net = Net::new(1, 5 * MS, 5 * MS);
            let listener = net.bind(replica_addr(0));
            let t0 = Instant::now();
            let mut client = net.connect(CLIENT_IP, replica_addr(0)).unwrap();
            let (mut server, _) = listener.accept().await;
            write(&mut client, b"last").await.unwrap();
            drop(client);
            assert_eq!(read(&mut server, t0).await, (b"last".to_vec(), 5 * MS));
            assert_eq!(read(&mut server, t0).await, (Vec::new(), 5 * MS), "then the end, at once");
            let err = write(&mut server, b"late").await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        });
    }

    #[test]
    fn no_listener_or_a_partition_refuses_and_a_write_across_a_partition_waits_for_the_heal() {
        run(async {
            let net = Net::new(1, MS, MS);
            let refused = net.connect(CLIENT_IP, LB_ADDR).map(|_| ()).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
            let listener = net.bind(LB_ADDR);
            let mut client = net.connect(CLIENT_IP, LB_ADDR).unwrap();
            let (mut lb, _) = listener.accept().await;
            let t0 = Instant::now();
            net.partition(Duration::from_secs(10));
            let refused = net.connect(CLIENT_IP, LB_ADDR).map(|_| ()).unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused);
            write(&mut client, b"x").await.unwrap();
            assert_eq!(read(&mut lb, t0).await, (b"x".to_vec(), Duration::from_secs(10) + MS));
            assert!(net.heal());
            assert!(net.connect(CLIENT_IP, LB_ADDR).is_ok());
            net.unbind(LB_ADDR.ip());
            assert!(net.connect(CLIENT_IP, LB_ADDR).is_err(), "a killed node's listener is gone");
        });
    }

    /// A client connection to the balancer and the balancer's end of it, on a network that
    /// tracks the edge for black holes.
    async fn edge(net: &Arc<Net>, listener: &Listener, from: IpAddr) -> (Stream, Stream) {
        let client = net.connect(from, LB_ADDR).unwrap();
        let (lb, _) = listener.accept().await;
        (client, lb)
    }

    /// Whether a read of `s` returns anything (data or the end) within `wait`.
    async fn hears(s: &mut Stream, wait: Duration) -> bool {
        madsim::time::timeout(wait, s.recv()).await.is_ok()
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_black_hole_loses_what_was_in_flight_and_hides_each_ends_close_from_the_other() {
        run(async {
            let net = Net::new(1, 5 * MS, 5 * MS);
            net.track_edge();
            let listener = net.bind(LB_ADDR);
            let (mut client, mut lb) = edge(&net, &listener, CLIENT_IP).await;
            write(&mut client, b"arrived").await.unwrap();
            assert_eq!(lb.recv().await, Some(b"arrived".to_vec()));
            write(&mut lb, b"unread").await.unwrap();
            madsim::time::sleep(5 * MS).await;
            write(&mut client, b"in flight").await.unwrap();
            write(&mut lb, b"in flight too").await.unwrap();
            let caught = net.blackhole(0, None);
            assert_eq!(caught, vec![client.local_addr()], "the one open edge connection");
            // What had arrived is in the reader's buffer; what was on its way is lost.
            assert_eq!(client.recv().await, Some(b"unread".to_vec()));
            assert!(!hears(&mut client, 2 * MINUTE).await, "the write in flight is lost");
            assert!(!hears(&mut lb, 2 * MINUTE).await, "the write in flight is lost");
            // A close is not told: the balancer's read waits on, its writes are accepted.
            drop(client);
            assert!(!hears(&mut lb, 2 * MINUTE).await, "no end reaches the balancer");
            assert!(write(&mut lb, b"into the hole").await.is_ok(), "no reset either");
            // The hole closing does not revive what it caught.
            assert!(net.close_blackhole(0));
            assert!(!net.close_blackhole(0), "closed once");
            assert!(!hears(&mut lb, 2 * MINUTE).await);
            // Its own lost write in flight is what ends the balancer's wait: TCP gives up.
            assert!(hears(&mut lb, TCP_RETRIES2_TIMEOUT).await && lb.gave_up());
        });
    }

    #[test]
    fn an_end_that_wrote_into_a_black_hole_gives_up_after_tcp_retries2_and_one_that_only_reads_never() {
        run(async {
            let net = Net::new(1, MS, MS);
            net.track_edge();
            let listener = net.bind(LB_ADDR);
            let (mut client, mut lb) = edge(&net, &listener, CLIENT_IP).await;
            assert_eq!(net.blackhole(0, None).len(), 1);
            madsim::time::sleep(MINUTE).await;
            let t0 = Instant::now();
            // Accepted, never acknowledged: the client's reader ends when its end gives up.
            write(&mut client, b"request").await.unwrap();
            write(&mut client, b"again").await.unwrap();
            assert!(!client.gave_up());
            assert_eq!(read(&mut client, t0).await, (Vec::new(), TCP_RETRIES2_TIMEOUT));
            assert!(client.gave_up());
            let err = write(&mut client, b"late").await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::TimedOut);
            // The balancer wrote nothing: no timer of TCP's ends its wait.
            assert!(!hears(&mut lb, 2 * TCP_RETRIES2_TIMEOUT).await);
            assert!(!lb.gave_up());
        });
    }

    #[test]
    fn a_connect_into_a_black_hole_gets_through_at_the_first_syn_after_it_closes_or_times_out() {
        run(async {
            let net = Net::new(1, MS, MS);
            net.track_edge();
            let listener = net.bind(LB_ADDR);
            let t0 = Instant::now();
            net.blackhole(0, None);
            assert_eq!(net.connect(CLIENT_IP, LB_ADDR).map(|_| ()).unwrap_err().kind(), io::ErrorKind::TimedOut);
            let closer = net.clone();
            madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_secs(10)).await;
                closer.close_blackhole(0);
            });
            let watcher = net.clone();
            let watched = madsim::task::spawn(async move {
                madsim::time::sleep(Duration::from_secs(2)).await;
                watcher.dialing()
            });
            assert!(!net.dialing());
            let mut client = net.dial(CLIENT_IP, LB_ADDR).await.unwrap();
            assert!(watched.await.unwrap(), "a held connect is counted while it waits");
            assert!(!net.dialing(), "and no longer once it connected");
            let waited = Duration::from_micros((Instant::now() - t0).as_micros() as u64);
            assert_eq!(waited, SYN_SENT_AT[4], "the SYN sent at 15 s, the first after the hole closed at 10 s");
            let (mut lb, _) = listener.accept().await;
            write(&mut client, b"works").await.unwrap();
            assert_eq!(lb.recv().await, Some(b"works".to_vec()), "a new connection is not caught");
            // A hole that stays open: the connect fails when the last SYN's timeout runs out.
            net.blackhole(1, None);
            let t1 = Instant::now();
            let err = net.dial(CLIENT_IP, LB_ADDR).await.map(|_| ()).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::TimedOut);
            assert_eq!(Duration::from_micros((Instant::now() - t1).as_micros() as u64), SYN_GIVE_UP);
            // Nothing swallowed: dial connects at once.
            net.close_blackhole(1);
            let t2 = Instant::now();
            assert!(net.dial(CLIENT_IP, LB_ADDR).await.is_ok());
            assert_eq!(Instant::now(), t2);
        });
    }

    #[test]
    fn a_black_hole_of_one_client_catches_and_swallows_only_that_clients_connections() {
        run(async {
            let net = Net::new(1, MS, MS);
            net.track_edge();
            let listener = net.bind(LB_ADDR);
            let other = crate::engine::addr::client_ip(1);
            let (mut mine, mut my_lb) = edge(&net, &listener, CLIENT_IP).await;
            let (mut theirs, mut their_lb) = edge(&net, &listener, other).await;
            assert_eq!(net.blackhole(0, Some(other)), vec![theirs.local_addr()]);
            assert!(net.connect(CLIENT_IP, LB_ADDR).is_ok(), "client 0 connects");
            assert!(net.connect(other, LB_ADDR).is_err(), "client 1's SYN is swallowed");
            write(&mut mine, b"mine").await.unwrap();
            assert_eq!(my_lb.recv().await, Some(b"mine".to_vec()));
            write(&mut theirs, b"theirs").await.unwrap();
            assert!(!hears(&mut their_lb, MINUTE).await);
            // A second hole over everyone catches what the first left, and nothing twice.
            assert_eq!(net.blackhole(1, None), vec![mine.local_addr()]);
        });
    }

    #[test]
    fn without_tracking_a_black_hole_catches_nothing_and_only_swallows_connects() {
        run(async {
            let net = Net::new(1, MS, MS);
            let listener = net.bind(LB_ADDR);
            let (mut client, mut lb) = edge(&net, &listener, CLIENT_IP).await;
            assert!(net.blackhole(0, None).is_empty());
            write(&mut client, b"x").await.unwrap();
            assert_eq!(lb.recv().await, Some(b"x".to_vec()));
            assert!(net.connect(CLIENT_IP, LB_ADDR).is_err());
        });
    }

    #[test]
    fn a_writer_past_the_bound_waits_for_the_reader() {
        run(async {
            let net = Net::new(1, MS, MS);
            let listener = net.bind(replica_addr(0));
            let mut client = net.connect(CLIENT_IP, replica_addr(0)).unwrap();
            let (mut server, _) = listener.accept().await;
            for _ in 0..MAX_IN_FLIGHT {
                write(&mut client, b"x").await.unwrap();
            }
            let blocked = madsim::time::timeout(Duration::from_secs(1), write(&mut client, b"y")).await;
            assert!(blocked.is_err(), "the pipe is full");
            assert_eq!(server.recv().await, Some(b"x".to_vec()));
            assert!(madsim::time::timeout(Duration::from_secs(1), write(&mut client, b"y")).await.is_ok());
        });
    }
}
