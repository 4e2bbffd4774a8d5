//! The invariants, named and checked in one place, offline over a recorded trace.
//!
//! Every invariant is a pure function of a [`Trace`]: it reads the steps the machines recorded and
//! returns what broke, never panics, and never looks at the scenario. The families live one per
//! file: `execution.rs` (duplicate side effects), `loss.rs` (silent event loss), `sessions.rs`
//! (orphaned sessions), `liveness.rs` (every call resolves) and `delivery.rs` (what the application
//! was handed: no duplicates, in order, from the right session), `failure.rs` (no false failure),
//! `work.rs` (no work killed, no abandoned work), `timeliness.rs` (timely delivery), `churn.rs`
//! (bounded reconnects), `tasks.rs` (the second era: no orphaned task, task result delivered,
//! era consistent), `subscriptions.rs` (no silent notification loss) and `conformance.rs` (the
//! model's self-check: every party kept the bounds and timers of its profile). [`coverage`] counts the
//! "sometimes" events a sweep of seeds should reach.
//!
//! Event ids are unique inside a session but not across sessions, so everything here keys an
//! event by `(session, id)`.

mod churn;
pub mod conditions;
mod conformance;
mod coverage;
mod delivery;
mod execution;
mod failure;
mod liveness;
mod loss;
mod sessions;
mod subscriptions;
mod tasks;
mod timeliness;
mod work;

#[cfg(test)]
mod incidents;
#[cfg(test)]
mod scaling;
#[cfg(test)]
mod testkit;

pub use coverage::{coverage, Coverage, COVERAGE_EVENTS};

use crate::http::{ClientMessage, ServerMessage};
use crate::ids::{CallKey, EventId, RequestId, SessionId, StreamNo};
use crate::time::Instant;
use crate::trace::{Step, StepKind, Trace, ViolationRecord};
use std::cell::{Cell, OnceCell};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::str::FromStr;

/// The invariants, by identity. Their stable names (`no-duplicate-execution`, …) are what traces,
/// reports and `--invariant` use; [`InvariantId::name`] and [`str::parse`] convert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InvariantId {
    /// `no-duplicate-execution`.
    NoDuplicateExecution,
    /// `no-silent-event-loss`.
    NoSilentEventLoss,
    /// `no-orphaned-session`.
    NoOrphanedSession,
    /// `every-call-resolves`.
    EveryCallResolves,
    /// `no-duplicate-delivery`.
    NoDuplicateDelivery,
    /// `in-order-delivery`.
    InOrderDelivery,
    /// `no-cross-session-delivery`.
    NoCrossSessionDelivery,
    /// `no-false-failure`.
    NoFalseFailure,
    /// `no-work-killed`.
    NoWorkKilled,
    /// `bounded-reconnects`.
    BoundedReconnects,
    /// `no-abandoned-work`.
    NoAbandonedWork,
    /// `timely-delivery`.
    TimelyDelivery,
    /// `no-orphaned-task`.
    NoOrphanedTask,
    /// `task-result-delivered`.
    TaskResultDelivered,
    /// `era-consistent`.
    EraConsistent,
    /// `no-silent-notification-loss`.
    NoSilentNotificationLoss,
    /// `profile-conformance`: the model's self-check.
    ProfileConformance,
}

impl InvariantId {
    /// Every invariant, in the order reports list them (the registry's order).
    pub const ALL: [InvariantId; 17] = [
        InvariantId::NoDuplicateExecution,
        InvariantId::NoSilentEventLoss,
        InvariantId::NoOrphanedSession,
        InvariantId::EveryCallResolves,
        InvariantId::NoDuplicateDelivery,
        InvariantId::InOrderDelivery,
        InvariantId::NoCrossSessionDelivery,
        InvariantId::NoFalseFailure,
        InvariantId::NoWorkKilled,
        InvariantId::BoundedReconnects,
        InvariantId::NoAbandonedWork,
        InvariantId::TimelyDelivery,
        InvariantId::NoOrphanedTask,
        InvariantId::TaskResultDelivered,
        InvariantId::EraConsistent,
        InvariantId::NoSilentNotificationLoss,
        InvariantId::ProfileConformance,
    ];

    /// The stable name.
    pub const fn name(self) -> &'static str {
        match self {
            InvariantId::NoDuplicateExecution => "no-duplicate-execution",
            InvariantId::NoSilentEventLoss => "no-silent-event-loss",
            InvariantId::NoOrphanedSession => "no-orphaned-session",
            InvariantId::EveryCallResolves => "every-call-resolves",
            InvariantId::NoDuplicateDelivery => "no-duplicate-delivery",
            InvariantId::InOrderDelivery => "in-order-delivery",
            InvariantId::NoCrossSessionDelivery => "no-cross-session-delivery",
            InvariantId::NoFalseFailure => "no-false-failure",
            InvariantId::NoWorkKilled => "no-work-killed",
            InvariantId::BoundedReconnects => "bounded-reconnects",
            InvariantId::NoAbandonedWork => "no-abandoned-work",
            InvariantId::TimelyDelivery => "timely-delivery",
            InvariantId::NoOrphanedTask => "no-orphaned-task",
            InvariantId::TaskResultDelivered => "task-result-delivered",
            InvariantId::EraConsistent => "era-consistent",
            InvariantId::NoSilentNotificationLoss => "no-silent-notification-loss",
            InvariantId::ProfileConformance => "profile-conformance",
        }
    }

    /// The registry entry of this invariant.
    pub fn invariant(self) -> &'static Invariant {
        INVARIANTS.iter().find(|i| i.id == self).expect("every InvariantId has a registry entry (tested)")
    }
}

impl fmt::Display for InvariantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no invariant's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown invariant {0:?} (see `mcpsim profiles`)")]
pub struct UnknownInvariant(pub String);

impl FromStr for InvariantId {
    type Err = UnknownInvariant;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        InvariantId::ALL.into_iter().find(|i| i.name() == s).ok_or_else(|| UnknownInvariant(s.to_string()))
    }
}

impl PartialEq<&str> for InvariantId {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: InvariantId,
    /// The index in `trace.steps` of the step that broke it (for a deadline that passed: the
    /// first step at or after the deadline, else the last step).
    pub step: usize,
    /// When the step that broke it happened.
    pub at: Instant,
    /// The call, stream, event or session concerned.
    pub subject: String,
    /// What went wrong, in words.
    pub detail: String,
}

impl From<&Violation> for ViolationRecord {
    fn from(v: &Violation) -> Self {
        ViolationRecord {
            invariant: v.invariant.to_string(),
            step: v.step as u64,
            t: v.at.0,
            subject: v.subject.clone(),
            detail: v.detail.clone(),
            conditions: String::new(),
        }
    }
}

/// A named invariant.
pub struct Invariant {
    /// Which invariant this is.
    pub id: InvariantId,
    /// The stable name (`id.name()`).
    pub name: &'static str,
    /// What it requires, in words.
    pub description: &'static str,
    /// The check: the violations in a trace, read through its shared index.
    pub check: fn(&TraceIndex<'_>) -> Vec<Violation>,
}

/// Every invariant, in the order reports list them.
pub const INVARIANTS: &[Invariant] = &[
    execution::NO_DUPLICATE_EXECUTION,
    loss::NO_SILENT_EVENT_LOSS,
    sessions::NO_ORPHANED_SESSION,
    liveness::EVERY_CALL_RESOLVES,
    delivery::NO_DUPLICATE_DELIVERY,
    delivery::IN_ORDER_DELIVERY,
    delivery::NO_CROSS_SESSION_DELIVERY,
    failure::NO_FALSE_FAILURE,
    work::NO_WORK_KILLED,
    churn::BOUNDED_RECONNECTS,
    work::NO_ABANDONED_WORK,
    timeliness::TIMELY_DELIVERY,
    tasks::NO_ORPHANED_TASK,
    tasks::TASK_RESULT_DELIVERED,
    tasks::ERA_CONSISTENT,
    subscriptions::NO_SILENT_NOTIFICATION_LOSS,
    conformance::PROFILE_CONFORMANCE,
];

/// Checks every invariant; the violations come sorted by time, then subject (ties keep the
/// registry's order).
///
/// A trace where the server ran one non-idempotent call in two sessions breaks
/// `no-duplicate-execution`, reported at the second run:
///
/// ```
/// use mcpsim_model::ids::{CallKey, RequestId, SessionId};
/// use mcpsim_model::oracle::{check_all, InvariantId};
/// use mcpsim_model::trace::{Actor, Step, StepKind, Trace};
/// use mcpsim_model::Instant;
///
/// let ran = |session: &str| StepKind::SideEffect {
///     session: SessionId::from(session),
///     request: RequestId(1),
///     call: CallKey(0),
///     tool: "pay".to_string(),
///     idempotent: false,
/// };
/// let mut trace = Trace::new(0, serde_json::json!({}));
/// for (seq, (t, session)) in [(2_000, "A"), (5_000, "B")].into_iter().enumerate() {
///     trace.steps.push(Step { seq: seq as u64, t, actor: Actor::Server, client: None, replica: None, conn_client: None, kind: ran(session) });
/// }
///
/// let violations = check_all(&trace);
/// assert_eq!(violations.len(), 1);
/// assert_eq!(violations[0].invariant, InvariantId::NoDuplicateExecution);
/// assert_eq!((violations[0].step, violations[0].at), (1, Instant(5_000)));
/// ```
pub fn check_all(trace: &Trace) -> Vec<Violation> {
    let index = TraceIndex::new(trace);
    let mut all: Vec<Violation> = INVARIANTS.iter().flat_map(|i| (i.check)(&index)).collect();
    all.sort_by(|a, b| (a.at, &a.subject).cmp(&(b.at, &b.subject)));
    all
}

/// The invariant with this name.
pub fn by_name(name: &str) -> Option<&'static Invariant> {
    INVARIANTS.iter().find(|i| i.name == name)
}

/// What several invariants read of one trace, each part built once, when first asked for:
/// [`check_all`] builds one index per trace, so the event log is not rebuilt per invariant.
///
/// Ids are strings, and comparing them was most of the oracles' time, growing faster than the
/// trace (ordered maps of a two-hour run's ids: a logarithm of string comparisons per lookup,
/// and maps that outgrow the caches). So an event's `(session, id)` is hashed once, where it is
/// stored and where it is delivered; after that the invariants use its `StoredEvent::key`, a
/// number, and the cost of judging a trace grows with its steps alone.
///
/// Most of a long trace is events: each stored, carried and handed over (`EventStored`, `Event`,
/// `AppEvent`), a step of some 180 bytes each. Past a few thousand steps the trace outgrows the
/// core's cache, and every pass over it costs a read from the shared cache per step, whatever
/// the pass looks for. So the steps are read once, in one pass that files the stored events in
/// the `EventLog` and notes where the deliveries and all the other steps lie; after that the
/// invariants read only the few steps they judge ([`TraceIndex::others`]) and the log.
///
/// The invariants read the steps only through [`TraceIndex::steps`] and [`TraceIndex::others`],
/// which count every step they hand out ([`TraceIndex::steps_read`]): a handful of passes per
/// trace, the same handful whatever the trace's length. A scan of the steps per step (the
/// quadratic cost that a long run makes visible) shows up as a count that grows with the trace,
/// which a test checks.
pub struct TraceIndex<'a> {
    trace: &'a Trace,
    /// Steps handed out by [`TraceIndex::steps`] and [`TraceIndex::others`] so far.
    read: Cell<usize>,
    split: OnceCell<Split<'a>>,
    ledger: OnceCell<CallLedger>,
    deliveries: OnceCell<Deliveries<'a>>,
    end: OnceCell<Option<RunEnd<'a>>>,
    liveness: OnceCell<Option<(&'a Step, Instant)>>,
}

/// The one pass over every step: the stored events, and where the other steps lie.
struct Split<'a> {
    log: EventLog<'a>,
    /// The `AppEvent` and `AppResult` steps, by index.
    deliveries: Vec<u32>,
    /// By index, every step but the bulk of events: an `Event`, an `AppEvent`, or an
    /// `EventStored` other than a tool result. What no invariant reads outside the log and the
    /// deliveries.
    others: Vec<u32>,
    /// Whether some step names its logical client (a multi-client trace).
    several_clients: bool,
}

/// The steps at some indexes of a trace, in order, each with its index, counted as they are read
/// (see [`TraceIndex::steps_read`]).
pub struct Picked<'a, 'i> {
    steps: &'a [Step],
    orders: std::slice::Iter<'i, u32>,
    read: &'i Cell<usize>,
}

impl<'a> Picked<'a, '_> {
    fn step(&self, order: u32) -> (usize, &'a Step) {
        self.read.set(self.read.get() + 1);
        let order = order as usize;
        (order, &self.steps[order])
    }
}

impl<'a> Iterator for Picked<'a, '_> {
    type Item = (usize, &'a Step);

    fn next(&mut self) -> Option<Self::Item> {
        let order = *self.orders.next()?;
        Some(self.step(order))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.orders.size_hint()
    }
}

impl ExactSizeIterator for Picked<'_, '_> {}

impl DoubleEndedIterator for Picked<'_, '_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let order = *self.orders.next_back()?;
        Some(self.step(order))
    }
}

/// The deliveries of a trace, each with the stored event it handed over (looked up once).
struct Deliveries<'a> {
    /// Every `AppEvent` and `AppResult`, in trace order, with the event its session stored under
    /// its id (`None`: no id, or one its session never stored).
    resolved: Vec<(Delivery<'a>, Option<StoredEvent<'a>>)>,
    /// By [`StoredEvent::key`]: whether the application was handed the event.
    delivered: Vec<bool>,
    /// Per call answered with a result, the stream the (first) result came from.
    answered_from: BTreeMap<CallKey, (&'a SessionId, StreamNo)>,
}

/// The steps of a trace in order, each with its index in `trace.steps`, counted as they are
/// read (see [`TraceIndex::steps_read`]).
pub struct Steps<'a, 'i> {
    inner: std::iter::Enumerate<std::slice::Iter<'a, Step>>,
    read: &'i Cell<usize>,
}

impl<'a> Iterator for Steps<'a, '_> {
    type Item = (usize, &'a Step);

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.inner.next();
        if next.is_some() {
            self.read.set(self.read.get() + 1);
        }
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Steps<'_, '_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let next = self.inner.next_back();
        if next.is_some() {
            self.read.set(self.read.get() + 1);
        }
        next
    }
}

impl<'a> TraceIndex<'a> {
    /// An index over `trace`; nothing is built yet.
    pub fn new(trace: &'a Trace) -> Self {
        TraceIndex {
            trace,
            read: Cell::new(0),
            split: OnceCell::new(),
            ledger: OnceCell::new(),
            deliveries: OnceCell::new(),
            end: OnceCell::new(),
            liveness: OnceCell::new(),
        }
    }

    /// The trace's steps, in order, each with its index; every step this hands out is counted.
    pub fn steps(&self) -> Steps<'a, '_> {
        Steps { inner: self.trace.steps.iter().enumerate(), read: &self.read }
    }

    /// Every step but the bulk of events (`Event`, `AppEvent`, an `EventStored` other than a tool
    /// result), in order, each with its index; every step this hands out is counted. The first
    /// call reads all the steps, once for all.
    pub fn others(&self) -> Picked<'a, '_> {
        self.picked(&self.split().others)
    }

    /// The steps at `orders` (indexes into the trace, ascending).
    fn picked<'i>(&'i self, orders: &'i [u32]) -> Picked<'a, 'i> {
        Picked { steps: &self.trace.steps, orders: orders.iter(), read: &self.read }
    }

    /// Whether some step names its logical client (a multi-client trace).
    fn several_clients(&self) -> bool {
        self.split().several_clients
    }

    /// How many steps [`TraceIndex::steps`] and [`TraceIndex::others`] have handed out so far,
    /// over all the invariants that read through this index: a fixed number of passes over the
    /// trace, whatever its length.
    pub fn steps_read(&self) -> usize {
        self.read.get()
    }

    /// How many steps the trace has (reads none).
    pub fn len(&self) -> usize {
        self.trace.steps.len()
    }

    /// Whether the trace has no steps.
    pub fn is_empty(&self) -> bool {
        self.trace.steps.is_empty()
    }

    /// The one pass over every step.
    fn split(&self) -> &Split<'a> {
        self.split.get_or_init(|| Split::new(self))
    }

    /// Every stored event, by `(session, id)`.
    fn log(&self) -> &EventLog<'a> {
        &self.split().log
    }

    /// The application's calls and how each was resolved.
    fn ledger(&self) -> &CallLedger {
        self.ledger.get_or_init(|| CallLedger::new(self.others()))
    }

    fn deliveries(&self) -> &Deliveries<'a> {
        self.deliveries.get_or_init(|| {
            let log = self.log();
            let mut last = LastSession::default();
            // Events are mostly handed over in the order stored: the one after the last found.
            let mut next: Option<usize> = None;
            let deliveries = self.picked(&self.split().deliveries);
            let mut resolved = Vec::with_capacity(deliveries.len());
            // Built at the first delivery without an id (a server without an event store).
            let mut by_message: Option<BTreeMap<(u32, MessageKey), Vec<usize>>> = None;
            for d in deliveries.filter_map(|(i, s)| Delivery::of(i, s)) {
                let stored = match d.id {
                    Some(id) => {
                        last.get(d.session, |s| log.session_no(s)).and_then(|no| log.get_guessing(no, id, next))
                    }
                    None => d.message_key().and_then(|key| {
                        let no = log.session_no(d.session)?;
                        let table = by_message.get_or_insert_with(|| log.by_message());
                        let keys = table.get(&(no, key))?;
                        let before = keys.partition_point(|k| log.events[*k].order < d.order);
                        keys[..before].last().map(|k| &log.events[*k])
                    }),
                };
                if let Some(e) = stored {
                    next = Some(e.key + 1);
                }
                resolved.push((d, stored.copied()));
            }
            let mut delivered = vec![false; log.len()];
            let mut answered_from = BTreeMap::new();
            for (d, event) in resolved.iter().filter_map(|(d, e)| Some((d, e.as_ref()?))) {
                delivered[event.key] = true;
                if let Some(call) = d.result_of {
                    answered_from.entry(call).or_insert((event.session, event.stream));
                }
            }
            Deliveries { resolved, delivered, answered_from }
        })
    }

    /// Per call answered with a result, the stream the result came from (the first such result):
    /// a call sent again is read on the stream that answered it, and the streams of the requests
    /// the client abandoned owe the application nothing.
    fn answered_from(&self) -> &BTreeMap<CallKey, (&'a SessionId, StreamNo)> {
        &self.deliveries().answered_from
    }

    /// The `AppEvent` and `AppResult` steps, in trace order, each with the event its session
    /// stored under its id, if any.
    fn resolved_deliveries(&self) -> &[(Delivery<'a>, Option<StoredEvent<'a>>)] {
        &self.deliveries().resolved
    }

    /// Whether the application was handed this stored event (under its session).
    fn was_delivered(&self, event: &StoredEvent<'a>) -> bool {
        self.delivered()[event.key]
    }

    /// By [`StoredEvent::key`]: whether the application was handed the event.
    fn delivered(&self) -> &[bool] {
        &self.deliveries().delivered
    }

    /// The state the run ended in (the last `RunEnd` step), if it says.
    fn final_state(&self) -> Option<&RunEnd<'a>> {
        self.end.get_or_init(|| final_state(self.others())).as_ref()
    }

    /// The first `Liveness` step: when the network healed, and the deadline it set.
    fn liveness_step(&self) -> Option<(&'a Step, Instant)> {
        *self.liveness.get_or_init(|| {
            self.others().find_map(|(_, step)| match step.kind {
                StepKind::Liveness { deadline } => Some((step, Instant(deadline))),
                _ => None,
            })
        })
    }
}

/// The index of the first step at or after `t`, else the last step: where a deadline that
/// passed is drawn.
fn step_at_or_after(ix: &TraceIndex<'_>, t: Instant) -> usize {
    ix.steps().find(|(_, s)| s.at() >= t).map_or(ix.len().saturating_sub(1), |(i, _)| i)
}

/// A hash map keyed by ids, hashed with [`FxHasher`] (no random state), that offers lookups and
/// inserts but no iteration: its order can never reach a verdict. (The workspace bans std's
/// `HashMap` for its iteration order; this wrapper is the one place the oracles use it.)
struct IdMap<K, V>(
    #[allow(clippy::disallowed_types, reason = "never iterated: only get, insert and len are exposed")]
    std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>,
);

impl<K: std::hash::Hash + Eq, V> IdMap<K, V> {
    #[allow(clippy::disallowed_types, reason = "the one construction of the wrapped map")]
    fn with_capacity(capacity: usize) -> Self {
        IdMap(std::collections::HashMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default()))
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.0.get(key)
    }

    /// The value before, if any.
    fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.0.insert(key, value)
    }

    /// The value under `key`, made by `make` if there was none.
    fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.0.entry(key).or_insert_with(make)
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

impl<K: std::hash::Hash + Eq, V> Default for IdMap<K, V> {
    fn default() -> Self {
        IdMap::with_capacity(0)
    }
}

/// The hash rustc uses for its own maps (a multiply and a rotate per 8 bytes), with a finalizer:
/// ids are short, and SipHash's setup would cost more than the id. Deterministic: no random state.
#[derive(Default)]
struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// The multiply leaves the low bits depending on the input's low bytes alone (the first
    /// characters of an id, much the same across ids), and a hash table picks its bucket by the
    /// low bits: so the high bits are folded in (murmur3's finalizer).
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers: the indexes several invariants read.
// ---------------------------------------------------------------------------------------------

/// Sorts one invariant's violations into report order: time, then subject, then detail.
fn sorted(mut violations: Vec<Violation>) -> Vec<Violation> {
    violations.sort_by(|a, b| (a.at, &a.subject, &a.detail).cmp(&(b.at, &b.subject, &b.detail)));
    violations
}

/// `session 0-1`.
fn session_subject(session: &SessionId) -> String {
    format!("session {session}")
}

/// The session a violation's subject names (`session 0-1 …`, as `session_subject` and
/// `event_subject` write it); `None` for a call's, a task's or the run's own. A session id is
/// visible ASCII (the spec), so it ends at the first space.
pub fn subject_session(subject: &str) -> Option<&str> {
    subject.strip_prefix("session ").and_then(|rest| rest.split(' ').next())
}

/// The stream a violation's subject names (`session 0-1 stream1 event 1-17`, as
/// `event_subject` writes it); `None` for a session's own, a call's, a task's or the run's.
pub fn subject_stream(subject: &str) -> Option<StreamNo> {
    let rest = subject.strip_prefix("session ")?;
    let word = rest.split(' ').nth(1)?;
    word.strip_prefix("stream")?.parse().ok().map(StreamNo)
}

/// `session 0-1 stream1 event 1-17`, or without the stream when the event was never stored.
fn event_subject(session: &SessionId, stream: Option<StreamNo>, id: &EventId) -> String {
    match stream {
        Some(stream) => format!("session {session} {stream} event {id}"),
        None => format!("session {session} event {id}"),
    }
}

/// An event as the server stored it (an `EventStored` step).
#[derive(Clone, Copy, Debug)]
struct StoredEvent<'a> {
    at: Instant,
    /// Index of the step in the trace: orders steps that share a time.
    order: usize,
    session: &'a SessionId,
    stream: StreamNo,
    seq: u32,
    id: &'a EventId,
    call: Option<CallKey>,
    message: Option<&'a ServerMessage>,
    /// The server process incarnation that stored it: stream numbers restart with a new process
    /// (which matters where a session outlives one, as with a session-less server).
    epoch: u32,
    /// A number for `(session, id)`, unique in the log: 0, 1, … in the order stored.
    key: usize,
    /// A number for the session, unique in the log: 0, 1, … in the order first stored in.
    session_no: u32,
}

/// Every stored event, by `(session, id)`.
struct EventLog<'a> {
    /// Every stored event, by key: in the order stored (an id its session stored again is left
    /// out: the first counts).
    events: Vec<StoredEvent<'a>>,
    /// By session: its [`StoredEvent::session_no`].
    session_nos: IdMap<&'a str, u32>,
    /// By `(session_no, id)`: the event's key.
    keys: IdTable,
    /// The sessions that stored events, sorted (built when first asked for).
    sessions: OnceCell<Vec<&'a SessionId>>,
}

/// The stored events' ids by `(session_no, id)`, each copied once into one buffer, and every
/// field in small integers: a trace's ids live in as many allocations as it has steps, scattered
/// over the heap, and reading one again to confirm a hash match costs a cache miss once the trace
/// outgrows the cache. The copies, side by side, stay in it.
struct IdTable {
    /// Every id, one after the other, by key.
    bytes: Vec<u8>,
    /// By key: where its id ends in `bytes` (it starts where the one before ends).
    ends: Vec<usize>,
    /// By key: the number of the session that stored it.
    session_nos: Vec<u32>,
    /// By hash of `(session_no, id)`: the last key added with it.
    last: IdMap<u64, u32>,
    /// By key: the key added before it with the same hash, else [`IdTable::NONE`].
    before: Vec<u32>,
}

impl IdTable {
    /// No key.
    const NONE: u32 = u32::MAX;

    fn with_capacity(ids: usize) -> Self {
        IdTable {
            bytes: Vec::with_capacity(ids * 8),
            ends: Vec::with_capacity(ids),
            session_nos: Vec::with_capacity(ids),
            last: IdMap::with_capacity(ids),
            before: Vec::with_capacity(ids),
        }
    }

    fn hash(session_no: u32, id: &str) -> u64 {
        let mut hasher = FxHasher::default();
        hasher.write_u32(session_no);
        hasher.write(id.as_bytes());
        hasher.finish()
    }

    /// Whether `key` is `id` stored by the session numbered `session_no`.
    fn is(&self, key: usize, session_no: u32, id: &str) -> bool {
        let start = key.checked_sub(1).map_or(0, |k| self.ends[k]);
        self.session_nos.get(key) == Some(&session_no) && self.bytes.get(start..self.ends[key]) == Some(id.as_bytes())
    }

    fn find(&self, session_no: u32, id: &str, hash: u64) -> Option<usize> {
        let mut key = self.last.get(&hash).copied().unwrap_or(Self::NONE);
        while key != Self::NONE {
            if self.is(key as usize, session_no, id) {
                return Some(key as usize);
            }
            key = self.before[key as usize];
        }
        None
    }

    /// The key of `id` in the session numbered `session_no`. `guess`, when given, is tried first
    /// (confirmed by comparing the id, so a wrong guess costs a comparison, not a wrong answer):
    /// events are mostly handed over in the order stored, so the key after the last one found.
    fn get(&self, session_no: u32, id: &str, guess: Option<usize>) -> Option<usize> {
        match guess {
            Some(key) if key < self.ends.len() && self.is(key, session_no, id) => Some(key),
            _ => self.find(session_no, id, Self::hash(session_no, id)),
        }
    }

    /// Adds `id` under the next key (0, 1, …) unless the session has it already; the new key.
    fn insert(&mut self, session_no: u32, id: &str) -> Option<usize> {
        let hash = Self::hash(session_no, id);
        if self.find(session_no, id, hash).is_some() {
            return None;
        }
        let key = self.ends.len();
        let small = u32::try_from(key).ok().filter(|k| *k != Self::NONE).expect("fewer than 2^32 - 1 events");
        self.bytes.extend_from_slice(id.as_bytes());
        self.ends.push(self.bytes.len());
        self.session_nos.push(session_no);
        self.before.push(self.last.insert(hash, small).unwrap_or(Self::NONE));
        Some(key)
    }
}

/// The session number of the step before, so that a run of steps of one session (most of them)
/// hashes its id once.
#[derive(Default)]
struct LastSession<'s>(Option<(&'s SessionId, u32)>);

impl<'s> LastSession<'s> {
    fn get(&mut self, session: &'s SessionId, look_up: impl FnOnce(&'s SessionId) -> Option<u32>) -> Option<u32> {
        match self.0 {
            Some((last, no)) if std::ptr::eq(last, session) || last == session => Some(no),
            _ => {
                let no = look_up(session)?;
                self.0 = Some((session, no));
                Some(no)
            }
        }
    }
}

impl<'a> Split<'a> {
    fn new(ix: &TraceIndex<'a>) -> Self {
        // The incarnation each server process is in, by the replica whose process it is (none:
        // the one process, or a store shared by every replica). Replicas with stores of their
        // own run processes side by side, each numbering its streams from 1, so an event's
        // incarnation is its own replica's latest, not the latest any replica started.
        let mut epochs_by: Vec<(Option<u32>, u32)> = Vec::new();
        let (mut deliveries, mut others) = (Vec::new(), Vec::new());
        // The `EventStored` steps, by index, each with the server incarnation that stored it.
        let (mut stored, mut epochs) = (Vec::new(), Vec::new());
        let mut several_clients = false;
        for (order, step) in ix.steps() {
            several_clients |= step.client.is_some();
            let index = u32::try_from(order).expect("a trace has fewer than 2^32 steps");
            match &step.kind {
                StepKind::Event { .. } => {}
                StepKind::AppEvent { .. } => deliveries.push(index),
                StepKind::AppResult { .. } => {
                    deliveries.push(index);
                    others.push(index);
                }
                StepKind::EventStored { message, .. } => {
                    stored.push(index);
                    epochs.push(epochs_by.iter().find(|(r, _)| *r == step.replica).map_or(0, |(_, e)| *e));
                    if matches!(message, Some(ServerMessage::ToolResult { .. })) {
                        others.push(index);
                    }
                }
                StepKind::ServerStart { epoch: e, .. } => {
                    match epochs_by.iter_mut().find(|(r, _)| *r == step.replica) {
                        Some((_, epoch)) => *epoch = *e,
                        None => epochs_by.push((step.replica, *e)),
                    }
                    others.push(index);
                }
                _ => others.push(index),
            }
        }
        let log = EventLog::new(ix.picked(&stored).zip(epochs));
        Split { log, deliveries, others, several_clients }
    }
}

impl<'a> EventLog<'a> {
    /// The log of the `EventStored` steps, each with the server incarnation that stored it, in
    /// trace order (sized once: growing a table rehashes and moves everything it held).
    fn new(stored: impl ExactSizeIterator<Item = ((usize, &'a Step), u32)>) -> Self {
        let mut events: Vec<StoredEvent<'a>> = Vec::with_capacity(stored.len());
        let mut keys = IdTable::with_capacity(stored.len());
        let mut session_nos: IdMap<&str, u32> = IdMap::default();
        let mut last = LastSession::default();
        for ((order, step), epoch) in stored {
            if let StepKind::EventStored { session, stream, seq, id, call, message } = &step.kind {
                let session_no = last
                    .get(session, |session| {
                        let next = session_nos.len() as u32;
                        Some(*session_nos.get_or_insert_with(session.as_str(), || next))
                    })
                    .expect("a session number is found or made");
                // Ids are unique per session; should a server store one twice, the first counts.
                if keys.insert(session_no, &id.0).is_some() {
                    events.push(StoredEvent {
                        at: step.at(),
                        order,
                        session,
                        stream: *stream,
                        seq: *seq,
                        id,
                        call: *call,
                        message: message.as_ref(),
                        epoch,
                        key: events.len(),
                        session_no,
                    });
                }
            }
        }
        EventLog { events, session_nos, keys, sessions: OnceCell::new() }
    }

    /// How many events: one more than the highest key.
    fn len(&self) -> usize {
        self.events.len()
    }

    /// The number of a session that stored events.
    fn session_no(&self, session: &SessionId) -> Option<u32> {
        self.session_nos.get(&session.as_str()).copied()
    }

    /// The event `session` stored under `id`.
    fn get(&self, session: &SessionId, id: &EventId) -> Option<&StoredEvent<'a>> {
        self.get_in(self.session_no(session)?, id)
    }

    /// The event the session numbered `session_no` stored under `id`.
    fn get_in(&self, session_no: u32, id: &EventId) -> Option<&StoredEvent<'a>> {
        self.get_guessing(session_no, id, None)
    }

    /// [`EventLog::get_in`], trying the event keyed `guess` first.
    fn get_guessing(&self, session_no: u32, id: &EventId, guess: Option<usize>) -> Option<&StoredEvent<'a>> {
        self.keys.get(session_no, &id.0, guess).map(|key| &self.events[key])
    }

    /// By session number and message, the keys of the events stored with it, in the order stored:
    /// how a delivery that came without an id (a server without an event store sends none) is
    /// matched with the event it carried.
    fn by_message(&self) -> BTreeMap<(u32, MessageKey), Vec<usize>> {
        let mut table: BTreeMap<(u32, MessageKey), Vec<usize>> = BTreeMap::new();
        for e in &self.events {
            if let Some(key) = e.message.and_then(MessageKey::of) {
                table.entry((e.session_no, key)).or_default().push(e.key);
            }
        }
        table
    }

    /// Every stored event, in the order stored.
    fn events(&self) -> impl Iterator<Item = &StoredEvent<'a>> {
        self.events.iter()
    }

    /// The sessions other than `session` that stored an event under `id`, sorted.
    fn other_storers(&self, session: &SessionId, id: &EventId) -> Vec<&'a SessionId> {
        let sessions = self.sessions.get_or_init(|| {
            let mut seen: IdMap<&SessionId, ()> = IdMap::default();
            let mut sessions: Vec<&SessionId> =
                self.events.iter().map(|e| e.session).filter(|s| seen.insert(s, ()).is_none()).collect();
            sessions.sort();
            sessions
        });
        sessions.iter().copied().filter(|s| *s != session && self.get(s, id).is_some()).collect()
    }

    /// Events grouped by stream: `(session, stream)` in one server process ([`StoredEvent::epoch`]),
    /// the groups sorted by session and stream, each group in seq order. A process numbers its
    /// streams from 1, so where a session outlives one (a sessionless server's, whose requests all
    /// share the empty session; a restart that keeps its sessions) or two processes serve it side
    /// by side (replicas with stores of their own), one number names several streams, each its
    /// own request's.
    fn streams(&self) -> Vec<((&'a SessionId, StreamNo), Vec<&StoredEvent<'a>>)> {
        let mut group_of: IdMap<(u32, u32, StreamNo), usize> = IdMap::default();
        let mut groups: Vec<((&'a SessionId, StreamNo), Vec<&StoredEvent<'a>>)> = Vec::new();
        let mut last: Option<((u32, u32, StreamNo), usize)> = None;
        for e in &self.events {
            let stream = (e.session_no, e.epoch, e.stream);
            let g = match last {
                Some((s, g)) if s == stream => g,
                _ => *group_of.get_or_insert_with(stream, || {
                    groups.push(((e.session, e.stream), Vec::new()));
                    groups.len() - 1
                }),
            };
            last = Some((stream, g));
            groups[g].1.push(e);
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, events) in &mut groups {
            // Mostly in seq order already (stored in order), which a stable sort takes in one pass.
            events.sort_by_key(|e| (e.seq, e.order));
        }
        groups
    }
}

/// Something handed to the application that carries an event id or a result.
#[derive(Clone, Copy, Debug)]
struct Delivery<'a> {
    at: Instant,
    /// Index of the step in the trace.
    order: usize,
    session: &'a SessionId,
    id: Option<&'a EventId>,
    /// `Some` for an `AppResult`.
    result_of: Option<CallKey>,
    /// An `AppEvent`'s message.
    message: Option<&'a ServerMessage>,
}

/// What identifies a stored event by its message alone, within its session: a call's progress
/// step (by JSON-RPC request), a notification's seq, a call's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum MessageKey {
    /// A progress event: its request, its call and its step. The call as well as the request: a
    /// request with no session is known by its id alone, which every client numbers from 1.
    Progress(u64, CallKey, u32),
    Notification(u32),
    Result(CallKey),
}

impl MessageKey {
    fn of(message: &ServerMessage) -> Option<Self> {
        match message {
            ServerMessage::Progress { request, call, step } => Some(MessageKey::Progress(request.0, *call, *step)),
            ServerMessage::Notification { seq } => Some(MessageKey::Notification(*seq)),
            ServerMessage::ToolResult { call, .. } => Some(MessageKey::Result(*call)),
            ServerMessage::InitializeResult { .. }
            | ServerMessage::DiscoverResult { .. }
            | ServerMessage::Error { .. }
            | ServerMessage::TaskCreated { .. }
            | ServerMessage::TaskState { .. }
            | ServerMessage::ListenAck { .. }
            | ServerMessage::Changed { .. } => None,
        }
    }
}

impl<'a> Delivery<'a> {
    /// The delivery an `AppEvent` or `AppResult` step made.
    fn of(order: usize, step: &'a Step) -> Option<Self> {
        match &step.kind {
            StepKind::AppEvent { session, id, message, .. } => Some(Delivery {
                at: step.at(),
                order,
                session,
                id: id.as_ref(),
                result_of: None,
                message: Some(message),
            }),
            StepKind::AppResult { call, session, id } => {
                Some(Delivery { at: step.at(), order, session, id: id.as_ref(), result_of: Some(*call), message: None })
            }
            _ => None,
        }
    }

    /// The message key a delivery without an id is matched by.
    fn message_key(&self) -> Option<MessageKey> {
        match (self.result_of, self.message) {
            (Some(call), _) => Some(MessageKey::Result(call)),
            (None, Some(message)) => MessageKey::of(message),
            (None, None) => None,
        }
    }
}

/// How the application learned a call's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolution {
    Result,
    Error,
    UnknownOutcome,
}

impl Resolution {
    /// How `kind` resolves its call, if it does: which steps resolve is [`StepKind::resolves`]'s
    /// (the actors read it too); this only tells a result, a failure and an unknown outcome apart.
    fn of(kind: &StepKind) -> Option<(CallKey, Resolution)> {
        let call = kind.resolves()?;
        let how = if kind.resolves_with_result() {
            Resolution::Result
        } else if matches!(kind, StepKind::AppUnknownOutcome { .. } | StepKind::AppTaskLost { .. }) {
            Resolution::UnknownOutcome
        } else {
            Resolution::Error
        };
        Some((call, how))
    }

    fn name(self) -> &'static str {
        match self {
            Resolution::Result => "a result",
            Resolution::Error => "an error",
            Resolution::UnknownOutcome => "an unknown outcome",
        }
    }
}

/// The call each client's `tools/call` requests carried, by JSON-RPC id as the ids stood then
/// (every client numbers its requests from 1, again after a restart): what a client's own
/// `notifications/cancelled` names. Read step by step.
#[derive(Default)]
struct RequestCalls(BTreeMap<(u32, RequestId), CallKey>);

impl RequestCalls {
    /// Reads one step: a client's `tools/call` is remembered; a client's cancel of one of its
    /// requests gives the call that request carried.
    fn cancel_in(&mut self, step: &Step) -> Option<CallKey> {
        let StepKind::Send { request, .. } = &step.kind else { return None };
        match &request.body {
            Some(ClientMessage::CallTool { id, call }) => {
                self.0.insert((client_of(step), *id), call.key);
                None
            }
            Some(ClientMessage::Cancelled { request }) => self.0.get(&(client_of(step), *request)).copied(),
            _ => None,
        }
    }
}

/// The application's calls and how each was resolved.
struct CallLedger {
    /// Every call the application issued, with the idempotency its first `AppCall` declared.
    idempotent: BTreeMap<CallKey, bool>,
    /// How each call was resolved, in trace order, each with whether the client had cancelled
    /// the call's request since the call's previous resolution (its own request timeout: the
    /// cancel goes out, then the error).
    resolutions: BTreeMap<CallKey, Vec<(Resolution, bool)>>,
    /// Each cancel a client sent of a `tools/call` request of its own (`notifications/cancelled`:
    /// its own request timeout), by the trace index of its step: the call the request carried,
    /// as its ids stood then (every client numbers its requests from 1, again after a restart).
    /// An error the client then reported is its own giving up, not the server's.
    cancels: BTreeMap<usize, CallKey>,
}

impl CallLedger {
    fn new<'s>(steps: impl Iterator<Item = (usize, &'s Step)>) -> Self {
        let mut idempotent = BTreeMap::new();
        let mut resolutions: BTreeMap<CallKey, Vec<(Resolution, bool)>> = BTreeMap::new();
        let mut requests = RequestCalls::default();
        let mut cancels = BTreeMap::new();
        let mut cancelled_since = BTreeSet::new();
        for (order, step) in steps {
            if let StepKind::AppCall { call, idempotent: i, .. } = &step.kind {
                idempotent.entry(*call).or_insert(*i);
            }
            if let Some((call, how)) = Resolution::of(&step.kind) {
                let own_cancel = cancelled_since.remove(&call);
                resolutions.entry(call).or_default().push((how, own_cancel));
            }
            if let Some(call) = requests.cancel_in(step) {
                cancels.insert(order, call);
                cancelled_since.insert(call);
            }
        }
        CallLedger { idempotent, resolutions, cancels }
    }

    /// The call whose request the client's cancel at trace index `order` named, if it named one.
    fn call_cancelled_at(&self, order: usize) -> Option<CallKey> {
        self.cancels.get(&order).copied()
    }

    /// The trace indexes of the client's cancels of `call`'s requests, in trace order.
    fn cancels_of(&self, call: CallKey) -> impl Iterator<Item = usize> + '_ {
        self.cancels.iter().filter(move |(_, c)| **c == call).map(|(order, _)| *order)
    }

    fn issued(&self, call: CallKey) -> bool {
        self.idempotent.contains_key(&call)
    }

    fn resolved(&self, call: CallKey) -> bool {
        self.resolutions.contains_key(&call)
    }

    /// The application was told the call failed or may not have run: whatever the call's
    /// streams carried after that, the application knows not to expect it. An error after the
    /// client cancelled the call's request itself (its own request timeout) is no such word: the
    /// server was still working for it, so what the server stored after that was lost, not
    /// reported. The cancel is an attempt's: an error of a later attempt (the application's
    /// re-issue) with no cancel of its own is a word. (A guided sweep of the Python 1.29 client
    /// behind `cdn-alb` read a re-issued call's error, told when a restart ended its stream, as
    /// untold because the first attempt had timed out and been cancelled.)
    fn told_failure(&self, call: CallKey) -> bool {
        self.resolutions.get(&call).is_some_and(|r| {
            r.iter().any(|(how, own_cancel)| {
                *how == Resolution::UnknownOutcome || (*how == Resolution::Error && !own_cancel)
            })
        })
    }
}

/// The state the run ended in (the last `RunEnd` step).
struct RunEnd<'a> {
    at: Instant,
    /// Index of the `RunEnd` step.
    order: usize,
    /// The session each logical client held, by client index (client 0 first).
    client_sessions: Vec<Option<&'a SessionId>>,
    server_sessions: &'a [SessionId],
}

impl<'a> RunEnd<'a> {
    /// Whether some client still held `session` at the end. A session belongs to the one client
    /// that initialized it, so this is also whether its own client held it.
    fn held(&self, session: &SessionId) -> bool {
        self.client_sessions.contains(&Some(session))
    }

    /// More than one logical client ran.
    fn several_clients(&self) -> bool {
        self.client_sessions.len() > 1
    }
}

fn final_state<'a>(steps: impl DoubleEndedIterator<Item = (usize, &'a Step)>) -> Option<RunEnd<'a>> {
    steps.rev().find_map(|(order, step)| match &step.kind {
        StepKind::RunEnd { client_session, server_sessions, other_client_sessions } => {
            let others = other_client_sessions.iter().map(Option::as_ref);
            let client_sessions = std::iter::once(client_session.as_ref()).chain(others).collect();
            Some(RunEnd { at: step.at(), order, client_sessions, server_sessions })
        }
        _ => None,
    })
}

/// The logical client that did a step: its index in a multi-client trace, 0 otherwise.
fn client_of(step: &Step) -> u32 {
    step.client.unwrap_or(0)
}

/// Sessions the application was told it lost.
fn sessions_lost<'a>(ix: &TraceIndex<'a>) -> BTreeSet<&'a SessionId> {
    ix.others()
        .filter_map(|(_, step)| match &step.kind {
            StepKind::AppSessionLost { session } => Some(session),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;

    /// What resolves a call is one set, for the oracles (`Resolution::of`) and for the actors
    /// (`StepKind::resolves`: when the run may stop, what a restarted application asks again,
    /// what `on_error` re-issues). A task's outcome and its loss were missing from the second: a
    /// restarted reference client re-issued a payment whose task it had been told was lost.
    #[test]
    fn the_oracles_and_the_actors_agree_on_what_resolves_a_call() {
        use crate::tasks::{TaskId, TaskStatus};
        let (call, task) = (CallKey(3), TaskId("r0.0-t0".into()));
        let outcome = |status| StepKind::AppTaskOutcome { task: task.clone(), call, status };
        let kinds = [
            StepKind::AppResult { call, session: SessionId::from("0-1"), id: None },
            StepKind::AppError { call, error: "x".into() },
            StepKind::AppUnknownOutcome { call, reason: "x".into() },
            outcome(TaskStatus::Completed),
            outcome(TaskStatus::Failed),
            outcome(TaskStatus::Cancelled),
            StepKind::AppTaskLost { task: task.clone(), call },
            StepKind::AppCall { call, tool: "pay".into(), idempotent: false },
            StepKind::TaskIdForgotten { task: task.clone() },
        ];
        for kind in kinds {
            let of = Resolution::of(&kind);
            assert_eq!(kind.resolves(), of.map(|(c, _)| c), "{kind:?}");
            assert_eq!(kind.resolves_with_result(), of.is_some_and(|(_, r)| r == Resolution::Result), "{kind:?}");
        }
    }

    #[test]
    fn a_subject_names_the_session_its_builders_wrote() {
        let session = SessionId::from("ae93-1");
        assert_eq!(subject_session(&session_subject(&session)), Some("ae93-1"));
        assert_eq!(subject_session(&event_subject(&session, Some(StreamNo(2)), &EventId::from("2-7"))), Some("ae93-1"));
        assert_eq!(subject_session(&event_subject(&session, None, &EventId::from("2-7"))), Some("ae93-1"));
        let sessionless = SessionId::from("");
        assert_eq!(subject_session(&event_subject(&sessionless, Some(StreamNo(0)), &EventId::from("0-1"))), Some(""));
        assert_eq!(subject_session("call0"), None);
        assert_eq!(
            subject_stream(&event_subject(&session, Some(StreamNo(2)), &EventId::from("2-7"))),
            Some(StreamNo(2))
        );
        assert_eq!(
            subject_stream(&event_subject(&sessionless, Some(StreamNo(0)), &EventId::from("0-1"))),
            Some(StreamNo(0))
        );
        assert_eq!(subject_stream(&event_subject(&session, None, &EventId::from("2-7"))), None);
        assert_eq!(subject_stream(&session_subject(&session)), None);
        assert_eq!(subject_stream("call0"), None);
    }

    #[test]
    fn invariant_names_are_unique_and_found_by_name() {
        let names: BTreeSet<&str> = INVARIANTS.iter().map(|i| i.name).collect();
        assert_eq!(names.len(), INVARIANTS.len());
        assert_eq!(INVARIANTS.len(), InvariantId::ALL.len());
        for i in INVARIANTS {
            assert_eq!(by_name(i.name).map(|f| f.name), Some(i.name));
            assert!(!i.description.is_empty());
        }
        assert!(by_name("no-such-invariant").is_none());
    }

    #[test]
    fn an_empty_trace_breaks_nothing() {
        assert_eq!(check_all(&TraceBuilder::new().build()), vec![]);
    }

    #[test]
    fn every_step_handed_out_is_counted_as_read() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .server(session_created(&a, "app"))
            .app(app_call(0, false))
            .app(app_call(1, false))
            .app(app_result(0, &a, None))
            .build();
        let ix = TraceIndex::new(&trace);
        assert!(!ix.is_empty() && TraceIndex::new(&TraceBuilder::new().build()).is_empty());
        // The first call sorts the steps once (a pass of its own); then each step handed out counts.
        let _ = ix.others().count();
        let before = ix.steps_read();
        let handed = ix.others().count();
        assert!(handed >= 4, "{handed}");
        assert_eq!(ix.steps_read() - before, handed);
    }

    #[test]
    fn the_step_iterators_know_their_length_before_they_read() {
        let a = sid("A");
        let trace = TraceBuilder::new()
            .server(session_created(&a, "app"))
            .app(app_call(0, false))
            .app(app_result(0, &a, None))
            .build();
        let ix = TraceIndex::new(&trace);
        let n = trace.steps.len();
        assert_eq!(ix.steps().size_hint(), (n, Some(n)));
        let mut others = ix.others();
        let len = others.len();
        assert_eq!((len, others.size_hint()), (n, (n, Some(n))), "no step of these is an event");
        others.next();
        assert_eq!(others.len(), n - 1);
        assert_eq!(ix.others().rev().count(), len);
    }

    #[test]
    fn an_id_is_found_by_its_key_whatever_the_guess() {
        let mut t = IdTable::with_capacity(2);
        assert_eq!((t.insert(0, "1-1"), t.insert(0, "1-2"), t.insert(1, "1-1")), (Some(0), Some(1), Some(2)));
        assert_eq!(t.insert(0, "1-2"), None, "already there");
        for guess in [None, Some(0), Some(1), Some(2), Some(3), Some(99)] {
            assert_eq!(t.get(0, "1-2", guess), Some(1), "guess {guess:?}");
            assert_eq!(t.get(1, "1-1", guess), Some(2), "guess {guess:?}");
            assert_eq!(t.get(1, "1-2", guess), None, "guess {guess:?}");
        }
    }

    #[test]
    fn check_all_sorts_by_time_then_subject() {
        // call1 is never resolved (deadline 9ms); call0 ran twice at 5ms; and call2's result was
        // delivered twice at 7ms.
        let a = sid("A");
        let trace = TraceBuilder::new()
            .at(1_000)
            .server(session_created(&a, "app"))
            .app(app_call(0, false))
            .app(app_call(1, true))
            .app(app_call(2, true))
            .at(2_000)
            .server(side_effect(&a, 1, 0))
            .server(stored(&a, 3, 1, Some(2), Some(tool_result(3, 2))))
            .at(5_000)
            .server(side_effect(&a, 2, 0))
            .app(app_result(0, &a, None))
            .at(7_000)
            .app(app_result(2, &a, Some(ev(3, 1))))
            .app(app_result(2, &a, Some(ev(3, 1))))
            .run(StepKind::Liveness { deadline: 9_000 })
            .at(9_000)
            .run(run_end(Some(&a), &[&a]))
            .build();
        let found: Vec<(&str, u64, String)> =
            check_all(&trace).into_iter().map(|v| (v.invariant.name(), v.at.0, v.subject)).collect();
        assert_eq!(
            found,
            vec![
                ("no-duplicate-execution", 5_000, "call0".to_string()),
                ("every-call-resolves", 7_000, "call2".to_string()),
                ("no-duplicate-delivery", 7_000, "session A stream3 event 3-1".to_string()),
                ("every-call-resolves", 9_000, "call1".to_string()),
            ]
        );
    }

    #[test]
    fn a_result_lost_under_the_clients_own_timeout_is_a_loss_not_an_excuse() {
        use crate::http::{Request, ToolCall};
        use crate::ids::ConnId;
        let a = sid("A");
        let post = |id: u64| {
            let call = ToolCall { tool: "pay".into(), key: CallKey(0), idempotency_key: None, tasks: false };
            Request::post(Some(a.clone()), ClientMessage::CallTool { id: RequestId(id), call })
        };
        let cancel = |id: u64| Request::post(Some(a.clone()), ClientMessage::Cancelled { request: RequestId(id) });
        let trace = |cancelled: Option<u64>| {
            let mut b =
                TraceBuilder::new().app(app_call(0, true)).client(StepKind::Send { conn: ConnId(1), request: post(2) });
            if let Some(id) = cancelled {
                b = b.at(60_000).client(StepKind::Send { conn: ConnId(2), request: cancel(id) });
            }
            b.at(60_000)
                .app(app_error(0))
                .at(300_000)
                .server(stored(&a, 1, 1, Some(0), Some(tool_result(1, 0))))
                .build()
        };
        let names = |t: &Trace| check_all(t).into_iter().map(|v| v.invariant.name()).collect::<Vec<_>>();
        // A plain error (the server failed it) excuses what the stream carried afterwards ...
        assert_eq!(names(&trace(None)), Vec::<&str>::new());
        // ... one the client reported after cancelling the request itself does not.
        assert_eq!(names(&trace(Some(2))), vec!["no-orphaned-session"]);
        // A cancel of another request is not this call's.
        assert_eq!(names(&trace(Some(7))), Vec::<&str>::new());
        // The cancel is its attempt's: the application issued the call again, and that attempt's
        // error, with no cancel of its own (a restart ended its stream), is a word of failure.
        let reissued = |second_error: bool| {
            let mut b = TraceBuilder::new()
                .app(app_call(0, true))
                .client(StepKind::Send { conn: ConnId(1), request: post(2) })
                .at(60_000)
                .client(StepKind::Send { conn: ConnId(2), request: cancel(2) })
                .app(app_error(0))
                .app(app_call(0, true))
                .client(StepKind::Send { conn: ConnId(3), request: post(3) });
            if second_error {
                b = b.at(67_000).app(app_error(0));
            }
            b.at(300_000).server(stored(&a, 2, 1, Some(0), Some(tool_result(1, 0)))).build()
        };
        assert_eq!(names(&reissued(true)), Vec::<&str>::new());
        // (Unresolved, the re-issue leaves its result orphaned, and its call unresolved.)
        assert_eq!(names(&reissued(false)), vec!["no-orphaned-session", "every-call-resolves"]);
    }

    #[test]
    fn a_delivery_is_looked_up_in_its_own_session_whatever_was_stored_next() {
        // Key 0 is A's 1-1, key 1 B's 1-2, key 2 A's 1-2: after A's 1-1 is handed over, the next
        // key (B's) carries the very id A's next delivery names, and must not be taken for it.
        let (a, b) = (sid("A"), sid("B"));
        let trace = TraceBuilder::new()
            .server(stored(&a, 1, 1, Some(0), None))
            .server(stored(&b, 1, 2, Some(1), None))
            .server(stored(&a, 1, 2, Some(0), None))
            .app(app_event(&a, ev(1, 1), Some(0)))
            .app(app_event(&a, ev(1, 2), Some(0)))
            .app(app_event(&b, ev(1, 2), Some(1)))
            .build();
        let ix = TraceIndex::new(&trace);
        let found: Vec<_> =
            ix.resolved_deliveries().iter().map(|(d, e)| (d.session.as_str(), e.map(|e| e.key))).collect();
        assert_eq!(found, vec![("A", Some(0)), ("A", Some(2)), ("B", Some(1))]);
        assert_eq!(ix.delivered(), &[true, true, true]);
    }

    #[test]
    fn violations_become_footer_records() {
        let v = Violation {
            invariant: InvariantId::NoOrphanedSession,
            step: 7,
            at: Instant(5),
            subject: "call1".into(),
            detail: "d".into(),
        };
        let r = ViolationRecord::from(&v);
        assert_eq!(
            (r.invariant.as_str(), r.step, r.t, r.subject.as_str(), r.detail.as_str()),
            ("no-orphaned-session", 7, 5, "call1", "d")
        );
    }

    #[test]
    fn an_invariant_id_equals_its_own_name_only() {
        assert!(InvariantId::NoDuplicateExecution == "no-duplicate-execution");
        assert!(InvariantId::NoDuplicateExecution != "no-duplicate-delivery");
        assert!(InvariantId::NoDuplicateExecution != "no-duplicate");
    }

    #[test]
    fn each_invariant_id_leads_to_its_own_registry_entry() {
        for id in InvariantId::ALL {
            let entry = id.invariant();
            assert_eq!((entry.id, entry.name), (id, id.name()));
        }
    }

    #[test]
    fn every_invariant_id_is_in_the_registry_once_under_its_name() {
        assert_eq!(INVARIANTS.len(), InvariantId::ALL.len());
        for id in InvariantId::ALL {
            let entries: Vec<_> = INVARIANTS.iter().filter(|i| i.id == id).collect();
            assert_eq!(entries.len(), 1, "{id}");
            assert_eq!(entries[0].name, id.name());
            assert_eq!(id.name().parse::<InvariantId>(), Ok(id));
        }
        assert!("no-duplicate".parse::<InvariantId>().is_err(), "a prefix names no invariant");
    }

    #[test]
    fn steps_read_from_either_end_are_each_counted_once() {
        let trace = TraceBuilder::new()
            .app(app_call(0, false))
            .at(1_000)
            .app(app_unknown(0))
            .at(2_000)
            .run(run_end(None, &[]))
            .build();
        let ix = TraceIndex::new(&trace);
        let mut steps = ix.steps();
        assert_eq!(steps.next_back().map(|(i, _)| i), Some(2));
        assert_eq!(steps.next().map(|(i, _)| i), Some(0));
        assert_eq!(steps.next_back().map(|(i, _)| i), Some(1));
        assert_eq!((steps.next_back(), steps.next()), (None, None));
        assert_eq!(ix.steps_read(), 3);
        assert_eq!(ix.steps().rev().count(), 3);
        assert_eq!(ix.steps_read(), 6);
    }
}
