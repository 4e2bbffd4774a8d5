//! Serving each request in its era (`crate::era`, docs/eras.md): the era gate in front of the
//! legacy paths, and the modern (2026-07-28) context a dual-era server serves statelessly beside
//! its sessions.
//!
//! A request is answered per [`era::answer`]: a legacy request goes on to the session paths
//! unchanged; a refused one gets the spec's 400 or 405 (streamable-http.mdx:256-267,679-687); a
//! modern one is served with no session (any `Mcp-Session-Id` ignored, never minted or echoed) and
//! recorded as `EraServed`. On a session-ful server the modern requests run in a sessionless
//! sub-server ([`modern_policy`]) whose closed response stream cancels its request, as the spec
//! requires (streamable-http.mdx:233-240) and both dual-era SDK servers do (python-sdk
//! mcp/server/_streamable_http_modern.py:488-495; rmcp 3.11.0 tower.rs:1682-1730), while a legacy
//! request on the same replica keeps its own rule (`disconnect_cancels`: py-sdk and rmcp run on).
//!
//! A server whose profile states no `eras` and a request that asks for no modern version never
//! pass the gate: every earlier trace reads as before.

use super::{Server, ServerOutput};
use crate::config::{EventStoreMode, Priming, ServerPolicy};
use crate::era::{self, Era, EraAnswer, EraRequest, HttpVerb, IgnoredHeader, ModernSession, Refusal};
use crate::http::{Body, ClientMessage, ErrorBody, ErrorCode, Method, Request, ResponseHead, ServerMessage, Status};
use crate::ids::{ConnId, RequestId};
use crate::time::Instant;
use crate::trace::StepKind;

/// The policy of the sessionless context a session-ful dual-era server serves modern requests in:
/// no session, so no expiry and no cap; no resumption, so no priming and nothing kept
/// (streamable-http.mdx:157); a closed stream cancels (streamable-http.mdx:233-240). Everything
/// else (tools, keep-alives, response mode, dead-stream detection) is the server's own.
pub(super) fn modern_policy(policy: &ServerPolicy) -> ServerPolicy {
    ServerPolicy {
        sessions: false,
        disconnect_cancels: true,
        idle_ttl: None,
        max_sessions: None,
        priming: Priming { post: false, standalone: false, resume: false },
        event_store: EventStoreMode::NoStore,
        ..policy.clone()
    }
}

/// The policy of a server process that is restart number `restarts` of its replica (0: the first
/// process): after a restart, `eras_after_restart` replaces `eras` when it is set (a rolling
/// upgrade's new build).
pub fn incarnation_policy(policy: &ServerPolicy, restarts: u32) -> ServerPolicy {
    match (&policy.eras_after_restart, restarts) {
        (Some(eras), 1..) => ServerPolicy { eras: Some(eras.clone()), ..policy.clone() },
        _ => policy.clone(),
    }
}

/// Whether a session-ful server needs the modern context: it serves the modern era.
pub(super) fn wants_modern_context(policy: &ServerPolicy) -> bool {
    policy.sessions && era::served_eras(policy.eras.as_deref(), policy.sessions).modern
}

/// The era-deciding parts of a request.
fn era_request(request: &Request) -> EraRequest {
    EraRequest {
        verb: match request.method {
            Method::Post => HttpVerb::Post,
            Method::Get => HttpVerb::Get,
            Method::Delete => HttpVerb::Delete,
        },
        header_version: request.protocol_version.clone(),
        meta_version: request.meta_version.clone(),
        initialize: matches!(request.body, Some(ClientMessage::Initialize { .. })),
        session_id: request.session.is_some(),
        last_event_id: request.last_event_id.is_some(),
    }
}

/// Whether a request names a modern version in its header or `_meta`.
fn asks_modern(request: &Request) -> bool {
    [&request.meta_version, &request.protocol_version]
        .into_iter()
        .flatten()
        .any(|v| Era::of_version(v) != Some(Era::Legacy))
}

impl Server {
    /// The era gate: answers the request when the era rules decide it (modern, or refused) and
    /// returns `None`; returns the request for the legacy paths otherwise.
    pub(super) fn era_gate(&mut self, now: Instant, conn: ConnId, request: Request) -> Option<Request> {
        if self.policy.eras.is_none() && !asks_modern(&request) {
            return Some(request);
        }
        let eras = era::served_eras(self.policy.eras.as_deref(), self.policy.sessions);
        match era::answer(eras, &era_request(&request)) {
            EraAnswer::Legacy => Some(request),
            EraAnswer::Refused(refusal) => {
                self.refuse(conn, refusal);
                None
            }
            EraAnswer::Modern { ignored } => {
                self.serve_modern(now, conn, request, ignored);
                None
            }
        }
    }

    fn refuse(&mut self, conn: ConnId, refusal: Refusal) {
        self.record(StepKind::EraRefused { conn, refusal });
        let code = match refusal {
            Refusal::HeaderMismatch => ErrorCode::HeaderMismatch,
            Refusal::UnsupportedVersion => ErrorCode::UnsupportedProtocolVersion,
            Refusal::MethodNotAllowed | Refusal::LegacyNoSession => ErrorCode::Other,
        };
        let head = ResponseHead::error(Status(refusal.status()), ErrorBody { code, head_event_id: None });
        self.respond_status(conn, head);
    }

    /// A modern POST (the gate let only POSTs through): `server/discover` is answered at once;
    /// the rest run statelessly.
    fn serve_modern(&mut self, now: Instant, conn: ConnId, request: Request, ignored: Vec<IgnoredHeader>) {
        let Some(body) = request.body else { return self.refuse(conn, Refusal::HeaderMismatch) };
        let session = match (self.policy.modern_session, body.request_id()) {
            (ModernSession::Minted, Some(_)) if self.policy.sessions => Some(self.mint_modern_session(now)),
            _ => None,
        };
        if let Some(id) = body.request_id() {
            self.record(StepKind::EraServed { conn, request: id, era: Era::Modern, session: session.clone(), ignored });
        }
        if let ClientMessage::Discover { id } = body {
            return self.discovered(conn, id);
        }
        if let Some(session) = session {
            // The misconfigured server of `ModernSession::Minted`: the legacy paths, in a session.
            if let ClientMessage::CallTool { id, call } = body {
                self.call_tool(now, conn, &session, id, call);
            }
            return self.touch_idle(now, &session, true);
        }
        match self.modern.as_mut() {
            Some(context) => {
                self.modern_conns.insert(conn);
                context.handle_sessionless_post(now, conn, body);
                self.drain_modern();
            }
            None => self.handle_sessionless_post(now, conn, body),
        }
    }

    /// The `DiscoverResult` (python-sdk mcp/server/_streamable_http_modern.py; rmcp tower.rs).
    fn discovered(&mut self, conn: ConnId, request: RequestId) {
        let head = ResponseHead { status: Status::OK, body: Body::Json, session: None, error: None };
        self.respond_json(conn, head, ServerMessage::DiscoverResult { request });
    }

    /// `ModernSession::Minted`: a legacy session opened for a modern request, as `initialize`
    /// would (recorded as created, counted against idle expiry).
    fn mint_modern_session(&mut self, now: Instant) -> crate::ids::SessionId {
        let id = self.mint_session_id();
        let session = self.new_session(&id);
        self.sessions.insert(id.clone(), session);
        self.record(StepKind::SessionCreated { session: id.clone(), client: String::new() });
        self.touch_idle(now, &id, true);
        id
    }

    /// Moves what the modern context wants done or recorded into this server's outputs, in order.
    pub(super) fn drain_modern(&mut self) {
        let Some(context) = self.modern.as_mut() else { return };
        let mut exited = false;
        while let Some(out) = context.poll_output() {
            match &out {
                ServerOutput::Close { conn, .. } => {
                    self.modern_conns.remove(conn);
                }
                // The context is this process: its exit is the process's own.
                ServerOutput::Exit => {
                    exited = true;
                    continue;
                }
                _ => {}
            }
            self.outputs.push_back(out);
        }
        if exited {
            self.exit_process();
        }
    }

    /// Whether `conn` carries a modern request served by the modern context.
    pub(super) fn is_modern_conn(&self, conn: ConnId) -> bool {
        self.modern_conns.contains(&conn)
    }
}
