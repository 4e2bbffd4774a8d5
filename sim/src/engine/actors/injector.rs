//! The fault injector: carries out the scenario's fault plan, from the runner's task.
//!
//! madsim offers node kill/restart and link clogging, but no mid-stream reset: a reset is done by
//! the actors themselves, dropping both ends of every client↔load-balancer connection.

use super::{client_node, World, SERVER_NODE};
use crate::engine::recorder::lock;
use crate::scenario::faults::{Fault, PlannedFault};
use madsim::net::NetSim;
use madsim::runtime::Handle;
use madsim::task::NodeId;
use mcpsim_model::trace::{Actor, StepKind};
use std::sync::Arc;

/// The links between the clients and the load balancer, which partitions cut (all of them: a
/// partition stands for the balancer's network going away).
#[derive(Debug)]
pub(crate) struct Link {
    clients: Vec<NodeId>,
    lb: NodeId,
    /// Partitions in force: plans may overlap them, and the link heals when the last one ends.
    partitions: u32,
}

impl Link {
    pub(crate) fn new(clients: Vec<NodeId>, lb: NodeId) -> Self {
        Link { clients, lb, partitions: 0 }
    }

    fn partition(&mut self) {
        self.partitions += 1;
        if self.partitions == 1 {
            self.clog(true);
        }
    }

    /// A partition ends; the link carries traffic again once no other one is in force.
    pub(crate) fn heal(&mut self) {
        self.partitions = self.partitions.saturating_sub(1);
        if self.partitions == 0 {
            tracing::info!("partition healed");
            self.clog(false);
        }
    }

    /// Both directions. A clogged link refuses new connections at once; established streams
    /// would only stall, which is why a partition also resets them.
    fn clog(&self, clogged: bool) {
        let net = NetSim::current();
        for client in &self.clients {
            for (src, dst) in [(*client, self.lb), (self.lb, *client)] {
                if clogged {
                    net.clog_link(src, dst);
                } else {
                    net.unclog_link(src, dst);
                }
            }
        }
    }
}

/// Applies one planned fault, recording it first.
pub(crate) fn apply(world: &Arc<World>, link: &mut Link, planned: &PlannedFault) {
    tracing::info!(fault = %planned, "applying fault");
    world.rec.record(Actor::Fault, StepKind::Fault { fault: planned.to_string() });
    match planned.fault {
        Fault::Reset => reset_client_connections(world),
        Fault::Partition { .. } => {
            // Clog first: the client's reconnects after the reset must find the link down.
            link.partition();
            reset_client_connections(world);
        }
        Fault::ServerRestart => restart_server(world),
        Fault::ClientRestart => restart_client(world),
    }
}

/// Every open client↔load-balancer connection, of every client, breaks abruptly on both sides:
/// each client hears a reset, the balancer forgets the connection and drops its upstream half, so
/// the server sees a disconnect.
fn reset_client_connections(world: &Arc<World>) {
    for index in world.client_indexes() {
        world.with_client(index, |core| core.reset_connections(world));
    }
    world.with_lb(|core| core.reset_connections(world));
}

/// The server process dies and comes back empty: the live model records what it loses, then
/// the node restarts and its `main` builds a server of the next epoch.
fn restart_server(world: &Arc<World>) {
    world.with_server(|core| core.crash(world));
    *lock(&world.server) = None;
    bounce(SERVER_NODE);
}

/// Client 0's process dies and comes back with what its disk holds. Only client 0: the fault
/// plan names no client, and the other clients of a multi-client scenario stand by as bystanders
/// whose sessions a restart of their neighbour must not disturb.
fn restart_client(world: &Arc<World>) {
    *lock(&world.client_slot(0).core) = None;
    bounce(&client_node(0));
}

/// Kills a node (its tasks and sockets go, peers see their streams end) and starts it again.
/// `kill` before `restart`: `restart` alone keeps the old sockets bound, and the new listener
/// could not bind its port.
fn bounce(node: &str) {
    let handle = Handle::current();
    handle.kill(node);
    handle.restart(node);
}
