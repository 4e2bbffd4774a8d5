//! The Tasks extension on the server (`crate::tasks`, ext-tasks `specification/draft/tasks.md`):
//! a `tools/call` the profile makes a task (`server.tasks.create_for_tools_over`, and only for a
//! client that declared the extension) is answered at once with a `CreateTaskResult`; the tool's
//! work runs in the task, detached from the request's connection; `tasks/get`, `tasks/update` and
//! `tasks/cancel` read the store; the result is inline in the terminal status.
//!
//! The store is this process's own (a restart loses it) or shared by every replica's process
//! (`server.tasks.store`, handed in by the actor with [`Server::with_task_store`]). Its expiry
//! rule runs on the calls into it or on its own timer ([`crate::tasks::Sweep`]); what it does by
//! itself is recorded (`task-ended` failed for an abort, `task-record-removed`).

use super::{Server, ServerOutput};
use crate::config::ToolSpec;
use crate::http::{Body, ResponseHead, ServerMessage, Status, ToolCall};
use crate::ids::{ConnId, RequestId, SessionId};
use crate::tasks::{Expired, TaskAnswer, TaskId, TaskOp, TaskStatus, TaskStore, TaskStoreScope, TASK_NOT_FOUND};
use crate::time::{micros, Instant};
use crate::trace::{StepKind, ToolEnd};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// JSON-RPC `Method not found`: `tasks/*` at a server without the extension.
const METHOD_NOT_FOUND: i64 = -32601;

/// A process's view of the tasks: the store it reads and the tools it runs for tasks.
#[derive(Debug, Default)]
pub(super) struct ServerTaskState {
    /// `None`: the server makes no task (`create_for_tools_over` unset).
    store: Option<Arc<Mutex<TaskStore>>>,
    /// The replica this process serves (the ids it mints start with it, for `Mcp-Name` routing).
    replica: u32,
    /// Running tool → the task it works for.
    by_tool: BTreeMap<u64, TaskId>,
}

/// The id prefix of a process's own store: its replica and incarnation, so that ids never repeat
/// across restarts and a balancer can read the holder from the id ([`crate::tasks::task_holder`]).
pub fn task_prefix(replica: u32, epoch: u32) -> String {
    format!("r{replica}.{epoch}")
}

fn lock(store: &Arc<Mutex<TaskStore>>) -> std::sync::MutexGuard<'_, TaskStore> {
    // The simulation is single-threaded and nothing panics while holding the lock.
    store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ServerTaskState {
    pub(super) fn new(policy: &crate::config::ServerPolicy, epoch: u32) -> Self {
        let tasks = &policy.tasks;
        let store = tasks
            .create_for_tools_over
            .map(|_| Arc::new(Mutex::new(TaskStore::new(tasks.expiry, &task_prefix(0, epoch)))));
        ServerTaskState { store, replica: 0, by_tool: BTreeMap::new() }
    }
}

impl Server {
    /// Serves replica `replica` and, under `server.tasks.store = shared`, reads `shared`, the one
    /// store of the fleet (the actor makes it once per run); otherwise a store of its own whose
    /// ids name the replica. No effect on a server that makes no task.
    pub fn with_task_store(mut self, replica: u32, shared: Option<Arc<Mutex<TaskStore>>>) -> Self {
        let tasks = &self.policy.tasks;
        if tasks.create_for_tools_over.is_none() {
            return self;
        }
        self.tasks.replica = replica;
        self.tasks.store = Some(match (tasks.store, shared) {
            (TaskStoreScope::Shared, Some(store)) => store,
            _ => Arc::new(Mutex::new(TaskStore::new(tasks.expiry, &task_prefix(replica, self.epoch)))),
        });
        self
    }

    /// Whether this call is answered with a task: the server makes tasks for the tool's duration
    /// and the client declared the extension (a server MUST NOT answer a task otherwise).
    pub(super) fn makes_task(&self, call: &ToolCall, spec: &ToolSpec) -> bool {
        let over = self.policy.tasks.create_for_tools_over;
        self.tasks.store.is_some() && call.tasks && over.is_some_and(|d| spec.duration >= d)
    }

    /// Answers the call with a `CreateTaskResult` (the record in place first, as the spec
    /// requires) and runs the tool in the task: no stream carries it, no progress is written.
    pub(super) fn call_as_task(
        &mut self,
        now: Instant,
        conn: ConnId,
        session: &SessionId,
        request: RequestId,
        call: ToolCall,
        spec: &ToolSpec,
    ) {
        let Some(store) = self.tasks.store.clone() else { return };
        let Some(stream) = self.open_post_stream(session, request, call.key) else { return };
        let (ttl, poll) = (self.policy.tasks.ttl, self.policy.tasks.poll_interval);
        let (created, expired) = lock(&store).create(now.0, ttl, poll);
        self.apply_expired(now, expired);
        let task = created.task;
        self.record(StepKind::TaskCreated {
            task: task.clone(),
            call: call.key,
            replica: self.tasks.replica,
            ttl_us: ttl.map(micros),
        });
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
        let message = ServerMessage::TaskCreated {
            request,
            call: call.key,
            task: task.clone(),
            ttl_ms: ttl.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            poll_ms: u64::try_from(poll.as_millis()).unwrap_or(u64::MAX),
        };
        self.respond_json(conn, head, message);
        let quiet = ToolSpec { event_interval: None, ..spec.clone() };
        self.start_tool(now, session, request, &call, &quiet, stream);
        self.tasks.by_tool.insert(self.tools_started, task);
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`: answered from the store, whatever the session
    /// (tasks belong to the server, not to a session); `-32602` for a task it does not hold.
    pub(super) fn task_request(&mut self, now: Instant, conn: ConnId, id: RequestId, op: TaskOp, task: &TaskId) {
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
        let Some(store) = self.tasks.store.clone() else {
            let message = ServerMessage::Error {
                request: Some(id),
                message: format!("method not found: {op}"),
                code: Some(METHOD_NOT_FOUND),
            };
            return self.respond_json(conn, head, message);
        };
        let (answer, expired) = {
            let mut store = lock(&store);
            match op {
                TaskOp::Get => store.get(now.0, task),
                TaskOp::Update => store.update(now.0, task),
                TaskOp::Cancel => store.cancel(now.0, task),
            }
        };
        self.apply_expired(now, expired);
        let message = match answer {
            TaskAnswer::Status(status) => ServerMessage::TaskState { request: id, task: task.clone(), status },
            TaskAnswer::NotFound => ServerMessage::Error {
                request: Some(id),
                message: format!("Task not found: {}", task.0),
                code: Some(TASK_NOT_FOUND),
            },
        };
        self.respond_json(conn, head, message);
    }

    /// The store's deadline for a timer-swept store (TypeScript's `setTimeout`).
    pub(super) fn task_deadline(&self) -> Option<Instant> {
        self.tasks.store.as_ref().and_then(|s| lock(s).next_deadline()).map(Instant)
    }

    /// The store's timer fired.
    pub(super) fn sweep_tasks(&mut self, now: Instant) {
        let Some(store) = self.tasks.store.clone() else { return };
        let expired = lock(&store).sweep(now.0);
        self.apply_expired(now, expired);
    }

    /// Records what the store did by itself, and aborts this process's work for a task the rule
    /// failed (rmcp aborts the task's join handle, task_manager.rs:508-529).
    fn apply_expired(&mut self, now: Instant, expired: Vec<Expired>) {
        for e in expired {
            match e {
                Expired::Aborted(task) => {
                    self.record(StepKind::TaskEnded { task: task.clone(), status: TaskStatus::Failed });
                    let ids: Vec<u64> =
                        self.tasks.by_tool.iter().filter(|(_, t)| **t == task).map(|(i, _)| *i).collect();
                    for id in ids {
                        self.tasks.by_tool.remove(&id);
                        self.end_tool(now, id, ToolEnd::Cancelled);
                    }
                }
                Expired::Removed { task, work_running } => {
                    self.record(StepKind::TaskRecordRemoved { task, work_running })
                }
            }
        }
    }

    /// Whether running tool `id` works for a task.
    pub(super) fn is_task_tool(&self, id: u64) -> bool {
        self.tasks.by_tool.contains_key(&id)
    }

    /// Whether the task of tool `id` was already ended by the store (a shared store's other
    /// replica aborted it at its TTL): its work must not complete.
    pub(super) fn task_already_ended(&self, id: u64) -> bool {
        let (Some(task), Some(store)) = (self.tasks.by_tool.get(&id), self.tasks.store.as_ref()) else {
            return false;
        };
        lock(store).record(task).is_some_and(|r| r.status.terminal())
    }

    /// Tool `id`'s work for its task ended with `status`: the result goes into the record (if the
    /// record is still there to take it).
    pub(super) fn task_work_ended(&mut self, now: Instant, id: u64, status: TaskStatus) {
        let Some(task) = self.tasks.by_tool.remove(&id) else { return };
        let Some(store) = self.tasks.store.clone() else { return };
        let held = lock(&store).finish(now.0, &task, status);
        if held {
            self.record(StepKind::TaskEnded { task, status });
        }
    }

    /// The process dies: a store of its own goes with it (every record removed; the work is lost
    /// with the process, recorded as such by `crash`).
    pub(super) fn crash_tasks(&mut self) {
        self.tasks.by_tool.clear();
        if self.policy.tasks.store == TaskStoreScope::Shared {
            return;
        }
        let Some(store) = self.tasks.store.take() else { return };
        let ids: Vec<TaskId> = lock(&store).ids();
        for task in ids {
            self.outputs.push_back(ServerOutput::Record(StepKind::TaskRecordRemoved { task, work_running: false }));
        }
    }
}
