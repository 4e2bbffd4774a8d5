//! The message-level vocabulary of the Streamable HTTP transport: what crosses a connection.
//!
//! One connection carries one HTTP exchange: the client sends one [`Request`]; the server answers
//! with a [`Frame::Head`], then a JSON body or a series of SSE frames, then [`Frame::End`]. A
//! connection that stops without `End` was cut (reset, idle timeout, crash): the receiver learns
//! that from the transport, never from a frame.

use crate::ids::{CallKey, EventId, RequestId, SessionId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The protocol revision every request after `initialize` names in `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// HTTP methods the transport uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// A JSON-RPC message from client to server.
    Post,
    /// Open the standalone SSE stream, or resume any stream with `Last-Event-ID`.
    Get,
    /// End the session.
    Delete,
}

/// An HTTP request to the MCP endpoint, reduced to the headers that matter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The HTTP method.
    pub method: Method,
    /// `Mcp-Session-Id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// `MCP-Protocol-Version`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// `Last-Event-ID` (GET only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<EventId>,
    /// The JSON-RPC body (POST only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<ClientMessage>,
    /// `Mcp-Name`: the task id of a `tasks/*` request, for a balancer to route by (ext-tasks
    /// tasks.md "Streamable HTTP: Routing Headers"). Left out of traces when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_name: Option<String>,
    /// The body's `_meta` `io.modelcontextprotocol/protocolVersion`: set only on a request of the
    /// 2026-07-28 era (`crate::era`), which names its version in every request (versioning.mdx:43-46).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_version: Option<String>,
}

impl Request {
    /// `POST` of `initialize`: no session id yet.
    pub fn initialize(id: RequestId, client: &str) -> Self {
        Request {
            method: Method::Post,
            session: None,
            protocol_version: None,
            last_event_id: None,
            body: Some(ClientMessage::Initialize { id, client: client.to_string() }),
            mcp_name: None,
            meta_version: None,
        }
    }

    /// `POST` of a request of the 2026-07-28 era: the version in `MCP-Protocol-Version` and in
    /// `_meta`, no session id (streamable-http.mdx:250-255).
    pub fn modern_post(body: ClientMessage) -> Self {
        let version = crate::era::MODERN_VERSION.to_string();
        Request {
            method: Method::Post,
            session: None,
            protocol_version: Some(version.clone()),
            last_event_id: None,
            body: Some(body),
            meta_version: Some(version),
            mcp_name: None,
        }
    }

    /// `POST` of any message inside a session.
    pub fn post(session: Option<SessionId>, body: ClientMessage) -> Self {
        Request {
            method: Method::Post,
            session,
            protocol_version: Some(PROTOCOL_VERSION.to_string()),
            last_event_id: None,
            body: Some(body),
            mcp_name: None,
            meta_version: None,
        }
    }

    /// `GET`: the standalone stream (no `Last-Event-ID`) or a resumption.
    pub fn get(session: Option<SessionId>, last_event_id: Option<EventId>) -> Self {
        Request {
            method: Method::Get,
            session,
            protocol_version: Some(PROTOCOL_VERSION.to_string()),
            last_event_id,
            body: None,
            mcp_name: None,
            meta_version: None,
        }
    }

    /// `DELETE` of a session.
    pub fn delete(session: SessionId) -> Self {
        Request {
            method: Method::Delete,
            session: Some(session),
            protocol_version: Some(PROTOCOL_VERSION.to_string()),
            last_event_id: None,
            body: None,
            mcp_name: None,
            meta_version: None,
        }
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.method {
            Method::Post => write!(f, "POST")?,
            Method::Get => write!(f, "GET")?,
            Method::Delete => write!(f, "DELETE")?,
        }
        if let Some(body) = &self.body {
            write!(f, " {body}")?;
        }
        if let Some(id) = &self.last_event_id {
            write!(f, " Last-Event-ID={id}")?;
        }
        if let Some(s) = &self.session {
            write!(f, " [{s}]")?;
        }
        Ok(())
    }
}

/// JSON-RPC messages the client POSTs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method")]
pub enum ClientMessage {
    /// `initialize`; `client` is `clientInfo.name`, which names the logical client.
    #[serde(rename = "initialize")]
    Initialize {
        /// The JSON-RPC request id.
        id: RequestId,
        /// The client's name.
        client: String,
    },
    /// `notifications/initialized` (answered 202).
    #[serde(rename = "notifications/initialized")]
    Initialized,
    /// `tools/call`.
    #[serde(rename = "tools/call")]
    CallTool {
        /// The JSON-RPC request id.
        id: RequestId,
        /// The application's logical call.
        call: ToolCall,
    },
    /// `notifications/cancelled` for an earlier request (answered 202).
    #[serde(rename = "notifications/cancelled")]
    Cancelled {
        /// The JSON-RPC request id.
        request: RequestId,
    },
    /// `tasks/get`, `tasks/update` or `tasks/cancel` (the Tasks extension, `crate::tasks`).
    #[serde(rename = "tasks")]
    Task {
        /// The JSON-RPC request id.
        id: RequestId,
        /// Which of the three.
        op: crate::tasks::TaskOp,
        /// The task.
        task: crate::tasks::TaskId,
    },
    /// `server/discover`: a dual-era client's probe of the 2026-07-28 era (versioning.mdx:126-146;
    /// python-sdk mcp/client/_probe.py:52-110).
    #[serde(rename = "server/discover")]
    Discover {
        /// The JSON-RPC request id.
        id: RequestId,
    },
    /// `subscriptions/listen` (2026-07-28 `basic/patterns/subscriptions.mdx`): its SSE response
    /// is the long-lived stream of change notifications (`subscriptions.rs`).
    #[serde(rename = "subscriptions/listen")]
    Listen {
        /// The JSON-RPC request id (the subscription's id).
        id: RequestId,
    },
}

impl ClientMessage {
    /// The JSON-RPC id of a request; `None` for a notification.
    pub fn request_id(&self) -> Option<RequestId> {
        match self {
            ClientMessage::Initialize { id, .. }
            | ClientMessage::CallTool { id, .. }
            | ClientMessage::Task { id, .. }
            | ClientMessage::Discover { id }
            | ClientMessage::Listen { id } => Some(*id),
            ClientMessage::Initialized | ClientMessage::Cancelled { .. } => None,
        }
    }
}

impl fmt::Display for ClientMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientMessage::Initialize { id, .. } => write!(f, "initialize{id}"),
            ClientMessage::Initialized => write!(f, "notifications/initialized"),
            ClientMessage::CallTool { id, call } => write!(f, "tools/call{id} {} {}", call.tool, call.key),
            ClientMessage::Cancelled { request } => write!(f, "notifications/cancelled {request}"),
            ClientMessage::Task { id, op, task } => write!(f, "{op}{id} {}", task.0),
            ClientMessage::Discover { id } => write!(f, "server/discover{id}"),
            ClientMessage::Listen { id } => write!(f, "subscriptions/listen{id}"),
        }
    }
}

/// The arguments of a `tools/call` that matter to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Tool name, looked up in the server's tool table.
    pub tool: String,
    /// The application's identity for the call (stands for its arguments).
    pub key: CallKey,
    /// An idempotency key the server may honour across sessions (an extension the spec lacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The client declares `io.modelcontextprotocol/tasks` in this request's capabilities, so
    /// the server may answer with a task (`crate::tasks`). Left out of traces when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tasks: bool,
}

/// HTTP status codes the model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Status(pub u16);

impl Status {
    /// 200 OK.
    pub const OK: Status = Status(200);
    /// 202 Accepted.
    pub const ACCEPTED: Status = Status(202);
    /// 400 Bad Request.
    pub const BAD_REQUEST: Status = Status(400);
    /// 404 Not Found.
    pub const NOT_FOUND: Status = Status(404);
    /// 405 Method Not Allowed.
    pub const METHOD_NOT_ALLOWED: Status = Status(405);
    /// 409 Conflict.
    pub const CONFLICT: Status = Status(409);
    /// 410 Gone.
    pub const GONE: Status = Status(410);
    /// 500 Internal Server Error.
    pub const INTERNAL: Status = Status(500);
    /// 502 Bad Gateway.
    pub const BAD_GATEWAY: Status = Status(502);
    /// 503 Service Unavailable.
    pub const UNAVAILABLE: Status = Status(503);

    /// 2xx.
    pub fn is_success(self) -> bool {
        (200..300).contains(&self.0)
    }

    /// 4xx: the request was refused as it stood.
    pub fn is_client_error(self) -> bool {
        (400..500).contains(&self.0)
    }

    /// 400, 405, 406, 415 or 422: the request itself refused, as malformed or unsupported (a
    /// server of another era, a method or a format it does not take). Sent again unchanged, it is
    /// refused alike: a client acting by class reports it instead of trying again.
    pub fn refuses_the_request(self) -> bool {
        matches!(self.0, 400 | 405 | 406 | 415 | 422)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// What the body after a [`ResponseHead`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Body {
    /// No body (202, or an error status with only an [`ErrorBody`]).
    Empty,
    /// `application/json`: exactly one [`Frame::Json`] follows.
    Json,
    /// `text/event-stream`: SSE frames follow until [`Frame::End`] or a cut.
    EventStream,
}

/// The status line and headers of a response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponseHead {
    /// The status.
    pub status: Status,
    /// What kind of body follows.
    pub body: Body,
    /// `Mcp-Session-Id`, set on the answer to `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionId>,
    /// A machine-readable error body for 4xx/5xx answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl ResponseHead {
    /// A status with no body.
    pub fn status(status: Status) -> Self {
        ResponseHead { status, body: Body::Empty, session: None, error: None }
    }

    /// A status with a machine-readable error body.
    pub fn error(status: Status, error: ErrorBody) -> Self {
        ResponseHead { status, body: Body::Empty, session: None, error: Some(error) }
    }

    /// 200 `text/event-stream`.
    pub fn event_stream() -> Self {
        ResponseHead { status: Status::OK, body: Body::EventStream, session: None, error: None }
    }
}

/// Machine-readable reasons a server gives in an error body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// The session id is unknown or ended (with 404).
    SessionNotFound,
    /// A request other than `initialize` came without a session id (with 400).
    SessionRequired,
    /// The `Last-Event-ID` names events the server no longer holds (the design note's condition 3).
    ResumeWindowExceeded,
    /// The `Last-Event-ID` is not one this server ever issued for the session.
    UnknownEventId,
    /// A second standalone GET stream while one is open (with 409).
    StreamAlreadyOpen,
    /// JSON-RPC `HeaderMismatch` (-32020) with 400: a modern request's header and `_meta` version
    /// disagree, or a required header is missing (2026-07-28 streamable-http.mdx:256-261).
    HeaderMismatch,
    /// JSON-RPC `UnsupportedProtocolVersion` (-32022) with 400, naming the supported versions
    /// (streamable-http.mdx:263-267).
    UnsupportedProtocolVersion,
    /// Anything else.
    Other,
}

/// The JSON error body of a 4xx/5xx.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error code.
    pub code: ErrorCode,
    /// With `resume-window-exceeded`: the newest event id the server no longer holds. Resuming
    /// after it replays every event still held, so events after the client's last id up to this
    /// one are exactly what was lost. (With `unknown-event-id`: the newest id the stream holds.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_event_id: Option<EventId>,
}

/// One unit the server writes on a connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "frame", rename_all = "kebab-case")]
pub enum Frame {
    /// Status and headers; always first.
    Head(ResponseHead),
    /// The one message of an `application/json` body.
    Json(ServerMessage),
    /// One SSE event.
    Event(SseEvent),
    /// An SSE comment line (`: keepalive`): bytes on the wire, nothing for the application.
    Comment,
    /// The server ended the response cleanly (the body is complete).
    End,
}

/// The SSE `event:` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// `event: message` (or no field): a JSON-RPC message, or empty data for a priming event.
    #[default]
    Message,
    /// `event: close`: the server announces the session is ending; stop reconnecting.
    Close,
}

/// One SSE event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SseEvent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The `id:` field, if any.
    pub id: Option<EventId>,
    /// The `retry:` field in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_ms: Option<u64>,
    #[serde(default)]
    /// The `event:` field.
    pub kind: EventKind,
    /// `None` for a priming event (an id and an empty `data` field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<ServerMessage>,
}

impl SseEvent {
    /// True for a priming event: it only hands the client a cursor.
    pub fn is_priming(&self) -> bool {
        self.data.is_none() && self.kind == EventKind::Message
    }
}

/// JSON-RPC messages from server to client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServerMessage {
    /// The result of `initialize`.
    InitializeResult {
        /// The JSON-RPC request id.
        request: RequestId,
    },
    /// The `DiscoverResult` of `server/discover`: the server speaks the 2026-07-28 era.
    DiscoverResult {
        /// The JSON-RPC request id.
        request: RequestId,
    },
    /// `notifications/progress` for a running tool call; `step` counts from 1.
    Progress {
        /// The JSON-RPC request id.
        request: RequestId,
        /// The application's logical call.
        call: CallKey,
        /// The progress step, from 1.
        step: u32,
    },
    /// A server notification on the standalone stream; `seq` counts from 1 per session.
    Notification {
        /// Its sequence number in the stream, from 1.
        seq: u32,
    },
    /// The result of a `tools/call`.
    ToolResult {
        /// The JSON-RPC request id.
        request: RequestId,
        /// The application's logical call.
        call: CallKey,
    },
    /// A JSON-RPC error response to a request.
    Error {
        /// The JSON-RPC request id; `None` is JSON-RPC's `"id": null` (the request had no id,
        /// as a GET has none).
        request: Option<RequestId>,
        /// The message.
        message: String,
        /// The JSON-RPC error code when the model states one (`rpc-error200`'s answer to an
        /// unknown session); left out of traces when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i64>,
    },
    /// A `tools/call` answered with a `CreateTaskResult` (`resultType: "task"`).
    TaskCreated {
        /// The JSON-RPC request id.
        request: RequestId,
        /// The application's logical call.
        call: CallKey,
        /// The task id.
        task: crate::tasks::TaskId,
        /// `ttlMs` (`None`: unlimited).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_ms: Option<u64>,
        /// `pollIntervalMs`.
        poll_ms: u64,
    },
    /// The answer to `tasks/get` (`update`, `cancel`): the task's status, its result inline when
    /// it is terminal.
    TaskState {
        /// The JSON-RPC request id.
        request: RequestId,
        /// The task.
        task: crate::tasks::TaskId,
        /// Its status.
        status: crate::tasks::TaskStatus,
    },
    /// `notifications/subscriptions/acknowledged`: the first message on a listen stream
    /// (subscriptions.mdx:52-59).
    ListenAck {
        /// The subscription: the `subscriptions/listen` request's id.
        subscription: RequestId,
    },
    /// A change notification on a listen stream (`notifications/tools/list_changed` carrying the
    /// subscription id, subscriptions.mdx:83-89).
    Changed {
        /// The subscription.
        subscription: RequestId,
        /// The change's id (`subscriptions.rs`, `change_id`).
        change: String,
    },
}

impl ServerMessage {
    /// The request this message answers or reports on, if any.
    pub fn request(&self) -> Option<RequestId> {
        match self {
            ServerMessage::InitializeResult { request }
            | ServerMessage::DiscoverResult { request }
            | ServerMessage::Progress { request, .. }
            | ServerMessage::ToolResult { request, .. }
            | ServerMessage::TaskCreated { request, .. }
            | ServerMessage::TaskState { request, .. } => Some(*request),
            ServerMessage::Error { request, .. } => *request,
            ServerMessage::Notification { .. } | ServerMessage::ListenAck { .. } | ServerMessage::Changed { .. } => {
                None
            }
        }
    }

    /// True for a message that ends its request (a result or an error).
    pub fn is_response(&self) -> bool {
        matches!(
            self,
            ServerMessage::InitializeResult { .. }
                | ServerMessage::DiscoverResult { .. }
                | ServerMessage::ToolResult { .. }
                | ServerMessage::Error { .. }
                | ServerMessage::TaskCreated { .. }
                | ServerMessage::TaskState { .. }
        )
    }
}

impl fmt::Display for ServerMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerMessage::InitializeResult { request } => write!(f, "initialize result {request}"),
            ServerMessage::DiscoverResult { request } => write!(f, "discover result {request}"),
            ServerMessage::Progress { request, step, .. } => write!(f, "progress {request} step {step}"),
            ServerMessage::Notification { seq } => write!(f, "notification {seq}"),
            ServerMessage::ToolResult { request, call } => write!(f, "result {request} {call}"),
            ServerMessage::Error { request: Some(request), message, .. } => write!(f, "error {request}: {message}"),
            ServerMessage::Error { request: None, message, .. } => write!(f, "error (id null): {message}"),
            ServerMessage::TaskCreated { request, task, .. } => write!(f, "task created {request} {}", task.0),
            ServerMessage::TaskState { request, task, status } => write!(f, "task {} {status:?} {request}", task.0),
            ServerMessage::ListenAck { subscription } => write!(f, "subscription {subscription} acknowledged"),
            ServerMessage::Changed { subscription, change } => {
                write!(f, "change {change} on subscription {subscription}")
            }
        }
    }
}

/// How a connection ended, as the side that observed it saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnEnd {
    /// [`Frame::End`] arrived: the response is complete.
    Clean,
    /// The connection broke before `End` (RST, EOF mid-body, the peer crashed, an idle cut).
    Reset,
    /// The connection could not be opened at all (refused, unreachable).
    Refused,
    /// This side closed it on purpose (cancel, shutdown).
    Aborted,
}

impl fmt::Display for ConnEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ConnEnd::Clean => "clean end",
            ConnEnd::Reset => "reset",
            ConnEnd::Refused => "refused",
            ConnEnd::Aborted => "aborted",
        };
        f.write_str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{CallKey, RequestId};

    #[test]
    fn server_messages_read_as_the_diagrams_show_them() {
        let result = ServerMessage::ToolResult { request: RequestId(3), call: CallKey(1) };
        assert_eq!(result.to_string(), format!("result {} {}", RequestId(3), CallKey(1)));
        let error = |request| ServerMessage::Error { request, message: "Session not found".into(), code: None };
        assert_eq!(error(None).to_string(), "error (id null): Session not found");
        assert_eq!(error(Some(RequestId(2))).to_string(), format!("error {}: Session not found", RequestId(2)));
        assert_eq!(ServerMessage::Notification { seq: 4 }.to_string(), "notification 4");
    }

    #[test]
    fn only_a_result_or_an_error_ends_its_request_and_notifications_name_none() {
        let request = RequestId(3);
        let task = crate::tasks::TaskId("r0.0-t0".into());
        let responses = [
            ServerMessage::InitializeResult { request },
            ServerMessage::DiscoverResult { request },
            ServerMessage::ToolResult { request, call: CallKey(1) },
            ServerMessage::Error { request: None, message: "Session not found".into(), code: None },
            ServerMessage::TaskCreated { request, call: CallKey(1), task: task.clone(), ttl_ms: None, poll_ms: 1000 },
            ServerMessage::TaskState { request, task, status: crate::tasks::TaskStatus::Working },
        ];
        for m in &responses {
            assert!(m.is_response(), "{m}");
        }
        let others = [
            ServerMessage::Progress { request, call: CallKey(1), step: 1 },
            ServerMessage::Notification { seq: 1 },
            ServerMessage::ListenAck { subscription: request },
            ServerMessage::Changed { subscription: request, change: "r0-c1".into() },
        ];
        for m in &others {
            assert!(!m.is_response(), "{m}");
        }
        assert_eq!(others.iter().map(ServerMessage::request).collect::<Vec<_>>(), [Some(request), None, None, None]);
    }

    #[test]
    fn only_a_message_event_without_data_is_a_priming_event() {
        let event = |kind, data| SseEvent { id: Some(EventId::from("0-1")), retry_ms: None, kind, data };
        assert!(event(EventKind::Message, None).is_priming());
        let result = ServerMessage::ToolResult { request: RequestId(3), call: CallKey(1) };
        assert!(!event(EventKind::Message, Some(result)).is_priming(), "a message carries data");
        assert!(!event(EventKind::Close, None).is_priming(), "a close event hands no cursor");
    }

    #[test]
    fn client_messages_read_as_their_methods() {
        let call = ToolCall { tool: "pay".into(), key: CallKey(1), idempotency_key: None, tasks: false };
        let id = RequestId(3);
        assert_eq!(ClientMessage::CallTool { id, call }.to_string(), format!("tools/call{id} pay {}", CallKey(1)));
        assert_eq!(ClientMessage::Initialized.to_string(), "notifications/initialized");
        assert_eq!(ClientMessage::Discover { id }.to_string(), format!("server/discover{id}"));
        assert_eq!(ClientMessage::Listen { id }.to_string(), format!("subscriptions/listen{id}"));
    }

    #[test]
    fn a_status_reads_as_its_code_and_a_connection_end_as_words() {
        assert_eq!(Status::NOT_FOUND.to_string(), "404");
        assert!(Status(200).is_success() && Status(299).is_success());
        assert!(!Status(199).is_success() && !Status(300).is_success() && !Status::NOT_FOUND.is_success());
        let ends = [ConnEnd::Clean, ConnEnd::Reset, ConnEnd::Refused, ConnEnd::Aborted].map(|e| e.to_string());
        assert_eq!(ends, ["clean end", "reset", "refused", "aborted"]);
    }

    #[test]
    fn a_request_reads_as_its_method_body_cursor_and_session() {
        let session = || Some(SessionId::from("0-1"));
        assert_eq!(Request::initialize(RequestId(1), "app").to_string(), "POST initialize#1");
        assert_eq!(
            Request::post(session(), ClientMessage::Initialized).to_string(),
            "POST notifications/initialized [0-1]"
        );
        assert_eq!(Request::get(session(), None).to_string(), "GET [0-1]");
        assert_eq!(Request::get(session(), Some(EventId::from("0-1-4"))).to_string(), "GET Last-Event-ID=0-1-4 [0-1]");
        assert_eq!(Request::delete(SessionId::from("0-1")).to_string(), "DELETE [0-1]");
    }
}
