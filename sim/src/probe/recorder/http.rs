//! A scripted Streamable HTTP client: one TCP connection per HTTP exchange (as the simulator
//! models it), every wait bounded, every exchange optionally written into the trace.

use crate::probe::error::ProbeError;
use crate::probe::recorder::rec::Rec;
use crate::probe::recorder::sse::{RawEvent, SseItem, SseParser};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcpsim_model::http::{Body, ConnEnd, EventKind, ResponseHead, SseEvent, Status, PROTOCOL_VERSION};
use mcpsim_model::ids::{ConnId, EventId, SessionId, StreamNo};
use mcpsim_model::trace::{Actor, StepKind};
use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// Where requests go: a loopback address (the proxy's, usually) and the endpoint's path.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The address to connect to.
    pub addr: SocketAddr,
    /// `host:port` for the `Host` header.
    pub host: String,
    /// The endpoint's path.
    pub path: String,
}

/// The headers and body of one request.
#[derive(Clone, Debug, Default)]
pub struct Outgoing {
    /// `POST`, `GET` or `DELETE`.
    pub method: &'static str,
    /// The `Mcp-Session-Id` to send.
    pub session: Option<String>,
    /// The `Last-Event-ID` to send.
    pub last_event_id: Option<String>,
    /// The JSON-RPC body (POST).
    pub body: Option<Value>,
    /// Send `MCP-Protocol-Version` (every request after `initialize`).
    pub protocol: bool,
    /// The `MCP-Protocol-Version` value to send instead of the legacy one (sent even without
    /// `protocol`): the era probe's modern requests.
    pub version: Option<String>,
    /// Further headers (the modern era's `Mcp-Method`, `Mcp-Name`).
    pub headers: Vec<(&'static str, String)>,
}

impl Outgoing {
    /// A POST of `body`, in `session` if any.
    pub fn post(session: Option<&str>, body: Value) -> Self {
        Outgoing {
            method: "POST",
            session: session.map(str::to_string),
            body: Some(body),
            protocol: session.is_some(),
            ..Default::default()
        }
    }
    /// A GET of the stream, resuming after `last_event_id` if any.
    pub fn get(session: &str, last_event_id: Option<&str>) -> Self {
        Outgoing {
            method: "GET",
            session: Some(session.to_string()),
            last_event_id: last_event_id.map(str::to_string),
            protocol: true,
            ..Default::default()
        }
    }
    /// A DELETE of the session.
    pub fn delete(session: &str) -> Self {
        Outgoing { method: "DELETE", session: Some(session.to_string()), protocol: true, ..Default::default() }
    }
}

/// What the trace should say about an exchange: the model's request, the session and stream
/// its events belong to.
#[derive(Clone, Debug)]
pub struct TraceAs {
    /// The model's request this exchange stands for.
    pub request: mcpsim_model::http::Request,
    /// The session the trace files it under.
    pub session: Option<SessionId>,
    /// The stream it opens or resumes.
    pub stream: StreamNo,
}

/// One item read from a response body.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// An SSE event.
    Event(RawEvent),
    /// An SSE comment line (a keep-alive).
    Comment,
    /// A JSON body.
    Json(Value),
    /// The body ended cleanly.
    End,
    /// The connection broke before the end of the body.
    Reset(String),
    /// Nothing arrived within the wait.
    TimedOut,
    /// A bound of [`crate::probe::limits`] was hit: the probe closed the connection (the line says
    /// which bound). Every later call returns `End`.
    Capped(String),
}

/// The client: numbers connections and writes the traced ones.
#[derive(Clone, Debug)]
pub struct Client {
    /// Where requests go.
    pub endpoint: Endpoint,
    /// The trace recorder.
    pub rec: Rec,
    next_conn: Arc<AtomicU64>,
    /// Bound on connecting and on waiting for a response head.
    pub head_timeout: Duration,
}

/// One response being read.
pub struct Exchange {
    /// The connection's number in the trace.
    pub conn: ConnId,
    /// The HTTP status.
    pub status: u16,
    /// The `Mcp-Session-Id` answered, if any.
    pub session_header: Option<String>,
    /// The `Content-Type` answered.
    pub content_type: String,
    /// The whole body, when it was not an event stream.
    pub body_text: Option<String>,
    body: Option<Incoming>,
    parser: SseParser,
    queue: VecDeque<Item>,
    done: bool,
    driver: JoinHandle<()>,
    rec: Rec,
    trace: Option<TraceAs>,
}

impl Drop for Exchange {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Client {
    /// A client of `endpoint` recording into `rec`.
    pub fn new(endpoint: Endpoint, rec: Rec) -> Self {
        Client { endpoint, rec, next_conn: Arc::new(AtomicU64::new(1)), head_timeout: Duration::from_secs(10) }
    }

    /// Sends a request on a new connection and waits for its head. A connection that cannot be
    /// opened or breaks before the head is `Err` (and, if traced, a `conn-end`).
    pub async fn send(&self, out: Outgoing, trace: Option<TraceAs>) -> Result<Exchange, ProbeError> {
        let conn = ConnId(self.next_conn.fetch_add(1, Ordering::Relaxed));
        if let Some(t) = &trace {
            self.rec.push(Actor::Client, StepKind::Send { conn, request: t.request.clone() });
        }
        match timeout(self.head_timeout, self.open(&out)).await {
            Ok(Ok((resp, driver))) => {
                let (parts, body) = resp.into_parts();
                let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
                let content_type = header("content-type").unwrap_or_default();
                let mut ex = Exchange {
                    conn,
                    status: parts.status.as_u16(),
                    session_header: header("mcp-session-id"),
                    content_type,
                    body_text: None,
                    body: Some(body),
                    parser: SseParser::default(),
                    queue: VecDeque::new(),
                    done: false,
                    driver,
                    rec: self.rec.clone(),
                    trace,
                };
                ex.record_head();
                Ok(ex)
            }
            Ok(Err((refused, e))) => {
                if let Some(_t) = &trace {
                    let end = if refused { ConnEnd::Refused } else { ConnEnd::Reset };
                    self.rec.push(Actor::Client, StepKind::ConnEnd { conn, end });
                }
                Err(ProbeError::Http(format!("{} {}: {e}", out.method, self.endpoint.path)))
            }
            Err(_) => {
                if trace.is_some() {
                    // The probe gave up waiting and closed the connection itself.
                    self.rec.push(Actor::Client, StepKind::ConnEnd { conn, end: ConnEnd::Aborted });
                }
                Err(ProbeError::Timeout(format!("{} {}: no response head", out.method, self.endpoint.path)))
            }
        }
    }

    async fn open(&self, out: &Outgoing) -> Result<(hyper::Response<Incoming>, JoinHandle<()>), (bool, String)> {
        let tcp = TcpStream::connect(self.endpoint.addr).await.map_err(|e| (true, e.to_string()))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.map_err(|e| (true, e.to_string()))?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut req = hyper::Request::builder()
            .method(out.method)
            .uri(&self.endpoint.path)
            .header("host", &self.endpoint.host)
            .header("accept", "application/json, text/event-stream");
        if let Some(v) = &out.version {
            req = req.header("mcp-protocol-version", v);
        } else if out.protocol {
            req = req.header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        for (name, value) in &out.headers {
            req = req.header(*name, value);
        }
        if let Some(s) = &out.session {
            req = req.header("mcp-session-id", s);
        }
        if let Some(id) = &out.last_event_id {
            req = req.header("last-event-id", id);
        }
        let body = match &out.body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        let req = req.body(Full::new(body)).map_err(|e| (false, e.to_string()))?;
        let resp = sender.send_request(req).await.map_err(|e| {
            driver.abort();
            (false, e.to_string())
        })?;
        Ok((resp, driver))
    }
}

impl Exchange {
    /// Whether the answer is an event stream.
    pub fn is_sse(&self) -> bool {
        self.content_type.starts_with("text/event-stream")
    }

    /// Whether the answer is a JSON body.
    pub fn is_json(&self) -> bool {
        self.content_type.starts_with("application/json")
    }

    fn record_head(&mut self) {
        let Some(t) = &self.trace else { return };
        let body = if self.is_sse() {
            Body::EventStream
        } else if self.is_json() {
            Body::Json
        } else {
            Body::Empty
        };
        let head = ResponseHead {
            status: Status(self.status),
            body,
            session: self.session_header.clone().map(SessionId::from),
            error: None,
        };
        let conn = self.conn;
        let _ = t;
        self.rec.push(Actor::Client, StepKind::Response { conn, head });
    }

    /// The next item, waiting at most `within`. After `End` or `Reset` every call returns it again.
    pub async fn next(&mut self, within: Duration) -> Item {
        let deadline = tokio::time::Instant::now() + within;
        // Bounded: each round either returns or consumes one body frame.
        for _ in 0..100_000 {
            if let Some(item) = self.queue.pop_front() {
                if let Item::Event(e) = &item {
                    if e.oversize {
                        self.rec.note_cap(format!(
                            "cap: an event over {} bytes (id {:?}); its fields past the bound were dropped",
                            crate::probe::limits::MAX_EVENT_BYTES,
                            e.id.as_deref().map(crate::error::escape).unwrap_or_default()
                        ));
                    }
                    if let Some(line) = self.rec.count_event(e) {
                        self.queue.clear();
                        self.body = None;
                        self.done = true;
                        self.driver.abort();
                        let item = Item::Capped(line);
                        self.record(&item);
                        return item;
                    }
                }
                self.record(&item);
                return item;
            }
            if self.done {
                return Item::End;
            }
            let Some(body) = self.body.as_mut() else { return Item::End };
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Item::TimedOut,
                Ok(None) => {
                    self.finish_body();
                    self.queue.push_back(Item::End);
                    self.done = true;
                }
                Ok(Some(Err(e))) => {
                    self.body = None;
                    self.done = true;
                    let item = Item::Reset(e.to_string());
                    self.record(&item);
                    return item;
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        if self.is_sse() {
                            for it in self.parser.feed(&data) {
                                self.queue.push_back(match it {
                                    SseItem::Event(e) => Item::Event(e),
                                    SseItem::Comment(_) => Item::Comment,
                                });
                            }
                        } else {
                            let text = self.body_text.get_or_insert_with(String::new);
                            if text.len() < crate::probe::limits::MAX_BODY_BYTES {
                                text.push_str(&String::from_utf8_lossy(&data));
                            }
                        }
                    }
                }
            }
        }
        Item::TimedOut
    }

    fn finish_body(&mut self) {
        if self.is_json() {
            if let Some(v) = self.body_text.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok()) {
                self.queue.push_back(Item::Json(v));
            }
        }
    }

    /// Reads to the end (or `within`), collecting items.
    pub async fn drain(&mut self, within: Duration) -> Vec<Item> {
        let deadline = tokio::time::Instant::now() + within;
        let mut items = Vec::new();
        for _ in 0..100_000 {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let item = self.next(left).await;
            let last = matches!(item, Item::End | Item::Reset(_) | Item::TimedOut);
            items.push(item);
            if last {
                break;
            }
        }
        items
    }

    /// The JSON body (an `application/json` answer), read within `within`.
    pub async fn json(&mut self, within: Duration) -> Option<Value> {
        self.drain(within).await.into_iter().find_map(|i| match i {
            Item::Json(v) => Some(v),
            Item::Event(e) => {
                e.data.and_then(|d| serde_json::from_str(&d).ok()).filter(|v: &Value| v.get("id").is_some())
            }
            _ => None,
        })
    }

    /// Closes the connection from this side (recorded as aborted).
    pub fn abort(mut self) {
        self.driver.abort();
        self.body = None;
        if self.trace.is_some() && !self.done {
            let conn = self.conn;
            self.rec.push(Actor::Client, StepKind::ConnEnd { conn, end: ConnEnd::Aborted });
        }
        self.done = true;
    }

    fn record(&self, item: &Item) {
        let Some(t) = &self.trace else { return };
        let conn = self.conn;
        match item {
            Item::Event(e) => {
                let value =
                    e.data.as_deref().filter(|d| !d.is_empty()).and_then(|d| serde_json::from_str::<Value>(d).ok());
                let message = value.as_ref().and_then(|v| self.rec.message(v));
                let id = e.id.clone().map(EventId::from);
                if let (Some(session), Some(id)) = (&t.session, &id) {
                    let seq = seq_of(message.as_ref());
                    self.rec.stored(session, t.stream, seq, id, message.clone());
                } else if let (Some(session), None, Some(m)) = (&t.session, &id, &message) {
                    // A server without an event store sends no ids; the event it sent is still
                    // inferred as stored (under a name of the probe's, by stream and place), so
                    // that the oracles match the delivery with it by message.
                    let seq = seq_of(Some(m));
                    let name = EventId::from(format!("no-id:{}:{seq}", t.stream.0));
                    self.rec.stored(session, t.stream, seq, &name, message.clone());
                }
                let event = SseEvent {
                    id: id.clone(),
                    retry_ms: e.retry_ms,
                    kind: if e.event.as_deref() == Some("close") { EventKind::Close } else { EventKind::Message },
                    data: message.clone(),
                };
                self.rec.push(Actor::Client, StepKind::Event { conn, event });
                self.hand_to_app(t, id, message);
            }
            Item::Comment => self.rec.push(Actor::Client, StepKind::Comment { conn }),
            Item::Json(v) => {
                if let Some(message) = self.rec.message(v) {
                    self.rec.push(Actor::Client, StepKind::Json { conn, message: message.clone() });
                    self.hand_to_app(t, None, Some(message));
                }
            }
            Item::End => self.rec.push(Actor::Client, StepKind::ConnEnd { conn, end: ConnEnd::Clean }),
            Item::Reset(_) => self.rec.push(Actor::Client, StepKind::ConnEnd { conn, end: ConnEnd::Reset }),
            Item::Capped(line) => {
                self.rec.push(Actor::Client, StepKind::ConnEnd { conn, end: ConnEnd::Aborted });
                // The probe stopped reading a call's stream: its application gives up on the call.
                if let Some(mcpsim_model::http::ClientMessage::CallTool { call, .. }) = &t.request.body {
                    self.rec.push(Actor::App, StepKind::AppUnknownOutcome { call: call.key, reason: line.clone() });
                }
            }
            Item::TimedOut => {}
        }
    }

    /// The probe's application takes everything its client hands over, as it arrives.
    fn hand_to_app(&self, t: &TraceAs, id: Option<EventId>, message: Option<mcpsim_model::http::ServerMessage>) {
        use mcpsim_model::http::ServerMessage as M;
        let Some(session) = t.session.clone() else { return };
        match message {
            Some(M::ToolResult { call, .. }) => self.rec.push(Actor::App, StepKind::AppResult { call, session, id }),
            Some(M::Error { request: Some(request), message, .. }) => {
                if let Some(call) = self.rec.call_of(request.0) {
                    self.rec.push(Actor::App, StepKind::AppError { call, error: message });
                }
            }
            Some(m @ (M::Progress { .. } | M::Notification { .. })) => {
                let call = match &m {
                    M::Progress { call, .. } => Some(*call),
                    _ => None,
                };
                self.rec.push(Actor::App, StepKind::AppEvent { session, id, call, message: m });
            }
            _ => {}
        }
    }
}

/// Where an event sits in its stream, from the probe tool's own counters: a progress tick's
/// number, a notification's number, 0 for a priming event; a result after every tick.
pub fn seq_of(message: Option<&mcpsim_model::http::ServerMessage>) -> u32 {
    use mcpsim_model::http::ServerMessage as M;
    match message {
        None => 0,
        Some(M::Progress { step, .. }) => *step,
        Some(M::Notification { seq }) => *seq,
        Some(_) => u32::MAX / 2,
    }
}
