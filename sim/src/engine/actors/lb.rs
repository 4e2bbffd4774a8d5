//! The load balancer node: accepts client connections, opens one to the server for each, and
//! pumps frames both ways, telling `mcpsim_model::lb::LoadBalancer` about every frame that passes.
//!
//! madsim has no idle timeout and no mid-stream RST: when the model asks for a `Cut`, this actor
//! drops both sockets of the connection (its pump task is aborted), so the client sees its stream
//! end without `Frame::End` and the server sees a disconnect.

use super::{run_timer, TimerArm, World};
use crate::engine::net::{self, FrameReader, LB_ADDR, SERVER_ADDR};
use madsim::net::{TcpListener, TcpStream};
use madsim::task::AbortHandle;
use mcpsim_model::http::{Frame, ResponseHead, Status};
use mcpsim_model::ids::ConnId;
use mcpsim_model::lb::{LbOutput, LoadBalancer};
use mcpsim_model::trace::Actor;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The load balancer process.
pub(crate) struct LbCore {
    lb: LoadBalancer,
    /// Pump tasks of open connections, by the balancer's own connection number.
    pumps: BTreeMap<ConnId, AbortHandle>,
    next_conn: u64,
    timer: TimerArm,
}

impl LbCore {
    fn drain(&mut self, world: &Arc<World>) {
        while let Some(output) = self.lb.poll_output() {
            match output {
                LbOutput::Cut { conn } => {
                    tracing::debug!(%conn, "idle cut");
                    if let Some(pump) = self.pumps.remove(&conn) {
                        pump.abort();
                    }
                }
                LbOutput::Record(kind) => world.rec.record(Actor::Lb, kind),
            }
        }
        self.timer.update(self.lb.poll_timeout());
    }

    /// Every connection through the balancer is reset: both sockets of each go, and the balancer
    /// forgets them.
    pub(crate) fn reset_connections(&mut self, world: &Arc<World>) {
        for (conn, pump) in std::mem::take(&mut self.pumps) {
            pump.abort();
            self.lb.handle_close(world.rec.now(), conn);
        }
        self.drain(world);
    }
}

/// The load balancer node's main task: listen, and start a pump per accepted connection.
pub(crate) async fn main(world: Arc<World>) {
    let core = LbCore {
        lb: LoadBalancer::new(world.scenario.lb.clone()),
        pumps: BTreeMap::new(),
        next_conn: 1,
        timer: TimerArm::new(),
    };
    let bell = core.timer.bell();
    *crate::engine::recorder::lock(&world.lb) = Some(core);
    madsim::task::spawn(run_timer(world.clone(), "load balancer", bell, arm_timer, fire_timer));
    let listener = TcpListener::bind(LB_ADDR).await.expect("the load balancer's address is free");
    world.listening.add_permits(1);
    loop {
        let (stream, _) = listener.accept().await.expect("a listener accepts until its node dies");
        world.with_lb(|core| {
            let conn = ConnId(core.next_conn);
            core.next_conn += 1;
            core.lb.handle_open(world.rec.now(), conn);
            let pump = madsim::task::spawn(pump(world.clone(), conn, stream));
            core.pumps.insert(conn, pump.abort_handle());
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

/// Proxies one client connection until either side closes it.
async fn pump(world: Arc<World>, conn: ConnId, mut client: TcpStream) {
    match TcpStream::connect(SERVER_ADDR).await {
        Ok(mut upstream) => relay(&world, conn, &mut client, &mut upstream).await,
        Err(e) => {
            tracing::debug!(%conn, error = %e, "server unreachable: 502");
            bad_gateway(&mut client).await
        }
    }
    world.with_lb(|core| {
        if core.pumps.remove(&conn).is_some() {
            core.lb.handle_close(world.rec.now(), conn);
            core.drain(&world);
        }
    });
}

/// Forwards frames both ways, as raw bytes, until one side ends or a write fails. Frames that
/// arrived together leave together, in one flush.
async fn relay(world: &Arc<World>, conn: ConnId, client: &mut TcpStream, upstream: &mut TcpStream) {
    let (mut from_server, mut from_client) = (FrameReader::new(), FrameReader::new());
    loop {
        let forwarded = tokio::select! {
            biased;
            read = from_server.next_frames(upstream) => match read {
                Ok(Some((frames, count))) => {
                    bytes_passed(world, conn, count);
                    net::send(client, frames).await
                }
                Ok(None) | Err(_) => return,
            },
            read = from_client.next_frames(client) => match read {
                Ok(Some((frames, count))) => {
                    bytes_passed(world, conn, count);
                    net::send(upstream, frames).await
                }
                Ok(None) | Err(_) => return,
            },
        };
        if forwarded.is_err() {
            return;
        }
    }
}

/// `frames` frames passed on `conn` at once: the balancer hears of each.
fn bytes_passed(world: &Arc<World>, conn: ConnId, frames: usize) {
    let now = world.rec.now();
    // Bytes only ever move a deadline later: the timer task needs no bell.
    world.with_lb(|core| (0..frames).for_each(|_| core.lb.handle_bytes(now, conn)));
}

/// The server cannot be reached (it is restarting): answer 502 as a real balancer does.
async fn bad_gateway(client: &mut TcpStream) {
    let mut buf = Vec::new();
    net::encode(&Frame::Head(ResponseHead::status(Status::BAD_GATEWAY)), &mut buf);
    net::encode(&Frame::End, &mut buf);
    let _ = net::send(client, &buf).await;
}
