//! The Tasks extension on the client (`crate::tasks`, `client.tasks`): a call answered with a
//! `CreateTaskResult` leaves its POST and is polled with `tasks/get` (carrying `Mcp-Name` when the
//! policy says so) at the server's poll interval or the client's own, until a terminal status
//! hands the application its outcome. A `-32602` is handled as `client.tasks.not_found` says: an
//! error to the application, as rmcp 3.11.0's `get_task` returns it (service/client.rs:1531-1540;
//! the polling loop is the application's, :2272-2274), or the task reported lost. Task ids go
//! into durable state when `client.tasks.persist_ids` holds, so a restarted client polls on.

use super::{Client, Purpose};
use crate::config::CloseHandling;
use crate::http::{ClientMessage, ConnEnd, ServerMessage};
use crate::ids::{CallKey, ConnId};
use crate::tasks::{TaskId, TaskNotFound, TaskOp, TaskStatus, TASK_NOT_FOUND};
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
    /// When the application cancels it (`client.tasks.cancel_after`); `None` once sent, or never.
    cancel_at: Option<Instant>,
    /// When the application sends the input the task asked for (`tasks/update`); `None` when
    /// nothing is to be sent.
    update_at: Option<Instant>,
    /// When the last `tasks/update` went: a poll within one interval of it that still says
    /// `input_required` crossed it, and sends no other.
    updated_at: Option<Instant>,
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

/// What an SDK client's application is told when its polls of a task went unanswered to the last
/// attempt (`oracle::conditions` reads it as a give-up).
pub(crate) const ERR_TASK_POLLS: &str = "task polls exhausted: no answer to tasks/get";

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
                self.conns.remove(&via); // only the call's own stream: another (standalone) goes on
            }
        }
        let interval = self.policy.tasks.poll_interval(Duration::from_millis(*poll_ms));
        let cancel_at = self.policy.tasks.cancel_after.map(|d| now + d);
        let polled = Polled {
            task: task.clone(),
            interval,
            poll_at: Some(now + interval),
            conn: None,
            failures: 0,
            cancel_at,
            update_at: None,
            updated_at: None,
        };
        self.tasks.insert(call, polled);
    }

    /// Whether `call` is answered by a task the client polls.
    pub(super) fn polls_task(&self, call: CallKey) -> bool {
        self.tasks.contains_key(&call)
    }

    /// The next poll (or application cancel) due.
    pub(super) fn next_task_poll(&self) -> Option<Instant> {
        self.tasks.values().flat_map(|p| [p.poll_at, p.cancel_at, p.update_at]).flatten().min()
    }

    /// The application cancels every task whose deadline (`client.tasks.cancel_after`) is due:
    /// `tasks/cancel` (with `Mcp-Name` when the policy says so); its answer changes nothing here,
    /// the polls go on until the task's terminal status (cancellation is cooperative, tasks.md
    /// "Task Cancellation").
    fn cancel_tasks(&mut self, now: Instant) {
        let due: Vec<CallKey> =
            self.tasks.iter().filter(|(_, p)| p.cancel_at.is_some_and(|t| t <= now)).map(|(k, _)| *k).collect();
        for call in due {
            let Some(p) = self.tasks.get_mut(&call) else { continue };
            p.cancel_at = None;
            let task = p.task.clone();
            let id = self.take_request_id();
            let name = self.policy.tasks.sends_mcp_name.then(|| task.0.clone());
            let mut request = self.post_request(ClientMessage::Task { id, op: TaskOp::Cancel, task });
            request.mcp_name = name;
            self.open(Purpose::Notification, request, false);
        }
    }

    /// The application answers every task whose input is due: `tasks/update` (with `Mcp-Name`
    /// when the policy says so). Its answer changes nothing here; the polls say whether the task
    /// works again, and ask again if it still waits.
    fn answer_tasks(&mut self, now: Instant) {
        let due: Vec<CallKey> =
            self.tasks.iter().filter(|(_, p)| p.update_at.is_some_and(|t| t <= now)).map(|(k, _)| *k).collect();
        for call in due {
            let Some(p) = self.tasks.get_mut(&call) else { continue };
            p.update_at = None;
            p.updated_at = Some(now);
            let task = p.task.clone();
            let id = self.take_request_id();
            let name = self.policy.tasks.sends_mcp_name.then(|| task.0.clone());
            let mut request = self.post_request(ClientMessage::Task { id, op: TaskOp::Update, task });
            request.mcp_name = name;
            self.open(Purpose::Notification, request, false);
        }
    }

    /// Sends every `tasks/get` (and application cancel or answer) due at `now`.
    pub(super) fn poll_tasks(&mut self, now: Instant) {
        self.cancel_tasks(now);
        self.answer_tasks(now);
        let due: Vec<CallKey> =
            self.tasks.iter().filter(|(_, p)| p.poll_at.is_some_and(|t| t <= now)).map(|(k, _)| *k).collect();
        for call in due {
            let Some(p) = self.tasks.get(&call) else { continue };
            let task = p.task.clone();
            let id = self.take_request_id();
            let name = self.policy.tasks.sends_mcp_name.then(|| task.0.clone());
            // In the client's era: a modern client's poll names the version, not a session.
            let mut request = self.post_request(ClientMessage::Task { id, op: TaskOp::Get, task });
            request.mcp_name = name;
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
            ServerMessage::TaskState { status: TaskStatus::InputRequired, .. } => {
                p.poll_at = Some(now + p.interval);
                // The user answers once, after `answer_input_after`; asked again (the update was
                // lost, or went to a replica without the task), the application re-sends at once.
                let crossed = p.updated_at.is_some_and(|at| now < at + p.interval);
                if p.update_at.is_none() && !crossed {
                    if let Some(delay) = self.policy.tasks.answer_input_after {
                        let delay = if p.updated_at.is_some() { Duration::ZERO } else { delay };
                        p.update_at = Some(now + delay);
                    }
                }
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
            // The application is told once: the decision procedure's unknown outcome (the task
            // may still run), or the error an SDK's `get_task` returns.
            if self.policy.close_handling == CloseHandling::DecisionProcedure {
                self.record(StepKind::AppTaskLost { task: task.clone(), call });
            } else {
                self.record(StepKind::AppError { call, error: ERR_TASK_POLLS.to_string() });
            }
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
            let polled = Polled {
                task: t.task.clone(),
                interval,
                poll_at: Some(Instant(0)),
                conn: None,
                failures: 0,
                cancel_at: None,
                update_at: None,
                updated_at: None,
            };
            self.tasks.insert(t.call, polled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Client, ClientOutput, DurableState};
    use crate::config::{ClientPolicy, Persistence};
    use crate::http::{Body, ClientMessage, ConnEnd, Frame, Request, ResponseHead, ServerMessage, Status};
    use crate::ids::{CallKey, ConnId, RequestId};
    use crate::profiles;
    use crate::tasks::{TaskId, TaskNotFound, TaskOp, TaskStatus, TASK_NOT_FOUND};
    use crate::time::Instant;
    use crate::trace::StepKind;
    use std::time::Duration;

    fn policy() -> ClientPolicy {
        let mut p: ClientPolicy = profiles::client("stateless-2026").expect("a listed profile");
        p.tasks.declares = true;
        p.open_standalone_stream = false;
        p
    }

    fn drain(c: &mut Client) -> Vec<ClientOutput> {
        std::iter::from_fn(|| c.poll_output()).collect()
    }

    fn sent(out: &[ClientOutput]) -> Vec<(ConnId, Request)> {
        out.iter()
            .filter_map(|o| match o {
                ClientOutput::Open { conn, request } => Some((*conn, request.clone())),
                _ => None,
            })
            .collect()
    }

    fn records(out: &[ClientOutput]) -> Vec<StepKind> {
        out.iter()
            .filter_map(|o| match o {
                ClientOutput::Record(k) => Some(k.clone()),
                _ => None,
            })
            .collect()
    }

    fn json(c: &mut Client, now: Instant, conn: ConnId, message: ServerMessage) -> Vec<ClientOutput> {
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
        c.handle_frame(now, conn, Frame::Head(head));
        c.handle_frame(now, conn, Frame::Json(message));
        c.handle_frame(now, conn, Frame::End);
        c.handle_conn_end(now, conn, ConnEnd::Clean);
        drain(c)
    }

    fn task() -> TaskId {
        TaskId("r0.0-t0".into())
    }

    /// A client whose call was answered with task `r0.0-t0` at 1 s (poll interval 2 s).
    fn created(p: ClientPolicy) -> Client {
        let mut c = Client::new(p, "app", None, 1);
        c.start(Instant::ZERO);
        c.call_tool(Instant::ZERO, CallKey(0), "pay", false);
        let out = drain(&mut c);
        let (conn, request) = sent(&out).pop().expect("the call went out");
        let Some(ClientMessage::CallTool { id, call }) = request.body else { panic!("{request:?}") };
        assert!(call.tasks, "the call declares the extension");
        let message =
            ServerMessage::TaskCreated { request: id, call: CallKey(0), task: task(), ttl_ms: None, poll_ms: 2000 };
        let out = json(&mut c, Instant(1_000_000), conn, message);
        assert!(records(&out).contains(&StepKind::TaskIdReceived { task: task(), call: CallKey(0) }), "{out:?}");
        c
    }

    fn poll(c: &mut Client) -> (Instant, ConnId, RequestId, Request) {
        let due = c.poll_timeout().expect("a poll is due");
        c.handle_timeout(due);
        let (conn, request) = sent(&drain(c)).pop().expect("a poll went out");
        let Some(ClientMessage::Task { id, op: TaskOp::Get, .. }) = request.body.clone() else { panic!("{request:?}") };
        (due, conn, id, request)
    }

    #[test]
    fn the_client_polls_at_the_servers_interval_with_mcp_name_until_the_outcome() {
        let mut c = created(policy());
        let (due, conn, id, request) = poll(&mut c);
        assert_eq!(due, Instant(3_000_000), "1 s + the server's 2 s poll interval");
        assert_eq!(request.mcp_name.as_deref(), Some("r0.0-t0"));
        json(&mut c, due, conn, ServerMessage::TaskState { request: id, task: task(), status: TaskStatus::Working });
        let (due, conn, id, _) = poll(&mut c);
        assert_eq!(due, Instant(5_000_000));
        let out = json(
            &mut c,
            due,
            conn,
            ServerMessage::TaskState { request: id, task: task(), status: TaskStatus::Completed },
        );
        let r = records(&out);
        assert!(r.contains(&StepKind::AppTaskOutcome {
            task: task(),
            call: CallKey(0),
            status: TaskStatus::Completed
        }));
        assert!(c.unresolved_calls().is_empty() && c.poll_timeout().is_none());
    }

    /// Fires `c`'s timers due before `until`, answering each `tasks/get` `delay` after it went
    /// with the status `status` gives for the requests sent so far; every request, with when it
    /// went (an update or cancel at its timer, or at the answer that sent it).
    fn drive(
        c: &mut Client,
        until: Instant,
        delay: Duration,
        mut status: impl FnMut(&[(Instant, Request)]) -> TaskStatus,
    ) -> Vec<(Instant, Request)> {
        let mut went = Vec::new();
        let mut queue: Vec<(Instant, ClientOutput)> = Vec::new();
        while let Some(next) = c.poll_timeout().filter(|t| *t < until) {
            c.handle_timeout(next);
            queue.extend(drain(c).into_iter().map(|o| (next, o)));
            while let Some((at, output)) = queue.pop() {
                let ClientOutput::Open { conn, request } = output else { continue };
                if let Some(ClientMessage::Task { id, op: TaskOp::Get, .. }) = request.body {
                    let (answered, status) = (at + delay, status(&went));
                    let state = ServerMessage::TaskState { request: id, task: task(), status };
                    queue.extend(json(c, answered, conn, state).into_iter().map(|o| (answered, o)));
                }
                went.push((at, request));
            }
        }
        went
    }

    /// A client holding a task whose first poll was answered "input required" (at the instant
    /// returned), whose user answers `answer_after` later.
    fn asked(answer_after: Option<Duration>) -> (Client, Instant) {
        let mut p = policy();
        p.tasks.answer_input_after = answer_after;
        let mut c = created(p);
        let (due, conn, id, _) = poll(&mut c);
        let asks = ServerMessage::TaskState { request: id, task: task(), status: TaskStatus::InputRequired };
        json(&mut c, due, conn, asks);
        (c, due)
    }

    /// The instants (ms) at which requests doing `op` went.
    fn times(went: &[(Instant, Request)], op: TaskOp) -> Vec<u64> {
        let does = |r: &Request| matches!(&r.body, Some(ClientMessage::Task { op: o, .. }) if *o == op);
        went.iter().filter(|(_, r)| does(r)).map(|(at, _)| at.0 / 1000).collect()
    }

    #[test]
    fn a_task_that_asks_for_input_is_answered_with_tasks_update_after_the_users_delay() {
        let (mut c, due) = asked(Some(Duration::from_secs(10)));
        // Polls go on every 2 s, still asking until the update went, working after it; the answer
        // goes 10 s after the poll that saw the question.
        let answered = |went: &[(Instant, Request)]| !times(went, TaskOp::Update).is_empty();
        let went = drive(&mut c, Instant(20_000_000), Duration::ZERO, |went| {
            if answered(went) {
                TaskStatus::Working
            } else {
                TaskStatus::InputRequired
            }
        });
        assert_eq!(times(&went, TaskOp::Update), vec![(due.0 + 10_000_000) / 1000], "one answer, 10 s after");
        let update = went.iter().find(|(_, r)| matches!(&r.body, Some(ClientMessage::Task { op: TaskOp::Update, .. })));
        assert_eq!(update.and_then(|(_, r)| r.mcp_name.as_deref()), Some("r0.0-t0"));
        // A client that never answers polls on and sends no update.
        let (mut c, _) = asked(None);
        let went = drive(&mut c, Instant(25_000_000), Duration::ZERO, |_| TaskStatus::InputRequired);
        assert_eq!(times(&went, TaskOp::Get).len(), went.len(), "polls only: {went:?}");
        assert_eq!(went.len(), 10);
    }

    #[test]
    fn asked_again_right_after_its_answer_the_client_waits_a_poll_then_answers_again_at_once() {
        // The server keeps asking (every update is lost); each poll is answered 100 ms after it
        // went. A question seen within a poll interval of the last update crossed it on the wire
        // and is not answered again; one seen later is answered at once (the user already gave
        // the answer).
        let (mut c, _) = asked(Some(Duration::from_secs(10)));
        let went = drive(&mut c, Instant(20_000_000), Duration::from_millis(100), |_| TaskStatus::InputRequired);
        let polls: Vec<u64> = times(&went, TaskOp::Get).into_iter().map(|sent| sent + 100).collect();
        let updates = times(&went, TaskOp::Update);
        // Polls answered at 5.1, 7.2, ... s: the user's answer goes at 13.0 s (10 s after the
        // question seen at 3.0 s); the question seen at 13.5 s crossed it; the one seen at
        // 15.6 s, more than an interval after it, is answered at once, and so on.
        assert_eq!(polls, vec![5_100, 7_200, 9_300, 11_400, 13_500, 15_600, 17_700, 19_800], "{polls:?}");
        assert_eq!(updates, vec![13_000, 15_600, 17_700, 19_800], "{updates:?} (polls {polls:?})");
    }

    #[test]
    fn a_question_seen_a_whole_poll_interval_after_the_answer_did_not_cross_it_and_is_answered_again() {
        // Polls answered at once: the question seen exactly one interval (2 s) after the user's
        // answer was asked after that answer arrived, so it is answered again at once.
        let (mut c, _) = asked(Some(Duration::from_secs(10)));
        let went = drive(&mut c, Instant(20_000_000), Duration::ZERO, |_| TaskStatus::InputRequired);
        assert_eq!(times(&went, TaskOp::Update), vec![13_000, 15_000, 17_000, 19_000], "{went:?}");
    }

    #[test]
    fn the_application_cancels_at_its_deadline_and_polls_on_for_the_outcome() {
        let mut p = policy();
        p.tasks.cancel_after = Some(Duration::from_secs(5));
        let mut c = created(p);
        // Polls at 3 s, 5 s and 7 s; the cancel is due at 6 s (5 s after the task was created at 1 s).
        let went = drive(&mut c, Instant(7_500_000), Duration::ZERO, |_| TaskStatus::Working);
        assert_eq!(times(&went, TaskOp::Get), vec![3_000, 5_000, 7_000]);
        assert_eq!(times(&went, TaskOp::Cancel), vec![6_000], "one cancel, at its deadline");
        let cancel = went.iter().find(|(_, r)| matches!(&r.body, Some(ClientMessage::Task { op: TaskOp::Cancel, .. })));
        assert_eq!(cancel.and_then(|(_, r)| r.mcp_name.as_deref()), Some("r0.0-t0"));
        assert!(!c.unresolved_calls().is_empty(), "the call waits for the task's outcome");
    }

    #[test]
    fn another_error_to_a_poll_ends_the_call_with_it() {
        let mut c = created(policy());
        let (due, conn, id, _) = poll(&mut c);
        let message = ServerMessage::Error { request: Some(id), message: "Internal error".into(), code: Some(-32603) };
        let r = records(&json(&mut c, due, conn, message));
        assert!(r.iter().any(|k| matches!(k, StepKind::AppError { .. })), "{r:?}");
        assert!(r.contains(&StepKind::TaskIdForgotten { task: task() }), "{r:?}");
        assert!(c.unresolved_calls().is_empty() && c.poll_timeout().is_none());
    }

    #[test]
    fn task_not_found_is_an_error_as_rmcp_returns_it_or_a_lost_task() {
        for (rule, lost) in [(TaskNotFound::Error, false), (TaskNotFound::Lost, true)] {
            let mut p = policy();
            p.tasks.not_found = rule;
            let mut c = created(p);
            let (due, conn, id, _) = poll(&mut c);
            let message = ServerMessage::Error {
                request: Some(id),
                message: "Task not found".into(),
                code: Some(TASK_NOT_FOUND),
            };
            let r = records(&json(&mut c, due, conn, message));
            assert_eq!(r.iter().any(|k| matches!(k, StepKind::AppTaskLost { .. })), lost, "{r:?}");
            assert_eq!(r.iter().any(|k| matches!(k, StepKind::AppError { .. })), !lost, "{r:?}");
            assert!(r.contains(&StepKind::TaskIdForgotten { task: task() }), "{r:?}");
            assert!(c.unresolved_calls().is_empty());
        }
    }

    #[test]
    fn a_call_settled_by_deleting_the_session_forgets_its_task_and_polls_no_more() {
        let mut c = created(policy());
        let (at, conn, _, _) = poll(&mut c);
        c.delete_session(at);
        let out = drain(&mut c);
        assert!(out.contains(&ClientOutput::Abort { conn }), "the poll in flight is closed: {out:?}");
        assert!(records(&out).contains(&StepKind::TaskIdForgotten { task: task() }), "{out:?}");
        assert_eq!(c.poll_timeout(), None, "no poll is left: {c:?}");
        assert!(c.task_ids_lost_in_crash().is_empty(), "the id is no longer held");
    }

    #[test]
    fn a_broken_poll_is_tried_again_at_the_next_interval() {
        let mut c = created(policy());
        let (due, conn, _, _) = poll(&mut c);
        c.handle_conn_end(due, conn, ConnEnd::Reset);
        drain(&mut c);
        assert_eq!(c.poll_timeout(), Some(due + Duration::from_secs(2)));
    }

    #[test]
    fn polls_broken_max_attempts_times_end_the_call_lost_or_failed_by_the_close_rules() {
        use crate::config::CloseHandling;
        for decision_procedure in [true, false] {
            let mut p = policy();
            p.reconnect.max_attempts = Some(2);
            if decision_procedure {
                p.close_handling = CloseHandling::DecisionProcedure;
            }
            assert_eq!(p.close_handling == CloseHandling::DecisionProcedure, decision_procedure);
            let mut c = created(p);
            let (due, conn, _, _) = poll(&mut c);
            c.handle_conn_end(due, conn, ConnEnd::Reset);
            let r = records(&drain(&mut c));
            let told = |k: &StepKind| matches!(k, StepKind::AppTaskLost { .. } | StepKind::AppError { .. });
            assert!(!r.iter().any(told), "one broken poll is tried again: {r:?}");
            let (due, conn, _, _) = poll(&mut c);
            c.handle_conn_end(due, conn, ConnEnd::Reset);
            let r = records(&drain(&mut c));
            // The decision procedure's unknown outcome (the task may still run), or the SDK's error.
            let lost = r.contains(&StepKind::AppTaskLost { task: task(), call: CallKey(0) });
            let failed = r.iter().any(|k| matches!(k, StepKind::AppError { .. }));
            assert_eq!((lost, failed), (decision_procedure, !decision_procedure), "{r:?}");
            assert!(r.contains(&StepKind::TaskIdForgotten { task: task() }) && c.unresolved_calls().is_empty());
        }
    }

    #[test]
    fn durable_task_ids_survive_a_restart_and_are_polled_without_a_second_call() {
        let mut p = policy();
        p.persistence = Persistence::Durable;
        p.tasks.persist_ids = true;
        let c = created(p.clone());
        assert!(c.task_ids_lost_in_crash().is_empty());
        let state: DurableState = c.durable_state();
        assert_eq!(state.tasks.len(), 1);
        let mut restarted = Client::new(p.clone(), "app", Some(state), 2);
        restarted.start(Instant(10_000_000));
        let out = drain(&mut restarted);
        assert!(sent(&out).is_empty(), "the call is not sent again: {out:?}");
        let (_, _, _, request) = poll(&mut restarted);
        assert!(matches!(request.body, Some(ClientMessage::Task { ref task, .. }) if task.0 == "r0.0-t0"));
        // Without persisted ids the crash forgets it.
        let mut timed = p.clone();
        timed.request_timeout = Some(Duration::from_secs(60));
        let mut restarted = Client::new(timed, "app", Some(created(p.clone()).durable_state()), 2);
        restarted.start(Instant(10_000_000));
        let _ = drain(&mut restarted);
        // Polled, and answered Working, well past the request time-out: the call's request was
        // answered by its task, and a restart does not set its time-out again (a swarm search
        // found the reference client giving up a running task 140 s after a restart).
        let mut records_seen = Vec::new();
        for _ in 0..40 {
            let (due, conn, id, _) = poll(&mut restarted);
            let working = ServerMessage::TaskState { request: id, task: task(), status: TaskStatus::Working };
            records_seen.extend(records(&json(&mut restarted, due, conn, working)));
        }
        let gave_up = |k: &StepKind| matches!(k, StepKind::AppUnknownOutcome { .. } | StepKind::TaskIdForgotten { .. });
        assert!(!records_seen.iter().any(gave_up), "{records_seen:?}");
        p.tasks.persist_ids = false;
        let c = created(p);
        assert_eq!(c.task_ids_lost_in_crash(), vec![task()]);
        assert!(c.durable_state().tasks.is_empty());
    }
}
