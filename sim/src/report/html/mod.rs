//! Traces as one self-contained HTML page (`mcpsim show --format html`): per trace a title and
//! verdict, the violations, the cause chain of each broken invariant, the SVG sequence diagram
//! and an interactive timeline (filter by actor, a step's fields on click or hover, a button that
//! jumps to the violating step).
//!
//! The page loads nothing: CSS and script are inline, the step data is JSON in a
//! `<script type="application/json">` tag, and a Content-Security-Policy forbids every fetch.
//! The same traces give the same bytes.
//!
//! A report over several traces (a table of cells, then one section per broken cell) builds each
//! section with [`trace_section`], adds what it knows beside it (the mitigation), and wraps them
//! all with [`page`]: one script serves every section on the page.
//!
//! The page's script writes what it did onto `<html>`, which a headless browser's `--dump-dom`
//! shows (`tests/html_report.rs`): `data-ready="1"` once every section is drawn, `data-rows` the
//! timeline rows drawn, `data-errors` the uncaught script errors, `data-violation-visible="1"`
//! when the first section's violating row is in its table and shown. Opened as `page.html#jump`,
//! the page presses the first "jump to the violating step" button itself and records the step
//! it scrolled to in `data-jumped`.

pub use crate::report::cause::{cause_chain, Cause, MAX_CAUSES};

use crate::report::diagram::{self, DiagramOptions, Format};
use crate::report::timeline;
use mcpsim_model::time::format_micros;
use mcpsim_model::trace::{Step, Trace};
use serde::Serialize;
use std::fmt::Write;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");
/// Only inline styles and scripts; no fetch of any kind.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";
/// Counts uncaught errors from the first moment, before the page's own script runs.
const ERROR_COUNTER: &str = "window.addEventListener('error', function () { var r = document.documentElement; \
r.setAttribute('data-errors', String(Number(r.getAttribute('data-errors') || 0) + 1)); });";

/// A whole page: `title` as its heading, then the sections (each from [`trace_section`] or any
/// HTML of the caller's), then the script that makes every trace section interactive.
pub fn page(title: &str, sections: &[String]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\" data-errors=\"0\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(out, "<script>{ERROR_COUNTER}</script>");
    let _ = writeln!(out, "<style>\n{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(out, "<h1>{}</h1>", escape(title));
    for section in sections {
        out.push_str(section);
    }
    let _ = writeln!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>");
    out
}

/// The page `mcpsim show --format html` writes: one trace.
pub fn trace_page(trace: &Trace, opts: &DiagramOptions) -> String {
    page(&diagram::title(&trace.header), &[trace_section_with(trace, opts)])
}

/// One trace's section, with the diagram drawn as `show` draws it by default.
pub fn trace_section(trace: &Trace) -> String {
    trace_section_with(trace, &DiagramOptions::default())
}

/// The step data the page's script reads.
#[derive(Serialize)]
struct Data<'a> {
    steps: Vec<StepData<'a>>,
    violations: Vec<ViolationData>,
}

#[derive(Serialize)]
struct StepData<'a> {
    i: usize,
    time: String,
    actor: String,
    kind: String,
    summary: String,
    /// Every field, as the trace file has it.
    step: &'a Step,
}

#[derive(Serialize)]
struct ViolationData {
    /// The violating step, if one could be found.
    step: Option<usize>,
    invariant: String,
    text: String,
}

/// One trace's section: title, verdict, violations, cause chains, diagram and timeline.
pub fn trace_section_with(trace: &Trace, opts: &DiagramOptions) -> String {
    let (digest, _) = trace.digest();
    let id = format!("t{}-{}", trace.header.seed, &digest[..8]);
    let verdict = trace.footer.as_ref().map(|f| f.verdict.as_slice()).unwrap_or(&[]);
    let violations: Vec<ViolationData> = verdict
        .iter()
        .map(|v| ViolationData {
            step: diagram::violation_step(v, &trace.steps),
            invariant: v.invariant.clone(),
            text: diagram::violation_text(v),
        })
        .collect();

    let mut out = String::new();
    let _ = writeln!(out, "<section class=\"m-trace\" id=\"{id}\" data-seed=\"{}\">", trace.header.seed);
    let _ = writeln!(out, "<h2>{}</h2>", escape(&diagram::title(&trace.header)));
    let class = if verdict.is_empty() { "m-verdict" } else { "m-verdict m-bad" };
    let _ = writeln!(out, "<p class=\"{class}\">{}</p>", escape(&diagram::verdict_line(trace.footer.as_ref())));
    if !violations.is_empty() {
        out.push_str("<h3>Violations</h3>\n<ol class=\"m-violations\">\n");
        for (v, record) in violations.iter().zip(verdict) {
            let conditions = if record.conditions.is_empty() {
                String::new()
            } else {
                format!("<br><span class=\"m-conditions\">conditions: {}</span>", escape(&record.conditions))
            };
            let _ = writeln!(out, "<li>{} {}{conditions}</li>", step_link(&id, v.step), escape(&v.text));
        }
        out.push_str("</ol>\n");
    }
    write_cause_chains(&mut out, &id, trace, &violations);
    out.push_str("<h3>Sequence diagram</h3>\n<div class=\"m-diagram\">\n");
    out.push_str(&diagram::render(trace, Format::Svg, opts));
    out.push_str("</div>\n<h3>Timeline</h3>\n<div class=\"m-controls\">");
    let disabled = if violations.iter().any(|v| v.step.is_some()) { "" } else { " disabled" };
    let _ = write!(out, "<button type=\"button\" class=\"m-jump\"{disabled}>Jump to the violating step</button>");
    out.push_str(" <span class=\"m-filters\">actors:</span></div>\n");
    out.push_str(concat!(
        "<div class=\"m-timeline\"><div class=\"m-table\"><table>",
        "<thead><tr><th>#</th><th>time</th><th>actor</th><th>kind</th><th>summary</th></tr></thead>",
        "<tbody></tbody></table></div>",
        "<pre class=\"m-detail\">Click a step (or hover over it) to see all its fields.</pre></div>\n",
        "<noscript><p>The timeline needs JavaScript; the diagram above does not.</p></noscript>\n",
    ));
    let data = Data { steps: trace.steps.iter().enumerate().map(|(i, s)| step_data(i, s)).collect(), violations };
    let _ = writeln!(out, "<script type=\"application/json\" class=\"m-data\">{}</script>", script_json(&data));
    out.push_str("</section>\n");
    out
}

fn step_data(i: usize, step: &Step) -> StepData<'_> {
    let kind = serde_json::to_value(&step.kind)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
        .unwrap_or_default();
    StepData {
        i,
        time: format_micros(step.t),
        actor: timeline::actor(step),
        kind,
        summary: timeline::describe(&step.kind),
        step,
    }
}

/// A link that selects a step in the timeline (and, without the script, goes to its row).
fn step_link(section: &str, step: Option<usize>) -> String {
    match step {
        Some(i) => format!("<a class=\"m-step\" href=\"#{section}-s{i}\" data-step=\"{i}\">step {i}</a>"),
        None => "<span class=\"m-step\">(no step)</span>".to_string(),
    }
}

/// For each invariant broken, the chain of steps before its first violation.
fn write_cause_chains(out: &mut String, id: &str, trace: &Trace, violations: &[ViolationData]) {
    let mut seen: Vec<&str> = Vec::new();
    for v in violations {
        let Some(step) = v.step else { continue };
        if seen.contains(&v.invariant.as_str()) {
            continue;
        }
        seen.push(&v.invariant);
        let (causes, dropped) = cause_chain(&trace.steps, step);
        let _ = writeln!(out, "<h3>Why {} broke</h3>", escape(&v.invariant));
        if dropped > 0 {
            let _ = writeln!(out, "<p class=\"m-note\">({dropped} earlier link(s) of the chain left out)</p>");
        }
        out.push_str("<ol class=\"m-causes\">\n");
        for c in &causes {
            let last = if c.step == step { " class=\"m-cause-violation\"" } else { "" };
            let _ = writeln!(
                out,
                "<li{last}>{} <span class=\"m-time\">{}</span> <b>{}</b>: {}</li>",
                step_link(id, Some(c.step)),
                escape(&format_micros(c.t)),
                escape(&c.actor),
                escape(&c.text)
            );
        }
        let _ = writeln!(out, "<li class=\"m-cause-violation\">⇒ {}</li>", escape(&v.text));
        out.push_str("</ol>\n");
    }
}

/// Text as HTML character data or a quoted attribute value: the same escaping as the SVG's.
pub(crate) use crate::report::diagram::xml_escape as escape;

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` are written as `\u003c`,
/// `\u003e` and `\u0026` (they only occur inside strings, where JSON allows those escapes), so no
/// `</script>` or `<!--` can end or confuse the element.
pub(crate) fn script_json(value: &impl Serialize) -> String {
    // Serializing plain data with string keys cannot fail; `null` keeps the page loadable anyway.
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".to_string());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
