//! The fault injector: carries out the scenario's fault plan, from the runner's task.
//!
//! madsim offers node kill/restart; partitions and black holes are the wire's
//! ([`crate::engine::wire::Net`]), and a mid-stream reset is done by the actors themselves,
//! dropping both ends of every client↔load-balancer connection.

use super::{client_node, replica_node, World};
use crate::engine::addr::{client_ip, replica_ip};
use crate::engine::recorder::lock;
use crate::scenario::faults::{Fault, PlannedFault, Target};
use madsim::runtime::Handle;
use mcpsim_model::http::Status;
use mcpsim_model::trace::{Actor, StepKind};
use std::net::IpAddr;
use std::sync::Arc;

/// The edge between the clients and the load balancer, which partitions cut (all of it: a
/// partition stands for the balancer's network going away).
pub(crate) struct Link {
    net: Arc<crate::engine::wire::Net>,
}

impl Link {
    pub(crate) fn new(world: &World) -> Self {
        Link { net: world.net.clone() }
    }

    /// A clogged edge refuses new connections at once; established streams would only stall,
    /// which is why a partition also resets them.
    fn partition(&mut self, duration: std::time::Duration) {
        self.net.partition(duration);
    }

    /// A partition ends; the link carries traffic again once no other one is in force.
    pub(crate) fn heal(&mut self) {
        if self.net.heal() {
            tracing::info!("partition healed");
        }
    }
}

/// Applies one planned fault (the plan's `index`-th), recording it first.
pub(crate) fn apply(world: &Arc<World>, link: &mut Link, index: usize, planned: &PlannedFault) {
    tracing::info!(fault = %planned, "applying fault");
    world.rec.record(Actor::Fault, StepKind::Fault { fault: planned.to_string() });
    match planned.fault {
        Fault::Reset => reset_client_connections(world),
        Fault::Partition { duration } => {
            // Clog first: the client's reconnects after the reset must find the link down.
            link.partition(duration);
            reset_client_connections(world);
        }
        Fault::Blackhole { target, .. } => blackhole(world, index, target),
        Fault::ServerRestart => restart_server(world),
        Fault::ClientRestart => restart_client(world, 0),
        Fault::Restart { target: Target::Client(i) } => restart_client(world, i),
        Fault::Restart { target: Target::Replica(r) } => restart_replica(world, r),
        Fault::Cut { target: Target::Client(i) } => {
            world.with_client(i, |core| core.reset_connections(world));
            world.with_lb(|core| core.reset_client(world, client_ip(i)));
        }
        Fault::Cut { target: Target::Replica(r) } => {
            world.with_lb(|core| core.reset_replica(world, r));
        }
        Fault::Cut { target: Target::Hop(h) } => {
            world.with_lb(|core| core.fail_hop(world, h, false));
        }
        Fault::Restart { target: Target::Hop(h) } => {
            world.with_lb(|core| core.fail_hop(world, h, true));
        }
        Fault::Answer { target: Target::Hop(h), status, .. } => {
            world.with_lb(|core| core.set_answering(world, h, Some(Status(status))));
        }
        // Validation lets only a hop answer by itself.
        Fault::Answer { .. } => {}
        // Armed here; the server's end of the connection carrying it takes the body apart.
        Fault::Malformed { target: Target::Client(i) } => {
            world.client_slot(i).malformed_posts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // Validation lets only a client's POST arrive malformed.
        Fault::Malformed { .. } => {}
        // The runner walks the replicas (`deploy_step`); the deploy itself is only recorded.
        Fault::Deploy { .. } => {}
        // Armed here; the server that next writes a CreateTaskResult drops it (`server.rs`).
        Fault::TaskReplyLost => {
            world.task_replies_to_lose.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// A black hole (the plan's `index`-th fault) opens over the edge of `target` (a client), or of
/// every client: the wire catches their open connections, which nobody is told of. For each
/// client it caught something of, a `black-holed` step names what, as the client knows its
/// connections: the exchanges in flight, and a count of kept-alive ones idle in its pool.
fn blackhole(world: &Arc<World>, index: usize, target: Option<Target>) {
    // Validation lets only a client be the target.
    let ip = target.and_then(|t| match t {
        Target::Client(i) => Some(client_ip(i)),
        _ => None,
    });
    let caught = world.net.blackhole(index, ip);
    for client in world.client_indexes() {
        let mine: Vec<_> = caught.iter().filter(|a| a.ip() == client_ip(client)).collect();
        if mine.is_empty() {
            continue;
        }
        let in_flight = world.with_client(client, |core| core.in_flight()).unwrap_or_default();
        let (mut conns, mut idle) = (Vec::new(), 0);
        for addr in mine {
            match world.edge_socket(*addr).filter(|conn| in_flight.contains(conn)) {
                Some(conn) => conns.push(conn),
                None => idle += 1,
            }
        }
        conns.sort();
        world.rec.record_for(
            Actor::Fault,
            world.client_tag(client),
            StepKind::BlackHoled { conns, idle, connect: false },
        );
    }
}

/// A black hole stops swallowing new connections; what it caught stays dead.
pub(crate) fn blackhole_end(world: &Arc<World>, index: usize, planned: &PlannedFault) {
    if world.net.close_blackhole(index) {
        let what = format!("{}: new connections get through again, those it caught stay dead", planned.fault.kind());
        world.rec.record(Actor::Fault, StepKind::Fault { fault: what });
    }
}

/// A hop that answered by itself (`Fault::Answer`) passes requests on again.
pub(crate) fn answer_end(world: &Arc<World>, planned: &PlannedFault) {
    if let Fault::Answer { target: Target::Hop(h), .. } = planned.fault {
        world.rec.record(
            Actor::Fault,
            StepKind::Fault { fault: format!("{}: hop{h} passes requests on again", planned.fault.kind()) },
        );
        world.with_lb(|core| core.set_answering(world, h, None));
    }
}

/// One step of a rolling deploy: replica `replica` leaves the rotation (`drain`: it restarts
/// later, in [`deploy_restart`]) or restarts at once.
pub(crate) fn deploy_step(world: &Arc<World>, replica: u32, drain: bool) {
    if drain {
        world.rec.record(Actor::Fault, StepKind::Fault { fault: format!("deploy: replica{replica} drains") });
        world.with_lb(|core| core.set_draining(world, replica, true));
    } else {
        deploy_restart(world, replica);
    }
}

/// A deployed replica restarts (after its drain) and rejoins the rotation.
pub(crate) fn deploy_restart(world: &Arc<World>, replica: u32) {
    world.rec.record(Actor::Fault, StepKind::Fault { fault: format!("deploy: replica{replica} restarts") });
    restart_replica(world, replica);
    world.with_lb(|core| core.set_draining(world, replica, false));
}

/// One replica restarts. With local stores its server process dies and comes back empty (a new
/// epoch); with a shared store the state machine stays and only the replica's connections end.
fn restart_replica(world: &Arc<World>, replica: u32) {
    let store = world.store_of(replica);
    if world.shared_store() {
        world.with_store(store, |core| core.disconnect_replica(world, replica));
    } else {
        world.with_store(store, |core| core.crash(world));
        *lock(&world.servers[store]) = None;
    }
    bounce(world, &replica_node(replica), replica_ip(replica));
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

/// Every server process dies and comes back empty: the live models record what they lose, then
/// the replica nodes restart and (with local stores) their `main`s build servers of the next
/// epoch; a shared store is started again here.
fn restart_server(world: &Arc<World>) {
    for store in world.stores() {
        world.with_store(store, |core| core.crash(world));
        *lock(&world.servers[store]) = None;
    }
    if world.shared_store() {
        super::server::start_store(world, 0);
    }
    for replica in world.replicas() {
        bounce(world, &replica_node(replica), replica_ip(replica));
    }
}

/// Client `index`'s process dies and comes back with what its disk holds. `client-restart` hits
/// client 0 only: the other clients of a multi-client scenario stand by as bystanders whose
/// sessions a restart of their neighbour must not disturb (`fault.restart=clientN@T` names one).
fn restart_client(world: &Arc<World>, index: u32) {
    if let Some(core) = lock(&world.client_slot(index).core).take() {
        super::client::record_lost_task_ids(world, &core);
    }
    bounce(world, &client_node(index), client_ip(index));
}

/// Kills a node (its tasks and streams go, peers see their streams end; its listeners, at `ip`,
/// refuse connections from now on) and starts it again.
fn bounce(world: &World, node: &str, ip: IpAddr) {
    world.net.unbind(ip);
    let handle = Handle::current();
    handle.kill(node);
    handle.restart(node);
}
