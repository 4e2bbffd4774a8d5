//! Connection handling: sending calls and stream GETs, and reading what comes back on each
//! connection (heads, SSE events, JSON answers), down to handing messages to the application.

use super::{Client, Owner, Purpose};
use crate::config::CounterReset;
use crate::http::{ClientMessage, EventKind, Request, ResponseHead, ServerMessage, SseEvent, ToolCall};
use crate::ids::{CallKey, ConnId, EventId, SessionId};
use crate::time::Instant;
use crate::trace::StepKind;

impl Client {
    pub(super) fn send_call(&mut self, key: CallKey) {
        let Some(call) = self.calls.get(&key) else { return };
        let tool = call.tool.clone();
        let id = self.take_request_id();
        let idempotency_key = self.policy.send_idempotency_keys.then(|| format!("{key}"));
        let body = ClientMessage::CallTool {
            id,
            call: ToolCall { tool, key, idempotency_key, tasks: self.policy.tasks.declares },
        };
        let conn = self.open(Purpose::Stream(Owner::Call(key)), self.post_request(body), false);
        self.by_request.insert(id, key);
        if let Some(call) = self.calls.get_mut(&key) {
            call.request = Some(id);
            call.stream.conn = Some(conn);
            call.resend_at = None;
            call.sent = true;
        }
    }

    /// Opens the standalone stream if it is wanted and neither open nor scheduled. After a
    /// restart it resumes with the persisted id.
    pub(super) fn open_standalone(&mut self) {
        let Some(stream) = self.standalone.as_ref() else { return };
        // The modern era has no GET stream (2026-07-28 streamable-http.mdx:679-684).
        if stream.conn.is_some() || stream.reconnect_at.is_some() || self.speaks_modern() {
            return;
        }
        let last = stream.last_event_id.clone();
        let reconnect = last.is_some();
        let conn = self.open(Purpose::Stream(Owner::Standalone), Request::get(self.session.clone(), last), reconnect);
        if let Some(stream) = self.standalone.as_mut() {
            stream.conn = Some(conn);
        }
    }

    /// A scheduled reconnect is due: `GET` with the chosen `Last-Event-ID`.
    pub(super) fn reconnect(&mut self, owner: Owner) {
        let Some(stream) = self.stream_mut(owner) else { return };
        stream.reconnect_at = None;
        let last = stream.reconnect_with.take();
        let conn = self.open(Purpose::Stream(owner), Request::get(self.session.clone(), last), true);
        if let Some(stream) = self.stream_mut(owner) {
            stream.conn = Some(conn);
        }
    }

    pub(super) fn on_head(&mut self, now: Instant, conn: ConnId, head: ResponseHead) {
        let reset_on_ok = self.policy.reconnect.counter_reset == CounterReset::OnSuccessfulReconnect;
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if c.head.is_some() {
            return;
        }
        let ok = head.status.is_success();
        let status = head.status;
        let (purpose, reconnect) = (c.purpose, c.reconnect);
        match purpose {
            Purpose::Probe => {
                self.conns.remove(&conn);
                return self.probe_answered(now, &head);
            }
            Purpose::Stream(Owner::Call(key)) if !ok && !reconnect && self.era_failed(key, status, &head) => {
                self.conns.remove(&conn);
                return;
            }
            _ => {}
        }
        let Some(c) = self.conns.get_mut(&conn) else { return };
        c.head = Some(head);
        match purpose {
            Purpose::Initialize if !ok => {
                self.conns.remove(&conn);
                self.init_refused(now, status);
            }
            Purpose::Initialized => {
                self.conns.remove(&conn);
                if ok {
                    self.become_ready();
                } else {
                    self.acknowledge_failed(now, Some(status), format!("HTTP {status}"));
                }
            }
            Purpose::Stream(owner) if ok && reconnect && reset_on_ok => {
                if let Some(stream) = self.stream_mut(owner) {
                    stream.failures = 0;
                }
            }
            _ => {}
        }
        // The connect that waited for the standalone stream goes on once it has a 2xx head (a
        // refusal settles it when the connection ends, after the rules judged it).
        if purpose == Purpose::Stream(Owner::Standalone) && ok {
            self.standalone_settled();
        }
    }

    pub(super) fn on_event(&mut self, now: Instant, conn: ConnId, event: SseEvent) {
        let reset_on_event = self.policy.reconnect.counter_reset == CounterReset::OnEvent;
        let Some(c) = self.conns.get_mut(&conn) else { return };
        c.events += 1;
        c.messages += u32::from(event.data.is_some());
        c.ids += u32::from(event.id.is_some());
        c.close_event |= event.kind == EventKind::Close;
        let (purpose, reconnect) = (c.purpose, c.reconnect);
        if let Some(ms) = event.retry_ms {
            self.server_retry_ms = Some(ms);
        }
        if let Purpose::Stream(owner) = purpose {
            if let Some(stream) = self.stream_mut(owner) {
                if let Some(id) = &event.id {
                    stream.last_event_id = Some(id.clone());
                }
                if reconnect && reset_on_event {
                    stream.failures = 0;
                }
                if event.data.is_some() {
                    stream.unhonoured = 0;
                }
            }
        }
        // A priming event only hands over a cursor; a close event carries nothing for the app.
        if let Some(data) = event.data {
            self.on_message(now, conn, event.id, data);
        }
    }

    pub(super) fn on_message(&mut self, now: Instant, conn: ConnId, id: Option<EventId>, message: ServerMessage) {
        let Some(c) = self.conns.get(&conn) else { return };
        match (c.purpose, message) {
            (Purpose::Initialize, ServerMessage::InitializeResult { .. }) => self.init_answered(conn),
            (Purpose::TaskPoll(call), message) => self.task_answer(now, conn, call, message),
            (Purpose::Initialize, ServerMessage::Error { message, .. }) => {
                self.conns.remove(&conn);
                self.init_failed(now, message);
            }
            (Purpose::Stream(Owner::Call(key)), ServerMessage::Error { code, .. })
                if c.session == self.session && self.sdk_reads_as_lost(c.reconnect, code).is_some() =>
            {
                let rule = self.sdk_reads_as_lost(c.reconnect, code).expect("checked by the guard");
                self.conns.remove(&conn);
                if let Some(call) = self.calls.get_mut(&key) {
                    call.stream.conn = None;
                }
                self.sdk_on_404(key, rule, "a JSON-RPC \"session not found\" error");
            }
            (Purpose::Stream(_), message) => {
                let session = Client::app_session(c.session.clone());
                self.deliver(now, conn, session, id, message);
            }
            (Purpose::Listen, ServerMessage::ListenAck { subscription }) => self.listen_acked(conn, subscription),
            (Purpose::Listen, ServerMessage::Changed { change, .. }) => self.record(StepKind::AppChange { change }),
            _ => {}
        }
    }

    /// Hands a message to the application. Answers are routed by JSON-RPC request id, as the
    /// SDKs do; anything for a call that already resolved is dropped.
    pub(super) fn deliver(
        &mut self,
        now: Instant,
        via: ConnId,
        session: SessionId,
        id: Option<EventId>,
        message: ServerMessage,
    ) {
        let call = message.request().and_then(|r| self.by_request.get(&r).copied());
        match (call, &message) {
            (Some(call), ServerMessage::Progress { .. }) => {
                self.record(StepKind::AppEvent { session, id, call: Some(call), message });
                // TypeScript's opt-in `resetTimeoutOnProgress`.
                if let (true, Some(timeout)) = (self.policy.timeout_resets_on_progress, self.policy.request_timeout) {
                    if let Some(c) = self.calls.get_mut(&call) {
                        c.deadline = Some(now + timeout);
                    }
                }
            }
            (Some(call), ServerMessage::ToolResult { .. }) => {
                self.record(StepKind::AppResult { call, session, id });
                self.resolve(call, Some(via));
            }
            (Some(call), ServerMessage::TaskCreated { .. }) => self.task_created(now, via, call, &message),
            (Some(call), ServerMessage::Error { message: text, .. }) => {
                self.record(StepKind::AppError { call, error: text.clone() });
                self.resolve(call, Some(via));
            }
            (_, ServerMessage::Notification { .. }) => {
                self.record(StepKind::AppEvent { session, id, call: None, message })
            }
            _ => {}
        }
    }
}
