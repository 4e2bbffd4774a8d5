//! Per-stream event logs and the connections attached to them: appending (and sending) events,
//! priming, the standalone GET stream, open SSE connections and their keep-alive comments.

use super::{repeating, Server, ServerOutput};
use crate::config::{SecondGet, StoreScope};
use crate::http::{ErrorCode, Frame, ResponseHead, ServerMessage, Status};
use crate::ids::{CallKey, ConnId, EventId, RequestId, SessionId, StreamNo};
use crate::sse::{mint_event_id, LogKey, NewEvent, GET_STREAM_KEY};
use crate::time::Instant;
use crate::trace::StepKind;

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
}

#[derive(Debug)]
pub(super) struct OpenConn {
    pub(super) session: SessionId,
    pub(super) next_keepalive: Option<Instant>,
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
        if attached.is_some() && self.policy.second_get == SecondGet::Reject409 {
            return self.reject(conn, Status::CONFLICT, ErrorCode::StreamAlreadyOpen, Some(session.clone()));
        }
        // Under `Accept` the earlier connection stays open but no longer receives events.
        self.send(conn, Frame::Head(ResponseHead::event_stream()));
        self.open_sse_conn(now, conn, session);
        self.attach(session, StreamNo::STANDALONE, conn);
        if self.policy.priming.standalone {
            self.append(now, session, StreamNo::STANDALONE, None);
        }
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
        let Some(state) = self.stream(session, stream) else { return };
        let (key, label, call, attached) = (state.key.clone(), state.label.clone(), state.call, state.attached);
        let scheme = self.policy.event_ids;
        let rng = &mut self.rng;
        let new = NewEvent { session: session.clone(), call, message };
        let epoch = (!self.policy.sessions).then_some(self.epoch);
        let event = self.store.append(&key, now, new, |seq| {
            let id = mint_event_id(scheme, stream, &label, seq, now, rng);
            match epoch {
                Some(epoch) => EventId(format!("{epoch}.{id}")),
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
            self.send(conn, Frame::Event(event.to_sse(self.policy.retry_ms)));
        }
    }

    /// Makes `conn` the receiver of the stream's new events.
    pub(super) fn attach(&mut self, session: &SessionId, stream: StreamNo, conn: ConnId) {
        if let Some(state) = self.stream_mut(session, stream) {
            state.attached = Some(conn);
        }
    }

    /// Registers an SSE answer that stays open.
    pub(super) fn open_sse_conn(&mut self, now: Instant, conn: ConnId, session: &SessionId) {
        let next_keepalive = repeating(self.policy.keepalive).map(|k| now + k);
        self.conns.insert(conn, OpenConn { session: session.clone(), next_keepalive });
    }

    /// Ends an open SSE connection cleanly.
    pub(super) fn end_conn(&mut self, now: Instant, conn: ConnId) {
        let session = self.forget_conn(conn);
        self.send(conn, Frame::End);
        self.outputs.push_back(ServerOutput::Close { conn, abrupt: false });
        if let Some(session) = session {
            self.touch_idle(now, &session, false);
        }
    }

    /// Drops the connection and detaches it from its stream; returns its session.
    pub(super) fn forget_conn(&mut self, conn: ConnId) -> Option<SessionId> {
        let open = self.conns.remove(&conn)?;
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
        self.send(conn, Frame::Comment);
    }

    /// Nothing more will be appended to the stream: its attached connection ends cleanly.
    pub(super) fn finish_stream(&mut self, now: Instant, session: &SessionId, stream: StreamNo) {
        let Some(state) = self.stream_mut(session, stream) else { return };
        state.finished = true;
        if let Some(conn) = state.attached {
            self.end_conn(now, conn);
        }
    }
}
