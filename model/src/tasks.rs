//! The Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`, ext-tasks
//! `specification/draft/tasks.md`): a `tools/call` answered with a `CreateTaskResult`, then
//! `tasks/get` polls, `tasks/update` input, `tasks/cancel` intent, until a terminal status carries
//! the result inline.
//!
//! [`TaskStore`] is one store's records as a sans-IO machine: time comes in as `now`, and the
//! SDK's expiry rule is data ([`ExpiryRule`]): the spec lets a server fail a task after
//! `createdAt + ttlMs` and delete it "at any time" after that, and the SDKs differ in what they
//! do. [`ServerTasks`] and [`ClientTasks`] are the profile fields (`server.tasks`,
//! `client.tasks`); [`ttl_needed`] is `advise`'s arithmetic.

use crate::time::{format_duration, serde_duration, serde_opt_duration};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// JSON-RPC `Invalid params`: a `tasks/get` (MUST) or `tasks/update`/`tasks/cancel` (SHOULD) for a
/// task the server does not know (tasks.md "Protocol Errors").
pub const TASK_NOT_FOUND: i64 = -32602;

/// A task's status (tasks.md "Task Status").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Being processed.
    Working,
    /// Waiting for `tasks/update`.
    InputRequired,
    /// Done; the result is inline (tool errors included).
    Completed,
    /// A JSON-RPC error during execution (an SDK's TTL abort included).
    Failed,
    /// Cancelled before completion.
    Cancelled,
}

impl TaskStatus {
    /// Completed, failed or cancelled: no further transition.
    pub const fn terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// What a store does when a task's `createdAt + ttl` passes while it still works.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkingAtTtl {
    /// Abort the work and mark the task `failed` (rmcp 3.11.0 task_manager.rs:508-529).
    AbortAndFail,
    /// Delete the record and let the work run on, unseen (TypeScript 1.32.2
    /// experimental/tasks/stores/in-memory.js:71-79: "Cleanup occurs regardless of task status").
    DeleteRecord,
    /// Nothing: the record stays until it is terminal (the spec's MAY not taken).
    Keep,
}

/// When a store runs its expiry rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sweep {
    /// At each call into the store (create, get, update, cancel): nothing expires in an idle store
    /// (rmcp 3.11.0 task_manager.rs:276-297, "There is no background sweeper").
    OnCall,
    /// At the deadline itself (TypeScript's `setTimeout`, in-memory.js:74-78).
    Timer,
}

/// An SDK's expiry rule, as data. The default is what the spec requires and no more: a working
/// task is kept, a terminal one a TTL after its end, at the deadline itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExpiryRule {
    /// A task still working at `createdAt + ttl`.
    pub working_at_ttl: WorkingAtTtl,
    /// A terminal task's record is kept this many TTLs after it became terminal, and in any
    /// case until `createdAt + ttl` (rmcp: 1, task_manager.rs:530-537; TypeScript: 1,
    /// in-memory.js:98-108,135-145 restart the timer; 0: only the TTL from creation).
    pub terminal_kept_ttls: u32,
    /// When the rule runs.
    pub sweep: Sweep,
}

impl Default for ExpiryRule {
    fn default() -> Self {
        ExpiryRule { working_at_ttl: WorkingAtTtl::Keep, terminal_kept_ttls: 1, sweep: Sweep::Timer }
    }
}

impl ExpiryRule {
    /// When the rule removes a terminal record: `terminal_kept_ttls` TTLs after its end, and
    /// never before `createdAt + ttl`, the retention the task was created with (the ext-tasks
    /// `ttl` counts from creation; with 0 TTLs after the end, that is all the record gets).
    /// `None` for a task with no TTL or not terminal.
    fn removal_us(&self, r: &TaskRecord) -> Option<u64> {
        let (ttl, end) = (micros(r.ttl?), r.terminal_us?);
        let after_end = end.saturating_add(ttl.saturating_mul(u64::from(self.terminal_kept_ttls)));
        Some(after_end.max(r.created_us.saturating_add(ttl)))
    }
}

/// Where a fleet keeps its tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskStoreScope {
    /// Each replica its own, in memory (rmcp `TaskManager`, TypeScript `InMemoryTaskStore`).
    #[default]
    PerReplica,
    /// One store all replicas read.
    Shared,
}

/// How `tasks/*` requests reach a replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskRouting {
    /// As any request (round robin, …): a per-replica store answers `-32602` to a poll that lands
    /// on another replica.
    #[default]
    Any,
    /// By `Mcp-Name` = `taskId` to the replica that holds the task (tasks.md "Streamable HTTP:
    /// Routing Headers"; rmcp 3.11.0 transport/common/mcp_headers.rs:28-41 sets it).
    McpName,
}

/// A server's tasks (`server.tasks`). The default creates none (`create_for_tools_over` none).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerTasks {
    /// A call whose tool runs at least this long is answered with a `CreateTaskResult` (the
    /// server decides per request, tasks.md "Capability Negotiation"); `0s`: every call; `None`:
    /// never (the SDK has the store, but the application has not made a tool a task: the SDK
    /// profiles' default, as in the probe fixtures).
    #[serde(with = "serde_opt_duration")]
    pub create_for_tools_over: Option<Duration>,
    /// The `ttlMs` given to a new task; `None`: unlimited.
    #[serde(with = "serde_opt_duration")]
    pub ttl: Option<Duration>,
    /// The `pollIntervalMs` suggested.
    #[serde(with = "serde_duration")]
    pub poll_interval: Duration,
    /// What happens at and after the TTL.
    pub expiry: ExpiryRule,
    /// Per replica or shared.
    #[serde(default)]
    pub store: TaskStoreScope,
    /// How `tasks/*` is routed in front of the replicas.
    #[serde(default)]
    pub routing: TaskRouting,
    /// What a `tasks/cancel` of a working task does (left out of traces at its default).
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_cancel: TaskCancel,
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// What a server does with `tasks/cancel` for a task still working (`server.tasks.on_cancel`).
/// Cancellation is cooperative (tasks.md "Task Cancellation"): acknowledged, the task may still
/// end `completed`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskCancel {
    /// Only the intent is recorded; the work runs on to its own end (rmcp 3.11.0
    /// task_manager.rs:438-452: "does **not** abort the underlying future or force a terminal
    /// state"; an operation that ignores it "finishes its work anyway → recorded as `completed`").
    #[default]
    RunOn,
    /// The record turns `cancelled` at once and the work is not stopped: its result has nowhere
    /// to go (TypeScript 1.32.2 dist/esm/shared/protocol.js:140-161: `updateTaskStatus(...,
    /// 'cancelled')`, the handler's work is not aborted).
    MarkCancelled,
    /// The work observes the cancel and stops, the task ends `cancelled` (an rmcp operation that
    /// watches `TaskContext::cancelled` and exits `TaskExit::Cancelled`).
    Stop,
}

impl Default for ServerTasks {
    fn default() -> Self {
        ServerTasks {
            create_for_tools_over: None,
            ttl: None,
            poll_interval: Duration::from_secs(1),
            expiry: ExpiryRule::default(),
            store: TaskStoreScope::PerReplica,
            routing: TaskRouting::Any,
            on_cancel: TaskCancel::RunOn,
        }
    }
}

impl ServerTasks {
    /// Whether a `tools/call` of a tool lasting `duration` is answered with a task: the server
    /// makes tasks for tools that long (`create_for_tools_over`), and the client `declared` the
    /// extension (a server MUST NOT answer a task otherwise).
    pub fn makes_task_for(&self, duration: Duration, declared: bool) -> bool {
        declared && self.create_for_tools_over.is_some_and(|over| duration >= over)
    }
}

/// A client's tasks (`client.tasks`). The default does not declare the extension, so a server
/// never answers it with a task (tasks.md: "MUST NOT return CreateTaskResult to a client that did
/// not include the extension capability").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientTasks {
    /// Declares `io.modelcontextprotocol/tasks` in its per-request capabilities.
    pub declares: bool,
    /// Poll at the server's `pollIntervalMs` (the SHOULD), else at `poll_every`.
    pub honour_poll_interval: bool,
    /// The client's own poll interval when it does not honour the server's.
    #[serde(with = "serde_duration")]
    pub poll_every: Duration,
    /// Task ids survive a client restart (the spec's SHOULD, tasks.md "Task Polling").
    pub persist_ids: bool,
    /// Sends `Mcp-Name: <taskId>` on `tasks/*` (the spec's MUST; rmcp does).
    pub sends_mcp_name: bool,
    /// What a `-32602` ("task not found") to a poll does.
    #[serde(default)]
    pub not_found: TaskNotFound,
    /// The application cancels a call answered with a task that has not ended this long after
    /// its `CreateTaskResult` (its own deadline): `tasks/cancel`, then it polls on for the
    /// outcome. `None` (the default, left out of traces): never.
    #[serde(default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub cancel_after: Option<Duration>,
    /// The application answers a task that a poll shows `input_required` this long after (a
    /// user's time to answer), with `tasks/update` (carrying `Mcp-Name` as its polls do); `None`:
    /// never (a client that does not handle the status polls on until the task ends or expires).
    /// `0s` (the default, left out of traces): at once.
    #[serde(default = "at_once", with = "serde_opt_duration", skip_serializing_if = "is_at_once")]
    pub answer_input_after: Option<Duration>,
}

fn at_once() -> Option<Duration> {
    Some(Duration::ZERO)
}

fn is_at_once(d: &Option<Duration>) -> bool {
    *d == at_once()
}

/// What the client does with a `-32602` to `tasks/get`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskNotFound {
    /// The JSON-RPC error reaches the application as the call's error, as rmcp 3.11.0's
    /// `get_task` returns it (service/client.rs:1531-1540): the application reads a failure, not
    /// a lost outcome.
    #[default]
    Error,
    /// The application is told the task is lost: its outcome is unknown (the design note's rule:
    /// never report as failed what may have run).
    Lost,
}

impl Default for ClientTasks {
    fn default() -> Self {
        ClientTasks {
            declares: false,
            honour_poll_interval: true,
            poll_every: Duration::from_secs(1),
            persist_ids: false,
            sends_mcp_name: true,
            not_found: TaskNotFound::Error,
            cancel_after: None,
            answer_input_after: at_once(),
        }
    }
}

impl ClientTasks {
    /// The interval between polls of a task whose server suggests `suggested`.
    pub fn poll_interval(&self, suggested: Duration) -> Duration {
        if self.honour_poll_interval {
            suggested
        } else {
            self.poll_every
        }
    }

    /// How long the work of a task that asks for input (the tool's `asks_for_input_within`, in
    /// `config`, which depends on this module) waits for its answer at worst, with the server
    /// suggesting `suggested` between polls: the poll that
    /// shows `input_required` comes up to a poll interval late, then the user takes
    /// `answer_input_after`. The work stands still meanwhile (its end is pushed back by the wait),
    /// so both the task's TTL and the call's resolution come that much later. `None`: the
    /// application never answers.
    pub fn input_wait(&self, suggested: Duration) -> Option<Duration> {
        self.answer_input_after.map(|answer| self.poll_interval(suggested) + answer)
    }
}

/// The three `tasks/*` requests (ext-tasks tasks.md: no `tasks/list`, no `tasks/result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOp {
    /// `tasks/get`: the status, the result inline once terminal.
    Get,
    /// `tasks/update`: input for an `input_required` task.
    Update,
    /// `tasks/cancel`: cooperative cancellation.
    Cancel,
}

impl std::fmt::Display for TaskOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TaskOp::Get => "tasks/get",
            TaskOp::Update => "tasks/update",
            TaskOp::Cancel => "tasks/cancel",
        })
    }
}

/// A task id (server-generated).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(pub String);

/// The seed state a `CreateTaskResult` carries (`resultType: "task"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateTaskResult {
    /// The id the client polls with.
    pub task: TaskId,
    /// `working`.
    pub status: TaskStatus,
    /// `ttlMs`.
    pub ttl: Option<Duration>,
    /// `pollIntervalMs`.
    pub poll_interval: Duration,
}

/// One record of a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRecord {
    /// The status.
    pub status: TaskStatus,
    /// When it was created (µs of simulated time).
    pub created_us: u64,
    /// When it became terminal.
    pub terminal_us: Option<u64>,
    /// Its TTL.
    pub ttl: Option<Duration>,
    /// Whether its work still runs (a record deleted under `DeleteRecord` leaves it running).
    pub work_running: bool,
}

/// What the store did by itself at a sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expired {
    /// The task was still working at its TTL: its work aborted, the task failed.
    Aborted(TaskId),
    /// The record was removed; `work_running`: its work runs on with no record.
    Removed {
        /// The task.
        task: TaskId,
        /// Whether the work still runs.
        work_running: bool,
    },
}

/// The answer to `tasks/get` (and the ack of `tasks/update`/`tasks/cancel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskAnswer {
    /// The task's status (`result` inline when completed).
    Status(TaskStatus),
    /// `-32602`: not found (never created here, or expired and removed).
    NotFound,
}

/// One store's tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskStore {
    rule: ExpiryRule,
    prefix: String,
    next: u64,
    records: BTreeMap<TaskId, TaskRecord>,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl TaskStore {
    /// An empty store under `rule`; its ids start with `prefix` (a replica's name).
    pub fn new(rule: ExpiryRule, prefix: &str) -> TaskStore {
        TaskStore { rule, prefix: prefix.to_string(), next: 0, records: BTreeMap::new() }
    }

    /// The ids of every record held.
    pub fn ids(&self) -> Vec<TaskId> {
        self.records.keys().cloned().collect()
    }

    /// The record of `task`, if it is held.
    pub fn record(&self, task: &TaskId) -> Option<&TaskRecord> {
        self.records.get(task)
    }

    /// Creates a task: the record is in place before the `CreateTaskResult` leaves (tasks.md "Task
    /// Creation": not before a `tasks/get` would resolve).
    pub fn create(
        &mut self,
        now_us: u64,
        ttl: Option<Duration>,
        poll_interval: Duration,
    ) -> (CreateTaskResult, Vec<Expired>) {
        let expired = self.on_call(now_us);
        let task = TaskId(format!("{}-t{}", self.prefix, self.next));
        self.next += 1;
        let record =
            TaskRecord { status: TaskStatus::Working, created_us: now_us, terminal_us: None, ttl, work_running: true };
        self.records.insert(task.clone(), record);
        (CreateTaskResult { task, status: TaskStatus::Working, ttl, poll_interval }, expired)
    }

    /// `tasks/get`.
    pub fn get(&mut self, now_us: u64, task: &TaskId) -> (TaskAnswer, Vec<Expired>) {
        let expired = self.on_call(now_us);
        let answer = self.records.get(task).map_or(TaskAnswer::NotFound, |r| TaskAnswer::Status(r.status));
        (answer, expired)
    }

    /// `tasks/update`: input for an `input_required` task, which goes back to working.
    pub fn update(&mut self, now_us: u64, task: &TaskId) -> (TaskAnswer, Vec<Expired>) {
        let expired = self.on_call(now_us);
        let answer = match self.records.get_mut(task) {
            None => TaskAnswer::NotFound,
            Some(r) => {
                if r.status == TaskStatus::InputRequired {
                    r.status = TaskStatus::Working;
                }
                TaskAnswer::Status(r.status)
            }
        };
        (answer, expired)
    }

    /// The task's work asks its client for input: a working task turns `input_required`
    /// (`false` when there is no working record to say so).
    pub fn need_input(&mut self, task: &TaskId) -> bool {
        match self.records.get_mut(task) {
            Some(r) if r.status == TaskStatus::Working => {
                r.status = TaskStatus::InputRequired;
                true
            }
            _ => false,
        }
    }

    /// `tasks/cancel`: acknowledged; cancellation is cooperative, so the status does not change
    /// here (tasks.md "Task Cancellation"): the work ends through [`TaskStore::finish`].
    pub fn cancel(&mut self, now_us: u64, task: &TaskId) -> (TaskAnswer, Vec<Expired>) {
        let expired = self.on_call(now_us);
        let answer = self.records.get(task).map_or(TaskAnswer::NotFound, |r| TaskAnswer::Status(r.status));
        (answer, expired)
    }

    /// The task's work ended with `status` (terminal). `false` when there is no record to hold
    /// the result any more (TypeScript's `storeTaskResult` throws "not found"), or the task is
    /// already terminal (an aborted task's late end).
    pub fn finish(&mut self, now_us: u64, task: &TaskId, status: TaskStatus) -> bool {
        match self.records.get_mut(task) {
            Some(r) if !r.status.terminal() => {
                r.status = status;
                r.terminal_us = Some(now_us);
                r.work_running = false;
                true
            }
            _ => false,
        }
    }

    /// The time of the next change the rule would make by itself, for a [`Sweep::Timer`] store
    /// (the actor sets a timer for it); `None` for [`Sweep::OnCall`] or nothing due.
    pub fn next_deadline(&self) -> Option<u64> {
        if self.rule.sweep != Sweep::Timer {
            return None;
        }
        self.records.values().filter_map(|r| self.deadline(r)).min()
    }

    /// When `r` next changes under the rule.
    fn deadline(&self, r: &TaskRecord) -> Option<u64> {
        let ttl = micros(r.ttl?);
        match r.terminal_us {
            None if self.rule.working_at_ttl == WorkingAtTtl::Keep => None,
            None => Some(r.created_us.saturating_add(ttl)),
            Some(_) => self.rule.removal_us(r),
        }
    }

    /// Runs the rule at `now_us` (a timer that fired, or a call into an on-call store).
    pub fn sweep(&mut self, now_us: u64) -> Vec<Expired> {
        let mut out = Vec::new();
        // Working tasks at their TTL first (rmcp's phase 1), then terminal ones past retention.
        for (id, r) in &mut self.records {
            let Some(ttl) = r.ttl else { continue };
            if r.terminal_us.is_none() && now_us >= r.created_us.saturating_add(micros(ttl)) {
                if let WorkingAtTtl::AbortAndFail = self.rule.working_at_ttl {
                    r.status = TaskStatus::Failed;
                    r.terminal_us = Some(now_us);
                    r.work_running = false;
                    out.push(Expired::Aborted(id.clone()));
                }
            }
        }
        let rule = self.rule;
        let mut removed = Vec::new();
        for (id, r) in &self.records {
            let Some(ttl) = r.ttl else { continue };
            let ttl = micros(ttl);
            let gone = match r.terminal_us {
                Some(_) => rule.removal_us(r).is_some_and(|at| now_us >= at),
                None => rule.working_at_ttl == WorkingAtTtl::DeleteRecord && now_us >= r.created_us.saturating_add(ttl),
            };
            if gone {
                removed.push((id.clone(), r.work_running));
            }
        }
        for (task, work_running) in removed {
            self.records.remove(&task);
            out.push(Expired::Removed { task, work_running });
        }
        out
    }

    fn on_call(&mut self, now_us: u64) -> Vec<Expired> {
        match self.rule.sweep {
            Sweep::OnCall => self.sweep(now_us),
            Sweep::Timer => Vec::new(),
        }
    }
}

/// The replica that answers a `tasks/*` request for a task created on `holder`, when round robin
/// would send it to `next`.
pub fn task_route(routing: TaskRouting, store: TaskStoreScope, holder: u32, next: u32) -> (u32, bool) {
    let replica = match routing {
        TaskRouting::McpName => holder,
        TaskRouting::Any => next,
    };
    // Whether that replica can see the record.
    let sees = store == TaskStoreScope::Shared || replica == holder;
    (replica, sees)
}

/// The replica a task id names (`r<replica>.<epoch>-t<n>`, `crate::server::task_prefix`): what a
/// balancer routing by `Mcp-Name` reads to find the instance holding the task. `None` for an id
/// of another form (a shared store's).
pub fn task_holder(task: &str) -> Option<u32> {
    let rest = task.strip_prefix('r')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || !rest[digits.len()..].starts_with('.') {
        return None;
    }
    digits.parse().ok()
}

/// `advise` for tasks: the TTL a task needs so that its result is still held when the client
/// polls after the tool ends, given the tool's duration, the client's poll interval and the
/// longest outage during which no poll gets through. Counted from creation, as the spec counts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TtlAdvice {
    /// The smallest safe TTL.
    pub ttl: Duration,
    /// The arithmetic, one line per term.
    pub lines: Vec<String>,
}

/// The TTL needed under `rule` (see [`TtlAdvice`]). The result must survive until the first poll
/// that gets through after the tool ends: at worst an outage begins just before the tool ends
/// and the poll after it waits a whole interval, so that poll comes at
/// `duration + max_outage + poll_interval`. A store that aborts or deletes a working task at the
/// TTL needs the TTL past the tool's end, and one that keeps a terminal task `k` TTLs after its end
/// serves the late poll when `k × ttl >= max_outage + poll_interval` (with `k = 0` the result
/// must still be there at `createdAt + ttl`).
pub fn ttl_needed(rule: &ExpiryRule, duration: Duration, poll_interval: Duration, max_outage: Duration) -> TtlAdvice {
    let late = max_outage + poll_interval;
    let last_poll = duration + late;
    let mut lines = vec![format!(
        "last poll = duration + max outage + poll interval = {} + {} + {} = {}",
        format_duration(duration),
        format_duration(max_outage),
        format_duration(poll_interval),
        format_duration(last_poll)
    )];
    // The working phase: nothing may cut the task before it ends.
    let working = match rule.working_at_ttl {
        WorkingAtTtl::Keep => Duration::ZERO,
        WorkingAtTtl::AbortAndFail | WorkingAtTtl::DeleteRecord => duration,
    };
    // The retention phase: the record must still be there at the late poll.
    let retained = match rule.terminal_kept_ttls {
        0 => last_poll,
        k => late.div_f64(f64::from(k)),
    };
    let ttl = working.max(retained) + Duration::from_millis(1);
    lines.push(match rule.working_at_ttl {
        WorkingAtTtl::Keep => "a working task is never cut at its TTL: no bound from the duration".to_string(),
        _ => format!("a working task is cut at createdAt + ttl: ttl > duration = {}", format_duration(duration)),
    });
    lines.push(match rule.terminal_kept_ttls {
        0 => format!("the record goes at createdAt + ttl: ttl > last poll = {}", format_duration(last_poll)),
        k => format!(
            "the result is kept {k} × ttl after the end: {k} × ttl > max outage + poll interval = {}",
            format_duration(late)
        ),
    });
    lines.push(format!("ttl = max of the two + 1ms = {}", format_duration(ttl)));
    TtlAdvice { ttl, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    fn rmcp() -> ExpiryRule {
        ExpiryRule { working_at_ttl: WorkingAtTtl::AbortAndFail, terminal_kept_ttls: 1, sweep: Sweep::OnCall }
    }

    fn ts() -> ExpiryRule {
        ExpiryRule { working_at_ttl: WorkingAtTtl::DeleteRecord, terminal_kept_ttls: 1, sweep: Sweep::Timer }
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_created_task_is_found_at_once_and_completes_with_its_result() {
        let mut store = TaskStore::new(rmcp(), "r0");
        let (created, _) = store.create(0, Some(secs(300)), secs(1));
        assert_eq!(created.status, TaskStatus::Working);
        assert_eq!(store.get(1, &created.task).0, TaskAnswer::Status(TaskStatus::Working));
        assert!(store.finish(10 * S, &created.task, TaskStatus::Completed));
        assert_eq!(store.get(11 * S, &created.task).0, TaskAnswer::Status(TaskStatus::Completed));
        assert!(!store.finish(12 * S, &created.task, TaskStatus::Failed), "terminal states do not change");
        assert_eq!(store.get(1, &TaskId("nope".into())).0, TaskAnswer::NotFound);
    }

    #[test]
    fn rmcp_aborts_a_working_task_at_its_ttl_only_when_the_store_is_called() {
        let mut store = TaskStore::new(rmcp(), "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        // Nothing runs by itself: no deadline for an on-call store, and the work still runs.
        assert_eq!(store.next_deadline(), None);
        assert!(store.record(&t.task).expect("held").work_running);
        let (answer, expired) = store.get(90 * S, &t.task);
        assert_eq!(expired, vec![Expired::Aborted(t.task.clone())]);
        assert_eq!(answer, TaskAnswer::Status(TaskStatus::Failed));
        // Kept one TTL after the abort (at 90 s), gone after.
        assert_eq!(store.get(149 * S, &t.task).0, TaskAnswer::Status(TaskStatus::Failed));
        let (answer, expired) = store.get(150 * S, &t.task);
        assert_eq!(answer, TaskAnswer::NotFound);
        assert_eq!(expired, vec![Expired::Removed { task: t.task, work_running: false }]);
    }

    #[test]
    fn rmcp_keeps_a_finished_task_one_ttl_after_its_end() {
        let mut store = TaskStore::new(rmcp(), "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        store.finish(50 * S, &t.task, TaskStatus::Completed);
        assert_eq!(store.get(109 * S, &t.task).0, TaskAnswer::Status(TaskStatus::Completed));
        assert_eq!(store.get(110 * S, &t.task).0, TaskAnswer::NotFound);
    }

    #[test]
    fn typescript_deletes_a_working_record_at_created_plus_ttl_and_the_work_runs_on() {
        let mut store = TaskStore::new(ts(), "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        assert_eq!(store.next_deadline(), Some(60 * S));
        let expired = store.sweep(60 * S);
        assert_eq!(expired, vec![Expired::Removed { task: t.task.clone(), work_running: true }]);
        assert_eq!(store.get(61 * S, &t.task).0, TaskAnswer::NotFound);
        assert!(!store.finish(300 * S, &t.task, TaskStatus::Completed), "the result has no record to go to");
    }

    #[test]
    fn typescript_restarts_the_timer_at_the_end() {
        let mut store = TaskStore::new(ts(), "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        store.finish(30 * S, &t.task, TaskStatus::Completed);
        assert_eq!(store.next_deadline(), Some(90 * S));
        assert!(store.sweep(89 * S).is_empty());
        assert_eq!(store.sweep(90 * S).len(), 1);
    }

    #[test]
    fn an_unlimited_ttl_never_expires() {
        let mut store = TaskStore::new(rmcp(), "r0");
        let (t, _) = store.create(0, None, secs(1));
        assert_eq!(store.get(u64::MAX / 2, &t.task).0, TaskAnswer::Status(TaskStatus::Working));
    }

    #[test]
    fn update_resumes_input_required_and_cancel_only_acknowledges() {
        let mut store = TaskStore::new(rmcp(), "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        store.records.get_mut(&t.task).expect("held").status = TaskStatus::InputRequired;
        assert_eq!(store.update(1, &t.task).0, TaskAnswer::Status(TaskStatus::Working));
        assert_eq!(store.cancel(2, &t.task).0, TaskAnswer::Status(TaskStatus::Working));
        assert_eq!(store.cancel(2, &TaskId("x".into())).0, TaskAnswer::NotFound);
    }

    #[test]
    fn the_wire_names_and_codes_are_the_specs() {
        // tasks.md "Protocol Errors": Invalid params; the three methods by name.
        assert_eq!(TASK_NOT_FOUND, -32602);
        assert_eq!(
            [TaskOp::Get, TaskOp::Update, TaskOp::Cancel].map(|op| op.to_string()),
            ["tasks/get", "tasks/update", "tasks/cancel"]
        );
    }

    #[test]
    fn each_task_gets_its_own_id_and_only_a_working_one_asks_for_input() {
        let mut store = TaskStore::new(rmcp(), "r0");
        let (a, _) = store.create(0, Some(secs(60)), secs(1));
        let (b, _) = store.create(0, Some(secs(60)), secs(1));
        let (c, _) = store.create(0, Some(secs(60)), secs(1));
        assert_eq!([a.task.0.as_str(), b.task.0.as_str(), c.task.0.as_str()], ["r0-t0", "r0-t1", "r0-t2"]);
        assert!(store.need_input(&a.task));
        assert_eq!(store.get(1, &a.task).0, TaskAnswer::Status(TaskStatus::InputRequired));
        assert!(!store.need_input(&a.task), "already waiting");
        store.finish(2, &b.task, TaskStatus::Completed);
        assert!(!store.need_input(&b.task), "a finished task asks for nothing");
        assert_eq!(store.get(3, &b.task).0, TaskAnswer::Status(TaskStatus::Completed));
    }

    #[test]
    fn a_working_task_is_removed_only_under_delete_record_and_only_at_its_ttl() {
        // Under `keep`, no deadline for a working task and nothing removed past its TTL.
        let keep = ExpiryRule { working_at_ttl: WorkingAtTtl::Keep, terminal_kept_ttls: 1, sweep: Sweep::Timer };
        let mut store = TaskStore::new(keep, "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        assert_eq!(store.next_deadline(), None);
        assert!(store.sweep(120 * S).is_empty());
        assert!(store.record(&t.task).is_some());
        // Under TypeScript's rule, a sweep before the TTL removes nothing.
        let mut store = TaskStore::new(ts(), "r0");
        let (t, _) = store.create(0, Some(secs(60)), secs(1));
        assert!(store.sweep(59 * S).is_empty());
        assert!(store.record(&t.task).is_some());
    }

    #[test]
    fn defaults_are_left_out_of_the_serde_form_and_read_back() {
        // Traces of runs that never set them keep their bytes.
        let server = serde_json::to_value(ServerTasks::default()).expect("serializes");
        assert!(server.get("on_cancel").is_none(), "{server}");
        let client = serde_json::to_value(ClientTasks::default()).expect("serializes");
        assert!(client.get("answer_input_after").is_none(), "{client}");
        let read: ClientTasks = serde_json::from_value(serde_json::json!({})).expect("reads");
        assert_eq!(read.answer_input_after, Some(Duration::ZERO), "at once by default");
        let never: ClientTasks =
            serde_json::from_value(serde_json::json!({"answer_input_after": "none"})).expect("reads");
        assert_eq!(never.answer_input_after, None);
        let later = ClientTasks { answer_input_after: Some(secs(30)), ..ClientTasks::default() };
        let v = serde_json::to_value(&later).expect("serializes");
        assert!(v.get("answer_input_after").is_some(), "a value other than the default is written: {v}");
        let cancel = ServerTasks { on_cancel: TaskCancel::Stop, ..ServerTasks::default() };
        assert!(serde_json::to_value(&cancel).expect("serializes").get("on_cancel").is_some());
    }

    #[test]
    fn a_balancer_reads_the_holder_from_a_replica_minted_id_and_routes_there() {
        assert_eq!(task_holder("r1.3-t0"), Some(1));
        assert_eq!(task_holder("r12.0-t5"), Some(12));
        assert_eq!(task_holder("shared-t0"), None);
        assert_eq!(task_holder("r-t0"), None);
        let config = crate::config::LbConfig { replicas: 3, ..crate::config::LbConfig::default() };
        let mut lb = crate::lb::LoadBalancer::new(config);
        let holder = crate::lb::Backend(2);
        // Round robin would start at replica 0; the name sends it to the holder.
        let routed = lb.route_to_holder(crate::ids::ConnId(1), holder, None, 0);
        assert_eq!(routed, crate::lb::Route::To(holder));
        assert_eq!(lb.route(crate::ids::ConnId(2), None, 0), crate::lb::Route::To(crate::lb::Backend(0)));
        // A draining holder: the balancer picks as for any request.
        lb.set_draining(holder, true);
        assert_ne!(lb.route_to_holder(crate::ids::ConnId(3), holder, None, 0), crate::lb::Route::To(holder));
    }

    #[test]
    fn without_mcp_name_routing_a_per_replica_store_misses_the_poll() {
        assert_eq!(task_route(TaskRouting::Any, TaskStoreScope::PerReplica, 0, 1), (1, false));
        assert_eq!(task_route(TaskRouting::McpName, TaskStoreScope::PerReplica, 0, 1), (0, true));
        assert_eq!(task_route(TaskRouting::Any, TaskStoreScope::Shared, 0, 1), (1, true));
    }

    #[test]
    fn the_client_polls_at_the_servers_interval_when_it_honours_it() {
        let mut c = ClientTasks { poll_every: secs(5), ..ClientTasks::default() };
        assert_eq!(c.poll_interval(secs(1)), secs(1));
        c.honour_poll_interval = false;
        assert_eq!(c.poll_interval(secs(1)), secs(5));
    }

    #[test]
    fn advise_needs_the_ttl_past_the_tool_and_the_late_poll() {
        // The seed's 5-minute payment, a 1 s poll, a 2-minute outage, rmcp's rule.
        let a = ttl_needed(&rmcp(), secs(300), secs(1), secs(120));
        assert_eq!(a.ttl, secs(300) + Duration::from_millis(1));
        // A short tool with a long outage: retention decides.
        let a = ttl_needed(&rmcp(), secs(10), secs(5), secs(600));
        assert_eq!(a.ttl, secs(605) + Duration::from_millis(1));
        // A store keeping nothing after the end needs the whole late poll inside the TTL.
        let none_kept = ExpiryRule { terminal_kept_ttls: 0, ..rmcp() };
        let a = ttl_needed(&none_kept, secs(10), secs(5), secs(60));
        assert_eq!(a.ttl, secs(75) + Duration::from_millis(1));
        assert!(a.lines[0].ends_with("= 75s"), "{:?}", a.lines);
    }

    #[test]
    fn a_record_kept_no_ttls_after_its_end_still_lives_to_created_at_plus_ttl() {
        // A 10 s task with a 76 s TTL under a rule that keeps nothing after the end: the result
        // is there until 76 s, the retention it was created with, and gone after.
        let none_kept = ExpiryRule { terminal_kept_ttls: 0, sweep: Sweep::OnCall, ..rmcp() };
        let mut store = TaskStore::new(none_kept, "r0");
        let (t, _) = store.create(0, Some(secs(76)), secs(5));
        store.finish(10 * S, &t.task, TaskStatus::Completed);
        assert_eq!(store.get(11 * S, &t.task).0, TaskAnswer::Status(TaskStatus::Completed));
        assert_eq!(store.get(75 * S, &t.task).0, TaskAnswer::Status(TaskStatus::Completed));
        let (gone, expired) = store.get(76 * S, &t.task);
        assert_eq!(gone, TaskAnswer::NotFound);
        assert_eq!(expired, vec![Expired::Removed { task: t.task.clone(), work_running: false }]);
        // One TTL after the end is later than createdAt + ttl here: the rule as before.
        let mut kept = TaskStore::new(ExpiryRule { sweep: Sweep::OnCall, ..rmcp() }, "r0");
        let (t, _) = kept.create(0, Some(secs(76)), secs(5));
        kept.finish(10 * S, &t.task, TaskStatus::Completed);
        assert_eq!(kept.get(85 * S, &t.task).0, TaskAnswer::Status(TaskStatus::Completed));
        assert_eq!(kept.get(86 * S, &t.task).0, TaskAnswer::NotFound);
    }

    #[test]
    fn the_advised_ttl_survives_the_late_poll_and_one_less_does_not() {
        // Check the arithmetic against the store itself, TypeScript's rule, tool 100 s, poll 5 s,
        // outage 30 s: the poll at 135 s must find the result.
        let (duration, poll, outage) = (secs(100), secs(5), secs(30));
        let ttl = ttl_needed(&ts(), duration, poll, outage).ttl;
        for (ttl, found) in [(ttl, true), (secs(99), false)] {
            let mut store = TaskStore::new(ts(), "r0");
            let (t, _) = store.create(0, Some(ttl), poll);
            let mut now = 0;
            while let Some(due) = store.next_deadline().filter(|d| *d <= 100 * S) {
                store.sweep(due);
                now = due;
            }
            let _ = now;
            store.finish(100 * S, &t.task, TaskStatus::Completed);
            if let Some(due) = store.next_deadline().filter(|d| *d <= 135 * S) {
                store.sweep(due);
            }
            let got = store.get(135 * S, &t.task).0 == TaskAnswer::Status(TaskStatus::Completed);
            assert_eq!(got, found, "ttl {ttl:?}");
        }
    }

    #[test]
    fn a_store_that_keeps_working_tasks_is_advised_by_the_late_poll_alone_and_says_so() {
        let keep = ExpiryRule { working_at_ttl: WorkingAtTtl::Keep, ..rmcp() };
        let a = ttl_needed(&keep, secs(300), secs(1), secs(120));
        assert_eq!(a.ttl, secs(121) + Duration::from_millis(1), "the 5-minute tool sets no bound");
        assert_eq!(a.lines[1], "a working task is never cut at its TTL: no bound from the duration");
        // A store that cuts a working task says the duration bounds the TTL.
        let a = ttl_needed(&rmcp(), secs(300), secs(1), secs(120));
        assert_eq!(a.lines[1], "a working task is cut at createdAt + ttl: ttl > duration = 5m");
    }

    #[test]
    fn the_replica_holding_a_task_is_read_from_its_id_and_only_from_that_form() {
        assert_eq!(task_holder("r3.0-t1"), Some(3));
        assert_eq!(task_holder("r12.4-t9"), Some(12));
        assert_eq!(task_holder("r3-t1"), None, "no epoch after the replica");
        assert_eq!(task_holder("r.0-t1"), None, "no replica");
        assert_eq!(task_holder("shared-1"), None);
    }
}
