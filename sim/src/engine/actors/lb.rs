//! The load balancer node: accepts client connections, routes each to a server replica, opens
//! one connection to it, and pumps frames both ways, telling `mcpsim_model::lb::LoadBalancer`
//! about every frame that passes.
//!
//! The wire has no idle timeout and no mid-stream RST: when the model asks for a `Cut`, this actor
//! drops both sockets of the connection (its pump task is aborted), so the client sees its stream
//! end without `Frame::End` and the server sees a disconnect. A client-side-only cut drops the
//! client socket and keeps reading (and discarding) the upstream until the server ends it.
//!
//! Hops in front of the balancer (`lb.hops`, a CDN, a reverse proxy) are not nodes of their own:
//! every connection passes them all and the balancer both, so one actor drives the whole chain
//! through the model, which tracks each hop's clocks and what each holds back. The client's
//! connection is the first hop's, the replica's connection the balancer's; a hop's timer
//! releasing buffered frames hands them to the connection's task to write.

use super::{derive_seed, run_timer, SeedPurpose, TimerArm, World};
use crate::engine::addr::{address_key, replica_addr, LB_ADDR, LB_IP};
use crate::engine::net::{self, FrameReader};
use crate::engine::pool::Pool;
use crate::engine::wire::Stream;
use madsim::task::AbortHandle;
use mcpsim_model::config::{RequestHeader, ResponseHeader, UpstreamRetry};
use mcpsim_model::http::{Frame, Method, Request, ResponseHead, Status};
use mcpsim_model::ids::ConnId;
use mcpsim_model::lb::{Backend, FrameKind, Frames, LbOutput, LoadBalancer, Route};
use mcpsim_model::tasks::{task_holder, TaskRouting};
use mcpsim_model::trace::{Actor, StepKind};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// One proxied connection's task.
struct Pump {
    task: AbortHandle,
    /// The client's address.
    client: IpAddr,
    /// The replica it was routed to, once routed.
    backend: Option<Backend>,
    /// Tells the task to carry out a cut itself (client side only, or answering first).
    cut_client: Option<oneshot::Sender<CutOrder>>,
    /// Frames a buffering hop released on its timer, for the task to write to the client.
    deliver: mpsc::UnboundedSender<Vec<u8>>,
}

/// A cut the pump task carries out itself (the others abort it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CutOrder {
    /// Leave the upstream open (`lb.cut_mode = "client-side"`).
    keep_upstream: bool,
    /// Answer the client this status first (`lb.hold_headers`: no body had gone out yet).
    answer: Option<Status>,
}

/// The load balancer process.
pub(crate) struct LbCore {
    lb: LoadBalancer,
    /// Pump tasks of open connections, by the balancer's own connection number.
    pumps: BTreeMap<ConnId, Pump>,
    next_conn: u64,
    timer: TimerArm,
    /// Kept-alive upstream connections by replica (`lb.upstream_keep_alive`).
    upstreams: Pool<u32>,
    /// The client's address of each connection, kept after it closes (with several replicas
    /// only): how its steps name it as the client does.
    peers: BTreeMap<ConnId, SocketAddr>,
}

impl LbCore {
    fn drain(&mut self, world: &Arc<World>) {
        while let Some(output) = self.lb.poll_output() {
            match output {
                LbOutput::Cut { conn, keep_upstream, answer } => {
                    tracing::debug!(%conn, keep_upstream, ?answer, "cut");
                    if let Some(mut pump) = self.pumps.remove(&conn) {
                        match pump.cut_client.take().filter(|_| keep_upstream || answer.is_some()) {
                            Some(cut) => {
                                let _ = cut.send(CutOrder { keep_upstream, answer });
                            }
                            None => pump.task.abort(),
                        }
                    }
                }
                LbOutput::Deliver { conn, bytes } => {
                    if let Some(pump) = self.pumps.get(&conn) {
                        let _ = pump.deliver.send(bytes);
                    }
                }
                LbOutput::Record(mut kind) => {
                    let peer = kind.conn_mut().and_then(|conn| self.peers.get(conn).copied());
                    world.record_hop(Actor::Lb, None, peer, kind);
                }
            }
        }
        self.timer.update(self.lb.poll_timeout());
    }

    /// Every connection through the balancer that `hit` selects is reset: both sockets of each
    /// go, and the balancer forgets them.
    fn reset_where(&mut self, world: &Arc<World>, hit: impl Fn(&Pump) -> bool) {
        let conns: Vec<ConnId> = self.pumps.iter().filter(|(_, p)| hit(p)).map(|(c, _)| *c).collect();
        for conn in conns {
            if let Some(pump) = self.pumps.remove(&conn) {
                pump.task.abort();
                self.lb.handle_reset(world.rec.now(), conn);
            }
        }
        self.drain(world);
    }

    /// Records what the intermediaries still hold back of each open connection's response (the
    /// run's end): `lb-holding` steps, named as the client names the connection.
    pub(crate) fn record_holding(&self, world: &Arc<World>) {
        for mut kind in self.lb.holding(world.rec.now()) {
            let peer = kind.conn_mut().and_then(|conn| self.peers.get(conn).copied());
            world.record_hop(Actor::Lb, None, peer, kind);
        }
    }

    /// Every connection through the balancer is reset, kept-alive upstream ones included.
    pub(crate) fn reset_connections(&mut self, world: &Arc<World>) {
        self.upstreams.close_where(|_| true);
        self.reset_where(world, |_| true);
    }

    /// Every connection from the client at `ip` is reset.
    pub(crate) fn reset_client(&mut self, world: &Arc<World>, ip: IpAddr) {
        self.reset_where(world, |p| p.client == ip);
    }

    /// Every connection routed to `replica` is reset.
    pub(crate) fn reset_replica(&mut self, world: &Arc<World>, replica: u32) {
        self.upstreams.close_where(|r| *r == replica);
        self.reset_where(world, |p| p.backend == Some(Backend(replica)));
    }

    /// Hop `hop` of the chain (the balancer itself is the last) is cut (`restart`: restarts): every
    /// connection through it goes, which is every connection. Returns whether the hop exists.
    pub(crate) fn fail_hop(&mut self, world: &Arc<World>, hop: u32, restart: bool) -> bool {
        let known = self.lb.fail_hop(world.rec.now(), hop as usize, restart);
        // The balancer itself (the last hop) going down takes its kept-alive upstream connections.
        if known && hop as usize + 1 == self.lb.chain_len() {
            self.upstreams.close_where(|_| true);
        }
        self.drain(world);
        known
    }

    /// Hop `hop` (the balancer is the last) answers every new request itself with `status`, or
    /// (`None`) passes them on again.
    pub(crate) fn set_answering(&mut self, world: &Arc<World>, hop: u32, status: Option<Status>) {
        self.lb.set_answering(hop as usize, status);
        self.drain(world);
    }

    /// Takes `replica` out of the rotation, or puts it back.
    pub(crate) fn set_draining(&mut self, world: &Arc<World>, replica: u32, draining: bool) {
        self.lb.set_draining(Backend(replica), draining);
        self.drain(world);
    }
}

/// The load balancer node's main task: listen, and start a pump per accepted connection.
pub(crate) async fn main(world: Arc<World>) {
    let seed = derive_seed(world.seed, SeedPurpose::LbRouting, 0);
    let core = LbCore {
        lb: LoadBalancer::with_seed(world.scenario.lb.clone(), seed),
        pumps: BTreeMap::new(),
        next_conn: 1,
        timer: TimerArm::new(),
        upstreams: Pool::new(),
        peers: BTreeMap::new(),
    };
    let bell = core.timer.bell();
    *crate::engine::recorder::lock(&world.lb) = Some(core);
    madsim::task::spawn(run_timer(world.clone(), "load balancer", bell, arm_timer, fire_timer));
    let listener = world.net.bind(LB_ADDR);
    world.listening.add_permits(1);
    loop {
        let (stream, peer) = listener.accept().await;
        world.with_lb(|core| {
            let conn = ConnId(core.next_conn);
            core.next_conn += 1;
            core.lb.handle_open(world.rec.now(), conn);
            if world.names_replicas() {
                core.peers.insert(conn, peer);
            }
            let (cut_client, cut) = oneshot::channel();
            let (deliver, delivered) = mpsc::unbounded_channel();
            let orders = Orders { cut, delivered };
            // Boxed: madsim's task layers then move a pointer, not the 1.2-1.6 KB future.
            let task = madsim::task::spawn(Box::pin(pump(world.clone(), conn, stream, address_key(peer), orders)));
            let cut_client = Some(cut_client);
            let pump = Pump { task: task.abort_handle(), client: peer.ip(), backend: None, cut_client, deliver };
            core.pumps.insert(conn, pump);
            core.drain(&world);
        });
    }
}

fn arm_timer(world: &Arc<World>) -> Option<mcpsim_model::Instant> {
    world.with_lb(|core| core.timer.arm(core.lb.poll_timeout())).flatten()
}

fn fire_timer(world: &Arc<World>, now: mcpsim_model::Instant) {
    world.with_lb(|core| {
        core.lb.handle_timeout(now);
        core.drain(world);
    });
}

/// What the balancer tells a connection's task: a cut to carry out, frames a hop released.
struct Orders {
    cut: oneshot::Receiver<CutOrder>,
    delivered: mpsc::UnboundedReceiver<Vec<u8>>,
}

/// Whether the balancer routes `tasks/*` by `Mcp-Name` (`server.tasks.routing = mcp-name`, with
/// tasks made and several replicas).
fn routes_tasks_by_name(world: &World) -> bool {
    let tasks = &world.scenario.server.tasks;
    tasks.routing == TaskRouting::McpName && tasks.create_for_tools_over.is_some() && world.scenario.lb.replicas > 1
}

/// Proxies one client connection until either side closes it (or the client side is cut): one
/// exchange, or with keep-alive (`client.http.keep_alive`, `lb.upstream_keep_alive`) one after
/// another, each read whole before it is routed.
async fn pump(world: Arc<World>, conn: ConnId, mut client: Stream, client_key: u64, mut orders: Orders) {
    let mut from_client = FrameReader::new();
    // Session routing reads the request before it picks the replica; so does keep-alive, whose
    // later requests come on an idle connection.
    let by_session = world.with_lb(|core| core.lb.routes_by_session()).unwrap_or(false);
    // Routing `tasks/*` by `Mcp-Name` reads the request too.
    let by_task_name = routes_tasks_by_name(&world);
    let mut mcp_name: Option<String> = None;
    // Headers a hop drops are taken out of the request before it goes on (it is read whole).
    let dropped = dropped_headers(&world);
    // The HTTP library of the client at the far end: each logical client has its own address
    // (only clients connect to the balancer; an address of none would read client 0's).
    let client_keeps = world.scenario.client_policy(world.client_at(client_key).unwrap_or(0)).http.keep_alive;
    let keep_alive = client_keeps || world.scenario.lb.upstream_keep_alive;
    let mut request = Vec::new();
    let mut session = None;
    for exchange in 0u64.. {
        if by_session || keep_alive || by_task_name || !dropped.is_empty() {
            match from_client.next(&mut client).await {
                Ok(Some(bytes)) => {
                    request = bytes.to_vec();
                    let mut decoded = net::decode::<Request>(bytes).ok();
                    if let Some(r) = decoded.as_mut().filter(|_| !dropped.is_empty()) {
                        if drop_headers(&world, conn, r, &dropped) {
                            request.clear();
                            net::encode(r, &mut request);
                        }
                    }
                    mcp_name = decoded.as_ref().and_then(|r| r.mcp_name.clone()).filter(|_| by_task_name);
                    session = decoded.and_then(|r| r.session);
                }
                Ok(None) | Err(_) => {
                    note_gave_up(&world, conn, &client);
                    return close(&world, conn);
                }
            }
            if exchange > 0 {
                world.with_lb(|core| core.lb.handle_request(world.rec.now(), conn));
            }
        }
        let route = world.with_lb(|core| {
            let holder = mcp_name.as_deref().and_then(task_holder).map(Backend);
            let route = match holder {
                Some(holder) => core.lb.route_to_holder(conn, holder, session.as_ref(), client_key),
                None => core.lb.route(conn, session.as_ref(), client_key),
            };
            if let (Route::To(b), Some(pump)) = (route, core.pumps.get_mut(&conn)) {
                pump.backend = Some(b);
            }
            core.drain(&world);
            route
        });
        let mut exchange = Exchange {
            world: &world,
            conn,
            client: &mut client,
            from_client: &mut from_client,
            orders: &mut orders,
            request: &mut request,
            learn: by_session,
            keep_alive,
        };
        match route {
            Some(Route::To(backend)) => match exchange.forward(backend).await {
                Forwarded::Complete if client_keeps => {
                    world.with_lb(|core| {
                        core.lb.handle_response_end(world.rec.now(), conn);
                        if let Some(pump) = core.pumps.get_mut(&conn) {
                            pump.backend = None;
                        }
                    });
                    request.clear();
                    continue;
                }
                Forwarded::Complete | Forwarded::Ended => {}
                Forwarded::Cut(kept) => {
                    drop(client);
                    if let Some((mut upstream, backend)) = kept {
                        client_gone(&world, backend, &upstream);
                        drain_upstream(&mut upstream, keep_alive).await;
                    }
                    return;
                }
            },
            Some(Route::Answer(status)) => answer(&mut client, status).await,
            None => {}
        }
        break;
    }
    close(&world, conn);
}

/// How an exchange through the balancer ended.
enum Forwarded {
    /// The response went out whole: a kept-alive connection waits for its next request.
    Complete,
    /// It ended otherwise (a side closed, a write failed, the balancer answered itself): the
    /// client connection closes.
    Ended,
    /// The balancer cut the connection (any answer is written): the client socket goes; with
    /// a client-side-only cut the upstream connection stays open, to be drained.
    Cut(Option<(Stream, Backend)>),
}

/// One request's way through the balancer, with what it needs of the client connection.
struct Exchange<'a> {
    world: &'a Arc<World>,
    conn: ConnId,
    client: &'a mut Stream,
    from_client: &'a mut FrameReader,
    orders: &'a mut Orders,
    /// The request's bytes, once read (before routing, or as they pass).
    request: &'a mut Vec<u8>,
    /// Learn the session's replica from the response head (sticky-session routing).
    learn: bool,
    /// Watch for the end of the response (keep-alive on either side).
    keep_alive: bool,
}

impl Exchange<'_> {
    /// Sends the request to `backend` (on a kept-alive upstream connection when the pool has
    /// one) and relays the response. An upstream connection that ends before any byte of the
    /// response is retried once on a fresh connection when `lb.retry_upstream` allows; otherwise
    /// a reused one is answered `502` (the request may not even have reached the replica).
    async fn forward(&mut self, backend: Backend) -> Forwarded {
        let (world, conn) = (self.world, self.conn);
        let mut resent = false;
        loop {
            // Only a balancer that keeps upstream connections alive ever parks one.
            let pooling = world.scenario.lb.upstream_keep_alive && !resent;
            let pooled = if pooling { world.with_lb(|core| core.upstreams.claim(&backend.0)).flatten() } else { None };
            let parked = match pooled {
                Some(claim) => claim.await.ok(),
                None => None,
            };
            let reused = parked.is_some();
            let mut upstream = match parked {
                Some(parked) => {
                    let idle_us = world.rec.now().as_micros().saturating_sub(parked.since.as_micros());
                    let reused = StepKind::LbUpstreamReused { conn, replica: backend.0, idle_us };
                    record(world, reused);
                    name_upstream(world, conn, &parked.stream);
                    parked.stream
                }
                None => match world.net.connect(LB_IP, replica_addr(backend.0)) {
                    Ok(upstream) => {
                        // Named before the replica can accept it: the connect does not yield.
                        name_upstream(world, conn, &upstream);
                        upstream
                    }
                    Err(e) => {
                        tracing::debug!(%conn, error = %e, "server unreachable: 502");
                        let status = world.with_lb(|core| {
                            let status = core.lb.handle_unreachable(conn);
                            core.drain(world);
                            status
                        });
                        answer(self.client, status.unwrap_or(Status::BAD_GATEWAY)).await;
                        return Forwarded::Ended;
                    }
                },
            };
            let mut lost = false;
            if !self.request.is_empty() {
                if !resent {
                    bytes_passed(world, conn, 1);
                }
                if net::send(&mut upstream, self.request.clone()).await.is_err() {
                    // Found closed as the request went out.
                    if !reused {
                        return Forwarded::Ended;
                    }
                    lost = true;
                }
            }
            let relayed = if lost { Relayed::Lost } else { self.relay(&mut upstream, backend).await };
            match relayed {
                Relayed::Complete => {
                    if world.scenario.lb.upstream_keep_alive {
                        let (now, expiry) = (world.rec.now(), world.scenario.lb.idle_timeout);
                        world.with_lb(|core| core.upstreams.park(backend.0, upstream, now, expiry));
                    }
                    return Forwarded::Complete;
                }
                Relayed::Lost if !resent && self.may_resend() => {
                    record(world, StepKind::LbResent { conn, reused });
                    resent = true;
                }
                Relayed::Lost if reused => {
                    record(world, StepKind::LbAnswered { conn, status: Status::BAD_GATEWAY, hop: None });
                    answer(self.client, Status::BAD_GATEWAY).await;
                    return Forwarded::Ended;
                }
                Relayed::Lost | Relayed::Ended => return Forwarded::Ended,
                Relayed::Cut(order) => {
                    if let Some(status) = order.answer {
                        answer(self.client, status).await;
                    }
                    return Forwarded::Cut(order.keep_upstream.then_some((upstream, backend)));
                }
            }
        }
    }

    /// Whether `lb.retry_upstream` lets the balancer send this request again.
    fn may_resend(&self) -> bool {
        let Some(frame) = net::first_frame(self.request) else { return false };
        match self.world.scenario.lb.retry_upstream {
            UpstreamRetry::Never => false,
            UpstreamRetry::Idempotent => net::peek::<Request>(frame, |r| r.method != Method::Post),
            UpstreamRetry::Any => true,
        }
    }

    /// Forwards frames both ways, as raw bytes, until one side ends, a write fails, or (with
    /// keep-alive) the response's end went out. Frames that arrived together leave together, in
    /// one flush, unless a hop holds some back (a held head, response buffering); what a hop
    /// releases later comes through `orders`. When learning, a response head naming a session
    /// tells the balancer the session lives on `backend`.
    async fn relay(&mut self, upstream: &mut Stream, backend: Backend) -> Relayed {
        let (world, conn) = (self.world, self.conn);
        let mut learn = self.learn.then_some(backend);
        let mut from_server = FrameReader::new();
        let (transparent, kinds) =
            world.with_lb(|core| (core.lb.is_transparent(), core.lb.needs_frame_kinds())).unwrap_or((true, false));
        let mut first = true;
        let dropped = dropped_response_headers(world);
        loop {
            let mut complete = false;
            let forwarded = tokio::select! {
                biased;
                Ok(order) = &mut self.orders.cut => return Relayed::Cut(order),
                Some(bytes) = self.orders.delivered.recv() => net::send(self.client, bytes).await,
                read = from_server.next_frames(upstream) => match read {
                    Ok(Some((frames, count))) => {
                        let head_run = std::mem::take(&mut first);
                        // The balancer, the last hop, learns the session before a hop in front
                        // of it drops the header.
                        if let Some(backend) = learn.take() {
                            learn_session(world, frames, backend);
                        }
                        let rewritten = if head_run && !dropped.is_empty() {
                            drop_response_headers(world, conn, frames, &dropped)
                        } else {
                            None
                        };
                        let frames = rewritten.as_deref().unwrap_or(frames);
                        complete = self.keep_alive
                            && net::last_frame(frames).is_some_and(|f| net::peek::<Frame>(f, |m| *m == Frame::End));
                        if transparent {
                            bytes_passed(world, conn, count);
                            net::send(self.client, frames.to_vec()).await
                        } else {
                            let pieces = split(frames, head_run, kinds);
                            let out = world.with_lb(|core| {
                                let out = core.lb.handle_response(world.rec.now(), conn, pieces);
                                if core.lb.chain_len() > 1 {
                                    core.drain(world);
                                }
                                out
                            });
                            match out {
                                Some(out) if !out.is_empty() => net::send(self.client, out).await,
                                _ => Ok(()),
                            }
                        }
                    }
                    Ok(None) | Err(_) if first => return Relayed::Lost,
                    Ok(None) | Err(_) => {
                        // The server ended: whatever a hop still holds (a head waiting for a body,
                        // buffered events) goes out after all.
                        let held = world.with_lb(|core| core.lb.handle_upstream_end(conn)).unwrap_or_default();
                        if !held.is_empty() {
                            let _ = net::send(self.client, held).await;
                        }
                        return Relayed::Ended;
                    }
                },
                read = self.from_client.next_frames(self.client) => match read {
                    Ok(Some((frames, count))) => {
                        // Kept for a re-send only: copying every request costs.
                        if self.request.is_empty() && self.world.scenario.lb.retry_upstream != UpstreamRetry::Never {
                            self.request.extend_from_slice(frames);
                        }
                        bytes_passed(world, conn, count);
                        net::send(upstream, frames.to_vec()).await
                    }
                    Ok(None) | Err(_) => {
                        note_gave_up(world, conn, self.client);
                        return Relayed::Ended;
                    }
                },
            };
            if forwarded.is_err() {
                note_gave_up(world, conn, self.client);
                return Relayed::Ended;
            }
            if complete {
                return Relayed::Complete;
            }
        }
    }
}

/// Each header some hop drops from requests (`lb.hops[].drop_request_headers`), with the first
/// hop that drops it.
fn dropped_headers(world: &World) -> Vec<(RequestHeader, u32)> {
    let mut out: Vec<(RequestHeader, u32)> = Vec::new();
    for (hop, config) in (0u32..).zip(&world.scenario.lb.hops) {
        for header in &config.drop_request_headers {
            if !out.iter().any(|(h, _)| h == header) {
                out.push((*header, hop));
            }
        }
    }
    out
}

/// Takes the `dropped` headers out of `request`, recording each one it carried; true if any.
fn drop_headers(world: &Arc<World>, conn: ConnId, request: &mut Request, dropped: &[(RequestHeader, u32)]) -> bool {
    let mut any = false;
    for (header, hop) in dropped {
        let carried = match header {
            RequestHeader::LastEventId => request.last_event_id.take().is_some(),
            RequestHeader::McpSessionId => request.session.take().is_some(),
        };
        if carried {
            record(world, StepKind::LbHeaderDropped { conn, header: *header, hop: *hop });
            any = true;
        }
    }
    any
}

/// Each header some hop drops from responses (`lb.hops[].drop_response_headers`), with the hop
/// nearest the client that drops it (the last to touch the response).
fn dropped_response_headers(world: &World) -> Vec<(ResponseHeader, u32)> {
    let mut out: Vec<(ResponseHeader, u32)> = Vec::new();
    for (hop, config) in (0u32..).zip(&world.scenario.lb.hops) {
        for header in &config.drop_response_headers {
            if !out.iter().any(|(h, _)| h == header) {
                out.push((*header, hop));
            }
        }
    }
    out
}

/// The response's first frames with the `dropped` headers taken out of its head, recording
/// each one it carried; `None` when the head carried none of them.
fn drop_response_headers(
    world: &Arc<World>,
    conn: ConnId,
    frames: &[u8],
    dropped: &[(ResponseHeader, u32)],
) -> Option<Vec<u8>> {
    let first = net::first_frame(frames)?;
    let Ok(Frame::Head(mut head)) = net::decode::<Frame>(first) else { return None };
    let mut any = false;
    for (header, hop) in dropped {
        let carried = match header {
            ResponseHeader::McpSessionId => head.session.take().is_some(),
        };
        if carried {
            record(world, StepKind::LbResponseHeaderDropped { conn, header: *header, hop: *hop });
            any = true;
        }
    }
    if !any {
        return None;
    }
    let mut out = Vec::with_capacity(frames.len());
    net::encode(&Frame::Head(head), &mut out);
    out.extend_from_slice(&frames[first.len()..]);
    Some(out)
}

/// Records a step of the balancer's from outside its lock (see [`World::record_hop`]).
fn record(world: &Arc<World>, mut kind: StepKind) {
    let peer = kind.conn_mut().and_then(|conn| client_addr(world, *conn));
    world.record_hop(Actor::Lb, None, peer, kind);
}

/// With several replicas: the upstream socket now carries the client's connection `conn`.
fn name_upstream(world: &Arc<World>, conn: ConnId, upstream: &Stream) {
    if world.names_replicas() {
        world.pass_link(client_addr(world, conn), upstream.local_addr());
    }
}

/// The client's address of the balancer's connection `conn` (known with several replicas).
fn client_addr(world: &Arc<World>, conn: ConnId) -> Option<SocketAddr> {
    world.with_lb(|core| core.peers.get(&conn).copied()).flatten()
}

/// The pump of `conn` is over: the balancer forgets the connection.
fn close(world: &Arc<World>, conn: ConnId) {
    world.with_lb(|core| {
        if core.pumps.remove(&conn).is_some() {
            core.lb.handle_close(world.rec.now(), conn);
            core.drain(world);
        }
    });
}

/// How a relay ended.
#[derive(Debug, PartialEq, Eq)]
enum Relayed {
    /// One side ended or a write failed.
    Ended,
    /// The upstream connection ended before any byte of the response.
    Lost,
    /// The response's end went out (keep-alive).
    Complete,
    /// The balancer cut the connection and left the rest to the task.
    Cut(CutOrder),
}

/// A run of frames as the hops see them: the response's first frame is its head; the others are
/// told apart only when some hop cares (`kinds`), by decoding them.
fn split(frames: &[u8], first: bool, kinds: bool) -> Frames {
    let mut out = Vec::new();
    let mut rest = frames;
    while let Some(frame) = net::first_frame(rest) {
        let kind = if first && out.is_empty() {
            FrameKind::Head
        } else if kinds {
            match net::decode::<Frame>(frame) {
                Ok(Frame::Comment) => FrameKind::Comment,
                Ok(Frame::End) => FrameKind::End,
                Ok(Frame::Head(_)) => FrameKind::Head,
                _ => FrameKind::Body,
            }
        } else {
            FrameKind::Body
        };
        out.push((kind, frame.to_vec()));
        rest = &rest[frame.len()..];
    }
    out
}

/// The first frame from the server is the response head: if it names a session, the balancer
/// learns where the session lives.
fn learn_session(world: &Arc<World>, frames: &[u8], backend: Backend) {
    let head = net::first_frame(frames).and_then(|f| net::decode::<Frame>(f).ok());
    if let Some(Frame::Head(ResponseHead { session: Some(session), .. })) = head {
        world.with_lb(|core| core.lb.handle_session(session, backend));
    }
}

/// After a client-side cut the server's socket says nothing; the server model is told the
/// client side is gone and decides, by its `dead_stream` rule, when it notices (a real server
/// learns it when a write to the dead peer fails, or never).
fn client_gone(world: &Arc<World>, backend: Backend, upstream: &Stream) {
    let peer = upstream.local_addr();
    world.with_store(world.store_of(backend.0), |core| core.client_gone(world, peer));
}

/// After a client-side cut: the upstream stays open, its bytes going nowhere, until the server
/// ends it (with keep-alive, until the response's end: the server keeps the connection, the
/// balancer lets it go).
async fn drain_upstream(upstream: &mut Stream, keep_alive: bool) {
    let mut reader = FrameReader::new();
    while let Ok(Some(frame)) = reader.next(upstream).await {
        if keep_alive && net::peek::<Frame>(frame, |m| *m == Frame::End) {
            return;
        }
    }
}

/// The client side of `conn` ended (a read or a write): if the balancer's socket gave the
/// connection up on a black hole (its writes unacknowledged for TCP's retransmission timeout),
/// that is recorded; the close that follows is any close.
fn note_gave_up(world: &Arc<World>, conn: ConnId, client: &Stream) {
    if client.gave_up() {
        record(world, StepKind::LbGaveUp { conn });
    }
}

/// `frames` frames passed on `conn` at once: the balancer hears of each.
fn bytes_passed(world: &Arc<World>, conn: ConnId, frames: usize) {
    let now = world.rec.now();
    // Bytes only ever move a deadline later: the timer task needs no bell.
    world.with_lb(|core| (0..frames).for_each(|_| core.lb.handle_bytes(now, conn)));
}

/// No replica can take the connection: the balancer answers itself, as a real one does (502 when
/// the replica cannot be reached, 503 when none is in the rotation).
async fn answer(client: &mut Stream, status: Status) {
    let mut buf = Vec::new();
    net::encode(&Frame::Head(ResponseHead::status(status)), &mut buf);
    net::encode(&Frame::End, &mut buf);
    let _ = net::send(client, buf).await;
}
