//! Sequence diagrams of a trace (`mcpsim show`): who sent what to whom, when, and which step broke
//! which invariant.
//!
//! One model, three drawings. [`render`] first turns the steps into rows (a shape between the
//! lifelines app, client, lb and server, a label and a simulated time), hides redundant rows and
//! folds runs of similar ones, then draws the rows as text, Mermaid or SVG. Every drawing is a pure
//! function of the trace and the options: the same input gives the same bytes.

use crate::report::timeline;
use mcpsim_model::http::{Body, ConnEnd, EventKind, ResponseHead, ServerMessage, SseEvent};
use mcpsim_model::ids::{ConnId, EventId, SessionId};
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::{Footer, Header, ResumeOutcome, Step, StepKind, Trace, ViolationRecord};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// How to draw a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Fixed-width columns for a terminal.
    Text,
    /// A Mermaid `sequenceDiagram` block (renders on GitHub).
    Mermaid,
    /// A standalone SVG file.
    Svg,
    /// A self-contained HTML page around the SVG drawing: the cause chain and an interactive
    /// timeline (`report::html` builds it; [`render`] draws only its SVG).
    Html,
}

/// A `--format` value that names no [`Format`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown diagram format {0:?}: use text, mermaid, svg or html")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(Format::Text),
            "mermaid" => Ok(Format::Mermaid),
            "svg" => Ok(Format::Svg),
            "html" => Ok(Format::Html),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Text => "text",
            Format::Mermaid => "mermaid",
            Format::Svg => "svg",
            Format::Html => "html",
        })
    }
}

/// What to leave out of a diagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagramOptions {
    /// Fold runs of similar consecutive steps into one row and hide `EventStored` rows of events
    /// the client received. Off: one row per step.
    pub collapse: bool,
    /// Draw at most this many rows, then say how many more there were.
    pub max_rows: Option<usize>,
}

impl Default for DiagramOptions {
    fn default() -> Self {
        DiagramOptions { collapse: true, max_rows: None }
    }
}

/// Draws a trace as a sequence diagram. [`Format::Html`] draws the SVG the page embeds: the page
/// itself is `report::html`'s, which builds on this module.
pub fn render(trace: &Trace, format: Format, opts: &DiagramOptions) -> String {
    let diagram = Diagram::build(trace, opts);
    match format {
        Format::Text => text::draw(&diagram),
        Format::Mermaid => mermaid::draw(&diagram),
        Format::Svg | Format::Html => svg::draw(&diagram),
    }
}

// ---------------------------------------------------------------------------------------------
// The model every drawing shares.

/// A lifeline, left to right: one per server replica, in replica order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    App,
    Client,
    Lb,
    Server(u32),
}

/// The (first) server's lifeline: the only one of a single-replica trace.
const SERVER: Lane = Lane::Server(0);

impl Lane {
    fn index(self) -> usize {
        match self {
            Lane::App => 0,
            Lane::Client => 1,
            Lane::Lb => 2,
            Lane::Server(replica) => 3 + replica as usize,
        }
    }

    /// The name shown in lifeline headers (the trace's actor names; `server#1` for a replica
    /// when there are several, as the balancer's routing rows name them).
    fn name(self, servers: u32) -> String {
        match self {
            Lane::App => "app".into(),
            Lane::Client => "client".into(),
            Lane::Lb => "lb".into(),
            Lane::Server(_) if servers <= 1 => "server".into(),
            Lane::Server(replica) => format!("server#{replica}"),
        }
    }
}

/// What a row draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A message; `reply` draws it dashed (server to client).
    Arrow { from: Lane, to: Lane, reply: bool },
    /// The load balancer cut a connection: a mark on its lifeline, resets to the client and to
    /// the server lifeline of the connection.
    Cut(Lane),
    /// A connection ended, as seen on this lifeline.
    Mark(Lane),
    /// A note over the lifelines from the first to the second (the same one for a plain note).
    Note(Lane, Lane),
}

impl Shape {
    /// The leftmost and rightmost lifelines the shape touches.
    fn lanes(self) -> (Lane, Lane) {
        match self {
            Shape::Arrow { from, to, .. } => (from.min(to), from.max(to)),
            Shape::Cut(server) => (Lane::Client, server),
            Shape::Mark(lane) => (lane, lane),
            Shape::Note(a, b) => (a.min(b), a.max(b)),
        }
    }
}

/// One row of a diagram: one step, or a folded run of steps.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    /// Index in the trace of the (first) step.
    step: usize,
    /// Simulated time of the (first) step, µs.
    t: u64,
    shape: Shape,
    label: String,
    /// A step worth the reader's eye even without a violation: a side effect, a silent resume.
    emphasis: bool,
    /// The invariants this step broke; drawn in red right after it.
    violations: Vec<ViolationRecord>,
}

/// A whole diagram, ready to draw.
#[derive(Clone, Debug, PartialEq)]
struct Diagram {
    title: String,
    verdict: String,
    rows: Vec<Row>,
    /// Rows left out by `max_rows`.
    more: usize,
    /// Violations whose step is not among `rows` (left out, or no step to anchor to).
    late: Vec<ViolationRecord>,
    /// Server lifelines: one per replica of a multi-replica trace.
    servers: u32,
}

impl Diagram {
    fn build(trace: &Trace, opts: &DiagramOptions) -> Diagram {
        let verdict = trace.footer.as_ref().map(|f| f.verdict.as_slice()).unwrap_or(&[]);
        let mut anchored: BTreeMap<usize, Vec<ViolationRecord>> = BTreeMap::new();
        let mut late = Vec::new();
        for v in verdict {
            match violation_step(v, &trace.steps) {
                Some(i) => anchored.entry(i).or_default().push(v.clone()),
                None => late.push(v.clone()),
            }
        }
        let delivered = if opts.collapse { delivered_events(&trace.steps) } else { BTreeSet::new() };
        let replicas = Replicas::of(&trace.steps);
        let mut items = Vec::with_capacity(trace.steps.len());
        for (i, step) in trace.steps.iter().enumerate() {
            let violations = anchored.remove(&i).unwrap_or_default();
            // A violating step is always drawn and never folded: it is what the reader came for.
            if violations.is_empty() && is_redundant_store(&step.kind, &delivered) {
                continue;
            }
            let mut item = with_client_index(item_of(step, &replicas.place(step)), step.client.or(step.conn_client));
            item.row.step = i;
            if !violations.is_empty() {
                item.fold = None;
                item.row.violations = violations;
            }
            items.push(item);
        }
        let rows = if opts.collapse { fold_runs(&items) } else { items.into_iter().map(|i| i.row).collect() };
        let (rows, more, mut cut_violations) = truncate(rows, opts.max_rows);
        cut_violations.append(&mut late);
        Diagram {
            title: title(&trace.header),
            verdict: verdict_line(trace.footer.as_ref()),
            rows,
            more,
            late: cut_violations,
            servers: replicas.count,
        }
    }

    /// The lifelines, left to right.
    fn lanes(&self) -> Vec<Lane> {
        let servers = (0..self.servers.max(1)).map(Lane::Server);
        [Lane::App, Lane::Client, Lane::Lb].into_iter().chain(servers).collect()
    }

    /// The rightmost lifeline.
    fn last(&self) -> Lane {
        Lane::Server(self.servers.max(1) - 1)
    }
}

/// Which replica each connection went to, and how many replicas there are: read from the
/// balancer's routing steps (which name connections as the client does, `Step::conn_client`
/// telling whose with several clients) and the server steps' `replica_index`.
struct Replicas {
    routed: BTreeMap<(Option<u32>, ConnId), u32>,
    count: u32,
}

impl Replicas {
    fn of(steps: &[Step]) -> Replicas {
        let mut routed = BTreeMap::new();
        let mut count = 1;
        for step in steps {
            if let StepKind::LbRouted { conn, replica, .. } = &step.kind {
                routed.insert((step.conn_client, *conn), *replica);
                count = count.max(replica + 1);
            }
            if let Some(replica) = step.replica {
                count = count.max(replica + 1);
            }
        }
        Replicas { routed, count }
    }

    /// Where a step's rows go: the lifeline of the server it concerns (its own replica, or the
    /// replica its connection was routed to) and the rightmost lifeline.
    fn place(&self, step: &Step) -> Place {
        let last = Lane::Server(self.count - 1);
        if self.count == 1 {
            return Place { server: SERVER, last };
        }
        let mut kind = step.kind.clone();
        let conn = kind.conn_mut().map(|c| *c);
        let routed = conn.and_then(|c| self.routed.get(&(step.client.or(step.conn_client), c)));
        let server = match (step.replica, routed, conn) {
            (Some(replica), _, _) => Lane::Server(replica),
            (None, Some(replica), _) => Lane::Server(*replica),
            // A connection no replica took: the balancer answered it.
            (None, None, Some(_)) => Lane::Lb,
            (None, None, None) => SERVER,
        };
        Place { server, last }
    }
}

/// The lifelines a step's row is drawn against.
#[derive(Clone, Copy, Debug)]
struct Place {
    /// The server side of the step: its replica's lifeline (the balancer's for a connection no
    /// replica took).
    server: Lane,
    /// The rightmost lifeline: notes over every lifeline end there.
    last: Lane,
}

/// `mcpsim seed 7 · naive × reference × long-tool`; `?` for whatever the header lacks.
pub(crate) fn title(header: &Header) -> String {
    let text = |pointer: &str| header.scenario.pointer(pointer).and_then(|v| v.as_str());
    let client = text("/scenario/client/name").unwrap_or("?");
    let server = text("/scenario/server/name").unwrap_or("?");
    let scenario = text("/scenario/name").or_else(|| text("/scenario")).unwrap_or("?");
    format!("mcpsim seed {} · {client} × {server} × {scenario}", header.seed)
}

/// `verdict: 2 violation(s): no-orphaned-session, no-duplicate-execution`.
pub(crate) fn verdict_line(footer: Option<&Footer>) -> String {
    let Some(footer) = footer else {
        return "verdict: unknown (no footer: the trace is incomplete)".to_string();
    };
    if footer.verdict.is_empty() {
        return "verdict: no invariant violated".to_string();
    }
    let mut names: Vec<&str> = Vec::new();
    for v in &footer.verdict {
        if !names.contains(&v.invariant.as_str()) {
            names.push(&v.invariant);
        }
    }
    format!("verdict: {} violation(s): {}", footer.verdict.len(), names.join(", "))
}

/// `VIOLATION no-duplicate-execution: call0 — pay ran twice (at 1m00.021s)`.
pub(crate) fn violation_text(v: &ViolationRecord) -> String {
    let detail = if v.detail.is_empty() { String::new() } else { format!(" — {}", v.detail) };
    format!("VIOLATION {}: {}{detail} (at {})", v.invariant, v.subject, format_micros(v.t))
}

// ---------------------------------------------------------------------------------------------
// Which step broke an invariant.

/// The index of the step that broke `v`: where every drawing (and the HTML page) puts it. The
/// footer names it (`step`); an index past the steps (a hand-edited trace) falls on the last step.
pub fn violation_step(v: &ViolationRecord, steps: &[Step]) -> Option<usize> {
    let last = steps.len().checked_sub(1)?;
    Some(usize::try_from(v.step).map_or(last, |i| i.min(last)))
}

// ---------------------------------------------------------------------------------------------
// Hiding redundant rows.

/// Events the client received, by (session of the connection if known, event id). Event ids are
/// only unique within a session, so the connection's session is tracked from its request (or,
/// for `initialize`, from the response that minted it).
fn delivered_events(steps: &[Step]) -> BTreeSet<(Option<SessionId>, EventId)> {
    let mut session_of: BTreeMap<ConnId, SessionId> = BTreeMap::new();
    let mut delivered = BTreeSet::new();
    for step in steps {
        match &step.kind {
            StepKind::Send { conn, request } => match &request.session {
                Some(s) => {
                    session_of.insert(*conn, s.clone());
                }
                // A restarted client may number connections again: forget the old session.
                None => {
                    session_of.remove(conn);
                }
            },
            StepKind::Response { conn, head: ResponseHead { session: Some(s), .. } } => {
                session_of.insert(*conn, s.clone());
            }
            StepKind::Event { conn, event: SseEvent { id: Some(id), .. } } => {
                delivered.insert((session_of.get(conn).cloned(), id.clone()));
            }
            _ => {}
        }
    }
    delivered
}

/// An `EventStored` of an event the client also received says nothing the `Event` row does not.
/// Stored events nobody received stay: they are what silent loss is made of.
fn is_redundant_store(kind: &StepKind, delivered: &BTreeSet<(Option<SessionId>, EventId)>) -> bool {
    match kind {
        StepKind::EventStored { session, id, .. } => {
            delivered.contains(&(Some(session.clone()), id.clone())) || delivered.contains(&(None, id.clone()))
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Steps as rows.

/// How a row may fold with similar neighbours.
#[derive(Clone, Debug, PartialEq)]
struct Fold {
    /// Rows fold together only with equal keys.
    key: String,
    /// What a folded run is called: `progress event on c3`.
    noun: String,
    /// What tells the folded rows apart, summarised as first … last.
    id: Option<String>,
    /// The plural of what `id` is: `ids`, `conns`, `attempts`.
    ids: &'static str,
    /// Noise: may fold in a run of its own kind (keep-alives, progress, stored events).
    alone: bool,
    /// A retry: a repeated cycle containing it may fold (reconnect attempts).
    retry: bool,
}

impl Fold {
    fn noise(key: String, noun: String) -> Fold {
        Fold { key, noun, id: None, ids: "ids", alone: true, retry: false }
    }

    fn in_cycle(key: String, noun: String) -> Fold {
        Fold { key, noun, id: None, ids: "ids", alone: false, retry: false }
    }

    fn with_id(self, ids: &'static str, id: String) -> Fold {
        Fold { id: Some(id), ids, ..self }
    }

    fn retry(self) -> Fold {
        Fold { retry: true, ..self }
    }
}

/// A row before folding.
#[derive(Clone, Debug, PartialEq)]
struct Item {
    row: Row,
    fold: Option<Fold>,
}

impl Item {
    fn new(t: u64, shape: Shape, label: String) -> Item {
        Item { row: Row { step: 0, t, shape, label, emphasis: false, violations: Vec::new() }, fold: None }
    }

    fn emphasised(mut self, yes: bool) -> Item {
        self.row.emphasis = yes;
        self
    }

    fn folding(mut self, fold: Fold) -> Item {
        self.fold = Some(fold);
        self
    }
}

fn note(lane: Lane) -> Shape {
    Shape::Note(lane, lane)
}

/// The row of one step. Requests are drawn client → server in one arrow across the lb lifeline
/// (the trace records only what the client sent and received); with several replicas the arrow
/// ends at the replica the connection was routed to, and a server step sits on its replica's.
fn item_of(step: &Step, place: &Place) -> Item {
    use StepKind::*;
    let t = step.t;
    let described = || timeline::describe(&step.kind);
    let to_server = Shape::Arrow { from: Lane::Client, to: place.server, reply: false };
    let to_client = Shape::Arrow { from: place.server, to: Lane::Client, reply: true };
    let all_lanes = Shape::Note(Lane::App, place.last);
    // A server step (or a cut) of a connection no replica took still belongs to a server.
    let replica = if place.server == Lane::Lb { SERVER } else { place.server };
    let server = note(replica);
    match &step.kind {
        Send { conn, request } => Item::new(t, to_server, format!("{request} ({conn})"))
            .folding(Fold::in_cycle(format!("send {request}"), request.to_string()).with_id("conns", conn.to_string())),
        Response { conn, head } => {
            let what = response_label(head);
            Item::new(t, to_client, format!("{what} ({conn})"))
                .folding(Fold::in_cycle(format!("response {what}"), what).with_id("conns", conn.to_string()))
        }
        Event { conn, event } => event_item(t, *conn, event, to_client),
        Comment { conn } => Item::new(t, to_client, format!("keep-alive ({conn})"))
            .folding(Fold::noise(format!("keep-alive {conn}"), format!("keep-alive on {conn}"))),
        Json { conn, message } => Item::new(t, to_client, format!("json: {message} ({conn})")),
        ConnEnd { conn, end } => {
            let fold =
                Fold::in_cycle(format!("end {end}"), format!("connection {end}")).with_id("conns", conn.to_string());
            let fold = if *end == self::ConnEnd::Refused { fold.retry() } else { fold };
            Item::new(t, Shape::Mark(Lane::Client), format!("{conn} {end}")).folding(fold)
        }
        Decision { .. } => {
            Item::new(t, note(Lane::Client), described()).folding(Fold::in_cycle(described(), described()))
        }
        Backoff { call, attempt, .. } => {
            let who = call.map(|c| c.to_string()).unwrap_or_else(|| "standalone stream".into());
            let fold = Fold::noise(format!("backoff {who}"), format!("reconnect backoff of {who}"));
            Item::new(t, note(Lane::Client), described()).folding(fold.with_id("attempts", attempt.to_string()).retry())
        }
        InitializeBackoff { attempt, .. } => {
            let fold = Fold::noise("backoff initialize".into(), "initialize backoff".into());
            Item::new(t, note(Lane::Client), described()).folding(fold.with_id("attempts", attempt.to_string()).retry())
        }
        ClientStart { .. } => Item::new(t, note(Lane::Client), described()),
        StreamGivenUp { .. } => Item::new(t, note(Lane::Client), described()),
        ConnReused { .. } => Item::new(t, note(Lane::Client), described())
            .folding(Fold::noise("reused".into(), "requests sent on kept-alive connections".into())),
        HttpResent { .. } => Item::new(t, note(Lane::Client), described()),
        ClientTimedOut { .. } => Item::new(t, note(Lane::Client), described()),
        LbResent { .. } => Item::new(t, note(Lane::Lb), described()),
        LbUpstreamReused { .. } => Item::new(t, note(Lane::Lb), described())
            .folding(Fold::noise("upstream reused".into(), "kept-alive upstream connections reused".into())),
        KeepAliveClosed { .. } => Item::new(t, server, described()),
        ServerClosedStream { .. } | EventDropped { .. } => Item::new(t, server, described()),
        LbIdleCut { conn, idle_us, hop } => Item::new(
            t,
            Shape::Cut(replica),
            format!("{}idle cut {conn} after {}", timeline::at_hop(*hop), format_micros(*idle_us)),
        ),
        LbLifetimeCut { conn, age_us, hop } => Item::new(
            t,
            Shape::Cut(replica),
            format!("{}lifetime cut {conn} after {}", timeline::at_hop(*hop), format_micros(*age_us)),
        ),
        LbUpstreamKept { .. }
        | LbAnswered { .. }
        | LbTimedOut { .. }
        | LbGaveUp { .. }
        | LbHeaderDropped { .. }
        | LbResponseHeaderDropped { .. }
        | LbHolding { .. }
        | LbDiscarded { .. } => Item::new(t, note(Lane::Lb), described()),
        LbFlushed { conn, .. } => Item::new(t, note(Lane::Lb), described())
            .folding(Fold::noise(format!("flushed {conn}"), format!("buffered frames released on {conn}"))),
        // The replica that handled the exchange, as a label on the lb lifeline (`server#2`).
        LbRouted { conn, replica, hop, .. } => {
            Item::new(t, note(Lane::Lb), format!("{}{conn} → server#{replica}", timeline::at_hop(*hop)))
                .folding(Fold::noise("routed".into(), "connections routed to replicas".into()))
        }
        SideEffect { .. } => Item::new(t, server, described()).emphasised(true),
        EventStored { session, stream, id, .. } => {
            let fold = Fold::noise(format!("stored {session} {stream}"), format!("event stored in {session} {stream}"));
            Item::new(t, server, described()).folding(fold.with_id("ids", id.to_string()))
        }
        Resume { outcome, .. } => {
            let silent =
                matches!(outcome, ResumeOutcome::SilentHead { .. } | ResumeOutcome::FromOldest { skipped: 1.., .. });
            Item::new(t, server, resume_label(&step.kind)).emphasised(silent)
        }
        SessionCreated { .. }
        | SessionEnded { .. }
        | Rejected { .. }
        | RefusedAfterHead { .. }
        | ToolEnded { .. }
        | CancelIgnored { .. }
        | ServerStart { .. }
        | ProcessExit { .. } => Item::new(t, server, described()),
        AppEvent { id, call, message, .. } => {
            let kind = message_kind(message);
            let who = call.map(|c| format!(" of {c}")).unwrap_or_default();
            let fold = Fold::noise(format!("app event {kind}{who}"), format!("app ← {kind}{who}"));
            let fold = match id {
                Some(id) => fold.with_id("ids", id.to_string()),
                None => fold,
            };
            Item::new(t, note(Lane::App), described()).folding(fold)
        }
        AppCall { .. }
        | AppGap { .. }
        | AppResult { .. }
        | AppError { .. }
        | AppUnknownOutcome { .. }
        | AppSessionLost { .. }
        | AppReinitialize { .. }
        | AppStreamLost { .. } => Item::new(t, note(Lane::App), described()),
        EraServed { .. }
        | EraRefused { .. }
        | TaskCreated { .. }
        | TaskInputRequired { .. }
        | TaskInputReceived { .. }
        | TaskEnded { .. }
        | TaskRecordRemoved { .. } => Item::new(t, server, described()),
        EraChosen { .. } | TaskIdReceived { .. } | TaskIdForgotten { .. } => {
            Item::new(t, note(Lane::Client), described())
        }
        AppTaskOutcome { .. } | AppTaskLost { .. } => Item::new(t, note(Lane::App), described()),
        ChangeEmitted { listeners, .. } => Item::new(t, server, described())
            .emphasised(*listeners == 0)
            .folding(Fold::noise("change emitted".into(), "change notifications emitted".into())),
        ChangeRelayed { .. } => Item::new(t, server, described())
            .folding(Fold::noise("change relayed".into(), "change notifications relayed".into())),
        ListenOpen { .. } => Item::new(t, note(Lane::Client), described()),
        AppChange { .. } => Item::new(t, note(Lane::App), described())
            .folding(Fold::noise("app change".into(), "app ← change notification".into())),
        AppSubscriptionLost { .. } => Item::new(t, note(Lane::App), described()),
        Fault { .. } | BlackHoled { .. } | Liveness { .. } | Bounds { .. } | RunEnd { .. } => {
            Item::new(t, all_lanes, described())
        }
    }
}

/// In a multi-client trace, which client a client or application step belongs to (or whose
/// connection a balancer or server step names, `Step::conn_client`): there is one client
/// lifeline, so its rows say `[client1] ...`, and rows of different clients never fold together.
fn with_client_index(mut item: Item, client: Option<u32>) -> Item {
    let Some(client) = client else { return item };
    let tag = format!("[client{client}]");
    item.row.label = format!("{tag} {}", item.row.label);
    if let Some(fold) = item.fold.as_mut() {
        fold.key = format!("{tag} {}", fold.key);
        fold.noun = format!("{tag} {}", fold.noun);
    }
    item
}

/// `200 event-stream session=s1`, `410 resume-window-exceeded head=1-140`.
fn response_label(head: &ResponseHead) -> String {
    let body = match head.body {
        Body::Empty => "",
        Body::Json => " json",
        Body::EventStream => " event-stream",
    };
    let mut s = format!("{}{body}", head.status);
    if let Some(session) = &head.session {
        s.push_str(&format!(" session={session}"));
    }
    if let Some(error) = &head.error {
        // The wire name of the code (kebab-case), as a client would read it in the body.
        let code = serde_json::to_value(error.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{:?}", error.code));
        s.push_str(&format!(" {code}"));
        if let Some(h) = &error.head_event_id {
            s.push_str(&format!(" head={h}"));
        }
    }
    s
}

fn event_item(t: u64, conn: ConnId, event: &SseEvent, to_client: Shape) -> Item {
    let id = event.id.as_ref().map(|i| format!(" {i}")).unwrap_or_default();
    let retry = event.retry_ms.map(|r| format!(" retry={r}ms")).unwrap_or_default();
    let what = match &event.data {
        _ if event.kind == EventKind::Close => "close".to_string(),
        None => "priming".to_string(),
        Some(m) => m.to_string(),
    };
    let item = Item::new(t, to_client, format!("event{id}: {what}{retry} ({conn})"));
    match &event.data {
        Some(m @ (ServerMessage::Progress { .. } | ServerMessage::Notification { .. })) => {
            let kind = message_kind(m);
            let fold = Fold::noise(format!("event {kind} {conn}"), format!("{kind} event on {conn}"));
            let fold = match &event.id {
                Some(id) => fold.with_id("ids", id.to_string()),
                None => fold,
            };
            item.folding(fold)
        }
        _ => item,
    }
}

fn message_kind(message: &ServerMessage) -> &'static str {
    match message {
        ServerMessage::InitializeResult { .. } => "initialize result",
        ServerMessage::DiscoverResult { .. } => "discover result",
        ServerMessage::Progress { .. } => "progress",
        ServerMessage::Notification { .. } => "notification",
        ServerMessage::ToolResult { .. } => "result",
        ServerMessage::Error { .. } => "error",
        ServerMessage::TaskCreated { .. } => "task created",
        ServerMessage::TaskState { .. } => "task status",
        ServerMessage::ListenAck { .. } => "subscription acknowledged",
        ServerMessage::Changed { .. } => "change",
    }
}

/// `resume s1 stream1 Last-Event-ID=1-4: SILENT head, skipped 140`.
fn resume_label(kind: &StepKind) -> String {
    let StepKind::Resume { session, last_event_id, stream, outcome, .. } = kind else {
        return timeline::describe(kind);
    };
    let on = stream.map(|s| format!(" {s}")).unwrap_or_default();
    let what = timeline::describe_resume(outcome);
    format!("resume {session}{on} Last-Event-ID={last_event_id}: {what}")
}

// ---------------------------------------------------------------------------------------------
// Folding runs and truncating.

/// The longest repeated cycle considered (send, response, end, decision, backoff, spare).
const MAX_PERIOD: usize = 6;
/// Fewer repetitions than this are drawn as they are: two similar rows read fine.
const MIN_REPEATS: usize = 3;

/// Folds each run of at least [`MIN_REPEATS`] repetitions of a foldable cycle into one row.
fn fold_runs(items: &[Item]) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut i = 0;
    while i < items.len() {
        match best_run(&items[i..]) {
            Some((period, repeats)) => {
                rows.push(folded(&items[i..i + period * repeats], period, repeats));
                i += period * repeats;
            }
            None => {
                rows.push(items[i].row.clone());
                i += 1;
            }
        }
    }
    rows
}

/// The (period, repeats) of the foldable run covering most rows from the start of `items`; the
/// shortest period on a tie.
fn best_run(items: &[Item]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for period in 1..=MAX_PERIOD.min(items.len()) {
        let cycle = &items[..period];
        if !foldable(cycle) {
            continue;
        }
        let repeats = items.chunks_exact(period).take_while(|chunk| same_keys(chunk, cycle)).count();
        let covers = period * repeats;
        if repeats >= MIN_REPEATS && best.is_none_or(|(p, r)| covers > p * r) {
            best = Some((period, repeats));
        }
    }
    best
}

/// A cycle folds when every row in it is noise, or when it is a retry loop.
fn foldable(cycle: &[Item]) -> bool {
    let folds: Option<Vec<&Fold>> = cycle.iter().map(|i| i.fold.as_ref()).collect();
    folds.is_some_and(|f| f.iter().all(|f| f.alone) || f.iter().any(|f| f.retry))
}

fn same_keys(chunk: &[Item], cycle: &[Item]) -> bool {
    chunk.iter().zip(cycle).all(|(a, b)| match (&a.fold, &b.fold) {
        (Some(a), Some(b)) => a.key == b.key,
        _ => false,
    })
}

/// One row for a run: `… 37 × progress event on c3 (ids 1-5 … 1-41), until 38.000s …`.
fn folded(run: &[Item], period: usize, repeats: usize) -> Row {
    let first = &run[0].row;
    let last_t = run.last().map_or(first.t, |i| i.row.t);
    let parts: Vec<String> = (0..period).map(|k| summary(run.iter().skip(k).step_by(period))).collect();
    let what = if period == 1 { parts.concat() } else { format!("[{}]", parts.join(" + ")) };
    let shape = if period == 1 {
        first.shape
    } else {
        let lanes = run.iter().map(|i| i.row.shape.lanes());
        let from = lanes.clone().map(|(a, _)| a).min().unwrap_or(Lane::App);
        let to = lanes.map(|(_, b)| b).max().unwrap_or(SERVER);
        Shape::Note(from, to)
    };
    Row {
        step: first.step,
        t: first.t,
        shape,
        label: format!("… {repeats} × {what}, until {} …", format_micros(last_t)),
        emphasis: false,
        violations: Vec::new(),
    }
}

/// `progress event on c3 (ids 1-5 … 1-41)`: what the folded rows at one place of a cycle were.
fn summary<'a>(items: impl Iterator<Item = &'a Item>) -> String {
    let folds: Vec<&Fold> = items.filter_map(|i| i.fold.as_ref()).collect();
    let Some(head) = folds.first() else {
        return String::new();
    };
    let ids: Vec<&str> = folds.iter().filter_map(|f| f.id.as_deref()).collect();
    match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if a != b => format!("{} ({} {a} … {b})", head.noun, head.ids),
        (Some(a), _) => format!("{} ({a})", head.noun),
        _ => head.noun.clone(),
    }
}

/// Keeps the first `max` rows; returns them, how many were left out, and the violations of the
/// left-out rows (which are still shown, after the cut).
fn truncate(mut rows: Vec<Row>, max: Option<usize>) -> (Vec<Row>, usize, Vec<ViolationRecord>) {
    match max {
        Some(max) if rows.len() > max => {
            let cut = rows.split_off(max);
            let violations = cut.iter().flat_map(|r| r.violations.iter().cloned()).collect();
            (rows, cut.len(), violations)
        }
        _ => (rows, 0, Vec::new()),
    }
}

fn more_rows_text(more: usize) -> String {
    format!("… {more} more row{}", if more == 1 { "" } else { "s" })
}

// ---------------------------------------------------------------------------------------------
// Text: fixed-width columns for a terminal.

mod text;

// ---------------------------------------------------------------------------------------------
// Mermaid: a `sequenceDiagram` block.

mod mermaid;

// ---------------------------------------------------------------------------------------------
// SVG: a standalone picture, one fixed-height row a step.

mod svg;

/// Text as XML (and HTML) character data or a quoted attribute value.
pub(crate) use svg::xml as xml_escape;

#[cfg(test)]
mod tests;
