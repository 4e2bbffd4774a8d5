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

/// Text as XML character data or attribute value ([`crate::report::escape::xml`]).
pub(crate) fn xml(text: &str) -> String {
    crate::report::escape::xml(text)
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
    let mut p = Picture { body: String::new(), right: lane_x(d.last()) + 120, slot: 0 };
    for row in &d.rows {
        draw_row(&mut p, row);
        for v in &row.violations {
            violation_slot(&mut p, Some(row.step), &violation_text(v));
        }
    }
    if d.more > 0 {
        let top = p.next_slot();
        p.raw(r#"<g class="more">"#);
        p.text(TIME_X + 12, top + 16, "start", r#" class="t""#, &more_rows_text(d.more));
        p.raw("</g>\n");
    }
    for v in &d.late {
        violation_slot(&mut p, None, &format!("{} [its row is not shown]", violation_text(v)));
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
    for lane in d.lanes() {
        let x = lane_x(lane);
        let _ = writeln!(
            out,
            r#"<g class="lane"><line class="life" x1="{x}" y1="{}" x2="{x}" y2="{foot_y}"/>{}{}</g>"#,
            HEAD_Y + 24,
            lane_head(lane, d.servers, HEAD_Y),
            lane_head(lane, d.servers, foot_y)
        );
    }
    out.push_str(&p.body);
    out.push_str("</svg>\n");
    out
}

/// A lifeline's name in a box with its top at `y`.
fn lane_head(lane: Lane, servers: u32, y: usize) -> String {
    let x = lane_x(lane);
    format!(
        r#"<rect class="head" x="{}" y="{y}" width="100" height="24" rx="4"/><text x="{x}" y="{}" text-anchor="middle" class="strong">{}</text>"#,
        x - 50,
        y + 16,
        lane.name(servers)
    )
}

/// A red cross on a lifeline: where the load balancer cut a connection.
fn cut_mark(p: &mut Picture, x: usize, y: usize) {
    let (l, r, t, b) = (x - 6, x + 6, y - 6, y + 6);
    p.raw(&format!(r#"<path d="M{l} {t} L{r} {b} M{l} {b} L{r} {t}" stroke="{RED}" stroke-width="2.5"/>"#));
}

/// A red line naming a broken invariant, right under the row of its step (`data-step`, which the
/// HTML page links to its timeline) or, for a row not shown, after the last.
fn violation_slot(p: &mut Picture, step: Option<usize>, text: &str) {
    let top = p.next_slot();
    let data = step.map(|s| format!(r#" data-step="{s}""#)).unwrap_or_default();
    p.raw(&format!(r#"<g class="violation"{data}><rect class="hl" x="0" y="{top}" width="100%" height="{ROW_H}"/>"#));
    p.text(TIME_X + 12, top + 16, "start", &format!(r#" fill="{RED}" class="strong""#), &format!("⚠ {text}"));
    p.raw("</g>\n");
}

fn draw_row(p: &mut Picture, row: &Row) {
    let top = p.next_slot();
    let mid = top + ROW_H / 2;
    // `data-step`: the trace index of the row's (first) step, for the HTML page's links.
    p.raw(&format!(r#"<g class="row" data-step="{}">"#, row.step));
    if !row.violations.is_empty() {
        p.raw(&format!(r#"<rect class="hl" x="0" y="{top}" width="100%" height="{ROW_H}"/>"#));
    }
    p.text(TIME_X, mid + 4, "end", r#" class="t""#, &format_micros(row.t));
    match row.shape {
        Shape::Arrow { from, to, reply } => arrow(p, lane_x(from), lane_x(to), mid, reply, &row.label),
        Shape::Cut(server) => {
            let lb = lane_x(Lane::Lb);
            arrow(p, lb, lane_x(Lane::Client), mid, false, "reset");
            arrow(p, lb, lane_x(server), mid, false, "reset");
            cut_mark(p, lb, mid + 6);
            p.text(lane_x(server) + 12, mid + 4, "start", "", &format!("✂ {}", row.label));
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
