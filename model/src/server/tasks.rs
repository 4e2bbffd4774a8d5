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
use crate::tasks::{
    Expired, TaskAnswer, TaskCancel, TaskId, TaskOp, TaskStatus, TaskStore, TaskStoreScope, TASK_NOT_FOUND,
};
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
    /// Running tools whose task a `tasks/cancel` marked `cancelled` while they run on
    /// (`TaskCancel::MarkCancelled`): they complete, their result has no record to go into.
    run_on_cancelled: std::collections::BTreeSet<u64>,
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
        ServerTaskState { store, replica: 0, by_tool: BTreeMap::new(), run_on_cancelled: Default::default() }
    }
}

impl Server {
    /// Serves replica `replica` and, under `server.tasks.store = shared`, reads `shared`, the one
    /// store of the fleet (the actor makes it once per run); otherwise a store of its own whose
    /// ids name the replica. No effect on a server that makes no task.
    pub fn with_task_store(mut self, replica: u32, shared: Option<Arc<Mutex<TaskStore>>>) -> Self {
        // The replica also names the process's change notifications (`subscriptions.rs`).
        self.replica = replica;
        if let Some(context) = self.modern.as_mut() {
            context.replica = replica;
        }
        let tasks = &self.policy.tasks;
        if tasks.create_for_tools_over.is_none() {
            return self;
        }
        self.tasks.replica = replica;
        self.tasks.store = Some(match (tasks.store, shared) {
            (TaskStoreScope::Shared, Some(store)) => store,
            _ => Arc::new(Mutex::new(TaskStore::new(tasks.expiry, &task_prefix(replica, self.epoch)))),
        });
        // A dual-era process serves its modern requests in a second context (`era_serve.rs`):
        // one process, one task store.
        if let Some(context) = self.modern.as_mut() {
            context.tasks.replica = replica;
            context.tasks.store = self.tasks.store.clone();
        }
        self
    }

    /// Whether this call is answered with a task: the server makes tasks for the tool's duration
    /// and the client declared the extension (a server MUST NOT answer a task otherwise).
    pub(super) fn makes_task(&self, call: &ToolCall, spec: &ToolSpec) -> bool {
        self.tasks.store.is_some() && self.policy.tasks.makes_task_for(spec.duration, call.tasks)
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
        // Only a task asks for input: a plain call has no `tasks/update` to bring the answer.
        if let (Some(after), Some(tool)) = (spec.input_after, self.running.get_mut(&self.tools_started)) {
            tool.input_at = Some(now + after);
            self.refresh_tool(self.tools_started);
        }
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
        let asked =
            op == TaskOp::Update && lock(&store).record(task).is_some_and(|r| r.status == TaskStatus::InputRequired);
        let (answer, expired) = {
            let mut store = lock(&store);
            match op {
                TaskOp::Get => store.get(now.0, task),
                TaskOp::Update => store.update(now.0, task),
                TaskOp::Cancel => store.cancel(now.0, task),
            }
        };
        self.apply_expired(now, expired);
        if asked && answer == TaskAnswer::Status(TaskStatus::Working) {
            self.input_received(now, task);
        }
        if op == TaskOp::Cancel && matches!(answer, TaskAnswer::Status(s) if !s.terminal()) {
            self.cancel_task_work(now, task);
        }
        let answer = match (op, answer) {
            (TaskOp::Cancel, TaskAnswer::Status(_)) => {
                lock(&store).record(task).map_or(TaskAnswer::NotFound, |r| TaskAnswer::Status(r.status))
            }
            (_, answer) => answer,
        };
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

    /// Tool `id` reached the point where it asks for input (`ToolSpec::input_after`): it waits,
    /// and its task turns `input_required` for the client's next poll to see.
    pub(super) fn ask_for_input(&mut self, now: Instant, id: u64) {
        let Some(tool) = self.running.get_mut(&id) else { return };
        tool.input_at = None;
        tool.waiting_since = Some(now);
        self.refresh_tool(id);
        let (Some(task), Some(store)) = (self.tasks.by_tool.get(&id).cloned(), self.tasks.store.clone()) else {
            return;
        };
        if lock(&store).need_input(&task) {
            self.record(StepKind::TaskInputRequired { task });
        }
    }

    /// A `tasks/update` brought the input `task` waited for: its work on this process goes on
    /// where it stopped, its remaining time and progress shifted by the wait. (Work waiting on
    /// another replica of a shared store does not hear of it: the answer must reach the process
    /// that runs the work, which `Mcp-Name` routing does.)
    fn input_received(&mut self, now: Instant, task: &TaskId) {
        self.record(StepKind::TaskInputReceived { task: task.clone() });
        let ids: Vec<u64> = self.tasks.by_tool.iter().filter(|(_, t)| *t == task).map(|(i, _)| *i).collect();
        for id in ids {
            let Some(tool) = self.running.get_mut(&id) else { continue };
            let Some(since) = tool.waiting_since.take() else { continue };
            let waited = now - since;
            tool.done_at = tool.done_at + waited;
            tool.next_progress = tool.next_progress.map(|at| at + waited);
            self.refresh_tool(id);
        }
    }

    /// A `tasks/cancel` of a working task, under `server.tasks.on_cancel`: the intent only
    /// (rmcp), the record marked `cancelled` while the work runs on (TypeScript), or the work
    /// stopped and the task ended `cancelled`.
    fn cancel_task_work(&mut self, now: Instant, task: &TaskId) {
        let rule = self.policy.tasks.on_cancel;
        if rule == TaskCancel::RunOn {
            return;
        }
        let Some(store) = self.tasks.store.clone() else { return };
        let ids: Vec<u64> = self.tasks.by_tool.iter().filter(|(_, t)| *t == task).map(|(i, _)| *i).collect();
        for id in ids {
            if rule == TaskCancel::Stop {
                self.tasks.by_tool.remove(&id);
                self.end_tool(now, id, ToolEnd::Cancelled);
            } else {
                self.tasks.run_on_cancelled.insert(id);
            }
        }
        if lock(&store).finish(now.0, task, TaskStatus::Cancelled) {
            self.record(StepKind::TaskEnded { task: task.clone(), status: TaskStatus::Cancelled });
        }
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
                    self.record(StepKind::TaskRecordRemoved { task, work_running, lost: false })
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
        if self.tasks.run_on_cancelled.contains(&id) {
            return false;
        }
        let (Some(task), Some(store)) = (self.tasks.by_tool.get(&id), self.tasks.store.as_ref()) else {
            return false;
        };
        lock(store).record(task).is_some_and(|r| r.status.terminal())
    }

    /// Tool `id`'s work for its task ended with `status`: the result goes into the record (if the
    /// record is still there to take it).
    pub(super) fn task_work_ended(&mut self, now: Instant, id: u64, status: TaskStatus) {
        self.tasks.run_on_cancelled.remove(&id);
        let Some(task) = self.tasks.by_tool.remove(&id) else { return };
        let Some(store) = self.tasks.store.clone() else { return };
        let held = lock(&store).finish(now.0, &task, status);
        if held {
            self.record(StepKind::TaskEnded { task, status });
        }
    }

    /// The process dies: a store of its own goes with it (every record removed; the work is lost
    /// with the process, recorded as such by `crash`).
    /// Lets go of the process's task store without recording its end: a modern context's crash,
    /// whose process records the store's end once (`crash_tasks`).
    pub(super) fn release_task_store(&mut self) {
        self.tasks.store = None;
    }

    pub(super) fn crash_tasks(&mut self) {
        self.tasks.by_tool.clear();
        self.tasks.run_on_cancelled.clear();
        if self.policy.tasks.store == TaskStoreScope::Shared {
            return;
        }
        let Some(store) = self.tasks.store.take() else { return };
        let ids: Vec<TaskId> = lock(&store).ids();
        for task in ids {
            self.outputs.push_back(ServerOutput::Record(StepKind::TaskRecordRemoved {
                task,
                work_running: false,
                lost: true,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerPolicy;
    use crate::http::{ClientMessage, Frame, Request};
    use crate::ids::CallKey;
    use crate::profiles;
    use crate::tasks::{ExpiryRule, Sweep, WorkingAtTtl};
    use std::time::Duration;

    const S: u64 = 1_000_000;

    fn policy(ttl: u64, working_at_ttl: WorkingAtTtl, sweep: Sweep) -> ServerPolicy {
        let mut p: ServerPolicy = profiles::server("stateless-2026").expect("a listed profile");
        p.tasks.create_for_tools_over = Some(Duration::ZERO);
        p.tasks.ttl = Some(Duration::from_secs(ttl));
        p.tasks.expiry = ExpiryRule { working_at_ttl, terminal_kept_ttls: 1, sweep };
        p
    }

    fn server(p: ServerPolicy) -> Server {
        let pay = ToolSpec { name: "pay".into(), duration: Duration::from_secs(120), ..ToolSpec::default() };
        let mut s = Server::new(p, vec![pay], 0, 7);
        drain(&mut s);
        s
    }

    fn drain(s: &mut Server) -> Vec<ServerOutput> {
        std::iter::from_fn(|| s.poll_output()).collect()
    }

    fn run_until(s: &mut Server, t: u64) -> Vec<ServerOutput> {
        let mut out = Vec::new();
        while let Some(due) = s.poll_timeout().filter(|d| d.0 <= t) {
            s.handle_timeout(due);
            out.extend(drain(s));
        }
        out
    }

    fn call(s: &mut Server, now: u64, declares: bool) -> Vec<ServerOutput> {
        let call = ToolCall { tool: "pay".into(), key: CallKey(0), idempotency_key: None, tasks: declares };
        s.handle_request(
            Instant(now),
            ConnId(1),
            Request::modern_post(ClientMessage::CallTool { id: RequestId(1), call }),
        );
        drain(s)
    }

    fn get(s: &mut Server, now: u64, task: &str) -> Vec<ServerOutput> {
        let body = ClientMessage::Task { id: RequestId(9), op: TaskOp::Get, task: TaskId(task.into()) };
        s.handle_request(Instant(now), ConnId(2), Request::modern_post(body));
        drain(s)
    }

    fn answer(out: &[ServerOutput]) -> Option<ServerMessage> {
        out.iter().find_map(|o| match o {
            ServerOutput::Send { frame: Frame::Json(m), .. } => Some(m.clone()),
            _ => None,
        })
    }

    fn records(out: &[ServerOutput]) -> Vec<StepKind> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Record(k) => Some(k.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_declaring_call_is_answered_with_a_task_and_its_result_is_polled() {
        let mut s = server(policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall));
        let out = call(&mut s, 0, true);
        assert!(
            matches!(answer(&out), Some(ServerMessage::TaskCreated { ref task, ttl_ms: Some(600_000), poll_ms: 1000, .. }) if task.0 == "r0.0-t0"),
            "{out:?}"
        );
        assert!(records(&out).iter().any(|k| matches!(k, StepKind::TaskCreated { .. })));
        let working = answer(&get(&mut s, S, "r0.0-t0"));
        assert!(matches!(working, Some(ServerMessage::TaskState { status: TaskStatus::Working, .. })), "{working:?}");
        let ended = run_until(&mut s, 121 * S);
        assert!(records(&ended)
            .contains(&StepKind::TaskEnded { task: TaskId("r0.0-t0".into()), status: TaskStatus::Completed }));
        // The result went into the task, not onto a stream.
        assert!(!records(&ended).iter().any(|k| matches!(k, StepKind::EventStored { .. })), "{ended:?}");
        let done = answer(&get(&mut s, 122 * S, "r0.0-t0"));
        assert!(matches!(done, Some(ServerMessage::TaskState { status: TaskStatus::Completed, .. })), "{done:?}");
        let unknown = answer(&get(&mut s, 122 * S, "r0.0-t9"));
        assert!(matches!(unknown, Some(ServerMessage::Error { code: Some(TASK_NOT_FOUND), .. })), "{unknown:?}");
    }

    fn update(s: &mut Server, now: u64, task: &str) -> Vec<ServerOutput> {
        let body = ClientMessage::Task { id: RequestId(10), op: TaskOp::Update, task: TaskId(task.into()) };
        s.handle_request(Instant(now), ConnId(3), Request::modern_post(body));
        drain(s)
    }

    #[test]
    fn a_task_that_asks_for_input_waits_for_tasks_update_and_its_ttl_runs_through_the_wait() {
        let asking = |p: ServerPolicy| {
            let pay = ToolSpec {
                name: "pay".into(),
                duration: Duration::from_secs(120),
                input_after: Some(Duration::from_secs(30)),
                ..ToolSpec::default()
            };
            let mut s = Server::new(p, vec![pay], 0, 7);
            drain(&mut s);
            s
        };
        let t0 = TaskId("r0.0-t0".into());
        // Answered after 100 s of waiting: the work goes on where it stopped, and ends 100 s late.
        let mut s = asking(policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall));
        call(&mut s, 0, true);
        let asked = run_until(&mut s, 30 * S);
        assert!(records(&asked).contains(&StepKind::TaskInputRequired { task: t0.clone() }), "{asked:?}");
        let state = answer(&get(&mut s, 31 * S, "r0.0-t0"));
        assert!(matches!(state, Some(ServerMessage::TaskState { status: TaskStatus::InputRequired, .. })), "{state:?}");
        // Nothing of the work is due while it waits.
        assert!(records(&run_until(&mut s, 129 * S)).is_empty());
        let updated = update(&mut s, 130 * S, "r0.0-t0");
        assert!(records(&updated).contains(&StepKind::TaskInputReceived { task: t0.clone() }), "{updated:?}");
        assert!(matches!(answer(&updated), Some(ServerMessage::TaskState { status: TaskStatus::Working, .. })));
        assert!(records(&run_until(&mut s, 219 * S)).iter().all(|k| !matches!(k, StepKind::TaskEnded { .. })));
        let ended = run_until(&mut s, 221 * S);
        assert!(records(&ended).contains(&StepKind::TaskEnded { task: t0.clone(), status: TaskStatus::Completed }));
        // An update for a task that asks nothing changes nothing.
        assert!(!records(&update(&mut s, 222 * S, "r0.0-t0"))
            .iter()
            .any(|k| matches!(k, StepKind::TaskInputReceived { .. })));
        // Under a 2-minute TTL counted from creation, the wait runs it out: rmcp's rule aborts the
        // task, failed, while it still waits for its answer.
        let mut s = asking(policy(120, WorkingAtTtl::AbortAndFail, Sweep::OnCall));
        call(&mut s, 0, true);
        run_until(&mut s, 30 * S);
        let late = get(&mut s, 121 * S, "r0.0-t0");
        assert!(records(&late).contains(&StepKind::TaskEnded { task: t0, status: TaskStatus::Failed }), "{late:?}");
    }

    #[test]
    fn an_update_to_a_working_task_that_asked_for_nothing_brings_no_input() {
        let mut s = server(policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall));
        call(&mut s, 0, true);
        let updated = update(&mut s, 10 * S, "r0.0-t0");
        assert!(matches!(answer(&updated), Some(ServerMessage::TaskState { status: TaskStatus::Working, .. })));
        assert!(!records(&updated).iter().any(|k| matches!(k, StepKind::TaskInputReceived { .. })), "{updated:?}");
    }

    #[test]
    fn a_question_due_at_the_very_end_of_the_work_is_never_asked() {
        let pay = ToolSpec {
            name: "pay".into(),
            duration: Duration::from_secs(120),
            input_after: Some(Duration::from_secs(120)),
            ..ToolSpec::default()
        };
        let mut s = Server::new(policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall), vec![pay], 0, 7);
        drain(&mut s);
        call(&mut s, 0, true);
        let ended = records(&run_until(&mut s, 121 * S));
        let t0 = TaskId("r0.0-t0".into());
        assert!(!ended.contains(&StepKind::TaskInputRequired { task: t0.clone() }), "{ended:?}");
        assert!(ended.contains(&StepKind::TaskEnded { task: t0, status: TaskStatus::Completed }), "{ended:?}");
    }

    #[test]
    fn a_client_that_did_not_declare_the_extension_gets_no_task() {
        let mut s = server(policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall));
        let out = call(&mut s, 0, false);
        assert!(!records(&out).iter().any(|k| matches!(k, StepKind::TaskCreated { .. })), "{out:?}");
    }

    #[test]
    fn a_server_without_the_extension_answers_tasks_methods_with_method_not_found() {
        let mut p = policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall);
        p.tasks.create_for_tools_over = None;
        let mut s = server(p);
        let out = get(&mut s, 0, "r0.0-t0");
        let Some(ServerMessage::Error { request, message, code }) = answer(&out) else { panic!("no error: {out:?}") };
        assert_eq!(
            (request, message.as_str(), code),
            (Some(RequestId(9)), "method not found: tasks/get", Some(-32601))
        );
    }

    #[test]
    fn rmcp_aborts_the_work_at_the_first_call_after_the_ttl() {
        let mut s = server(policy(60, WorkingAtTtl::AbortAndFail, Sweep::OnCall));
        call(&mut s, 0, true);
        // Nothing happens by itself at 60 s: the sweep runs on calls only.
        assert!(!records(&run_until(&mut s, 61 * S)).iter().any(|k| matches!(k, StepKind::TaskEnded { .. })));
        let out = get(&mut s, 70 * S, "r0.0-t0");
        let r = records(&out);
        assert!(
            r.contains(&StepKind::TaskEnded { task: TaskId("r0.0-t0".into()), status: TaskStatus::Failed }),
            "{r:?}"
        );
        assert!(r.iter().any(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Cancelled, .. })), "{r:?}");
        assert!(matches!(answer(&out), Some(ServerMessage::TaskState { status: TaskStatus::Failed, .. })));
        // The work is gone: nothing completes at 120 s.
        assert!(!records(&run_until(&mut s, 200 * S)).iter().any(|k| matches!(k, StepKind::SideEffect { .. })));
    }

    #[test]
    fn typescript_deletes_the_record_at_the_ttl_on_its_own_timer_and_the_work_runs_on() {
        let mut s = server(policy(60, WorkingAtTtl::DeleteRecord, Sweep::Timer));
        call(&mut s, 0, true);
        let r = records(&run_until(&mut s, 61 * S));
        assert!(
            r.contains(&StepKind::TaskRecordRemoved {
                task: TaskId("r0.0-t0".into()),
                work_running: true,
                lost: false
            }),
            "{r:?}"
        );
        let r = records(&run_until(&mut s, 121 * S));
        assert!(r.iter().any(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Completed, .. })), "{r:?}");
        assert!(!r.iter().any(|k| matches!(k, StepKind::TaskEnded { .. })), "no record takes the result: {r:?}");
    }

    #[test]
    fn a_restart_loses_a_store_of_its_own_but_not_a_shared_one() {
        let p = policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall);
        let mut own = server(p.clone());
        call(&mut own, 0, true);
        own.crash(Instant(S));
        let r = records(&drain(&mut own));
        assert!(
            r.contains(&StepKind::TaskRecordRemoved {
                task: TaskId("r0.0-t0".into()),
                work_running: false,
                lost: true
            }),
            "{r:?}"
        );

        let mut shared_policy = p;
        shared_policy.tasks.store = TaskStoreScope::Shared;
        let store = Arc::new(Mutex::new(TaskStore::new(shared_policy.tasks.expiry, "shared")));
        let mut a = server(shared_policy.clone()).with_task_store(0, Some(store.clone()));
        call(&mut a, 0, true);
        a.crash(Instant(S));
        assert!(!records(&drain(&mut a)).iter().any(|k| matches!(k, StepKind::TaskRecordRemoved { .. })));
        // Another replica's process reads the same record.
        let mut b = server(shared_policy).with_task_store(1, Some(store));
        let seen = answer(&get(&mut b, 2 * S, "shared-t0"));
        assert!(matches!(seen, Some(ServerMessage::TaskState { status: TaskStatus::Working, .. })), "{seen:?}");
    }

    #[test]
    fn work_whose_task_another_replica_aborted_at_its_ttl_ends_cancelled_with_no_result() {
        // A shared store under rmcp's rule: replica 1's poll after the TTL aborts the task that
        // replica 0 works for; replica 0's work, when it comes to its end, must not complete.
        let mut p = policy(60, WorkingAtTtl::AbortAndFail, Sweep::OnCall);
        p.tasks.store = TaskStoreScope::Shared;
        let store = Arc::new(Mutex::new(TaskStore::new(p.tasks.expiry, "shared")));
        let mut a = server(p.clone()).with_task_store(0, Some(store.clone()));
        call(&mut a, 0, true);
        let mut b = server(p).with_task_store(1, Some(store));
        let t0 = TaskId("shared-t0".into());
        let late = get(&mut b, 61 * S, "shared-t0");
        assert!(records(&late).contains(&StepKind::TaskEnded { task: t0.clone(), status: TaskStatus::Failed }));
        let ended = records(&run_until(&mut a, 121 * S));
        assert!(ended.iter().any(|k| matches!(k, StepKind::ToolEnded { end: ToolEnd::Cancelled, .. })), "{ended:?}");
        assert!(!ended.iter().any(|k| matches!(k, StepKind::SideEffect { .. } | StepKind::TaskEnded { .. })));
    }

    fn cancel(s: &mut Server, now: u64, task: &str) -> Vec<ServerOutput> {
        let body = ClientMessage::Task { id: RequestId(11), op: TaskOp::Cancel, task: TaskId(task.into()) };
        s.handle_request(Instant(now), ConnId(4), Request::modern_post(body));
        drain(s)
    }

    #[test]
    fn only_tasks_cancel_stops_or_marks_a_working_task_polls_and_updates_leave_it_working() {
        let t0 = TaskId("r0.0-t0".into());
        for rule in [TaskCancel::Stop, TaskCancel::MarkCancelled] {
            let mut p = policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall);
            p.tasks.on_cancel = rule;
            // Polled and updated while it works: it stays working and completes.
            let mut s = server(p.clone());
            call(&mut s, 0, true);
            let polled = get(&mut s, S, "r0.0-t0");
            assert!(matches!(answer(&polled), Some(ServerMessage::TaskState { status: TaskStatus::Working, .. })));
            let updated = update(&mut s, 2 * S, "r0.0-t0");
            assert!(matches!(answer(&updated), Some(ServerMessage::TaskState { status: TaskStatus::Working, .. })));
            let ends = |out: &[ServerOutput]| {
                records(out)
                    .into_iter()
                    .filter(|k| matches!(k, StepKind::TaskEnded { .. } | StepKind::ToolEnded { .. }))
                    .count()
            };
            assert_eq!((ends(&polled), ends(&updated)), (0, 0), "{rule:?}: {polled:?} {updated:?}");
            let ended = records(&run_until(&mut s, 121 * S));
            assert!(
                ended.contains(&StepKind::TaskEnded { task: t0.clone(), status: TaskStatus::Completed }),
                "{rule:?}"
            );
            // Cancelled while it works: the record ends cancelled.
            let mut s = server(p);
            call(&mut s, 0, true);
            let out = cancel(&mut s, S, "r0.0-t0");
            assert!(matches!(answer(&out), Some(ServerMessage::TaskState { status: TaskStatus::Cancelled, .. })));
            let r = records(&out);
            assert!(r.contains(&StepKind::TaskEnded { task: t0.clone(), status: TaskStatus::Cancelled }), "{r:?}");
        }
    }

    #[test]
    fn a_cancelled_tasks_work_stops_under_stop_and_runs_on_to_nowhere_under_mark_cancelled() {
        let tool_ends = |out: &[ServerOutput]| -> Vec<ToolEnd> {
            records(out)
                .into_iter()
                .filter_map(|k| match k {
                    StepKind::ToolEnded { end, .. } => Some(end),
                    _ => None,
                })
                .collect()
        };
        let task_ends =
            |out: &[ServerOutput]| records(out).into_iter().filter(|k| matches!(k, StepKind::TaskEnded { .. })).count();
        // Stop: the work ends with the cancel, nothing is left to complete.
        let mut p = policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall);
        p.tasks.on_cancel = TaskCancel::Stop;
        let mut s = server(p.clone());
        call(&mut s, 0, true);
        assert_eq!(tool_ends(&cancel(&mut s, S, "r0.0-t0")), vec![ToolEnd::Cancelled]);
        assert!(tool_ends(&run_until(&mut s, 200 * S)).is_empty());
        assert!(!s.is_busy());
        // Mark-cancelled (TypeScript): the work is not stopped; it completes at 120 s, its result
        // has no record to go into.
        p.tasks.on_cancel = TaskCancel::MarkCancelled;
        let mut s = server(p);
        call(&mut s, 0, true);
        assert!(tool_ends(&cancel(&mut s, S, "r0.0-t0")).is_empty());
        assert!(s.is_busy());
        let later = run_until(&mut s, 200 * S);
        assert_eq!(tool_ends(&later), vec![ToolEnd::Completed]);
        assert_eq!(task_ends(&later), 0, "the record ended cancelled already");
    }

    #[test]
    fn a_task_tools_progress_goes_nowhere_its_work_only_fills_the_record() {
        let chatty = ToolSpec {
            name: "pay".into(),
            duration: Duration::from_secs(5),
            event_interval: Some(Duration::from_secs(1)),
            ..ToolSpec::default()
        };
        let mut s = Server::new(policy(600, WorkingAtTtl::AbortAndFail, Sweep::OnCall), vec![chatty], 0, 7);
        drain(&mut s);
        let mut out = call(&mut s, 0, true);
        out.extend(run_until(&mut s, 10 * S));
        let events = out.iter().filter(|o| matches!(o, ServerOutput::Send { frame: Frame::Event(_), .. })).count();
        let stored = records(&out).into_iter().filter(|k| matches!(k, StepKind::EventStored { .. })).count();
        assert_eq!((events, stored), (0, 0), "{out:?}");
        let t0 = TaskId("r0.0-t0".into());
        assert!(records(&out).contains(&StepKind::TaskEnded { task: t0, status: TaskStatus::Completed }));
    }

    #[test]
    fn a_dual_era_process_that_crashes_records_its_one_task_stores_loss_once() {
        let mut p: ServerPolicy = profiles::server("rmcp").expect("a listed profile");
        p.tasks.create_for_tools_over = Some(Duration::ZERO);
        p.tasks.ttl = Some(Duration::from_secs(600));
        p.tasks.store = TaskStoreScope::PerReplica;
        let pay = ToolSpec { name: "pay".into(), duration: Duration::from_secs(120), ..ToolSpec::default() };
        let mut s = Server::new(p, vec![pay], 0, 7).with_task_store(0, None);
        drain(&mut s);
        // A modern call, served in the process's modern context, makes a task in the one store.
        let out = call(&mut s, 0, true);
        assert!(records(&out).iter().any(|k| matches!(k, StepKind::TaskCreated { .. })), "{out:?}");
        s.crash(Instant(S));
        let removed: Vec<StepKind> =
            records(&drain(&mut s)).into_iter().filter(|k| matches!(k, StepKind::TaskRecordRemoved { .. })).collect();
        assert_eq!(
            removed,
            vec![StepKind::TaskRecordRemoved { task: TaskId("r0.0-t0".into()), work_running: false, lost: true }]
        );
    }
}
