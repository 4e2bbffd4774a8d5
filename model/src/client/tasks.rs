//! The Tasks extension on the client (`crate::tasks`, `client.tasks`): a call answered with a
//! `CreateTaskResult` leaves its POST and is polled with `tasks/get` (carrying `Mcp-Name` when the
//! policy says so) at the server's poll interval or the client's own, until a terminal status
//! hands the application its outcome. A `-32602` is handled as `client.tasks.not_found` says: an
//! error to the application, as rmcp 3.11.0's `get_task` returns it (service/client.rs:1531-1540;
//! the polling loop is the application's, :2272-2274), or the task reported lost. Task ids go
//! into durable state when `client.tasks.persist_ids` holds, so a restarted client polls on.

use super::{Client, Purpose};
use crate::http::{ClientMessage, ConnEnd, Request, ServerMessage};
use crate::ids::{CallKey, ConnId};
use crate::tasks::{TaskId, TaskNotFound, TaskOp, TASK_NOT_FOUND};
use crate::time::Instant;
use crate::trace::StepKind;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A task the client polls for one of its calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Polled {
    task: TaskId,
    interval: Duration,
    /// The next `tasks/get`; `None` while one is in flight.
    poll_at: Option<Instant>,
    /// The `tasks/get` in flight.
    conn: Option<ConnId>,
    /// Polls in a row that got no answer (a broken or refused connection).
    failures: u32,
}

/// A task id in durable state (`client.tasks.persist_ids`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DurableTask {
    /// The call it answers.
    pub call: CallKey,
    /// The task.
    pub task: TaskId,
    /// The interval polled at, in milliseconds.
    pub interval_ms: u64,
}

const ERR_TASK_POLLS: &str = "task polls exhausted: no answer to tasks/get";

impl Client {
    /// A `CreateTaskResult` for `call` arrived on `via`: the call leaves its POST (the request is
    /// answered; its time-out no longer applies) and is polled from now on.
    pub(super) fn task_created(&mut self, now: Instant, via: ConnId, call: CallKey, message: &ServerMessage) {
        let ServerMessage::TaskCreated { task, poll_ms, .. } = message else { return };
        if !self.calls.contains_key(&call) {
            return;
        }
        self.record(StepKind::TaskIdReceived { task: task.clone(), call });
        if let Some(c) = self.calls.get_mut(&call) {
            c.deadline = None;
            if c.stream.conn == Some(via) {
                c.stream.conn = None;
            }
        }
        self.conns.remove(&via);
        let interval = self.policy.tasks.poll_interval(Duration::from_millis(*poll_ms));
        let polled = Polled { task: task.clone(), interval, poll_at: Some(now + interval), conn: None, failures: 0 };
        self.tasks.insert(call, polled);
    }

    /// Whether `call` is answered by a task the client polls.
    pub(super) fn polls_task(&self, call: CallKey) -> bool {
        self.tasks.contains_key(&call)
    }

    /// The next poll due.
    pub(super) fn next_task_poll(&self) -> Option<Instant> {
        self.tasks.values().filter_map(|p| p.poll_at).min()
    }

    /// Sends every `tasks/get` due at `now`.
    pub(super) fn poll_tasks(&mut self, now: Instant) {
        let due: Vec<CallKey> =
            self.tasks.iter().filter(|(_, p)| p.poll_at.is_some_and(|t| t <= now)).map(|(k, _)| *k).collect();
        for call in due {
            let Some(p) = self.tasks.get(&call) else { continue };
            let task = p.task.clone();
            let id = self.take_request_id();
            let mut request = Request::post(self.session.clone(), ClientMessage::Task { id, op: TaskOp::Get, task });
            if self.policy.tasks.sends_mcp_name {
                request.mcp_name = Some(self.tasks[&call].task.0.clone());
            }
            let conn = self.open(Purpose::TaskPoll(call), request, false);
            if let Some(p) = self.tasks.get_mut(&call) {
                p.poll_at = None;
                p.conn = Some(conn);
            }
        }
    }

    /// The answer to a `tasks/get` for `call`.
    pub(super) fn task_answer(&mut self, now: Instant, conn: ConnId, call: CallKey, message: ServerMessage) {
        self.conns.remove(&conn);
        let Some(p) = self.tasks.get_mut(&call) else { return };
        p.conn = None;
        p.failures = 0;
        let task = p.task.clone();
        match message {
            ServerMessage::TaskState { status, .. } if status.terminal() => {
                self.tasks.remove(&call);
                self.record(StepKind::AppTaskOutcome { task, call, status });
                self.resolve(call, None);
            }
            ServerMessage::TaskState { .. } => p.poll_at = Some(now + p.interval),
            ServerMessage::Error { code: Some(TASK_NOT_FOUND), message, .. } => {
                self.tasks.remove(&call);
                match self.policy.tasks.not_found {
                    TaskNotFound::Error => self.record(StepKind::AppError { call, error: message }),
                    TaskNotFound::Lost => self.record(StepKind::AppTaskLost { task: task.clone(), call }),
                }
                self.record(StepKind::TaskIdForgotten { task });
                self.resolve(call, None);
            }
            ServerMessage::Error { message, .. } => {
                self.tasks.remove(&call);
                self.record(StepKind::AppError { call, error: message });
                self.record(StepKind::TaskIdForgotten { task });
                self.resolve(call, None);
            }
            _ => p.poll_at = Some(now + p.interval),
        }
    }

    /// A `tasks/get` connection ended; without an answer the poll is tried again at the next
    /// interval, up to the reconnect attempts in a row (then the task is reported lost).
    pub(super) fn task_poll_ended(&mut self, now: Instant, call: CallKey, end: ConnEnd) {
        let max = self.policy.reconnect.max_attempts;
        let Some(p) = self.tasks.get_mut(&call) else { return };
        p.conn = None;
        let _ = end;
        p.failures += 1;
        if max.is_some_and(|m| p.failures >= m) {
            let task = p.task.clone();
            self.tasks.remove(&call);
            self.record(StepKind::AppTaskLost { task: task.clone(), call });
            self.record(StepKind::AppError { call, error: ERR_TASK_POLLS.to_string() });
            self.record(StepKind::TaskIdForgotten { task });
            return self.resolve(call, None);
        }
        p.poll_at = Some(now + p.interval);
    }

    /// The call resolved some other way (the application deleted the session, …) while its task
    /// was polled: the id is forgotten.
    pub(super) fn forget_task(&mut self, call: CallKey) {
        if let Some(p) = self.tasks.remove(&call) {
            if let Some(conn) = p.conn {
                self.abort(conn);
            }
            self.record(StepKind::TaskIdForgotten { task: p.task });
        }
    }

    /// The task ids a crash of this process loses: all of them, unless the client persists them
    /// (`client.tasks.persist_ids` under durable persistence). The actor records each as
    /// `task-id-forgotten`.
    pub fn task_ids_lost_in_crash(&self) -> Vec<TaskId> {
        if self.persists_task_ids() {
            return Vec::new();
        }
        self.tasks.values().map(|p| p.task.clone()).collect()
    }

    fn persists_task_ids(&self) -> bool {
        self.policy.tasks.persist_ids && self.policy.persistence == crate::config::Persistence::Durable
    }

    /// The task ids to write into durable state.
    pub(super) fn durable_tasks(&self) -> Vec<DurableTask> {
        if !self.persists_task_ids() {
            return Vec::new();
        }
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.tasks
            .iter()
            .map(|(call, p)| DurableTask { call: *call, task: p.task.clone(), interval_ms: ms(p.interval) })
            .collect()
    }

    /// A restarted client takes its task ids over and polls at once.
    pub(super) fn load_tasks(&mut self, tasks: &[DurableTask]) {
        for t in tasks {
            if !self.calls.contains_key(&t.call) {
                continue;
            }
            let interval = Duration::from_millis(t.interval_ms);
            let polled = Polled { task: t.task.clone(), interval, poll_at: Some(Instant(0)), conn: None, failures: 0 };
            self.tasks.insert(t.call, polled);
        }
    }
}
