//! The session table: minting ids, the handshake, the 400/404 answers to requests naming no
//! live session, `DELETE`, and ending a session (deleted or expired).

use super::streams::SessionStream;
use super::Server;
use crate::config::{DeleteRule, EventIdScheme, OnAbort, UnknownSession};
use crate::http::{Body, ErrorCode, Request, ResponseHead, ServerMessage, Status};
use crate::ids::{ConnId, RequestId, SessionId, StreamNo};
use crate::sse::GET_STREAM_KEY;
use crate::time::{micros, Instant};
use crate::trace::{SessionEndReason, StepKind};
use std::collections::BTreeMap;

#[derive(Debug)]
pub(super) struct Session {
    pub(super) streams: BTreeMap<StreamNo, SessionStream>,
    /// Number of POST streams opened (the next one gets this plus one).
    pub(super) post_streams: u32,
    /// Notifications sent on the standalone stream.
    pub(super) notifications: u32,
    /// When the idle countdown started; `None` while something holds the session.
    pub(super) idle_since: Option<Instant>,
}

impl Server {
    pub(super) fn handle_delete(&mut self, now: Instant, conn: ConnId, request: Request) {
        if !self.policy.sessions {
            // `DELETE` has no hold-open answer: no session to end (Python 2.3.0
            // streamable_http.py:829-835 answers it 405 in stateless mode).
            return self.reject(conn, Status(self.policy.sessionless_get_status), ErrorCode::Other, None);
        }
        let unknown = Status(self.policy.delete_unknown_status);
        let Some(session) = self.live_session(conn, request.session, Some(unknown), None) else { return };
        self.end_session(now, &session, SessionEndReason::Deleted);
        self.respond_status(conn, ResponseHead::status(Status(self.policy.delete_status)));
    }

    /// The live session a request names; otherwise answers 400 (no header), or for an unknown
    /// session `unknown` (`DELETE`'s status) or the policy's `unknown_session` answer, and
    /// returns `None`. `request` is the JSON-RPC id a 200 error body answers.
    pub(super) fn live_session(
        &mut self,
        conn: ConnId,
        session: Option<SessionId>,
        unknown: Option<Status>,
        request: Option<RequestId>,
    ) -> Option<SessionId> {
        let unknown = match (unknown, self.policy.unknown_session) {
            (Some(status), _) => status,
            (None, UnknownSession::NotFound404) => Status::NOT_FOUND,
            (None, UnknownSession::BadRequest400) => Status::BAD_REQUEST,
            (None, UnknownSession::Unavailable503) => Status::UNAVAILABLE,
            (None, UnknownSession::RpcError200) => match session {
                Some(s) if !self.sessions.contains_key(&s) => {
                    self.record(StepKind::Rejected { conn, status: Status::OK, session: Some(s) });
                    let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
                    // JSON-RPC `"id": null` when the request had none (a GET), and the code.
                    let code = Some(self.policy.unknown_session_code);
                    let message = "Session not found".to_string();
                    self.respond_json(conn, head, ServerMessage::Error { request, message, code });
                    return None;
                }
                _ => Status::NOT_FOUND,
            },
        };
        match session {
            None => {
                self.reject(conn, Status::BAD_REQUEST, ErrorCode::SessionRequired, None);
                None
            }
            Some(s) if self.sessions.contains_key(&s) => Some(s),
            Some(_) if unknown.is_success() => {
                self.respond_status(conn, ResponseHead::status(unknown));
                None
            }
            Some(s) => {
                self.reject(conn, unknown, ErrorCode::SessionNotFound, Some(s));
                None
            }
        }
    }

    pub(super) fn initialize(&mut self, now: Instant, conn: ConnId, request: RequestId, client: &str) {
        // The session cap (`max_sessions`): a full replica creates no session and answers 503;
        // the client retries under its initialize backoff.
        if self.policy.max_sessions.is_some_and(|max| self.sessions.len() >= max as usize) {
            return self.reject(conn, Status::UNAVAILABLE, ErrorCode::Other, None);
        }
        let id = self.mint_session_id();
        let session = self.new_session(&id);
        self.sessions.insert(id.clone(), session);
        self.record(StepKind::SessionCreated { session: id.clone(), client: client.to_string() });
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: Some(id.clone()), error: None };
        self.respond_json(conn, head, ServerMessage::InitializeResult { request });
        self.touch_idle(now, &id, true);
    }

    /// A session's state before its first request: its standalone stream, nothing else.
    pub(super) fn new_session(&self, id: &SessionId) -> Session {
        let standalone = SessionStream {
            key: self.log_key(id, StreamNo::STANDALONE, None),
            label: match self.policy.event_ids {
                EventIdScheme::TsSdk => GET_STREAM_KEY.to_string(),
                _ => String::new(),
            },
            call: None,
            attached: None,
            finished: false,
            server_closed: false,
        };
        Session {
            streams: BTreeMap::from([(StreamNo::STANDALONE, standalone)]),
            post_streams: 0,
            notifications: 0,
            idle_since: None,
        }
    }

    pub(super) fn mint_session_id(&mut self) -> SessionId {
        self.sessions_minted += 1;
        match self.policy.event_ids {
            EventIdScheme::Reference | EventIdScheme::Rmcp => {
                SessionId::from(format!("{}-{}", self.epoch, self.sessions_minted))
            }
            EventIdScheme::TsSdk | EventIdScheme::PySdk => SessionId::from(self.rng.uuid()),
        }
    }

    /// An operator ends `session` from outside the client (an admin endpoint, a `DELETE` sent by
    /// someone who knows the id): as a `DELETE` would, but no connection carries it and nobody
    /// is answered. The client learns of it only from its next request's 404 (or from its open
    /// streams ending). False when the server holds no such session.
    pub fn operator_delete(&mut self, now: Instant, session: &SessionId) -> bool {
        if !self.sessions.contains_key(session) {
            return false;
        }
        self.end_session(now, session, SessionEndReason::Deleted);
        true
    }

    /// DELETE or idle expiry: running tools are cancelled (or, under `RunOn` or an ignored abort
    /// signal, left running with nowhere to store their result), connections end, and the
    /// session is gone.
    pub(super) fn end_session(&mut self, now: Instant, session: &SessionId, reason: SessionEndReason) {
        let rule = match reason {
            SessionEndReason::Deleted => self.policy.delete_running_tool,
            SessionEndReason::IdleExpired => self.policy.expire_running_tool,
            // java-sdk 1.1.2 HttpServletStreamableServerTransportProvider.java:756-758: the
            // session is only removed from the map; its handlers are not told.
            SessionEndReason::WriteFailed => DeleteRule::RunOn,
            _ => DeleteRule::Cancel,
        };
        let tools: Vec<u64> =
            self.running.iter().filter(|(_, t)| &t.session == session && !t.orphaned).map(|(id, _)| *id).collect();
        for id in tools {
            match self.running.get_mut(&id) {
                Some(tool)
                    if rule == DeleteRule::RunOn
                        || (rule == DeleteRule::AbortSignal && tool.on_abort == OnAbort::Ignore) =>
                {
                    tool.orphaned = true;
                    tool.next_progress = None;
                    self.refresh_tool(id);
                }
                _ => self.cancel_tool(now, id),
            }
        }
        let conns: Vec<ConnId> = self.conns.iter().filter(|(_, c)| &c.session == session).map(|(id, _)| *id).collect();
        for conn in conns {
            self.end_conn(now, conn);
        }
        self.sessions.remove(session);
        self.refresh_idle(session);
        self.store.drop_session(session);
        let idle_ttl_us = self.policy.idle_ttl.filter(|_| reason == SessionEndReason::IdleExpired).map(micros);
        self.record(StepKind::SessionEnded { session: session.clone(), reason, idle_ttl_us });
    }
}
