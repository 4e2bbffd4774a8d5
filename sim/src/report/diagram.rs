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
use std::cmp::Reverse;
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
}

/// A `--format` value that names no [`Format`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown diagram format {0:?}: use text, mermaid or svg")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(Format::Text),
            "mermaid" => Ok(Format::Mermaid),
            "svg" => Ok(Format::Svg),
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

/// Draws a trace as a sequence diagram.
pub fn render(trace: &Trace, format: Format, opts: &DiagramOptions) -> String {
    let diagram = Diagram::build(trace, opts);
    match format {
        Format::Text => text::draw(&diagram),
        Format::Mermaid => mermaid::draw(&diagram),
        Format::Svg => svg::draw(&diagram),
    }
}

// ---------------------------------------------------------------------------------------------
// The model every drawing shares.

/// A lifeline, left to right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    App,
    Client,
    Lb,
    Server,
}

const LANES: [Lane; 4] = [Lane::App, Lane::Client, Lane::Lb, Lane::Server];

impl Lane {
    fn index(self) -> usize {
        self as usize
    }

    /// The name shown in lifeline headers (the trace's actor names).
    fn name(self) -> &'static str {
        match self {
            Lane::App => "app",
            Lane::Client => "client",
            Lane::Lb => "lb",
            Lane::Server => "server",
        }
    }
}

/// What a row draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A message; `reply` draws it dashed (server to client).
    Arrow { from: Lane, to: Lane, reply: bool },
    /// The load balancer cut a connection: a mark on its lifeline, resets to both sides.
    Cut,
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
            Shape::Cut => (Lane::Client, Lane::Server),
            Shape::Mark(lane) => (lane, lane),
            Shape::Note(a, b) => (a.min(b), a.max(b)),
        }
    }
}

/// One row of a diagram: one step, or a folded run of steps.
#[derive(Clone, Debug, PartialEq)]
struct Row {
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
}

impl Diagram {
    fn build(trace: &Trace, opts: &DiagramOptions) -> Diagram {
        let verdict = trace.footer.as_ref().map(|f| f.verdict.as_slice()).unwrap_or(&[]);
        let mut anchored: BTreeMap<usize, Vec<ViolationRecord>> = BTreeMap::new();
        let mut late = Vec::new();
        for v in verdict {
            match anchor(v, &trace.steps) {
                Some(i) => anchored.entry(i).or_default().push(v.clone()),
                None => late.push(v.clone()),
            }
        }
        let delivered = if opts.collapse { delivered_events(&trace.steps) } else { BTreeSet::new() };
        let mut items = Vec::with_capacity(trace.steps.len());
        for (i, step) in trace.steps.iter().enumerate() {
            let violations = anchored.remove(&i).unwrap_or_default();
            // A violating step is always drawn and never folded: it is what the reader came for.
            if violations.is_empty() && is_redundant_store(&step.kind, &delivered) {
                continue;
            }
            let mut item = with_client_index(item_of(step), step.client);
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
        }
    }
}

/// `mcpsim seed 7 · naive × reference × long-tool`; `?` for whatever the header lacks.
fn title(header: &Header) -> String {
    let text = |pointer: &str| header.scenario.pointer(pointer).and_then(|v| v.as_str());
    let client = text("/scenario/client/name").unwrap_or("?");
    let server = text("/scenario/server/name").unwrap_or("?");
    let scenario = text("/scenario/name").or_else(|| text("/scenario")).unwrap_or("?");
    format!("mcpsim seed {} · {client} × {server} × {scenario}", header.seed)
}

fn verdict_line(footer: Option<&Footer>) -> String {
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
fn violation_text(v: &ViolationRecord) -> String {
    let detail = if v.detail.is_empty() { String::new() } else { format!(" — {}", v.detail) };
    format!("VIOLATION {}: {}{detail} (at {})", v.invariant, v.subject, format_micros(v.t))
}

// ---------------------------------------------------------------------------------------------
// Which step broke an invariant.

/// The step a violation is drawn at: among the steps at its time, the one its invariant is most
/// about; without a step at that time, the last one before it.
fn anchor(v: &ViolationRecord, steps: &[Step]) -> Option<usize> {
    let at_time = (0..steps.len()).filter(|&i| steps[i].t == v.t);
    let best = at_time.max_by_key(|&i| (relevance(v, &steps[i].kind), Reverse(i)));
    best.or_else(|| steps.iter().rposition(|s| s.t <= v.t)).or(if steps.is_empty() { None } else { Some(0) })
}

/// How much a step looks like the one that broke `v`'s invariant. Invariant names are matched by
/// the words they are built from, so a renamed or new oracle still lands on a step at its time.
fn relevance(v: &ViolationRecord, kind: &StepKind) -> u8 {
    use StepKind::*;
    let name = v.invariant.as_str();
    let about_loss = name.contains("loss") || name.contains("lost") || name.contains("silent");
    let by_kind = match kind {
        SideEffect { .. } if name.contains("duplicate") => 4,
        Resume { outcome: ResumeOutcome::SilentHead { .. } | ResumeOutcome::FromOldest { .. }, .. } if about_loss => 4,
        Resume { .. } | AppGap { .. } | EventStored { .. } | AppEvent { .. } | AppResult { .. } if about_loss => 2,
        SessionCreated { .. } | SessionEnded { .. } | RunEnd { .. } if name.contains("orphan") => 2,
        RunEnd { .. } | Liveness { .. } if name.contains("live") || name.contains("resolve") => 2,
        _ => 0,
    };
    let names_subject = !v.subject.is_empty() && timeline::describe(kind).contains(&v.subject);
    by_kind + u8::from(names_subject)
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
        Item { row: Row { t, shape, label, emphasis: false, violations: Vec::new() }, fold: None }
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

const TO_SERVER: Shape = Shape::Arrow { from: Lane::Client, to: Lane::Server, reply: false };
const TO_CLIENT: Shape = Shape::Arrow { from: Lane::Server, to: Lane::Client, reply: true };
const ALL_LANES: Shape = Shape::Note(Lane::App, Lane::Server);

fn note(lane: Lane) -> Shape {
    Shape::Note(lane, lane)
}

/// The row of one step. Requests are drawn client → server in one arrow across the lb lifeline
/// (the trace records only what the client sent and received).
fn item_of(step: &Step) -> Item {
    use StepKind::*;
    let t = step.t;
    let described = || timeline::describe(&step.kind);
    match &step.kind {
        Send { conn, request } => Item::new(t, TO_SERVER, format!("{request} ({conn})"))
            .folding(Fold::in_cycle(format!("send {request}"), request.to_string()).with_id("conns", conn.to_string())),
        Response { conn, head } => {
            let what = response_label(head);
            Item::new(t, TO_CLIENT, format!("{what} ({conn})"))
                .folding(Fold::in_cycle(format!("response {what}"), what).with_id("conns", conn.to_string()))
        }
        Event { conn, event } => event_item(t, *conn, event),
        Comment { conn } => Item::new(t, TO_CLIENT, format!("keep-alive ({conn})"))
            .folding(Fold::noise(format!("keep-alive {conn}"), format!("keep-alive on {conn}"))),
        Json { conn, message } => Item::new(t, TO_CLIENT, format!("json: {message} ({conn})")),
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
        ClientStart { .. } => Item::new(t, note(Lane::Client), described()),
        LbIdleCut { conn, idle_us } => {
            Item::new(t, Shape::Cut, format!("idle cut {conn} after {}", format_micros(*idle_us)))
        }
        SideEffect { .. } => Item::new(t, note(Lane::Server), described()).emphasised(true),
        EventStored { session, stream, id, .. } => {
            let fold = Fold::noise(format!("stored {session} {stream}"), format!("event stored in {session} {stream}"));
            Item::new(t, note(Lane::Server), described()).folding(fold.with_id("ids", id.to_string()))
        }
        Resume { outcome, .. } => {
            let silent =
                matches!(outcome, ResumeOutcome::SilentHead { .. } | ResumeOutcome::FromOldest { skipped: 1.., .. });
            Item::new(t, note(Lane::Server), resume_label(&step.kind)).emphasised(silent)
        }
        SessionCreated { .. } | SessionEnded { .. } | Rejected { .. } | ToolEnded { .. } | ServerStart { .. } => {
            Item::new(t, note(Lane::Server), described())
        }
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
        | AppSessionLost { .. } => Item::new(t, note(Lane::App), described()),
        Fault { .. } | Liveness { .. } | RunEnd { .. } => Item::new(t, ALL_LANES, described()),
    }
}

/// In a multi-client trace, which client a client or application step belongs to: there is one
/// client lifeline, so its rows say `[client1] ...`, and rows of different clients never fold
/// together.
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

fn event_item(t: u64, conn: ConnId, event: &SseEvent) -> Item {
    let id = event.id.as_ref().map(|i| format!(" {i}")).unwrap_or_default();
    let retry = event.retry_ms.map(|r| format!(" retry={r}ms")).unwrap_or_default();
    let what = match &event.data {
        _ if event.kind == EventKind::Close => "close".to_string(),
        None => "priming".to_string(),
        Some(m) => m.to_string(),
    };
    let item = Item::new(t, TO_CLIENT, format!("event{id}: {what}{retry} ({conn})"));
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
        ServerMessage::Progress { .. } => "progress",
        ServerMessage::Notification { .. } => "notification",
        ServerMessage::ToolResult { .. } => "result",
        ServerMessage::Error { .. } => "error",
    }
}

/// `resume s1 stream1 Last-Event-ID=1-4: SILENT head, skipped 140`.
fn resume_label(kind: &StepKind) -> String {
    let StepKind::Resume { session, last_event_id, stream, outcome } = kind else {
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
        let to = lanes.map(|(_, b)| b).max().unwrap_or(Lane::Server);
        Shape::Note(from, to)
    };
    Row {
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

mod text {
    use super::*;

    /// Columns between two lifelines.
    const GAP: usize = 26;
    /// Width of the time column.
    const TIME_W: usize = 11;

    fn col(lane: Lane) -> usize {
        lane.index() * GAP
    }

    pub(super) fn draw(d: &Diagram) -> String {
        let mut out = format!("{}\n{}\n\n", d.title, d.verdict);
        let mut names = Canvas::blank();
        for lane in LANES {
            names.write(col(lane), lane.name());
        }
        push_line(&mut out, &format!(" {:>TIME_W$}  {}", "time", names.text()));
        for row in &d.rows {
            push_line(&mut out, &row_line(row));
            for v in &row.violations {
                push_line(&mut out, &format!(">>> {}", violation_text(v)));
            }
        }
        if d.more > 0 {
            push_line(&mut out, &more_rows_text(d.more));
        }
        for v in &d.late {
            push_line(&mut out, &format!(">>> {} [its row is not shown]", violation_text(v)));
        }
        out
    }

    fn push_line(out: &mut String, line: &str) {
        out.push_str(line.trim_end());
        out.push('\n');
    }

    /// `!  1m00.021s  |      |   # [SIDE EFFECT …]`: `!` marks a row that broke an invariant.
    fn row_line(row: &Row) -> String {
        let mut canvas = Canvas::lifelines();
        let suffix = match row.shape {
            Shape::Arrow { from, to, reply } => canvas.arrow(col(from), col(to), reply, &row.label),
            Shape::Cut => {
                canvas.arrow(col(Lane::Lb), col(Lane::Client), false, "reset");
                canvas.arrow(col(Lane::Lb), col(Lane::Server), false, "reset");
                canvas.set(col(Lane::Lb), 'X');
                Some(format!("✂ {}", row.label))
            }
            Shape::Mark(lane) => {
                canvas.set(col(lane), 'X');
                canvas.write(col(lane) + 2, &row.label);
                None
            }
            Shape::Note(a, b) if a == b => {
                canvas.set(col(a), if row.emphasis { '#' } else { '*' });
                canvas.write(col(a) + 2, &format!("[{}]", row.label));
                None
            }
            Shape::Note(a, b) => canvas.bar(col(a), col(b), &row.label),
        };
        let gutter = if row.violations.is_empty() { ' ' } else { '!' };
        let suffix = suffix.map(|s| format!("  {s}")).unwrap_or_default();
        format!("{gutter}{:>TIME_W$}  {}{suffix}", format_micros(row.t), canvas.text())
    }

    /// One row of characters.
    struct Canvas(Vec<char>);

    impl Canvas {
        fn blank() -> Canvas {
            Canvas(vec![' '; col(Lane::Server) + 1])
        }

        fn lifelines() -> Canvas {
            let mut c = Canvas::blank();
            for lane in LANES {
                c.set(col(lane), '|');
            }
            c
        }

        fn is_lifeline(at: usize) -> bool {
            at.is_multiple_of(GAP) && at <= col(Lane::Server)
        }

        fn set(&mut self, at: usize, ch: char) {
            if at >= self.0.len() {
                self.0.resize(at + 1, ' ');
            }
            self.0[at] = ch;
        }

        fn write(&mut self, at: usize, text: &str) {
            for (i, ch) in text.chars().enumerate() {
                self.set(at + i, ch);
            }
        }

        /// Writes `label` centred between columns `lo` and `hi`, keeping two characters of line
        /// at each end; returns it instead when it does not fit, to be written after the row.
        fn centre(&mut self, lo: usize, hi: usize, label: &str) -> Option<String> {
            let room = hi.saturating_sub(lo + 5);
            let text = format!(" {label} ");
            let len = text.chars().count();
            if len > room {
                return Some(label.to_string());
            }
            self.write(lo + 3 + (room - len) / 2, &text);
            None
        }

        /// `|----label---->|` (dots for a reply), `+` where it crosses a lifeline.
        fn arrow(&mut self, from: usize, to: usize, reply: bool, label: &str) -> Option<String> {
            let (lo, hi) = (from.min(to), from.max(to));
            for at in lo + 1..hi {
                self.set(
                    at,
                    if Canvas::is_lifeline(at) {
                        '+'
                    } else if reply {
                        '.'
                    } else {
                        '-'
                    },
                );
            }
            if to > from {
                self.set(hi - 1, '>');
            } else {
                self.set(lo + 1, '<');
            }
            self.centre(lo, hi, label)
        }

        /// `[===== label =====]` from column `lo` to `hi`.
        fn bar(&mut self, lo: usize, hi: usize, label: &str) -> Option<String> {
            for at in lo..=hi {
                self.set(at, '=');
            }
            self.set(lo, '[');
            self.set(hi, ']');
            self.centre(lo, hi, label)
        }

        fn text(&self) -> String {
            self.0.iter().collect()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Mermaid: a `sequenceDiagram` block.

mod mermaid {
    use super::*;

    const RED: &str = "rgb(255,220,220)";
    const YELLOW: &str = "rgb(255,243,176)";
    const ACROSS: &str = "App,Server";

    fn participant(lane: Lane) -> &'static str {
        match lane {
            Lane::App => "App",
            Lane::Client => "Client",
            Lane::Lb => "LB",
            Lane::Server => "Server",
        }
    }

    pub(super) fn draw(d: &Diagram) -> String {
        let mut out = String::from("sequenceDiagram\n");
        // The title statement ends at `#` or `;`: drop them rather than escape.
        let title: String = d.title.chars().map(|c| if matches!(c, '#' | ';' | '\n') { ' ' } else { c }).collect();
        out.push_str(&format!("    title {title}\n"));
        for lane in LANES {
            out.push_str(&format!("    participant {}\n", participant(lane)));
        }
        for row in &d.rows {
            let block = if !row.violations.is_empty() {
                Some(RED)
            } else if row.emphasis {
                Some(YELLOW)
            } else {
                None
            };
            if let Some(colour) = block {
                out.push_str(&format!("    rect {colour}\n"));
            }
            for line in row_lines(row) {
                out.push_str(&format!("    {line}\n"));
            }
            for v in &row.violations {
                out.push_str(&format!("    Note over {ACROSS}: {}\n", escape(&format!("⚠ {}", violation_text(v)))));
            }
            if block.is_some() {
                out.push_str("    end\n");
            }
        }
        if d.more > 0 {
            out.push_str(&format!("    Note over {ACROSS}: {}\n", escape(&more_rows_text(d.more))));
        }
        for v in &d.late {
            out.push_str(&format!("    rect {RED}\n"));
            let text = format!("⚠ {} [its row is not shown]", violation_text(v));
            out.push_str(&format!("    Note over {ACROSS}: {}\n", escape(&text)));
            out.push_str("    end\n");
        }
        out.push_str(&format!("    Note over {ACROSS}: {}\n", escape(&d.verdict)));
        out
    }

    fn row_lines(row: &Row) -> Vec<String> {
        let time = format_micros(row.t);
        let message = escape(&format!("{time} {}", row.label));
        match row.shape {
            Shape::Arrow { from, to, reply } => {
                let arrow = if reply { "-->>" } else { "->>" };
                vec![format!("{}{arrow}{}: {message}", participant(from), participant(to))]
            }
            Shape::Cut => vec![
                format!("LB-xClient: {}", escape(&format!("{time} ✂ reset ({})", row.label))),
                "LB-xServer: reset".to_string(),
            ],
            Shape::Mark(lane) => {
                vec![format!("Note over {}: {}", participant(lane), escape(&format!("{time} ✗ {}", row.label)))]
            }
            Shape::Note(a, b) if a == b => vec![format!("Note over {}: {message}", participant(a))],
            Shape::Note(a, b) => vec![format!("Note over {},{}: {message}", participant(a), participant(b))],
        }
    }

    /// Message text as Mermaid reads it: `#` and `;` would end the statement, `:` and `<`/`>`
    /// confuse its parser or HTML sanitiser; all become `#<code>;` entities.
    pub(super) fn escape(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '#' | ';' | ':' | '<' | '>' | '"' => out.push_str(&format!("#{};", u32::from(c))),
                '\n' | '\r' => out.push(' '),
                _ => out.push(c),
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// SVG: a standalone picture, one fixed-height row a step.

mod svg {
    use super::*;
    use std::fmt::Write;

    const ROW_H: usize = 24;
    /// Estimated advance of one character of the 12px monospace font.
    const CHAR_W_TENTHS: usize = 73;
    /// Right edge of the time column.
    const TIME_X: usize = 92;
    const LANE_X0: usize = 180;
    const LANE_GAP: usize = 230;
    /// Top of the lifeline headers and of the first row.
    const HEAD_Y: usize = 54;
    const FIRST_ROW_Y: usize = 92;
    const RED: &str = "#c00000";
    const STYLE: &str = "text { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
.title { font-size: 15px; font-weight: bold; }
.t { fill: #666; }
.life { stroke: #bbb; stroke-dasharray: 4 4; }
.head { fill: #dde6f5; stroke: #557; }
.msg { stroke: #333; stroke-width: 1.2; }
.reply { stroke-dasharray: 5 3; }
.note { fill: #f4f4f4; stroke: #999; }
.span { fill: #e8eefc; stroke: #7a8cc0; }
.money { fill: #fff1a8; stroke: #c9a100; }
.strong { font-weight: bold; }
.hl { fill: #ffdcdc; }";

    fn lane_x(lane: Lane) -> usize {
        LANE_X0 + lane.index() * LANE_GAP
    }

    fn text_w(text: &str) -> usize {
        text.chars().count() * CHAR_W_TENTHS / 10
    }

    /// Text as XML character data or attribute value.
    pub(super) fn xml(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#39;"),
                _ => out.push(c),
            }
        }
        out
    }

    /// The SVG body as it is drawn, tracking the rightmost pixel used.
    struct Picture {
        body: String,
        right: usize,
        slot: usize,
    }

    impl Picture {
        /// The top of the next row slot, which it takes.
        fn next_slot(&mut self) -> usize {
            let top = FIRST_ROW_Y + self.slot * ROW_H;
            self.slot += 1;
            top
        }

        fn text(&mut self, x: usize, y: usize, anchor: &str, attrs: &str, text: &str) {
            let w = text_w(text);
            let right = match anchor {
                "end" => x,
                "middle" => x + w / 2,
                _ => x + w,
            };
            self.right = self.right.max(right);
            let _ = write!(self.body, r#"<text x="{x}" y="{y}" text-anchor="{anchor}"{attrs}>{}</text>"#, xml(text));
        }

        fn raw(&mut self, s: &str) {
            self.body.push_str(s);
        }
    }

    pub(super) fn draw(d: &Diagram) -> String {
        let mut p = Picture { body: String::new(), right: lane_x(Lane::Server) + 120, slot: 0 };
        for row in &d.rows {
            draw_row(&mut p, row);
            for v in &row.violations {
                violation_slot(&mut p, &violation_text(v));
            }
        }
        if d.more > 0 {
            let top = p.next_slot();
            p.raw(r#"<g class="more">"#);
            p.text(TIME_X + 12, top + 16, "start", r#" class="t""#, &more_rows_text(d.more));
            p.raw("</g>\n");
        }
        for v in &d.late {
            violation_slot(&mut p, &format!("{} [its row is not shown]", violation_text(v)));
        }
        frame(d, p)
    }

    /// The outer document: header, lifelines, then the rows drawn over them.
    fn frame(d: &Diagram, p: Picture) -> String {
        let mut head = Picture { body: String::new(), right: p.right, slot: 0 };
        head.text(12, 22, "start", r#" class="title""#, &d.title);
        let violated = d.rows.iter().any(|r| !r.violations.is_empty()) || !d.late.is_empty();
        let verdict_attrs = if violated { format!(r#" fill="{RED}" class="strong""#) } else { String::new() };
        head.text(12, 42, "start", &verdict_attrs, &d.verdict);
        let width = head.right.max(p.right) + 20;
        // Lifeline names again at the bottom: a long trace is read far from its top.
        let foot_y = FIRST_ROW_Y + p.slot * ROW_H + 8;
        let height = foot_y + 24 + 12;
        let mut out = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
        );
        out.push('\n');
        let _ = writeln!(out, "<style>\n{STYLE}\n</style>");
        out.push_str(concat!(
            r#"<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" "#,
            r##"orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>"##,
            "\n"
        ));
        let _ = writeln!(out, r#"<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>"#);
        let _ = writeln!(out, r#"<g class="header">{}</g>"#, head.body);
        for lane in LANES {
            let x = lane_x(lane);
            let _ = writeln!(
                out,
                r#"<g class="lane"><line class="life" x1="{x}" y1="{}" x2="{x}" y2="{foot_y}"/>{}{}</g>"#,
                HEAD_Y + 24,
                lane_head(lane, HEAD_Y),
                lane_head(lane, foot_y)
            );
        }
        out.push_str(&p.body);
        out.push_str("</svg>\n");
        out
    }

    /// A lifeline's name in a box with its top at `y`.
    fn lane_head(lane: Lane, y: usize) -> String {
        let x = lane_x(lane);
        format!(
            r#"<rect class="head" x="{}" y="{y}" width="100" height="24" rx="4"/><text x="{x}" y="{}" text-anchor="middle" class="strong">{}</text>"#,
            x - 50,
            y + 16,
            lane.name()
        )
    }

    /// A red cross on a lifeline: where the load balancer cut a connection.
    fn cut_mark(p: &mut Picture, x: usize, y: usize) {
        let (l, r, t, b) = (x - 6, x + 6, y - 6, y + 6);
        p.raw(&format!(r#"<path d="M{l} {t} L{r} {b} M{l} {b} L{r} {t}" stroke="{RED}" stroke-width="2.5"/>"#));
    }

    fn violation_slot(p: &mut Picture, text: &str) {
        let top = p.next_slot();
        p.raw(&format!(r#"<g class="violation"><rect class="hl" x="0" y="{top}" width="100%" height="{ROW_H}"/>"#));
        p.text(TIME_X + 12, top + 16, "start", &format!(r#" fill="{RED}" class="strong""#), &format!("⚠ {text}"));
        p.raw("</g>\n");
    }

    fn draw_row(p: &mut Picture, row: &Row) {
        let top = p.next_slot();
        let mid = top + ROW_H / 2;
        p.raw(r#"<g class="row">"#);
        if !row.violations.is_empty() {
            p.raw(&format!(r#"<rect class="hl" x="0" y="{top}" width="100%" height="{ROW_H}"/>"#));
        }
        p.text(TIME_X, mid + 4, "end", r#" class="t""#, &format_micros(row.t));
        match row.shape {
            Shape::Arrow { from, to, reply } => arrow(p, lane_x(from), lane_x(to), mid, reply, &row.label),
            Shape::Cut => {
                let lb = lane_x(Lane::Lb);
                arrow(p, lb, lane_x(Lane::Client), mid, false, "reset");
                arrow(p, lb, lane_x(Lane::Server), mid, false, "reset");
                cut_mark(p, lb, mid + 6);
                p.text(lane_x(Lane::Server) + 12, mid + 4, "start", "", &format!("✂ {}", row.label));
            }
            Shape::Mark(lane) => {
                p.text(lane_x(lane), mid + 5, "middle", &format!(r#" fill="{RED}" font-size="15""#), "✗");
                p.text(lane_x(lane) + 12, mid + 4, "start", "", &row.label);
            }
            Shape::Note(a, b) => note_box(p, row, a, b, top),
        }
        p.raw("</g>\n");
    }

    fn arrow(p: &mut Picture, from: usize, to: usize, mid: usize, reply: bool, label: &str) {
        let y = mid + 6;
        let class = if reply { "msg reply" } else { "msg" };
        p.raw(&format!(r#"<line class="{class}" x1="{from}" y1="{y}" x2="{to}" y2="{y}" marker-end="url(#head)"/>"#));
        p.text((from + to) / 2, mid + 1, "middle", "", label);
    }

    /// A box over one lifeline (centred on it) or across several (from the first to the last).
    fn note_box(p: &mut Picture, row: &Row, a: Lane, b: Lane, top: usize) {
        let need = text_w(&row.label) + 14;
        let (lo, hi) = if a == b { (lane_x(a), lane_x(a)) } else { (lane_x(a) - 60, lane_x(b) + 60) };
        let w = need.max(hi - lo);
        let x = ((lo + hi) / 2).saturating_sub(w / 2).max(TIME_X + 8);
        let class = if row.emphasis {
            "money"
        } else if a == b {
            "note"
        } else {
            "span"
        };
        p.raw(&format!(r#"<rect class="{class}" x="{x}" y="{}" width="{w}" height="{}" rx="3"/>"#, top + 3, ROW_H - 6));
        let attrs = if row.emphasis { r#" class="strong""# } else { "" };
        p.text(x + w / 2, top + 16, "middle", attrs, &row.label);
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use mcpsim_model::decision::{NextAction, StreamOutcome};
    use mcpsim_model::http::{ClientMessage, Request, Status, ToolCall};
    use mcpsim_model::ids::{CallKey, RequestId, StreamNo};
    use mcpsim_model::trace::Actor;

    /// Builds traces step by step; times are given in milliseconds.
    struct TraceBuilder {
        trace: Trace,
    }

    fn ms(t: u64) -> u64 {
        t * 1_000
    }

    fn sid(s: &str) -> SessionId {
        SessionId::from(s)
    }

    fn eid(s: &str) -> EventId {
        EventId::from(s)
    }

    impl TraceBuilder {
        fn new(client: &str, server: &str, scenario: &str) -> Self {
            let header = serde_json::json!({
                "scenario": {"name": scenario, "client": {"name": client}, "server": {"name": server}}
            });
            TraceBuilder { trace: Trace::new(42, header) }
        }

        fn push(&mut self, t_ms: u64, actor: Actor, kind: StepKind) -> &mut Self {
            let seq = self.trace.steps.len() as u64;
            self.trace.steps.push(Step { seq, t: ms(t_ms), actor, client: None, kind });
            self
        }

        fn client(&mut self, t: u64, kind: StepKind) -> &mut Self {
            self.push(t, Actor::Client, kind)
        }

        fn server(&mut self, t: u64, kind: StepKind) -> &mut Self {
            self.push(t, Actor::Server, kind)
        }

        fn app(&mut self, t: u64, kind: StepKind) -> &mut Self {
            self.push(t, Actor::App, kind)
        }

        fn send(&mut self, t: u64, conn: u64, request: Request) -> &mut Self {
            self.client(t, StepKind::Send { conn: ConnId(conn), request })
        }

        fn respond(&mut self, t: u64, conn: u64, head: ResponseHead) -> &mut Self {
            self.client(t, StepKind::Response { conn: ConnId(conn), head })
        }

        fn event(&mut self, t: u64, conn: u64, id: &str, data: Option<ServerMessage>) -> &mut Self {
            let event = SseEvent { id: Some(eid(id)), retry_ms: None, kind: EventKind::Message, data };
            self.client(t, StepKind::Event { conn: ConnId(conn), event })
        }

        fn end(&mut self, t: u64, conn: u64, end: ConnEnd) -> &mut Self {
            self.client(t, StepKind::ConnEnd { conn: ConnId(conn), end })
        }

        fn stored(&mut self, t: u64, session: &str, seq: u32, message: Option<ServerMessage>) -> &mut Self {
            let id = eid(&format!("1-{seq}"));
            let call = Some(CallKey(0));
            let kind = StepKind::EventStored { session: sid(session), stream: StreamNo(1), seq, id, call, message };
            self.server(t, kind)
        }

        fn side_effect(&mut self, t: u64, session: &str, request: u64) -> &mut Self {
            let kind = StepKind::SideEffect {
                session: sid(session),
                request: RequestId(request),
                call: CallKey(0),
                tool: "pay".into(),
                idempotent: false,
            };
            self.server(t, kind)
        }

        fn initialize(&mut self, t: u64, conn: u64, request: u64, session: &str, client: &str) -> &mut Self {
            self.send(t, conn, Request::initialize(RequestId(request), client));
            self.server(t + 1, StepKind::SessionCreated { session: sid(session), client: client.into() });
            let head =
                ResponseHead { session: Some(sid(session)), body: Body::Json, ..ResponseHead::status(Status::OK) };
            self.respond(t + 2, conn, head);
            let message = ServerMessage::InitializeResult { request: RequestId(request) };
            self.client(t + 3, StepKind::Json { conn: ConnId(conn), message })
        }

        fn call_tool(&mut self, t: u64, conn: u64, request: u64, session: &str, tool: &str) -> &mut Self {
            let call = ToolCall { tool: tool.into(), key: CallKey(0), idempotency_key: None };
            let body = ClientMessage::CallTool { id: RequestId(request), call };
            self.send(t, conn, Request::post(Some(sid(session)), body))
        }

        fn finish(&mut self, verdict: Vec<ViolationRecord>) -> Trace {
            let mut trace = self.trace.clone();
            trace.finish(verdict);
            trace
        }
    }

    fn violation(invariant: &str, t_ms: u64, subject: &str, detail: &str) -> ViolationRecord {
        ViolationRecord { invariant: invariant.into(), t: ms(t_ms), subject: subject.into(), detail: detail.into() }
    }

    fn progress(step: u32) -> Option<ServerMessage> {
        Some(ServerMessage::Progress { request: RequestId(2), call: CallKey(0), step })
    }

    /// The design note's first incident: a naive client re-initializes after a 60 s idle cut and
    /// runs the payment twice.
    fn first_incident() -> Trace {
        let mut b = TraceBuilder::new("naive", "reference", "long-tool");
        b.app(0, StepKind::AppCall { call: CallKey(0), tool: "pay".into(), idempotent: false });
        b.initialize(1, 1, 1, "s1", "naive");
        b.call_tool(10, 2, 2, "s1", "pay");
        b.side_effect(11, "s1", 2);
        b.stored(12, "s1", 0, None);
        b.respond(13, 2, ResponseHead::event_stream());
        b.event(14, 2, "1-0", None);
        b.push(60_014, Actor::Lb, StepKind::LbIdleCut { conn: ConnId(7), idle_us: 60_000_000 });
        b.end(60_015, 2, ConnEnd::Reset);
        b.client(
            60_016,
            StepKind::Decision {
                call: Some(CallKey(0)),
                outcome: Some(StreamOutcome::SessionTerminated),
                action: Some(NextAction::Reinitialize),
                error: None,
            },
        );
        b.initialize(60_020, 3, 3, "s2", "naive");
        b.call_tool(60_030, 4, 4, "s2", "pay");
        b.side_effect(60_031, "s2", 4);
        b.respond(60_032, 4, ResponseHead::event_stream());
        let result = Some(ServerMessage::ToolResult { request: RequestId(2), call: CallKey(0) });
        b.server(
            90_000,
            StepKind::ToolEnded {
                session: sid("s1"),
                request: RequestId(2),
                call: CallKey(0),
                end: mcpsim_model::trace::ToolEnd::Completed,
            },
        );
        b.stored(90_000, "s1", 1, result);
        // s2 numbers its events like s1 did: the same id, another session.
        let result = Some(ServerMessage::ToolResult { request: RequestId(4), call: CallKey(0) });
        b.stored(90_031, "s2", 1, result.clone());
        b.event(90_032, 4, "1-1", result);
        b.app(90_033, StepKind::AppResult { call: CallKey(0), session: sid("s2"), id: Some(eid("1-1")) });
        b.finish(vec![violation("no-duplicate-execution", 60_031, "call0", "pay ran in s1 (#2) and again in s2 (#4)")])
    }

    /// The second incident: a reference client cut off for 4 minutes resumes from a silent-head
    /// server that skips 140 events without a word.
    fn second_incident() -> Trace {
        let mut b = TraceBuilder::new("reference", "silent-head", "chatty-tool");
        b.app(0, StepKind::AppCall { call: CallKey(0), tool: "report".into(), idempotent: true });
        b.initialize(1, 1, 1, "s1", "reference");
        b.call_tool(10, 2, 2, "s1", "report");
        b.respond(12, 2, ResponseHead::event_stream());
        for k in 0..5u32 {
            let t = 1_000 + u64::from(k) * 1_000;
            b.stored(t, "s1", k, progress(k + 1));
            b.event(t + 1, 2, &format!("1-{k}"), progress(k + 1));
            b.app(
                t + 2,
                StepKind::AppEvent {
                    session: sid("s1"),
                    id: Some(eid(&format!("1-{k}"))),
                    call: Some(CallKey(0)),
                    message: progress(k + 1).expect("progress is Some"),
                },
            );
        }
        b.push(10_000, Actor::Fault, StepKind::Fault { fault: "partition client-lb for 4m".into() });
        b.end(10_001, 2, ConnEnd::Reset);
        for attempt in 1..=4u32 {
            let t = 10_000 + u64::from(attempt) * 100;
            b.send(t, u64::from(2 + attempt), Request::get(Some(sid("s1")), Some(eid("1-4"))));
            b.end(t + 1, u64::from(2 + attempt), ConnEnd::Refused);
            b.client(t + 2, StepKind::Backoff { call: Some(CallKey(0)), attempt, delay_us: 200_000 });
        }
        for k in 5..145u32 {
            b.stored(11_000 + u64::from(k) * 1_000, "s1", k, progress(k + 1));
        }
        b.push(250_000, Actor::Run, StepKind::Liveness { deadline: ms(400_000) });
        b.send(250_001, 7, Request::get(Some(sid("s1")), Some(eid("1-4"))));
        let outcome = ResumeOutcome::SilentHead { skipped: 140 };
        b.server(
            250_002,
            StepKind::Resume { session: sid("s1"), last_event_id: eid("1-4"), stream: Some(StreamNo(1)), outcome },
        );
        b.respond(250_003, 7, ResponseHead::event_stream());
        b.stored(251_000, "s1", 145, progress(146));
        b.event(251_001, 7, "1-145", progress(146));
        b.finish(vec![violation("no-silent-event-loss", 250_002, "s1 stream1", "events 1-5 … 1-144 never delivered")])
    }

    fn text(trace: &Trace) -> String {
        render(trace, Format::Text, &DiagramOptions::default())
    }

    #[test]
    fn formats_parse_by_name_and_refuse_others_clearly() {
        assert_eq!("text".parse::<Format>(), Ok(Format::Text));
        assert_eq!(" Mermaid ".parse::<Format>(), Ok(Format::Mermaid));
        assert_eq!("svg".parse::<Format>(), Ok(Format::Svg));
        let err = "png".parse::<Format>().expect_err("png is no diagram format");
        assert_eq!(err.to_string(), "unknown diagram format \"png\": use text, mermaid or svg");
        assert_eq!(Format::Mermaid.to_string().parse::<Format>(), Ok(Format::Mermaid));
    }

    #[test]
    fn text_shows_the_first_incident_and_marks_the_second_side_effect() {
        let out = text(&first_incident());
        assert!(out.starts_with("mcpsim seed 42 · naive × reference × long-tool\n"), "{out}");
        assert!(out.contains("verdict: 1 violation(s): no-duplicate-execution"), "{out}");
        assert!(out.contains("POST initialize#1 (c1)"), "{out}");
        assert!(out.contains("POST tools/call#2 pay call0 [s1] (c2)"), "{out}");
        assert!(out.contains("POST tools/call#4 pay call0 [s2] (c4)"), "{out}");
        assert!(out.contains("event 1-0: priming (c2)"), "{out}");
        assert!(out.contains("✂ idle cut c7 after 1m00.000s"), "{out}");
        let cut = out.lines().find(|l| l.contains("✂ idle cut")).expect("a cut row");
        let lb_column = 1 + 11 + 2 + 2 * 26;
        assert_eq!(cut.chars().nth(lb_column), Some('X'), "the cut sits on the lb lifeline: {out}");
        assert_eq!(cut.matches(" reset ").count(), 2, "{out}");
        assert!(cut.contains("|<--") && cut.contains("-->|"), "{out}");
        assert!(out.contains("X c2 reset"), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let marker = lines
            .iter()
            .position(|l| l.starts_with(">>> VIOLATION no-duplicate-execution: call0 — pay ran"))
            .expect("a violation marker line");
        let broken = lines[marker - 1];
        assert!(broken.starts_with('!') && broken.contains("SIDE EFFECT pay call0") && broken.contains("#4"), "{out}");
        assert_eq!(lines.iter().filter(|l| l.contains("SIDE EFFECT")).count(), 2, "{out}");
        assert_eq!(lines.iter().filter(|l| l.starts_with('!')).count(), 1, "{out}");
    }

    #[test]
    fn stored_events_hide_only_when_their_own_session_delivered_them() {
        let out = text(&first_incident());
        // s1's result was stored where nobody listened: it stays. s2's reached the client.
        assert!(out.contains("stored stream1#1 id=1-1 in s1: result #2 call0"), "{out}");
        assert!(!out.contains("in s2: result"), "{out}");
        assert!(!out.contains("stored stream1#0 id=1-0 in s1: priming"), "{out}");
        let full = render(&first_incident(), Format::Text, &DiagramOptions { collapse: false, max_rows: None });
        assert!(full.contains("stored stream1#0 id=1-0 in s1: priming"), "{full}");
        assert!(full.contains("in s2: result"), "{full}");
    }

    #[test]
    fn text_shows_the_second_incident_with_the_loss_folded_and_marked() {
        let out = text(&second_incident());
        assert!(out.contains("reference × silent-head × chatty-tool"), "{out}");
        assert!(out.contains("= FAULT partition client-lb for 4m ====="), "{out}");
        assert!(out.contains("GET Last-Event-ID=1-4 [s1] (c7)"), "{out}");
        assert!(out.contains("resume s1 stream1 Last-Event-ID=1-4: SILENT head, skipped 140"), "{out}");
        assert!(out.contains(">>> VIOLATION no-silent-event-loss: s1 stream1"), "{out}");
        assert!(
            out.contains("… 140 × event stored in s1 stream1 (ids 1-5 … 1-144), until 2m35.000s …"),
            "the lost events fold into one row: {out}"
        );
        assert!(
            out.contains("… 4 × [GET Last-Event-ID=1-4 [s1] (conns c3 … c6) + connection refused (conns c3 … c6) + reconnect backoff of call0 (attempts 1 … 4)]"),
            "the refused reconnects fold into one row: {out}"
        );
        assert!(
            out.contains("… 5 × [progress event on c2 (ids 1-0 … 1-4) + app ← progress of call0 (ids 1-0 … 1-4)]"),
            "{out}"
        );
        // The delivered event's store is hidden; the resumed delivery is drawn.
        assert!(out.contains("event 1-145: progress #2 step 146 (c7)"), "{out}");
        assert!(!out.contains("id=1-145"), "{out}");
    }

    #[test]
    fn client_rows_of_a_multi_client_trace_name_their_client_and_fold_apart() {
        let mut b = TraceBuilder::new("py-sdk", "py-sdk", "two-sessions-same-request-id");
        for i in 0..6 {
            for client in [0, 1] {
                b.push(1_000 + i * 15_000, Actor::Client, StepKind::Comment { conn: ConnId(4) });
                b.trace.steps.last_mut().unwrap().client = Some(client);
            }
        }
        b.push(100_000, Actor::Client, StepKind::ClientStart { restored: false });
        b.trace.steps.last_mut().unwrap().client = Some(1);
        let out = text(&b.finish(vec![]));
        assert!(out.contains("6 × [[client0] keep-alive on c4 + [client1] keep-alive on c4]"), "{out}");
        assert!(out.contains("[client1] client process started"), "{out}");
        let single = text(&first_incident());
        assert!(!single.contains("[client"), "{single}");
    }

    #[test]
    fn fifty_keep_alives_collapse_into_one_row() {
        let mut b = TraceBuilder::new("reference", "reference", "idle-stream");
        b.send(0, 1, Request::get(Some(sid("s1")), None));
        b.respond(1, 1, ResponseHead::event_stream());
        for k in 0..50 {
            b.client(1_000 + k * 15_000, StepKind::Comment { conn: ConnId(1) });
        }
        b.end(800_000, 1, ConnEnd::Clean);
        let trace = b.finish(vec![]);
        let out = text(&trace);
        let keep_alives: Vec<&str> = out.lines().filter(|l| l.contains("keep-alive")).collect();
        assert_eq!(keep_alives.len(), 1, "{out}");
        assert!(keep_alives[0].contains("… 50 × keep-alive on c1, until 12m16.000s …"), "{out}");
        assert!(keep_alives[0].trim_start().starts_with("1.000s"), "a folded row shows its first time: {out}");
        let full = render(&trace, Format::Text, &DiagramOptions { collapse: false, max_rows: None });
        assert_eq!(full.lines().filter(|l| l.contains("keep-alive (c1)")).count(), 50, "{full}");
    }

    #[test]
    fn two_similar_rows_are_not_folded() {
        let mut b = TraceBuilder::new("a", "b", "c");
        b.client(0, StepKind::Comment { conn: ConnId(1) });
        b.client(1, StepKind::Comment { conn: ConnId(1) });
        let out = text(&b.finish(vec![]));
        assert_eq!(out.lines().filter(|l| l.contains("keep-alive (c1)")).count(), 2, "{out}");
    }

    #[test]
    fn max_rows_truncates_and_still_reports_the_violation() {
        let trace = first_incident();
        let all = Diagram::build(&trace, &DiagramOptions::default()).rows.len();
        let opts = DiagramOptions { collapse: true, max_rows: Some(5) };
        let d = Diagram::build(&trace, &opts);
        assert_eq!(d.rows.len(), 5);
        assert_eq!(d.more, all - 5);
        assert_eq!(d.late.len(), 1);
        let out = render(&trace, Format::Text, &opts);
        assert!(out.contains(&format!("\n… {} more rows\n", all - 5)), "{out}");
        assert!(!out.contains("tools/call#4"), "{out}");
        assert!(out.contains(">>> VIOLATION no-duplicate-execution: call0"), "{out}");
        assert!(render(&trace, Format::Mermaid, &opts).contains(&format!("… {} more rows", all - 5)));
        assert!(render(&trace, Format::Svg, &opts).contains(&format!("… {} more rows", all - 5)));
    }

    /// True if every `;` ends a `#<digits>;` entity and every `#` starts one.
    fn entities_only(line: &str) -> bool {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                ';' => return false,
                '#' => {
                    let digits = chars[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    if digits == 0 || chars.get(i + 1 + digits) != Some(&';') {
                        return false;
                    }
                    i += digits + 2;
                }
                _ => i += 1,
            }
        }
        true
    }

    #[test]
    fn mermaid_draws_both_incidents_with_escaped_messages() {
        for (trace, invariant) in
            [(first_incident(), "no-duplicate-execution"), (second_incident(), "no-silent-event-loss")]
        {
            let out = render(&trace, Format::Mermaid, &DiagramOptions::default());
            assert!(out.starts_with("sequenceDiagram\n"), "{out}");
            for p in ["participant App", "participant Client", "participant LB", "participant Server"] {
                assert!(out.contains(p), "{out}");
            }
            assert!(out.lines().all(entities_only), "an unescaped ; or #: {out}");
            assert!(out.contains("    rect rgb(255,220,220)\n"), "{out}");
            assert!(out.contains(&format!("Note over App,Server: ⚠ VIOLATION {invariant}#58; ")), "{out}");
            let opens = out.lines().filter(|l| l.trim_start().starts_with("rect ")).count();
            let ends = out.lines().filter(|l| l.trim() == "end").count();
            assert_eq!(opens, ends, "{out}");
        }
        let first = render(&first_incident(), Format::Mermaid, &DiagramOptions::default());
        assert!(first.contains("Client->>Server: 0.010s POST tools/call#35;2 pay call0 [s1] (c2)"), "{first}");
        assert!(first.contains("Server-->>Client: 0.014s event 1-0#58; priming (c2)"), "{first}");
        assert!(first.contains("LB-xClient: 1m00.014s ✂ reset (idle cut c7 after 1m00.000s)"), "{first}");
        assert!(first.contains("LB-xServer: reset"), "{first}");
        let second = render(&second_incident(), Format::Mermaid, &DiagramOptions::default());
        assert!(second.contains("GET Last-Event-ID=1-4 [s1] (c7)"), "{second}");
        assert!(second.contains("    title mcpsim seed 42 · reference × silent-head × chatty-tool\n"), "{second}");
    }

    #[test]
    fn mermaid_escapes_what_ends_or_confuses_a_statement() {
        assert_eq!(mermaid::escape("a;b#c:d<e>\"f\"\ng"), "a#59;b#35;c#58;d#60;e#62;#34;f#34; g");
    }

    /// Checks that every tag is closed in order; returns the element names seen.
    fn balanced_tags(svg: &str) -> Result<Vec<String>, String> {
        let mut stack: Vec<String> = Vec::new();
        let mut seen = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            let close = rest[open..].find('>').ok_or("an unclosed <")? + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(top) if top == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
            } else {
                let name: String = tag.chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
                seen.push(name.clone());
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
        }
        if stack.is_empty() {
            Ok(seen)
        } else {
            Err(format!("unclosed {stack:?}"))
        }
    }

    #[test]
    fn svg_draws_both_incidents_with_the_violation_in_red() {
        for (trace, invariant) in
            [(first_incident(), "no-duplicate-execution"), (second_incident(), "no-silent-event-loss")]
        {
            let out = render(&trace, Format::Svg, &DiagramOptions::default());
            assert!(out.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{out}");
            assert!(out.ends_with("</svg>\n"), "{out}");
            let tags = balanced_tags(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
            assert_eq!(out.matches("<g ").count(), out.matches("</g>").count(), "{out}");
            assert_eq!(tags.iter().filter(|t| *t == "svg").count(), 1);
            let red = format!(r##"fill="#c00000" class="strong">⚠ VIOLATION {invariant}: "##);
            assert!(out.contains(&red), "{out}");
            for lane in ["app", "client", "lb", "server"] {
                assert_eq!(out.matches(&format!(r#"class="strong">{lane}</text>"#)).count(), 2, "{out}");
            }
        }
        let first = render(&first_incident(), Format::Svg, &DiagramOptions::default());
        assert!(first.contains(">POST tools/call#2 pay call0 [s1] (c2)</text>"), "{first}");
        assert!(first.contains(">✂ idle cut c7 after 1m00.000s</text>"), "{first}");
        assert!(
            first.contains(r##"<path d="M634 "##) && first.contains(r##"stroke="#c00000""##),
            "a red cut mark on lb: {first}"
        );
        assert!(first.contains(r#"class="money""#), "the side effects stand out: {first}");
    }

    #[test]
    fn svg_escapes_labels_and_keeps_a_fixed_row_height() {
        let mut b = TraceBuilder::new("a&b", "<srv>", "x");
        let message = ServerMessage::Error { request: RequestId(2), message: "bad <input> & \"quotes\"".into() };
        b.client(0, StepKind::Json { conn: ConnId(1), message });
        let out = render(&b.finish(vec![]), Format::Svg, &DiagramOptions::default());
        balanced_tags(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert!(out.contains("bad &lt;input&gt; &amp; &quot;quotes&quot;"), "{out}");
        assert!(out.contains("a&amp;b × &lt;srv&gt;"), "{out}");

        let height = |rows: u64| {
            let mut b = TraceBuilder::new("a", "b", "c");
            for k in 0..rows {
                b.app(k, StepKind::AppSessionLost { session: sid("s1") });
            }
            let out = render(&b.finish(vec![]), Format::Svg, &DiagramOptions::default());
            let at = out.find("height=\"").expect("a height") + 8;
            out[at..].split('"').next().and_then(|h| h.parse::<u64>().ok()).expect("a numeric height")
        };
        assert_eq!(height(400) - height(0), 400 * 24);
    }

    #[test]
    fn a_trace_from_elsewhere_still_draws() {
        let mut trace = Trace::new(9, serde_json::json!({"other": true}));
        trace.steps.push(Step {
            seq: 0,
            t: 5,
            actor: Actor::Run,
            client: None,
            kind: StepKind::Liveness { deadline: 10 },
        });
        for format in [Format::Text, Format::Mermaid, Format::Svg] {
            let out = render(&trace, format, &DiagramOptions::default());
            assert!(out.contains("mcpsim seed 9 · ? × ? × ?"), "{out}");
            assert!(
                out.contains("verdict: unknown (no footer") || out.contains("verdict#58; unknown (no footer"),
                "{out}"
            );
        }
        let empty = Trace::new(1, serde_json::Value::Null);
        let mut late = empty.clone();
        late.finish(vec![violation("no-orphaned-session", 5, "s9", "")]);
        let out = text(&late);
        assert!(out.contains(">>> VIOLATION no-orphaned-session: s9 (at 0.005s) [its row is not shown]"), "{out}");
    }

    #[test]
    fn a_violation_lands_on_the_step_its_invariant_is_about() {
        let mut b = TraceBuilder::new("a", "b", "c");
        b.stored(5, "s1", 7, progress(8));
        let outcome = ResumeOutcome::SilentHead { skipped: 3 };
        b.server(5, StepKind::Resume { session: sid("s1"), last_event_id: eid("1-4"), stream: None, outcome });
        b.side_effect(5, "s1", 2);
        b.app(9, StepKind::AppSessionLost { session: sid("s1") });
        let trace = b.finish(vec![]);
        let loss = violation("no-silent-event-loss", 5, "s1", "");
        assert_eq!(anchor(&loss, &trace.steps), Some(1));
        assert_eq!(anchor(&violation("no-duplicate-execution", 5, "call0", ""), &trace.steps), Some(2));
        assert_eq!(anchor(&violation("something-else", 5, "", ""), &trace.steps), Some(0));
        assert_eq!(anchor(&violation("something-else", 7, "", ""), &trace.steps), Some(2), "the last step before");
        assert_eq!(anchor(&loss, &[]), None);
    }

    #[test]
    fn a_violating_stored_event_is_drawn_even_when_delivered() {
        let mut b = TraceBuilder::new("a", "b", "c");
        b.send(0, 1, Request::get(Some(sid("s1")), None));
        b.stored(1, "s1", 0, progress(1));
        b.event(2, 1, "1-0", progress(1));
        let quiet = text(&b.finish(vec![]));
        assert!(!quiet.contains("id=1-0"), "{quiet}");
        let loud = text(&b.finish(vec![violation("no-silent-event-loss", 1, "1-0", "")]));
        assert!(loud.contains("stored stream1#0 id=1-0 in s1"), "{loud}");
    }

    #[test]
    fn the_same_trace_draws_the_same_bytes() {
        for trace in [first_incident(), second_incident()] {
            for format in [Format::Text, Format::Mermaid, Format::Svg] {
                let opts = DiagramOptions::default();
                assert_eq!(render(&trace, format, &opts), render(&trace.clone(), format, &opts));
            }
        }
    }
}
