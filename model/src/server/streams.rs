//! Per-stream event logs and the connections attached to them: appending (and sending) events,
//! priming, the standalone GET stream, open SSE connections and their keep-alive comments.

use super::{repeating, Server, ServerOutput};
use crate::config::{
    ConnAfterResponse, DeadStream, DetachedEvents, FailedWrite, FreshGet, IdleReset, KeepaliveTimer, SecondGet,
    StandalonePriming, StoreScope,
};
use crate::http::{Body, ErrorCode, EventKind, Frame, ResponseHead, ServerMessage, SseEvent, Status};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, StreamNo};
use crate::sse::{mint_event_id, LogKey, NewEvent, StoredEvent, StreamLog, GET_STREAM_KEY};
use crate::time::Instant;
use crate::trace::{CloseRule, ExitCause, SessionEndReason, StepKind};

#[derive(Debug)]
pub(super) struct SessionStream {
    /// The log its events go into.
    pub(super) key: LogKey,
    /// The TypeScript stream id (a uuid, or `_GET_stream`); empty for other schemes.
    pub(super) label: String,
    /// The tool call a POST stream carries.
    pub(super) call: Option<CallKey>,
    /// The connection that receives its new events.
    pub(super) attached: Option<ConnId>,
    /// Its response was appended, or its call cancelled: nothing more will be appended.
    pub(super) finished: bool,
    /// The server ended its connection itself and no connection has attached since.
    pub(super) server_closed: bool,
}

#[derive(Debug)]
pub(super) struct OpenConn {
    pub(super) session: SessionId,
    pub(super) next_keepalive: Option<Instant>,
    /// When the server ends it itself (`close_request_streams`, `close_idle_standalone`).
    pub(super) close_at: Option<Instant>,
    /// What kind of answer it carries.
    pub(super) kind: ConnKind,
    /// Its client side is gone and the server has not noticed yet.
    pub(super) dead: bool,
}

/// What an open SSE connection was opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnKind {
    /// A POST's own stream.
    Request,
    /// A fresh standalone GET.
    Standalone,
    /// A `GET` with `Last-Event-ID`.
    Resumed,
    /// An answer attached to no stream, open until its connection ends: a `subscriptions/listen`
    /// stream (its changes are written to it directly), or the `GET` a server without sessions
    /// holds open (`sessionless_get = hold-open`), which gets nothing but keep-alives.
    Held,
    /// A POST answered in JSON (`response_mode = json`): nothing is written on it until the
    /// result, which goes as one JSON body, and then it ends.
    Json,
}

impl Server {
    /// The log a session's stream writes into, under the policy's store scope.
    pub(super) fn log_key(&self, session: &SessionId, stream: StreamNo, request: Option<RequestId>) -> LogKey {
        match (self.policy.store, request) {
            (StoreScope::PerSession, _) => LogKey::Session(session.clone(), stream),
            (StoreScope::SharedByRequestId, Some(request)) => LogKey::Shared(request.0.to_string()),
            (StoreScope::SharedByRequestId, None) => LogKey::Shared(GET_STREAM_KEY.to_string()),
        }
    }

    pub(super) fn open_standalone(&mut self, now: Instant, conn: ConnId, session: &SessionId) {
        let attached = self.stream(session, StreamNo::STANDALONE).and_then(|s| s.attached);
        if let Some(old) = attached {
            match self.policy.second_get {
                SecondGet::Reject409 => {
                    return self.reject(conn, Status::CONFLICT, ErrorCode::StreamAlreadyOpen, Some(session.clone()))
                }
                SecondGet::Reject400 => {
                    return self.reject(conn, Status::BAD_REQUEST, ErrorCode::StreamAlreadyOpen, Some(session.clone()))
                }
                SecondGet::EmptyClosed => {
                    // kotlin-sdk#715: Ktor's `sse {}` has committed `200` before the transport's
                    // 409 check refuses the GET, so the refusal reaches the client as an event
                    // stream that ends at once; the earlier connection stays registered.
                    self.record(StepKind::RefusedAfterHead {
                        conn,
                        status: Status::CONFLICT,
                        session: session.clone(),
                    });
                    self.send(conn, Frame::Head(ResponseHead::event_stream()));
                    self.send(conn, Frame::End);
                    self.outputs.push_back(ServerOutput::Close { conn, abrupt: false });
                    return;
                }
                SecondGet::EndSession => {
                    // The 409, and the application that hears of it from the transport's `onerror`
                    // tears the session down (kaeawc/auto-mobile#1942).
                    self.reject(conn, Status::CONFLICT, ErrorCode::StreamAlreadyOpen, Some(session.clone()));
                    return self.end_session(now, session, SessionEndReason::StreamConflict);
                }
                SecondGet::RestartProcess => {
                    // The 409, and the application kills its process on the `onerror`
                    // (supercorp-ai/supergateway#126).
                    self.reject(conn, Status::CONFLICT, ErrorCode::StreamAlreadyOpen, Some(session.clone()));
                    let session = Some(session.clone());
                    self.record(StepKind::ProcessExit { conn, session, cause: ExitCause::SecondGet });
                    return self.exit_process();
                }
                SecondGet::Shadow => {
                    // Open, primed, never attached: only keep-alives arrive on it.
                    self.send(conn, Frame::Head(ResponseHead::event_stream()));
                    self.open_sse_conn(now, conn, session, ConnKind::Standalone);
                    if self.policy.priming.standalone {
                        self.send_unstored_priming(now, session, conn);
                    }
                    return;
                }
                SecondGet::Replace => self.end_conn(now, old),
                // The earlier connection stays open but no longer receives events.
                SecondGet::Accept => {}
            }
        }
        self.send(conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, conn, session, ConnKind::Standalone);
        self.attach(session, StreamNo::STANDALONE, conn);
        if self.policy.priming.standalone {
            match self.policy.standalone_priming {
                StandalonePriming::Stored => self.append(now, session, StreamNo::STANDALONE, None),
                StandalonePriming::ReusedId => self.send_unstored_priming(now, session, conn),
            }
        }
        if self.policy.fresh_get == FreshGet::Buffered {
            let key = self.stream(session, StreamNo::STANDALONE).map(|s| s.key.clone());
            let buffered: Vec<StoredEvent> = key
                .and_then(|key| self.store.log(&key))
                .map(|log| log.retained().filter(|e| e.message.is_some()).cloned().collect())
                .unwrap_or_default();
            for event in buffered {
                self.write(now, conn, Frame::Event(self.wire(&event)));
            }
        }
    }

    /// A priming event that is sent but not stored: its id is the one the stream's next event
    /// will take (rmcp's standalone stream: `id: 0`, then a notification with `id: 0`).
    fn send_unstored_priming(&mut self, now: Instant, session: &SessionId, conn: ConnId) {
        if !self.has_store() {
            return;
        }
        let Some(state) = self.stream(session, StreamNo::STANDALONE) else { return };
        let label = state.label.clone();
        let next = self.store.log(&state.key).map_or(0, StreamLog::issued);
        let id = mint_event_id(self.policy.event_ids, StreamNo::STANDALONE, &label, next, now, &mut self.rng);
        let event = SseEvent { id: Some(id), retry_ms: self.policy.retry_ms, kind: EventKind::Message, data: None };
        self.write(now, conn, Frame::Event(event));
    }

    pub(super) fn stream(&self, session: &SessionId, stream: StreamNo) -> Option<&SessionStream> {
        self.sessions.get(session)?.streams.get(&stream)
    }

    pub(super) fn stream_mut(&mut self, session: &SessionId, stream: StreamNo) -> Option<&mut SessionStream> {
        self.sessions.get_mut(session)?.streams.get_mut(&stream)
    }

    /// Stores an event in the stream's log, records it, and sends it to the attached connection.
    pub(super) fn append(
        &mut self,
        now: Instant,
        session: &SessionId,
        stream: StreamNo,
        message: Option<ServerMessage>,
    ) {
        self.append_stamped(now, now, session, stream, message);
    }

    /// [`Server::append`] with the instant a time-stamped event id carries (`IdStamp`).
    pub(super) fn append_stamped(
        &mut self,
        now: Instant,
        stamp: Instant,
        session: &SessionId,
        stream: StreamNo,
        message: Option<ServerMessage>,
    ) {
        let Some(state) = self.stream(session, stream) else { return };
        let (key, label, call, attached) = (state.key.clone(), state.label.clone(), state.call, state.attached);
        let dropped = stream != StreamNo::STANDALONE
            && attached.is_none()
            && state.server_closed
            && self.policy.detached_request_events == DetachedEvents::Drop;
        if dropped {
            // typescript-sdk#2151: `send()` finds no stream mapping, stores nothing.
            if let Some(m) = &message {
                let answer = m.request().is_some() && !matches!(m, ServerMessage::Progress { .. });
                self.record(StepKind::EventDropped { session: session.clone(), stream, call, answer });
            }
            return;
        }
        if message.is_none() && !self.has_store() {
            // No store, no cursor to hand out: the SDKs send no priming event then.
            return;
        }
        let is_message = message.is_some();
        let scheme = self.policy.event_ids;
        let rng = &mut self.rng;
        let new = NewEvent { session: session.clone(), call, message };
        let epoch = (!self.policy.sessions).then_some(self.epoch);
        let event = self.store.append(&key, now, new, |seq| {
            let id = mint_event_id(scheme, stream, &label, seq, stamp, rng);
            match epoch {
                Some(epoch) => EventId::from(format!("{epoch}.{id}")),
                None => id,
            }
        });
        self.record(StepKind::EventStored {
            session: session.clone(),
            stream,
            seq: event.seq,
            id: event.id.clone(),
            call: event.call,
            message: event.message.clone(),
        });
        if let Some(conn) = attached {
            match (self.conns.get(&conn).map(|c| c.kind), &event.message) {
                (Some(ConnKind::Json), Some(message)) => self.answer_json(now, conn, message.clone()),
                _ => self.write(now, conn, Frame::Event(self.wire(&event))),
            }
        }
        if is_message && self.policy.idle_reset == IdleReset::RequestsAndEvents {
            self.touch_idle(now, session, true);
        }
    }

    /// Writes an event or a comment on an open SSE connection. A write on a connection whose
    /// client side is gone fails when the policy says the server notices it there: the server
    /// then drops the connection as if its own side had been closed. Every write restarts an
    /// after-silence keep-alive and a standalone connection's idle close.
    pub(super) fn write(&mut self, now: Instant, conn: ConnId, frame: Frame) {
        let Some(open) = self.conns.get_mut(&conn) else { return self.send(conn, frame) };
        if open.dead {
            let notices = match self.policy.dead_stream {
                DeadStream::Immediate | DeadStream::OnWrite => true,
                DeadStream::OnKeepalive => frame == Frame::Comment,
            };
            if notices {
                let session = open.session.clone();
                self.outputs.push_back(ServerOutput::Close { conn, abrupt: true });
                self.handle_disconnect(now, conn);
                return self.failed_write(now, &session);
            }
        }
        if self.policy.keepalive_timer == KeepaliveTimer::AfterSilence {
            open.next_keepalive = repeating(self.policy.keepalive).map(|k| now + k);
        }
        if let (ConnKind::Standalone, Some(after)) = (open.kind, self.policy.close_idle_standalone) {
            open.close_at = Some(now + after);
        }
        self.refresh_conn(conn);
        self.send(conn, frame);
    }

    /// The result of a POST answered in JSON: the head, the body and the end, all at once. A
    /// connection whose client side is gone (`dead_stream`) fails the write and is reset.
    pub(super) fn answer_json(&mut self, now: Instant, conn: ConnId, message: ServerMessage) {
        let dead = self.conns.get(&conn).is_some_and(|c| c.dead);
        let session = self.forget_conn(conn);
        if dead {
            self.outputs.push_back(ServerOutput::Close { conn, abrupt: true });
        } else {
            let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
            self.respond_json(conn, head, message);
        }
        if let Some(session) = session {
            self.touch_idle(now, &session, false);
            if dead {
                self.failed_write(now, &session);
            }
        }
    }

    /// A write on a connection of `session` failed (its client was gone): under `on_failed_write =
    /// end-session` the session is forgotten with it (java-sdk#952). A server without sessions
    /// has none to forget.
    fn failed_write(&mut self, now: Instant, session: &SessionId) {
        let ends = self.policy.on_failed_write == FailedWrite::EndSession
            && self.policy.sessions
            && self.sessions.contains_key(session);
        if ends {
            self.end_session(now, session, SessionEndReason::WriteFailed);
        }
    }

    /// Makes `conn` the receiver of the stream's new events.
    pub(super) fn attach(&mut self, session: &SessionId, stream: StreamNo, conn: ConnId) {
        if let Some(state) = self.stream_mut(session, stream) {
            state.attached = Some(conn);
        }
    }

    /// Registers an SSE answer that stays open.
    pub(super) fn open_sse_conn(&mut self, now: Instant, conn: ConnId, session: &SessionId, kind: ConnKind) {
        let next_keepalive = repeating(self.policy.keepalive).filter(|_| kind != ConnKind::Json).map(|k| now + k);
        let close_at = self.close_timer(kind).map(|(_, d)| now + d);
        self.conns.insert(conn, OpenConn { session: session.clone(), next_keepalive, close_at, kind, dead: false });
        self.refresh_conn(conn);
    }

    /// The server's own close timer for a connection of `kind`, and the setting it comes from: a
    /// request's stream (`close_request_streams`) and the standalone stream
    /// (`close_idle_standalone`, restarted at each write) have one; a resumed or JSON answer none.
    ///
    /// Closing a request's stream before its response is SEP-1699 polling, which only a stream
    /// the client can resume allows: a session's, in the 2025-11-25 era. A sessionless server
    /// (here the 2026-07-28 era: `era::served_eras`) and a dual-era server's modern context
    /// never do it, for there a closed response stream is the request's cancellation
    /// (2026-07-28 streamable-http.mdx:233-240). So the SDKs: TypeScript offers `closeSSEStream`
    /// only to 2025-11-25 requests (1.32.2 `webStandardStreamableHttp.js:805-813`, and its test of
    /// the version gate), python-sdk 2.3.0 has `close_sse_stream` only on its session transport
    /// (`streamable_http.py:257-283`, not `_streamable_http_modern.py`), rmcp 3.11.0 only in its
    /// session (`session/local.rs:755-782`).
    fn close_timer(&self, kind: ConnKind) -> Option<(CloseRule, std::time::Duration)> {
        match kind {
            ConnKind::Request if !self.policy.sessions => None,
            ConnKind::Request => self.policy.close_request_streams.map(|d| (CloseRule::RequestStream, d)),
            ConnKind::Standalone => self.policy.close_idle_standalone.map(|d| (CloseRule::IdleStandalone, d)),
            ConnKind::Resumed | ConnKind::Held | ConnKind::Json => None,
        }
    }

    /// The bounds and timers of this server's profile a trace records at its start
    /// (`ServerStart`), for `profile-conformance`: its store's retention, and its close timers as
    /// [`Server::close_timer`] applies them (a request's stream only with sessions).
    pub(super) fn bounds(&self) -> crate::trace::ServerBounds {
        let retention = self.store.retention();
        let us = |d: std::time::Duration| crate::time::micros(d);
        let keepalive = repeating(self.policy.keepalive);
        crate::trace::ServerBounds {
            retention_max_events: retention.max_events,
            retention_window_us: retention.window.map(us),
            close_request_streams_us: self.policy.close_request_streams.filter(|_| self.policy.sessions).map(us),
            close_idle_standalone_us: self.policy.close_idle_standalone.map(us),
            keepalive_us: keepalive.map(us),
            keepalive_after_silence: keepalive.is_some() && self.policy.keepalive_timer == KeepaliveTimer::AfterSilence,
            finished_resume_stays_open: self.policy.finished_resume == ConnAfterResponse::StayOpen,
        }
    }

    /// A resumed connection now carries the standalone stream: it counts as a standalone GET
    /// (its idle close starts now and restarts at each write).
    pub(super) fn resumed_standalone(&mut self, now: Instant, conn: ConnId) {
        let close_at = self.close_timer(ConnKind::Standalone).map(|(_, d)| now + d);
        if let Some(open) = self.conns.get_mut(&conn) {
            open.kind = ConnKind::Standalone;
            open.close_at = close_at;
        }
        self.refresh_conn(conn);
    }

    /// The server ends a connection on its own (`Timer::Close`): the streams it carried remember
    /// it, for `detached_request_events`, and the trace says which timer did it.
    pub(super) fn server_close(&mut self, now: Instant, conn: ConnId) {
        let Some(open) = self.conns.get_mut(&conn) else { return };
        open.close_at = None;
        let (session, kind) = (open.session.clone(), open.kind);
        self.refresh_conn(conn);
        let mut carried = None;
        if let Some(state) = self.sessions.get_mut(&session) {
            for (no, stream) in state.streams.iter_mut().filter(|(_, s)| s.attached == Some(conn)) {
                stream.server_closed = true;
                carried.get_or_insert(*no);
            }
        }
        if let Some((rule, after)) = self.close_timer(kind) {
            let after_us = crate::time::micros(after);
            self.record(StepKind::ServerClosedStream { conn, session, stream: carried, rule, after_us });
        }
        self.end_conn(now, conn);
    }

    /// Ends an open SSE connection cleanly; a JSON answer that never got its head (its call
    /// cancelled, its session ended) is closed without one.
    pub(super) fn end_conn(&mut self, now: Instant, conn: ConnId) {
        let json = self.conns.get(&conn).is_some_and(|c| c.kind == ConnKind::Json);
        let session = self.forget_conn(conn);
        if json {
            self.outputs.push_back(ServerOutput::Close { conn, abrupt: true });
        } else {
            self.send(conn, Frame::End);
            self.outputs.push_back(ServerOutput::Close { conn, abrupt: false });
        }
        if let Some(session) = session {
            self.touch_idle(now, &session, false);
        }
    }

    /// Drops the connection and detaches it from its stream; returns its session.
    pub(super) fn forget_conn(&mut self, conn: ConnId) -> Option<SessionId> {
        let open = self.conns.remove(&conn)?;
        self.refresh_conn(conn);
        if let Some(state) = self.sessions.get_mut(&open.session) {
            for stream in state.streams.values_mut().filter(|s| s.attached == Some(conn)) {
                stream.attached = None;
            }
        }
        Some(open.session)
    }

    pub(super) fn send_keepalive(&mut self, at: Instant, conn: ConnId) {
        let Some(open) = self.conns.get_mut(&conn) else { return };
        open.next_keepalive = repeating(self.policy.keepalive).map(|k| at + k);
        self.refresh_conn(conn);
        self.write(at, conn, Frame::Comment);
    }

    /// Nothing more will be appended to the stream: its attached connection ends cleanly (a
    /// resumed one stays open under `resumed_on_response = stay-open`).
    pub(super) fn finish_stream(&mut self, now: Instant, session: &SessionId, stream: StreamNo) {
        let Some(state) = self.stream_mut(session, stream) else { return };
        state.finished = true;
        let Some(conn) = state.attached else { return };
        let resumed = self.conns.get(&conn).is_some_and(|c| c.kind == ConnKind::Resumed);
        if resumed && self.policy.resumed_on_response == ConnAfterResponse::StayOpen {
            return;
        }
        self.end_conn(now, conn);
    }
}
