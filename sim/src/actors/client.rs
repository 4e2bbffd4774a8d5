//! The client node: the MCP client library (`mcpsim_model::client::Client`) and the application
//! that issues the scenario's calls through it.
//!
//! Each `ClientOutput::Open` becomes one task: connect to the load balancer, send the request,
//! report every frame, then the end: `Clean` after `Frame::End`, `Reset` if the stream stops
//! before it, `Refused` if the connect fails.

use super::{derive_seed, run_timer, SeedPurpose, TimerArm, World, CLIENT_NAME, CLIENT_NODE};
use crate::net::{self, FrameReader, LB_ADDR};
use crate::recorder::lock;
use madsim::net::TcpStream;
use madsim::runtime::{Handle, NodeHandle};
use madsim::task::AbortHandle;
use mcpsim_model::client::{Client, ClientOutput};
use mcpsim_model::config::Persistence;
use mcpsim_model::http::{ConnEnd, Frame, Request};
use mcpsim_model::ids::{CallKey, ConnId};
use mcpsim_model::trace::Actor;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The live client process.
pub(crate) struct ClientCore {
    client: Client,
    /// Connection tasks still running, by the client's connection number.
    conns: BTreeMap<ConnId, AbortHandle>,
    /// This incarnation of the client node: connection tasks are spawned here even when the
    /// input came from the fault injector, which runs elsewhere.
    node: NodeHandle,
    timer: TimerArm,
}

impl ClientCore {
    /// Carries out the client's outputs.
    fn drain(&mut self, world: &Arc<World>) {
        while let Some(output) = self.client.poll_output() {
            match output {
                ClientOutput::Open { conn, request } => {
                    let task = self.node.spawn(connection(world.clone(), conn, request));
                    self.conns.insert(conn, task.abort_handle());
                }
                ClientOutput::Abort { conn } => {
                    if let Some(task) = self.conns.remove(&conn) {
                        task.abort();
                        self.client.handle_conn_end(world.rec.now(), conn, ConnEnd::Aborted);
                    }
                }
                ClientOutput::Persist(state) => *lock(&world.disk) = Some(state),
                ClientOutput::Record(kind) => {
                    let actor = if kind.is_app() { Actor::App } else { Actor::Client };
                    world.rec.record(actor, kind);
                }
            }
        }
        self.timer.update(self.client.poll_timeout());
    }

    /// Nothing left to do: no call unresolved, no reconnect pending, nothing to send.
    pub(crate) fn is_quiet(&self) -> bool {
        self.client.is_quiet()
    }

    /// The session the client holds.
    pub(crate) fn session(&self) -> Option<mcpsim_model::ids::SessionId> {
        self.client.session().cloned()
    }

    /// Every open connection breaks under the client (a reset or a partition): the tasks go,
    /// taking their sockets with them, and the client hears `Reset` for each.
    pub(crate) fn reset_connections(&mut self, world: &Arc<World>) {
        for (conn, task) in std::mem::take(&mut self.conns) {
            task.abort();
            self.client.handle_conn_end(world.rec.now(), conn, ConnEnd::Reset);
            self.drain(world);
        }
    }
}

/// The client node's main task: a new client process, then the application.
pub(crate) async fn main(world: Arc<World>) {
    let incarnation = world.client_starts.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(incarnation, "client process starts");
    start_client(&world, incarnation);
    let bell = world.with_client(|core| core.timer.bell()).expect("the client was just installed");
    madsim::task::spawn(run_timer(world.clone(), "client", bell, arm_timer, fire_timer));
    if incarnation > 0 {
        reissue_unresolved(&world);
    }
    application(&world).await;
    // The node lives on: returning would end the process and its connections.
    std::future::pending::<()>().await
}

/// Installs a fresh client, restored from disk if its policy keeps state durably, and starts it.
fn start_client(world: &Arc<World>, incarnation: u32) {
    let policy = world.scenario.client.clone();
    let restored = match policy.persistence {
        Persistence::Durable => lock(&world.disk).clone(),
        Persistence::Volatile => None,
    };
    let seed = derive_seed(world.seed, SeedPurpose::ClientBackoff, u64::from(incarnation));
    let node = Handle::current().get_node(CLIENT_NODE).expect("the client node exists");
    let core = ClientCore {
        client: Client::new(policy, CLIENT_NAME, restored, seed),
        conns: BTreeMap::new(),
        node,
        timer: TimerArm::new(),
    };
    *lock(&world.client) = Some(core);
    world.with_client(|core| {
        core.client.start(world.rec.now());
        core.drain(world);
    });
}

fn arm_timer(world: &Arc<World>) -> Option<mcpsim_model::Instant> {
    world.with_client(|core| core.timer.arm(core.client.poll_timeout())).flatten()
}

fn fire_timer(world: &Arc<World>, now: mcpsim_model::Instant) {
    world.with_client(|core| {
        core.client.handle_timeout(now);
        core.drain(world);
    });
}

// ---------------------------------------------------------------------------------------------
// The application
// ---------------------------------------------------------------------------------------------

/// Issues the scenario's calls at their times, skipping any issued by an earlier incarnation.
async fn application(world: &Arc<World>) {
    let mut calls = world.scenario.calls.clone();
    calls.sort_by_key(|c| c.at);
    for spec in calls {
        if lock(&world.issued).contains(&spec.call) {
            continue;
        }
        let at = mcpsim_model::Instant(mcpsim_model::time::micros(spec.at));
        if at > world.rec.now() {
            madsim::time::sleep_until(world.rec.deadline(at)).await;
        }
        lock(&world.issued).push(spec.call);
        issue(world, spec.call, &spec.tool);
    }
}

/// After a restart: the application asks again for every call it issued that it has not seen
/// resolved and that the restored client does not carry on by itself.
fn reissue_unresolved(world: &Arc<World>) {
    let issued = lock(&world.issued).clone();
    let carried: Vec<CallKey> = world.with_client(|core| core.client.unresolved_calls()).unwrap_or_default();
    for call in issued {
        if world.rec.resolutions(call) == 0 && !carried.contains(&call) {
            let tool = world.scenario.calls.iter().find(|c| c.call == call).map(|c| c.tool.clone());
            issue(world, call, tool.as_deref().unwrap_or_default());
        }
    }
}

fn issue(world: &Arc<World>, call: CallKey, tool: &str) {
    let idempotent = world.scenario.tool(tool).is_some_and(|t| t.idempotent);
    world.with_client(|core| {
        core.client.call_tool(world.rec.now(), call, tool, idempotent);
        core.drain(world);
    });
}

// ---------------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------------

/// One HTTP exchange, from connect to end.
async fn connection(world: Arc<World>, conn: ConnId, request: Request) {
    if let Some(end) = exchange(&world, conn, request).await {
        world.with_client(|core| {
            if core.conns.remove(&conn).is_some() {
                core.client.handle_conn_end(world.rec.now(), conn, end);
                core.drain(&world);
            }
        });
    }
}

/// Runs the exchange; the end to report, or `None` if the client let go of the connection.
async fn exchange(world: &Arc<World>, conn: ConnId, request: Request) -> Option<ConnEnd> {
    let mut stream = match TcpStream::connect(LB_ADDR).await {
        Ok(stream) => stream,
        Err(e) => {
            tracing::debug!(%conn, error = %e, "connect failed");
            return Some(ConnEnd::Refused);
        }
    };
    if net::send_message(&mut stream, &request, &mut Vec::new()).await.is_err() {
        return Some(ConnEnd::Reset);
    }
    let mut reader = FrameReader::new();
    loop {
        let frame: Frame = match reader.next(&mut stream).await {
            Ok(Some(bytes)) => net::decode(bytes).expect("the server encodes every frame it sends"),
            Ok(None) | Err(_) => return Some(ConnEnd::Reset),
        };
        let end = matches!(frame, Frame::End);
        if !deliver(world, conn, frame) {
            return None;
        }
        if end {
            return Some(ConnEnd::Clean);
        }
    }
}

/// Hands a frame to the client; false once the client no longer holds the connection.
fn deliver(world: &Arc<World>, conn: ConnId, frame: Frame) -> bool {
    world
        .with_client(|core| {
            if !core.conns.contains_key(&conn) {
                return false;
            }
            core.client.handle_frame(world.rec.now(), conn, frame);
            core.drain(world);
            core.conns.contains_key(&conn)
        })
        .unwrap_or(false)
}
