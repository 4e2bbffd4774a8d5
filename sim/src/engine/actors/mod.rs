//! The machines of `mcpsim-model` as actors on madsim nodes.
//!
//! Each machine lives in a *core* (`ClientCore`, `LbCore`, `ServerCore`) inside the [`World`], a
//! `Mutex<Option<..>>` the runner owns, so that the fault injector can reach the live model (to
//! crash it, reset its connections) and the runner can read its final state. The tasks of a node
//! (accept loop, one task per connection, a timer task) lock the core, feed the model one input,
//! and drain its outputs while still holding the lock: every effect a drain performs is
//! synchronous (record, spawn, abort, queue a frame), so no lock is ever held across an await.
//!
//! A node restart replaces the core; the tasks of the old incarnation are dead (madsim drops
//! them unpolled), so nothing writes into the new core by mistake.

pub(crate) mod client;
pub(crate) mod injector;
pub(crate) mod lb;
pub(crate) mod server;

use crate::engine::addr::{address_key, client_ip};
use crate::engine::recorder::{lock, ConnName, Recorder};
use crate::engine::wire::Net;
use crate::scenario::Scenario;
use mcpsim_model::client::DurableState;
use mcpsim_model::config::{ReplicaStore, ToolSpec};
use mcpsim_model::ids::{CallKey, ConnId};
use mcpsim_model::time::Instant;
use mcpsim_model::trace::{Actor, StepKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, Semaphore};

/// madsim node names (also how the injector finds them).
pub(crate) const LB_NODE: &str = "lb";
pub(crate) const SERVER_NODE: &str = "server";
/// The madsim node of a shared store's process (see [`World::store_node`]).
pub(crate) const STORE_NODE: &str = "store";

/// The madsim node of server replica `index`: `server`, then `server-1`, `server-2`, ...
pub(crate) fn replica_node(index: u32) -> String {
    match index {
        0 => SERVER_NODE.to_string(),
        i => format!("{SERVER_NODE}-{i}"),
    }
}

/// The madsim node of logical client `index`: `client`, then `client-1`, `client-2`, ...
pub(crate) fn client_node(index: u32) -> String {
    match index {
        0 => "client".to_string(),
        i => format!("client-{i}"),
    }
}

/// `clientInfo.name` of logical client `index`'s application: `app`, then `app-1`, `app-2`, ...
/// The server records it in `SessionCreated`, which is how the oracles tell the clients apart.
pub(crate) fn client_name(index: u32) -> String {
    match index {
        0 => "app".to_string(),
        i => format!("app-{i}"),
    }
}

/// One logical client: its process (while up) and what outlives the process.
pub(crate) struct ClientSlot {
    pub core: Mutex<Option<client::ClientCore>>,
    /// The client's durable storage: it outlives the client process.
    pub disk: Mutex<Option<DurableState>>,
    /// Calls the application issued, in order: its own record (an order book, say), which
    /// survives a client restart.
    pub issued: Mutex<Vec<CallKey>>,
    /// The scenario's deletes (by index) this application (or the operator) already made.
    pub deleted: Mutex<Vec<usize>>,
    /// The scenario's bogus resumes (by index) already made.
    pub bogus_resumed: Mutex<Vec<usize>>,
    /// The scenario's empty-resume entries (by index) already armed.
    pub empty_armed: Mutex<Vec<usize>>,
    /// Resumes of this client's session still to be answered empty in front of the server.
    pub empty_resumes: AtomicU32,
    /// This client's `tools/call` POSTs still to reach the server malformed (`fault.malformed`).
    pub malformed_posts: AtomicU32,
    /// When each call resolved for good (no re-issue to follow): what a later call's
    /// `after_idle` gap counts from.
    pub settled_at: Mutex<BTreeMap<CallKey, Instant>>,
    /// Re-issues the application made of each call (`on_error`).
    pub reissues: Mutex<BTreeMap<CallKey, u32>>,
    /// Rung when a call settles for good (the application may be waiting out an idle gap).
    pub settled: Notify,
    /// Incarnations started so far.
    pub starts: AtomicU32,
    /// The number the client's next connection gets, across incarnations: a restarted process
    /// goes on from here, so a connection number names one exchange in the whole trace.
    pub next_conn: AtomicU64,
}

impl ClientSlot {
    fn new() -> Self {
        ClientSlot {
            core: Mutex::new(None),
            disk: Mutex::new(None),
            issued: Mutex::new(Vec::new()),
            deleted: Mutex::new(Vec::new()),
            bogus_resumed: Mutex::new(Vec::new()),
            empty_armed: Mutex::new(Vec::new()),
            empty_resumes: AtomicU32::new(0),
            malformed_posts: AtomicU32::new(0),
            settled_at: Mutex::new(BTreeMap::new()),
            reissues: Mutex::new(BTreeMap::new()),
            settled: Notify::new(),
            starts: AtomicU32::new(0),
            next_conn: AtomicU64::new(1),
        }
    }
}

/// Everything the actors share, owned by the runner for one run.
pub(crate) struct World {
    pub scenario: Arc<Scenario>,
    pub seed: u64,
    /// The scenario's tools with this run's jittered durations.
    pub tools: Vec<ToolSpec>,
    pub rec: Recorder,
    /// One slot per logical client (`scenario.clients`, at least one).
    pub clients: Vec<ClientSlot>,
    pub lb: Mutex<Option<lb::LbCore>>,
    /// The server processes' state: one per replica with local stores, one for all with a
    /// shared store (see [`World::store_of`]).
    pub servers: Vec<Mutex<Option<server::ServerCore>>>,
    /// Incarnations started so far, per store.
    pub server_starts: Vec<AtomicU32>,
    /// One permit per listener bound (load balancer, each replica), so the clients start only
    /// once they can connect.
    pub listening: Semaphore,
    /// The fleet's one task store under `server.tasks.store = shared` (every replica's process
    /// reads it; a restart keeps it). `None` otherwise: each process has its own.
    pub task_store: Option<Arc<Mutex<mcpsim_model::tasks::TaskStore>>>,
    /// `CreateTaskResult`s still to drop (`Fault::TaskReplyLost`): each planned fault arms one,
    /// the next server write of one takes it (`server.rs`).
    pub task_replies_to_lose: AtomicU32,
    /// The connections between the machines ([`crate::engine::wire`]).
    pub net: Arc<Net>,
    /// The node a shared store's process runs its tasks on (`None` with local stores: each
    /// replica's node runs its own). Its own node, so that no replica's restart takes them, and
    /// the runner kills it when the run ends like every other: a task waiting on a bell it
    /// shares with the world it holds would otherwise keep the whole world alive after the
    /// runtime is gone.
    pub store_node: Option<madsim::runtime::NodeHandle>,
    /// Under a plan with a black hole: the exchange each client socket to the balancer last
    /// carried, by the socket's address, so that the fault's step names what it caught as the
    /// client does. `None` in a run without one.
    edge_sockets: Option<Mutex<BTreeMap<SocketAddr, ConnId>>>,
}

#[cfg(test)]
thread_local! {
    /// Worlds alive on this thread: a run must free its world when it ends (tests read it).
    static LIVE_WORLDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many worlds are alive on this thread.
#[cfg(test)]
pub(crate) fn live_worlds() -> usize {
    LIVE_WORLDS.get()
}

#[cfg(test)]
impl Drop for World {
    fn drop(&mut self) {
        LIVE_WORLDS.set(LIVE_WORLDS.get() - 1);
    }
}

/// The shared task store a fleet with `server.tasks.store = shared` reads (ids `shared-t<n>`).
fn shared_task_store(tasks: &mcpsim_model::tasks::ServerTasks) -> Option<Arc<Mutex<mcpsim_model::tasks::TaskStore>>> {
    let shared = tasks.create_for_tools_over.is_some() && tasks.store == mcpsim_model::tasks::TaskStoreScope::Shared;
    shared.then(|| Arc::new(Mutex::new(mcpsim_model::tasks::TaskStore::new(tasks.expiry, "shared"))))
}

impl World {
    pub(crate) fn new(scenario: Arc<Scenario>, seed: u64, rec: Recorder) -> Self {
        let tools = jittered_tools(&scenario, seed);
        let clients = (0..scenario.clients.max(1)).map(|_| ClientSlot::new()).collect();
        let stores = match scenario.lb.store {
            ReplicaStore::Local => scenario.lb.replicas.max(1),
            ReplicaStore::Shared => 1,
        };
        let scenario_tasks = scenario.server.tasks.clone();
        let net = Net::new(seed, scenario.net.latency_min, scenario.net.latency_max);
        let blackholes = scenario.faults.faults().iter().any(|f| f.fault.kind() == "blackhole");
        if blackholes {
            net.track_edge();
        }
        let store_node = (scenario.lb.store == ReplicaStore::Shared)
            .then(|| madsim::runtime::Handle::current().create_node().name(STORE_NODE).build());
        #[cfg(test)]
        LIVE_WORLDS.set(LIVE_WORLDS.get() + 1);
        World {
            scenario,
            seed,
            tools,
            rec,
            clients,
            lb: Mutex::new(None),
            servers: (0..stores).map(|_| Mutex::new(None)).collect(),
            server_starts: (0..stores).map(|_| AtomicU32::new(0)).collect(),
            listening: Semaphore::new(0),
            task_store: shared_task_store(&scenario_tasks),
            task_replies_to_lose: AtomicU32::new(0),
            net,
            store_node,
            edge_sockets: blackholes.then(|| Mutex::new(BTreeMap::new())),
        }
    }

    /// The server replicas behind the load balancer.
    pub(crate) fn replicas(&self) -> std::ops::Range<u32> {
        0..self.scenario.lb.replicas.max(1)
    }

    /// Whether the replicas share one store (one server state machine behind every replica).
    pub(crate) fn shared_store(&self) -> bool {
        self.store_node.is_some()
    }

    /// Spawns a task of a store's process: on the shared store's own node, else on the calling
    /// replica's.
    pub(crate) fn spawn_for_store<F: std::future::Future<Output = ()> + Send + 'static>(&self, task: F) {
        match &self.store_node {
            Some(node) => drop(node.spawn(task)),
            None => drop(madsim::task::spawn(task)),
        }
    }

    /// The store replica `replica` serves from.
    pub(crate) fn store_of(&self, replica: u32) -> usize {
        if self.shared_store() {
            0
        } else {
            replica as usize
        }
    }

    /// The stores (server state machines), by index.
    pub(crate) fn stores(&self) -> std::ops::Range<usize> {
        0..self.servers.len()
    }

    /// The indexes of the logical clients.
    pub(crate) fn client_indexes(&self) -> std::ops::Range<u32> {
        0..self.clients.len() as u32
    }

    /// The logical client whose machine has the address `key` stands for ([`address_key`]).
    pub(crate) fn client_at(&self, key: u64) -> Option<u32> {
        self.client_indexes().find(|&i| address_key(SocketAddr::new(client_ip(i), 0)) == key)
    }

    /// Logical client `index`'s slot.
    pub(crate) fn client_slot(&self, index: u32) -> &ClientSlot {
        &self.clients[index as usize]
    }

    /// What a client or application step of client `index` is stamped with: its index when the
    /// run has several clients, nothing otherwise (single-client traces read as they always did).
    pub(crate) fn client_tag(&self, index: u32) -> Option<u32> {
        (self.clients.len() > 1).then_some(index)
    }

    /// Whether balancer and server steps are stamped with their replica and name connections as
    /// the client does: only with several replicas, so that single-replica traces read exactly
    /// as they always did.
    pub(crate) fn names_replicas(&self) -> bool {
        self.scenario.lb.replicas > 1
    }

    /// Records a balancer or server step: with several replicas stamped with `replica` and its
    /// connection named as the client names it (`peer`: the far end of the socket the
    /// connection came on), see [`Recorder::record_named`].
    pub(crate) fn record_hop(&self, actor: Actor, replica: Option<u32>, peer: Option<SocketAddr>, kind: StepKind) {
        if self.names_replicas() {
            self.rec.record_named(actor, replica, peer, kind);
        } else {
            self.rec.record(actor, kind);
        }
    }

    /// Client `index`'s socket at `addr` carries its exchange `conn` (from now on).
    pub(crate) fn name_client_link(&self, addr: SocketAddr, index: u32, conn: ConnId) {
        if self.names_replicas() {
            self.rec.name_link(addr, ConnName { conn, client: self.client_tag(index) });
        }
        if let Some(sockets) = &self.edge_sockets {
            lock(sockets).insert(addr, conn);
        }
    }

    /// The exchange a client's socket to the balancer at `addr` last carried (known under a plan
    /// with a black hole only).
    pub(crate) fn edge_socket(&self, addr: SocketAddr) -> Option<ConnId> {
        self.edge_sockets.as_ref().and_then(|sockets| lock(sockets).get(&addr).copied())
    }

    /// The balancer's upstream socket at `upstream` carries the connection its client socket
    /// (whose far end is `client`) carries.
    pub(crate) fn pass_link(&self, client: Option<SocketAddr>, upstream: SocketAddr) {
        if let (true, Some(client)) = (self.names_replicas(), client) {
            if let Some(name) = self.rec.link(client) {
                self.rec.name_link(upstream, name);
            }
        }
    }

    /// Runs `f` on client `index`'s live core, if its process is up.
    pub(crate) fn with_client<R>(
        self: &Arc<Self>,
        index: u32,
        f: impl FnOnce(&mut client::ClientCore) -> R,
    ) -> Option<R> {
        lock(&self.client_slot(index).core).as_mut().map(f)
    }

    /// Runs `f` on the load balancer core.
    pub(crate) fn with_lb<R>(self: &Arc<Self>, f: impl FnOnce(&mut lb::LbCore) -> R) -> Option<R> {
        lock(&self.lb).as_mut().map(f)
    }

    /// Runs `f` on store `store`'s live server core, if its process is up.
    pub(crate) fn with_store<R>(
        self: &Arc<Self>,
        store: usize,
        f: impl FnOnce(&mut server::ServerCore) -> R,
    ) -> Option<R> {
        lock(&self.servers[store]).as_mut().map(f)
    }
}

// ---------------------------------------------------------------------------------------------
// Seeds
// ---------------------------------------------------------------------------------------------

/// What a derived seed is for: each purpose is its own ChaCha stream of the root seed, so adding
/// a draw for one purpose never shifts the draws of another.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SeedPurpose {
    ToolJitter = 1,
    ClientBackoff = 2,
    ServerIds = 3,
    LbRouting = 4,
    Network = 5,
}

/// The `index`-th seed for `purpose` under `root`.
pub(crate) fn derive_seed(root: u64, purpose: SeedPurpose, index: u64) -> u64 {
    purpose_rng(root, purpose, index).gen()
}

/// The backoff seed of client `client`'s `incarnation`-th process: each client its own run of
/// the `ClientBackoff` stream, client 0's the one single-client runs always used.
pub(crate) fn client_backoff_seed(root: u64, client: u32, incarnation: u32) -> u64 {
    derive_seed(root, SeedPurpose::ClientBackoff, (u64::from(client) << 32) | u64::from(incarnation))
}

fn purpose_rng(root: u64, purpose: SeedPurpose, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(root);
    rng.set_stream(purpose as u64);
    // Each index gets its own 16-word block of the stream.
    rng.set_word_pos(u128::from(index) * 16);
    rng
}

/// Each tool's duration × (1 + u·jitter), u drawn uniformly from [-1, 1] per tool.
pub(crate) fn jittered_tools(scenario: &Scenario, seed: u64) -> Vec<ToolSpec> {
    scenario
        .tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let u: f64 = purpose_rng(seed, SeedPurpose::ToolJitter, i as u64).gen_range(-1.0..=1.0);
            let factor = (1.0 + u * scenario.tool_jitter).max(0.0);
            ToolSpec { duration: tool.duration.mul_f64(factor), ..tool.clone() }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Timers
// ---------------------------------------------------------------------------------------------

/// The deadline a node's timer task sleeps until, and the bell that wakes it when the machine
/// asks for an earlier one. Later deadlines need no bell: an early wake-up does nothing.
#[derive(Debug)]
pub(crate) struct TimerArm {
    bell: Arc<Notify>,
    armed: Option<Instant>,
}

impl TimerArm {
    pub(crate) fn new() -> Self {
        TimerArm { bell: Arc::new(Notify::new()), armed: None }
    }

    pub(crate) fn bell(&self) -> Arc<Notify> {
        self.bell.clone()
    }

    /// The timer task is going to sleep until `at`.
    pub(crate) fn arm(&mut self, at: Option<Instant>) -> Option<Instant> {
        self.armed = at;
        at
    }

    /// After an input: wakes the timer task if the machine's next deadline moved earlier.
    pub(crate) fn update(&mut self, next: Option<Instant>) {
        let earlier = match (next, self.armed) {
            (Some(next), Some(armed)) => next < armed,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if earlier {
            self.armed = next;
            self.bell.notify_one();
        }
    }
}

/// Consecutive timeouts at one instant before a machine is judged stuck (its `poll_timeout`
/// never moves past `now`): a bug to report, not a loop to spin in forever.
const MAX_TIMEOUTS_AT_ONE_INSTANT: u32 = 10_000;

/// A node's timer task: sleeps until the machine's `poll_timeout` (re-read when the bell rings),
/// then fires `handle_timeout`. `arm` reads and arms the deadline; `fire` runs the timeout.
pub(crate) async fn run_timer(
    world: Arc<World>,
    who: &'static str,
    bell: Arc<Notify>,
    arm: impl Fn(&Arc<World>) -> Option<Instant>,
    fire: impl Fn(&Arc<World>, Instant),
) {
    let mut at_one_instant = 0;
    loop {
        let next = arm(&world);
        let now = world.rec.now();
        match next {
            Some(at) if at <= now => {
                at_one_instant += 1;
                assert!(
                    at_one_instant < MAX_TIMEOUTS_AT_ONE_INSTANT,
                    "the {who}'s poll_timeout stays at {at} after handle_timeout({now})"
                );
                fire(&world, now);
                continue;
            }
            Some(at) => {
                let deadline = world.rec.deadline(at);
                tokio::select! {
                    biased;
                    _ = bell.notified() => {}
                    _ = madsim::time::sleep_until(deadline) => fire(&world, world.rec.now()),
                }
            }
            None => bell.notified().await,
        }
        at_one_instant = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_seeds_differ_by_purpose_index_and_root() {
        let a = derive_seed(7, SeedPurpose::ClientBackoff, 0);
        assert_eq!(a, derive_seed(7, SeedPurpose::ClientBackoff, 0));
        assert_ne!(a, derive_seed(7, SeedPurpose::ClientBackoff, 1));
        assert_ne!(a, derive_seed(7, SeedPurpose::ServerIds, 0));
        assert_ne!(a, derive_seed(8, SeedPurpose::ClientBackoff, 0));
    }

    #[test]
    fn each_client_has_its_own_backoff_seeds_and_client_0_keeps_the_old_ones() {
        assert_eq!(client_backoff_seed(7, 0, 2), derive_seed(7, SeedPurpose::ClientBackoff, 2));
        let seeds: std::collections::BTreeSet<u64> =
            [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)].iter().map(|(c, i)| client_backoff_seed(7, *c, *i)).collect();
        assert_eq!(seeds.len(), 5);
    }

    #[test]
    fn client_nodes_and_names_keep_client_0_as_it_was() {
        assert_eq!((client_node(0), client_name(0)), ("client".to_string(), "app".to_string()));
        assert_eq!((client_node(2), client_name(2)), ("client-2".to_string(), "app-2".to_string()));
    }

    #[test]
    fn tool_durations_are_jittered_within_bounds_and_by_seed() {
        let scenario = Scenario::build("long-tool", "reference", "reference").unwrap();
        let nominal = scenario.tools[0].duration;
        let drawn: Vec<_> = (0..50).map(|seed| jittered_tools(&scenario, seed)[0].duration).collect();
        for d in &drawn {
            assert!(*d >= nominal.mul_f64(0.9) && *d <= nominal.mul_f64(1.1), "{d:?}");
        }
        assert!(drawn.iter().any(|d| *d != drawn[0]));
        assert_eq!(jittered_tools(&scenario, 3), jittered_tools(&scenario, 3));
    }

    #[test]
    fn the_timer_bell_rings_only_for_an_earlier_deadline() {
        let mut arm = TimerArm::new();
        arm.arm(Some(Instant(100)));
        arm.update(Some(Instant(200)));
        assert_eq!(arm.armed, Some(Instant(100)));
        arm.update(None);
        assert_eq!(arm.armed, Some(Instant(100)));
        arm.update(Some(Instant(50)));
        assert_eq!(arm.armed, Some(Instant(50)));
        arm.arm(None);
        arm.update(Some(Instant(500)));
        assert_eq!(arm.armed, Some(Instant(500)));
    }
}
