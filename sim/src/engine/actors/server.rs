//! The server nodes: `mcpsim_model::server::Server` behind a listener on each replica. Each
//! accepted connection is numbered, its first frame handed over as the request; the frames the
//! server sends go out on it, and its end (the load balancer let go) becomes `handle_disconnect`.
//!
//! With local stores (the default) each replica node runs its own server process, started by the
//! node's `main`, and a replica restart loses its sessions. With a shared store one server state
//! machine (started by the runner, on its own node) serves every replica's connections: a replica
//! restart only ends the connections that came through it.

use super::{derive_seed, run_timer, SeedPurpose, TimerArm, World};
use crate::engine::addr::replica_addr;
use crate::engine::net::{self, FrameReader};
use crate::engine::wire::Stream;
use mcpsim_model::config::EventIdScheme;
use mcpsim_model::http::{ClientMessage, Frame, Method, Request, ResponseHead, ServerMessage, SseEvent};
use mcpsim_model::ids::{ConnId, SessionId, StreamNo};
use mcpsim_model::server::{incarnation_policy, Server, ServerOutput};
use mcpsim_model::sse::{stream_hint, StreamHint};
use mcpsim_model::subscriptions::Bus;
use mcpsim_model::time::{micros, Instant};
use mcpsim_model::trace::{Actor, StepKind};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// What the server asks of one connection's task.
enum Outgoing {
    Frame(Frame),
    /// The exchange is over (after the frames queued before): a clean end leaves a kept-alive
    /// connection open for the next request; otherwise the connection closes.
    Close {
        abrupt: bool,
    },
}

/// The live server process.
pub(crate) struct ServerCore {
    server: Server,
    /// The process incarnation (unique across the stores of a run).
    epoch: u32,
    /// Open connections: where their frames go.
    conns: BTreeMap<ConnId, UnboundedSender<Outgoing>>,
    /// The replica each open connection came through.
    via: BTreeMap<ConnId, u32>,
    /// Open connections by the address of their peer (the load balancer's end of the upstream),
    /// so that a client-side-only cut can name the connection it left open.
    peers: BTreeMap<SocketAddr, ConnId>,
    next_conn: u64,
    timer: TimerArm,
    /// The replica this process is (local stores); `None` for a shared store, whose steps are
    /// stamped with the replica of the exchange they concern.
    replica: Option<u32>,
    /// With several replicas, for each exchange: the address of its peer (the balancer's end
    /// of the upstream, named after the client's connection) and the replica it came through,
    /// kept after it ends so that later steps about it are named too.
    named: BTreeMap<ConnId, (SocketAddr, u32)>,
    /// The replica of the request being handled (a shared store's steps without a connection).
    serving: Option<u32>,
}

impl ServerCore {
    fn drain(&mut self, world: &Arc<World>) {
        while let Some(output) = self.server.poll_output() {
            match output {
                ServerOutput::Send { conn, frame } => {
                    if self.loses_task_reply(world, conn, &frame) {
                        continue;
                    }
                    if let Some(out) = self.conns.get(&conn) {
                        // A send fails only once the connection's task is gone; its end is
                        // reported by that task.
                        let _ = out.send(Outgoing::Frame(frame));
                    }
                }
                // The wire has no RST: an abrupt close and a clean one both drop the stream; what
                // tells them apart at the client is whether `Frame::End` came first.
                ServerOutput::Close { conn, abrupt } => {
                    self.via.remove(&conn);
                    if let Some(out) = self.conns.remove(&conn) {
                        let _ = out.send(Outgoing::Close { abrupt });
                    }
                }
                ServerOutput::Record(mut kind) => {
                    let named = kind.conn_mut().and_then(|conn| self.named.get(conn).copied());
                    let replica = self.replica.or(named.map(|(_, r)| r)).or(self.serving);
                    world.record_hop(Actor::Server, replica, named.map(|(peer, _)| peer), kind);
                }
                // The process exited (`on_protocol_error = restart-process`): its losses are
                // recorded and its connections closed above; its supervisor starts the next
                // process at once, once this one's lock is released.
                ServerOutput::Exit => {
                    let (w, store) = (world.clone(), self.replica.unwrap_or(0) as usize);
                    world.spawn_for_store(async move { start_store(&w, store) });
                }
            }
        }
        self.timer.update(self.server.poll_timeout());
    }

    /// `Fault::TaskReplyLost`: when one is armed and `frame` carries a `CreateTaskResult`, the
    /// frame is dropped and the connection reset on both sides (the model is told its peer went);
    /// returns true then.
    fn loses_task_reply(&mut self, world: &Arc<World>, conn: ConnId, frame: &Frame) -> bool {
        let task = match frame {
            Frame::Json(ServerMessage::TaskCreated { task, .. }) => task,
            Frame::Event(SseEvent { data: Some(ServerMessage::TaskCreated { task, .. }), .. }) => task,
            _ => return false,
        };
        if !self.conns.contains_key(&conn) {
            return false;
        }
        let armed = &world.task_replies_to_lose;
        if armed.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_err() {
            return false;
        }
        let fault = format!("task-reply-lost: the CreateTaskResult of task {} dropped, its connection reset", task.0);
        world.rec.record(Actor::Fault, StepKind::Fault { fault });
        self.via.remove(&conn);
        if let Some(out) = self.conns.remove(&conn) {
            let _ = out.send(Outgoing::Close { abrupt: true });
        }
        self.server.handle_disconnect(world.rec.now(), conn);
        true
    }

    /// An operator ends `session` from outside its client; false if this server has no such
    /// session.
    pub(crate) fn operator_delete(&mut self, world: &Arc<World>, session: &SessionId) -> bool {
        let ended = self.server.operator_delete(world.rec.now(), session);
        self.drain(world);
        ended
    }

    /// The process dies: the model records what is lost, and its connections close.
    pub(crate) fn crash(&mut self, world: &Arc<World>) {
        self.server.crash(world.rec.now());
        self.drain(world);
    }

    /// Replica `replica` went away (a restart in front of a shared store): the connections that
    /// came through it end, the state machine stays.
    pub(crate) fn disconnect_replica(&mut self, world: &Arc<World>, replica: u32) {
        let gone: Vec<ConnId> = self.via.iter().filter(|(_, r)| **r == replica).map(|(c, _)| *c).collect();
        for conn in gone {
            self.via.remove(&conn);
            self.conns.remove(&conn);
            self.server.handle_disconnect(world.rec.now(), conn);
        }
        self.drain(world);
    }

    /// The load balancer cut the client side of the connection whose peer is `peer` and kept
    /// the upstream open: the server is not told by its socket, so the model decides when it
    /// notices (`ServerPolicy::dead_stream`: at once, at its next write, or at its next
    /// keep-alive).
    pub(crate) fn client_gone(&mut self, world: &Arc<World>, peer: SocketAddr) {
        let Some(conn) = self.peers.get(&peer).copied().filter(|c| self.conns.contains_key(c)) else { return };
        tracing::debug!(%conn, "client side gone, upstream kept");
        self.server.handle_client_gone(world.rec.now(), conn);
        self.drain(world);
    }

    /// True while a tool runs.
    pub(crate) fn is_busy(&self) -> bool {
        self.server.is_busy()
    }

    /// Sessions the server still knows.
    pub(crate) fn live_sessions(&self) -> Vec<SessionId> {
        self.server.live_sessions()
    }
}

/// Starts store `store`'s server process (one more epoch), with its timer task and notifier on
/// the current node. Epochs are unique across stores: `starts × stores + store`, which is the
/// restart count when there is one store.
pub(crate) fn start_store(world: &Arc<World>, store: usize) {
    let starts = world.server_starts[store].fetch_add(1, Ordering::Relaxed);
    let epoch = starts * world.servers.len() as u32 + store as u32;
    tracing::debug!(epoch, store, "server process starts");
    let id_seed = derive_seed(world.seed, SeedPurpose::ServerIds, u64::from(epoch));
    let core = ServerCore {
        server: Server::new(incarnation_policy(&world.scenario.server, starts), world.tools.clone(), epoch, id_seed)
            .with_task_store(store as u32, world.task_store.clone()),
        epoch,
        conns: BTreeMap::new(),
        via: BTreeMap::new(),
        peers: BTreeMap::new(),
        next_conn: 1,
        timer: TimerArm::new(),
        replica: (!world.shared_store()).then_some(store as u32),
        named: BTreeMap::new(),
        serving: None,
    };
    let bell = core.timer.bell();
    *crate::engine::recorder::lock(&world.servers[store]) = Some(core);
    world.with_store(store, |core| core.drain(world));
    world.spawn_for_store(run_timer(
        world.clone(),
        "server",
        bell,
        move |w| arm_timer(w, store, epoch),
        move |w, now| fire_timer(w, store, epoch, now),
    ));
    if let Some(interval) = world.scenario.notify_interval.filter(|i| micros(*i) > 0) {
        world.spawn_for_store(notifier(world.clone(), store, epoch, micros(interval)));
    }
    if world.scenario.notifications.is_some() {
        world.spawn_for_store(workload_notifier(world.clone(), store, epoch));
    }
}

/// Server notifications as a workload (`app.notifications`): at each tick of the schedule,
/// whatever the faults, while this process lives.
async fn workload_notifier(world: Arc<World>, store: usize, epoch: u32) {
    let Some(spec) = world.scenario.notifications.clone() else { return };
    let next = |now_us: u64| spec.next_after(std::time::Duration::from_micros(now_us)).map(micros);
    notify_on_schedule(&world, store, epoch, next).await;
}

/// Notifies every session at each time `next(now)` gives (in µs), until it gives none or this
/// process is gone (a restart starts another epoch).
async fn notify_on_schedule(world: &Arc<World>, store: usize, epoch: u32, next: impl Fn(u64) -> Option<u64>) {
    while let Some(at) = next(world.rec.now().as_micros()) {
        madsim::time::sleep_until(world.rec.deadline(Instant(at))).await;
        let current = world.with_store(store, |core| {
            let mut change = None;
            if core.epoch == epoch {
                core.server.notify_all(world.rec.now());
                change = core.server.take_published_change();
                core.drain(world);
            }
            (core.epoch == epoch, change)
        });
        let Some((true, change)) = current else { return };
        // A shared subscription bus (`server.subscriptions.bus = shared`) relays the change to
        // every other replica's listen streams.
        if let Some(change) = change.filter(|_| world.scenario.server.subscriptions.bus == Bus::Shared) {
            for other in world.stores().filter(|o| *o != store) {
                world.with_store(other, |core| {
                    core.server.relay_change(world.rec.now(), &change);
                    core.drain(world);
                });
            }
        }
    }
}

/// Replica `replica`'s main task: its server process (with local stores), then the listener.
pub(crate) async fn main(world: Arc<World>, replica: u32) {
    if !world.shared_store() {
        start_store(&world, replica as usize);
    }
    let store = world.store_of(replica);
    let listener = world.net.bind(replica_addr(replica));
    world.listening.add_permits(1);
    loop {
        let (stream, _) = listener.accept().await;
        if let Some(conn) = next_conn(&world, store) {
            // Boxed: madsim's task layers then move a pointer, not the 1.2-1.6 KB future.
            madsim::task::spawn(Box::pin(serve(world.clone(), store, replica, conn, stream)));
        }
    }
}

/// The deadline of store `store`'s process of `epoch`; `None` once another incarnation took
/// its place (the old timer task of a shared store then sleeps for good).
fn arm_timer(world: &Arc<World>, store: usize, epoch: u32) -> Option<Instant> {
    world
        .with_store(store, |core| (core.epoch == epoch).then(|| core.timer.arm(core.server.poll_timeout())))
        .flatten()
        .flatten()
}

fn fire_timer(world: &Arc<World>, store: usize, epoch: u32, now: Instant) {
    world.with_store(store, |core| {
        if core.epoch == epoch {
            core.server.handle_timeout(now);
            core.drain(world);
        }
    });
}

/// Server notifications at every multiple of the interval (from the start of the run), until
/// the faults heal and the liveness phase begins.
async fn notifier(world: Arc<World>, store: usize, epoch: u32, interval_us: u64) {
    let liveness = micros(world.scenario.faults.heal_time());
    let next = |now_us: u64| Some((now_us / interval_us + 1) * interval_us).filter(|at| *at < liveness);
    notify_on_schedule(&world, store, epoch, next).await;
}

/// A number for the next exchange of store `store`'s server (each request is an exchange of its
/// own in the model, also when it came on a kept-alive connection).
fn next_conn(world: &Arc<World>, store: usize) -> Option<ConnId> {
    world.with_store(store, |core| {
        let conn = ConnId(core.next_conn);
        core.next_conn += 1;
        conn
    })
}

/// One connection: its request in, the server's frames out, until either side closes it. Behind
/// a balancer that keeps upstream connections alive (`lb.upstream_keep_alive`) a cleanly ended
/// exchange leaves the connection open for the next request, until the server's
/// `keep_alive_timeout` of idleness closes it.
async fn serve(world: Arc<World>, store: usize, replica: u32, conn: ConnId, mut stream: Stream) {
    let keep_alive = world.scenario.lb.upstream_keep_alive;
    let mut reader = FrameReader::new();
    let mut conn = Some(conn);
    loop {
        let idle_since = world.rec.now();
        let read = match (conn.is_some(), world.scenario.server.keep_alive_timeout) {
            // Waiting for a later request on a kept-alive connection, for at most the timeout.
            // Biased: an unbiased `select!` draws its branch order from tokio's thread RNG, which
            // no seed reaches (a request arriving as the timeout fires went either way).
            (false, Some(timeout)) => tokio::select! {
                biased;
                read = reader.next(&mut stream) => read,
                _ = madsim::time::sleep(timeout) => {
                    let idle_us = world.rec.now().as_micros().saturating_sub(idle_since.as_micros());
                    world.record_hop(Actor::Server, Some(replica), None, StepKind::KeepAliveClosed { idle_us });
                    return;
                }
            },
            _ => reader.next(&mut stream).await,
        };
        let request: Request = match read {
            Ok(Some(bytes)) => {
                net::decode(bytes).expect("the balancer forwards every request as the client encoded it")
            }
            // The peer left before sending anything: the server never heard of this exchange.
            Ok(None) | Err(_) => return,
        };
        if let Some(index) = answered_empty(&world, &request) {
            let what = format!("client {index}'s resume answered 200, no events, closed (the server never sees it)");
            world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
            let mut buf = Vec::new();
            net::encode(&Frame::Head(ResponseHead::event_stream()), &mut buf);
            net::encode(&Frame::End, &mut buf);
            let _ = net::send(&mut stream, buf).await;
            if !keep_alive {
                return;
            }
            continue;
        }
        let request = malformed(&world, request);
        let Some(this) = conn.take().or_else(|| next_conn(&world, store)) else { return };
        match exchange(&world, store, replica, this, &mut stream, &mut reader, request).await {
            Served::Kept if keep_alive => continue,
            _ => return,
        }
    }
}

/// How one exchange on a server connection ended.
enum Served {
    /// Cleanly: the connection may carry another request.
    Kept,
    /// The connection is to close (or is gone).
    Closed,
}

/// One exchange: `request` handed to the server, its frames out, until it ends it.
async fn exchange(
    world: &Arc<World>,
    store: usize,
    replica: u32,
    conn: ConnId,
    stream: &mut Stream,
    reader: &mut FrameReader,
    request: Request,
) -> Served {
    let (out, mut frames) = unbounded_channel();
    let accepted = world.with_store(store, |core| {
        core.conns.insert(conn, out);
        core.via.insert(conn, replica);
        let peer = stream.peer_addr();
        core.peers.insert(peer, conn);
        if world.names_replicas() {
            core.named.insert(conn, (peer, replica));
        }
        core.serving = Some(replica);
        core.server.handle_request(world.rec.now(), conn, request);
        core.drain(world);
        core.serving = None;
    });
    if accepted.is_none() {
        return Served::Closed;
    }
    let mut buf = Vec::new();
    loop {
        tokio::select! {
            biased;
            next = frames.recv() => match next {
                Some(Outgoing::Frame(frame)) => {
                    let closing = encode_queued(frame, &mut frames, &mut buf);
                    if net::send(stream, std::mem::take(&mut buf)).await.is_err() {
                        break;
                    }
                    match closing {
                        Some(false) => return Served::Kept,
                        Some(true) => return Served::Closed,
                        None => {}
                    }
                }
                Some(Outgoing::Close { abrupt: false }) => return Served::Kept,
                Some(Outgoing::Close { abrupt: true }) | None => return Served::Closed,
            },
            // A client sends nothing while its response runs: anything but more bytes is the end.
            read = reader.next(stream) => if !matches!(read, Ok(Some(_))) {
                break;
            },
        }
    }
    world.with_store(store, |core| {
        core.via.remove(&conn);
        if core.conns.remove(&conn).is_some() {
            core.server.handle_disconnect(world.rec.now(), conn);
            core.drain(world);
        }
    });
    Served::Closed
}

/// The client whose session `request` resumes a call's stream of, if one of its resumes is still
/// to be answered empty (`[[empty_resumes]]`): that one is used up. A resume whose id shows it
/// is of the standalone stream passes (as the probe's tap lets `0-…` ids pass).
fn answered_empty(world: &Arc<World>, request: &Request) -> Option<u32> {
    if world.scenario.empty_resumes.is_empty() {
        return None;
    }
    let id = request.last_event_id.as_ref().filter(|_| request.method == Method::Get)?;
    let scheme = world.scenario.server.event_ids;
    let standalone = match stream_hint(scheme, id) {
        Some(StreamHint::Number(n)) => n == StreamNo::STANDALONE,
        None => scheme == EventIdScheme::TsSdk,
        _ => false,
    };
    if standalone {
        return None;
    }
    let session = request.session.as_ref()?;
    world.client_indexes().find(|&index| {
        let slot = world.client_slot(index);
        let armed = slot.empty_resumes.load(Ordering::Relaxed);
        let hit = armed > 0 && world.with_client(index, |core| core.session()).flatten().as_ref() == Some(session);
        if hit {
            slot.empty_resumes.store(armed - 1, Ordering::Relaxed);
        }
        hit
    })
}

/// `request` as it reaches the server: a `tools/call` POST of a client with a malformed POST armed
/// (`fault.malformed`) arrives with no body the server can parse (that one is used up), the fault
/// recorded. The client is found by the session the POST names, or as the only client when it
/// names none.
fn malformed(world: &Arc<World>, mut request: Request) -> Request {
    let is_call = request.method == Method::Post && matches!(request.body, Some(ClientMessage::CallTool { .. }));
    if !is_call || world.scenario.faults.faults().iter().all(|f| f.fault.kind() != "malformed") {
        return request;
    }
    let sender = world.client_indexes().find(|&index| {
        let session = world.with_client(index, |core| core.session()).flatten();
        match &request.session {
            Some(named) => session.as_ref() == Some(named),
            None => world.scenario.clients == 1,
        }
    });
    let Some(index) = sender else { return request };
    let slot = world.client_slot(index);
    let armed = slot.malformed_posts.load(Ordering::Relaxed);
    if armed == 0 {
        return request;
    }
    slot.malformed_posts.store(armed - 1, Ordering::Relaxed);
    let what = format!("client {index}'s tools/call reaches the server malformed (its body does not parse)");
    world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
    request.body = None;
    request
}

/// Encodes `first` and every frame already queued behind it into `buf`, to go out in one flush;
/// `Some(abrupt)` if a `Close` was queued among them.
fn encode_queued(first: Frame, frames: &mut UnboundedReceiver<Outgoing>, buf: &mut Vec<u8>) -> Option<bool> {
    buf.clear();
    net::encode(&first, buf);
    while let Ok(next) = frames.try_recv() {
        match next {
            Outgoing::Frame(frame) => net::encode(&frame, buf),
            Outgoing::Close { abrupt } => return Some(abrupt),
        }
    }
    None
}
