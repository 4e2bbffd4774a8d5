//! Tool runs: starting a call (and its side effect, once per honoured idempotency key),
//! progress and result events, completion, cancellation.

use super::streams::{ConnKind, SessionStream};
use super::{repeating, Server};
use crate::config::{EventIdScheme, IdStamp, OnAbort, ResponseMode, SideEffectAt, ToolSpec};
use crate::http::{Body, Frame, ResponseHead, ServerMessage, Status, ToolCall};
use crate::ids::{CallKey, ConnId, RequestId, SessionId, StreamNo};
use crate::time::Instant;
use crate::trace::{StepKind, ToolEnd};
use std::time::Duration;

#[derive(Debug)]
pub(super) struct RunningTool {
    pub(super) session: SessionId,
    pub(super) request: RequestId,
    pub(super) call: CallKey,
    pub(super) stream: StreamNo,
    pub(super) done_at: Instant,
    pub(super) interval: Option<Duration>,
    pub(super) next_progress: Option<Instant>,
    pub(super) steps: u32,
    /// Progress events per tick.
    pub(super) burst: u32,
    /// Its session was deleted and the policy lets it run on: it stores nothing.
    pub(super) orphaned: bool,
    /// What it does when its abort signal fires.
    pub(super) on_abort: OnAbort,
    /// Its side effect, still to be executed at completion (`SideEffectAt::Completion`).
    pub(super) pending_effect: Option<PendingEffect>,
    /// When it asks its task's client for input (`ToolSpec::input_after`); `None` once asked.
    pub(super) input_at: Option<Instant>,
    /// Since when it waits for that input: nothing of it is due until a `tasks/update` comes.
    pub(super) waiting_since: Option<Instant>,
}

/// A side effect a tool executes when it completes.
#[derive(Debug)]
pub(super) struct PendingEffect {
    tool: String,
    idempotent: bool,
    idempotency_key: Option<String>,
}

impl RunningTool {
    /// Progress due strictly before the end; a progress tick that coincides with the end is
    /// swallowed by the result.
    pub(super) fn due_progress(&self) -> Option<Instant> {
        self.next_progress.filter(|at| *at < self.done_at)
    }

    /// Its next progress, its question for input or its end; `None` while it waits for input.
    pub(super) fn next_due(&self) -> Option<Instant> {
        if self.waiting_since.is_some() {
            return None;
        }
        let next = self.due_progress().unwrap_or(self.done_at);
        Some(self.asks_input().map_or(next, |at| at.min(next)))
    }

    /// When it asks for input, if it does before its end.
    pub(super) fn asks_input(&self) -> Option<Instant> {
        self.input_at.filter(|at| *at < self.done_at)
    }
}

impl Server {
    pub(super) fn call_tool(
        &mut self,
        now: Instant,
        conn: ConnId,
        session: &SessionId,
        request: RequestId,
        call: ToolCall,
    ) {
        let Some(spec) = self.tools.get(&call.tool).cloned() else {
            let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
            let message = format!("unknown tool {}", call.tool);
            return self.respond_json(conn, head, ServerMessage::Error { request: Some(request), message, code: None });
        };
        if self.makes_task(&call, &spec) {
            return self.call_as_task(now, conn, session, request, call, &spec);
        }
        let Some(stream) = self.open_post_stream(session, request, call.key) else { return };
        if self.policy.response_mode == ResponseMode::Json {
            // The answer waits for the result; nothing is written before it.
            self.open_sse_conn(now, conn, session, ConnKind::Json);
            self.attach(session, stream, conn);
            return self.start_tool(now, session, request, &call, &spec, stream);
        }
        self.send(conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, conn, session, ConnKind::Request);
        self.attach(session, stream, conn);
        if self.policy.priming.post {
            self.append(now, session, stream, None);
        }
        self.start_tool(now, session, request, &call, &spec, stream);
    }

    /// Allocates the session's next POST stream.
    pub(super) fn open_post_stream(
        &mut self,
        session: &SessionId,
        request: RequestId,
        call: CallKey,
    ) -> Option<StreamNo> {
        let number = StreamNo(self.sessions.get(session)?.post_streams + 1);
        let key = self.log_key(session, number, Some(request));
        let label = match self.policy.event_ids {
            EventIdScheme::TsSdk => self.rng.uuid(),
            _ => String::new(),
        };
        let state = self.sessions.get_mut(session)?;
        state.post_streams = number.0;
        let stream =
            SessionStream { key, label, call: Some(call), attached: None, finished: false, server_closed: false };
        state.streams.insert(number, stream);
        Some(number)
    }

    /// Executes the side effect (unless an honoured idempotency key says it already ran) and
    /// schedules progress and the result.
    pub(super) fn start_tool(
        &mut self,
        now: Instant,
        session: &SessionId,
        request: RequestId,
        call: &ToolCall,
        spec: &ToolSpec,
        stream: StreamNo,
    ) {
        let effect = PendingEffect {
            tool: spec.name.clone(),
            idempotent: spec.idempotent,
            idempotency_key: call.idempotency_key.clone(),
        };
        let pending_effect = match spec.side_effect {
            SideEffectAt::Start => {
                self.side_effect(session, request, call.key, effect);
                None
            }
            SideEffectAt::Completion => Some(effect),
        };
        let interval = repeating(spec.event_interval);
        self.tools_started += 1;
        self.running.insert(
            self.tools_started,
            RunningTool {
                session: session.clone(),
                request,
                call: call.key,
                stream,
                done_at: now + spec.duration,
                interval,
                next_progress: interval.map(|i| now + i),
                steps: 0,
                burst: spec.burst,
                orphaned: false,
                on_abort: spec.on_abort,
                pending_effect,
                input_at: None,
                waiting_since: None,
            },
        );
        self.refresh_tool(self.tools_started);
    }

    /// Executes a side effect, unless an honoured idempotency key says it already ran.
    pub(super) fn side_effect(
        &mut self,
        session: &SessionId,
        request: RequestId,
        call: CallKey,
        effect: PendingEffect,
    ) {
        let key = effect.idempotency_key;
        let repeated =
            self.policy.honour_idempotency_keys && key.as_ref().is_some_and(|k| self.executed_keys.contains(k));
        if !repeated {
            self.executed_keys.extend(key);
            self.record(StepKind::SideEffect {
                session: session.clone(),
                request,
                call,
                tool: effect.tool,
                idempotent: effect.idempotent,
            });
        }
    }

    /// The instant an event due at `due` and produced at `now` is stamped with.
    fn stamp(&self, now: Instant, due: Instant) -> Instant {
        match self.policy.id_stamp {
            IdStamp::Handled => now,
            IdStamp::Due => due,
        }
    }

    /// The tool's next timer fired: one progress event, or its completion.
    pub(super) fn run_tool(&mut self, now: Instant, id: u64) {
        let Some(tool) = self.running.get_mut(&id) else { return };
        if tool.waiting_since.is_some() {
            return;
        }
        if tool.asks_input().is_some_and(|at| at <= now && tool.due_progress().is_none_or(|p| at <= p)) {
            return self.ask_for_input(now, id);
        }
        let Some(at) = tool.due_progress() else { return self.complete_tool(now, id) };
        let first = tool.steps + 1;
        tool.steps += tool.burst.max(1);
        tool.next_progress = tool.interval.map(|i| at + i);
        let (session, stream, request, call, last) =
            (tool.session.clone(), tool.stream, tool.request, tool.call, tool.steps);
        self.refresh_tool(id);
        if self.policy.response_mode == ResponseMode::Json {
            // A JSON body carries only the response: progress has no wire form and is dropped
            // before it is stored (mcp 2.3.0 streamable_http.py:1075-1081; ts 1.32.2 writes it
            // only `if (!this._enableJsonResponse)`).
            return;
        }
        // A burst (`ToolSpec::burst`): every event of the tick at the same instant, in order.
        let stamp = self.stamp(now, at);
        for step in first..=last {
            let message = ServerMessage::Progress { request, call, step };
            self.append_stamped(now, stamp, &session, stream, Some(message));
        }
    }

    pub(super) fn complete_tool(&mut self, now: Instant, id: u64) {
        if self.task_already_ended(id) {
            // Its task was aborted at its TTL by another replica's call into a shared store.
            return self.end_tool(now, id, ToolEnd::Cancelled);
        }
        let Some(mut tool) = self.running.remove(&id) else { return };
        self.refresh_tool(id);
        if let Some(effect) = tool.pending_effect.take() {
            self.side_effect(&tool.session, tool.request, tool.call, effect);
        }
        if self.is_task_tool(id) {
            // The result goes into the task's record, not onto a stream (`tasks.rs`).
            let (session, request, call) = (tool.session.clone(), tool.request, tool.call);
            self.record(StepKind::ToolEnded { session: session.clone(), request, call, end: ToolEnd::Completed });
            self.task_work_ended(now, id, crate::tasks::TaskStatus::Completed);
            return self.finish_stream(now, &session, tool.stream);
        }
        if !tool.orphaned {
            let result = ServerMessage::ToolResult { request: tool.request, call: tool.call };
            let stamp = self.stamp(now, tool.done_at);
            self.append_stamped(now, stamp, &tool.session, tool.stream, Some(result));
        }
        self.record(StepKind::ToolEnded {
            session: tool.session.clone(),
            request: tool.request,
            call: tool.call,
            end: ToolEnd::Completed,
        });
        if tool.orphaned {
            return;
        }
        self.finish_stream(now, &tool.session, tool.stream);
        if self.policy.retention.drop_on_response {
            if let Some(key) = self.stream(&tool.session, tool.stream).map(|s| s.key.clone()) {
                self.store.drop_log(&key);
            }
        }
        self.touch_idle(now, &tool.session, false);
    }

    /// `notifications/cancelled`: the request's tool stops, its stream ends with no response.
    pub(super) fn cancel_request(&mut self, now: Instant, session: &SessionId, request: RequestId) {
        let ids: Vec<u64> = self
            .running
            .iter()
            .filter(|(_, t)| &t.session == session && t.request == request && !t.orphaned)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.cancel_tool(now, id);
        }
    }

    /// The running tools whose streams `conn` carries.
    pub(super) fn tools_streamed_on(&self, conn: ConnId) -> Vec<u64> {
        let Some(open) = self.conns.get(&conn) else { return Vec::new() };
        let Some(session) = self.sessions.get(&open.session) else { return Vec::new() };
        let carried: Vec<StreamNo> =
            session.streams.iter().filter(|(_, s)| s.attached == Some(conn)).map(|(n, _)| *n).collect();
        self.running
            .iter()
            .filter(|(_, t)| t.session == open.session && !t.orphaned && carried.contains(&t.stream))
            .map(|(id, _)| *id)
            .collect()
    }

    /// The cancellation a disconnect signalled is ignored: the tool runs on, recorded once.
    pub(super) fn ignore_cancel(&mut self, id: u64) {
        let Some(tool) = self.running.get(&id) else { return };
        let (session, request, call) = (tool.session.clone(), tool.request, tool.call);
        self.record(StepKind::CancelIgnored { session, request, call });
    }

    pub(super) fn cancel_tool(&mut self, now: Instant, id: u64) {
        self.end_tool(now, id, ToolEnd::Cancelled);
    }

    /// Stops a running tool, recorded as ending `end` (cancelled, or by a disconnect).
    pub(super) fn end_tool(&mut self, now: Instant, id: u64, end: ToolEnd) {
        let Some(tool) = self.running.remove(&id) else { return };
        self.refresh_tool(id);
        self.record(StepKind::ToolEnded { session: tool.session.clone(), request: tool.request, call: tool.call, end });
        self.task_work_ended(now, id, crate::tasks::TaskStatus::Cancelled);
        self.finish_stream(now, &tool.session, tool.stream);
    }
}
