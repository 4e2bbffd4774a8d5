//! The fault injector: carries out the scenario's fault plan, from the runner's task.
//!
//! madsim offers node kill/restart and link clogging, but no mid-stream reset: a reset is done by
//! the actors themselves, dropping both ends of every client↔load-balancer connection.

use super::{World, CLIENT_NODE, SERVER_NODE};
use crate::faults::{Fault, PlannedFault};
use crate::recorder::lock;
use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use mcpsim_model::trace::{Actor, StepKind};
use std::sync::Arc;

/// The nodes faults act on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Nodes {
    pub client: NodeId,
    pub lb: NodeId,
}

/// Applies one planned fault, recording it first.
pub(crate) fn apply(world: &Arc<World>, nodes: Nodes, planned: &PlannedFault) {
    tracing::info!(fault = %planned, "applying fault");
    world.rec.record(Actor::Fault, StepKind::Fault { fault: planned.to_string() });
    match planned.fault {
        Fault::Reset => reset_client_connections(world),
        Fault::Partition { .. } => {
            // Clog first: the client's reconnects after the reset must find the link down.
            clog(nodes, true);
            reset_client_connections(world);
        }
        Fault::ServerRestart => restart_server(world),
        Fault::ClientRestart => restart_client(world),
    }
}

/// Ends a partition: the link carries traffic again.
pub(crate) fn heal(nodes: Nodes) {
    tracing::info!("partition healed");
    clog(nodes, false);
}

/// Both directions of the client↔load-balancer link. A clogged link refuses new connections at
/// once; established streams would only stall, which is why a partition also resets them.
fn clog(nodes: Nodes, clogged: bool) {
    let net = NetSim::current();
    for (src, dst) in [(nodes.client, nodes.lb), (nodes.lb, nodes.client)] {
        if clogged {
            net.clog_link(src, dst);
        } else {
            net.unclog_link(src, dst);
        }
    }
}

/// Every open client↔load-balancer connection breaks abruptly on both sides: the client hears a
/// reset, the balancer forgets the connection and drops its upstream half, so the server sees a
/// disconnect.
fn reset_client_connections(world: &Arc<World>) {
    world.with_client(|core| core.reset_connections(world));
    world.with_lb(|core| core.reset_connections(world));
}

/// The server process dies and comes back empty: the live model records what it loses, then
/// the node restarts and its `main` builds a server of the next epoch.
fn restart_server(world: &Arc<World>) {
    world.with_server(|core| core.crash(world));
    *lock(&world.server) = None;
    bounce(SERVER_NODE);
}

/// The client process dies and comes back with what its disk holds.
fn restart_client(world: &Arc<World>) {
    *lock(&world.client) = None;
    bounce(CLIENT_NODE);
}

/// Kills a node (its tasks and sockets go, peers see their streams end) and starts it again.
/// `kill` before `restart`: `restart` alone keeps the old sockets bound, and the new listener
/// could not bind its port.
fn bounce(node: &str) {
    let handle = Handle::current();
    handle.kill(node);
    handle.restart(node);
}
