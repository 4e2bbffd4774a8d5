//! The one recorder every actor writes its steps into, stamped with simulated time.
//!
//! madsim runs every task on one thread, one at a time, so the order in which steps reach the
//! recorder is the order the seed dictates: the trace is deterministic without any sorting.

use mcpsim_model::http::ClientMessage;
use mcpsim_model::ids::{CallKey, ConnId, EventId};
use mcpsim_model::time::{micros, Instant};
use mcpsim_model::trace::{Actor, Step, StepKind};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::Notify;

/// Steps as they are recorded, shared with the runner so that a run that panicked can still say
/// how far it got.
pub type SharedSteps = Arc<Mutex<Vec<Step>>>;

/// Stamps and stores steps; counts how each call resolved, for the runner's stop condition and
/// the application's re-issue after a client restart.
///
/// It stores at most `max_steps` steps: the step that would go past the budget is dropped, the
/// recorder marks itself over budget and wakes the runner, which stops the run. So a scenario
/// that asks for an event every microsecond ends with an error, not with all the memory.
pub struct Recorder {
    /// Simulated time at the start of the run.
    start: std::time::Instant,
    /// madsim's clock, read directly: reading it through `std::time::Instant::now` goes through
    /// madsim's `clock_gettime` override, about 5 % of a long-tool run.
    clock: madsim::time::TimeHandle,
    steps: SharedSteps,
    /// The step budget of the run.
    max_steps: usize,
    /// A step was refused: the run went over its budget.
    over_budget: AtomicBool,
    /// Resolutions (result, error, unknown outcome) handed to the application, per call.
    resolutions: Mutex<BTreeMap<CallKey, u32>>,
    /// Woken whenever a step may have changed whether the run can stop.
    progress: Notify,
    /// The client's name of each connection, by the address of a socket on its way (the client's
    /// end towards the balancer, the balancer's end towards a replica): how a balancer or server
    /// step names a connection as the client does ([`Recorder::record_named`]).
    links: Mutex<BTreeMap<SocketAddr, ConnName>>,
}

/// The client's name of a connection: the client's number for it and, in a run with several
/// clients, the client's index (as its steps are stamped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnName {
    /// The client's number.
    pub conn: ConnId,
    /// The client, with several clients.
    pub client: Option<u32>,
}

impl Recorder {
    /// A recorder whose clock starts now. Call inside the simulation.
    pub fn new(steps: SharedSteps, max_steps: usize) -> Self {
        let clock = madsim::time::TimeHandle::current();
        Recorder {
            start: clock.now_instant(),
            clock,
            steps,
            max_steps,
            over_budget: AtomicBool::new(false),
            resolutions: Mutex::new(BTreeMap::new()),
            progress: Notify::new(),
            links: Mutex::new(BTreeMap::new()),
        }
    }

    /// Simulated time since the start of the run, as the machines see it.
    pub fn now(&self) -> Instant {
        Instant(micros(self.clock.now_instant().saturating_duration_since(self.start)))
    }

    /// The madsim instant of a model instant, for sleeping until it.
    pub fn deadline(&self, at: Instant) -> madsim::time::Instant {
        self.start + std::time::Duration::from_micros(at.as_micros())
    }

    /// Records one step at the current simulated time.
    pub fn record(&self, actor: Actor, kind: StepKind) {
        self.record_for(actor, None, kind);
    }

    /// Records one step of logical client `client` (`None` outside multi-client runs).
    pub fn record_for(&self, actor: Actor, client: Option<u32>, kind: StepKind) {
        self.push(Step { client, ..Step::new(0, 0, actor, kind) });
    }

    /// The socket at `addr` carries the connection the client calls `name` (from now on: a
    /// kept-alive connection carries one exchange after another).
    pub fn name_link(&self, addr: SocketAddr, name: ConnName) {
        lock(&self.links).insert(addr, name);
    }

    /// The client's name of the connection the socket at `addr` carries, if it was named.
    pub fn link(&self, addr: SocketAddr) -> Option<ConnName> {
        lock(&self.links).get(&addr).copied()
    }

    /// Records a balancer or server step of a multi-replica run: stamped with the replica that
    /// did it (`replica`, for a server step), and the connection it names (`peer`: the address
    /// of the far end of the socket it came on) renamed to the client's name for it, so that one
    /// connection has one name in the whole trace. A step naming no connection, or one whose
    /// socket was never named, keeps its number.
    pub fn record_named(&self, actor: Actor, replica: Option<u32>, peer: Option<SocketAddr>, mut kind: StepKind) {
        let name = peer.and_then(|peer| self.link(peer));
        let mut conn_client = None;
        if let (Some(conn), Some(name)) = (kind.conn_mut(), name) {
            *conn = name.conn;
            conn_client = name.client;
        }
        self.push(Step { replica, conn_client, ..Step::new(0, 0, actor, kind) });
    }

    /// Stores `step` at the current simulated time, with the next sequence number.
    fn push(&self, mut step: Step) {
        let kind = &step.kind;
        let wakes_runner = kind.resolves().is_some() || matches!(kind, StepKind::ToolEnded { .. });
        if let Some(call) = kind.resolves() {
            *lock(&self.resolutions).entry(call).or_default() += 1;
        }
        step.t = self.now().as_micros();
        let mut steps = lock(&self.steps);
        if steps.len() >= self.max_steps {
            drop(steps);
            self.over_budget.store(true, Ordering::Relaxed);
            self.progress.notify_one();
            return;
        }
        step.seq = steps.len() as u64;
        steps.push(step);
        drop(steps);
        if wakes_runner {
            self.progress.notify_one();
        }
    }

    /// Whether a step was refused because the run reached its step budget.
    pub fn over_budget(&self) -> bool {
        self.over_budget.load(Ordering::Relaxed)
    }

    /// How many times the application was told how `call` ended.
    pub fn resolutions(&self, call: CallKey) -> u32 {
        lock(&self.resolutions).get(&call).copied().unwrap_or(0)
    }

    /// The id of the `nth` event (from 1) with an id that the client tagged `client` received so
    /// far on the response stream of one of its `tools/call` POSTs (a call's own stream: not a
    /// standalone or resumed GET); `client` as [`Recorder::record_for`] stamps its steps.
    pub fn received_event_id(&self, client: Option<u32>, nth: u32) -> Option<EventId> {
        let steps = lock(&self.steps);
        let mine = || steps.iter().filter(|s| s.actor == Actor::Client && s.client == client);
        let posts: BTreeSet<ConnId> = mine()
            .filter_map(|s| match &s.kind {
                StepKind::Send { conn, request } if matches!(request.body, Some(ClientMessage::CallTool { .. })) => {
                    Some(*conn)
                }
                _ => None,
            })
            .collect();
        let mut ids = mine().filter_map(|s| match &s.kind {
            StepKind::Event { conn, event } if posts.contains(conn) => event.id.clone(),
            _ => None,
        });
        ids.nth(usize::try_from(nth).ok()?.checked_sub(1)?)
    }

    /// Resolves when a call resolved or a tool ended since the last wait.
    pub async fn progressed(&self) {
        self.progress.notified().await;
    }
}

/// Locks a mutex, ignoring poisoning: a panic inside the simulation ends the run anyway, and the
/// runner still wants to read how far it got.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
