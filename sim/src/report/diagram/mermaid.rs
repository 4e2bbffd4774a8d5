use super::*;

const RED: &str = "rgb(255,220,220)";
const YELLOW: &str = "rgb(255,243,176)";

/// A lifeline's Mermaid name: `Server`, or `Server1` for replica 1 when there are several.
fn participant(lane: Lane, servers: u32) -> String {
    match lane {
        Lane::App => "App".into(),
        Lane::Client => "Client".into(),
        Lane::Lb => "LB".into(),
        Lane::Server(_) if servers <= 1 => "Server".into(),
        Lane::Server(replica) => format!("Server{replica}"),
    }
}

pub(super) fn draw(d: &Diagram) -> String {
    let mut out = String::from("sequenceDiagram\n");
    // The title statement ends at `#` or `;`: drop them rather than escape.
    let title: String = d.title.chars().map(|c| if matches!(c, '#' | ';' | '\n') { ' ' } else { c }).collect();
    out.push_str(&format!("    title {title}\n"));
    let across = format!("App,{}", participant(d.last(), d.servers));
    let across = across.as_str();
    for lane in d.lanes() {
        let name = participant(lane, d.servers);
        match lane {
            Lane::Server(_) if d.servers > 1 => {
                out.push_str(&format!("    participant {name} as {}\n", escape(&lane.name(d.servers))));
            }
            _ => out.push_str(&format!("    participant {name}\n")),
        }
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
        for line in row_lines(row, d.servers) {
            out.push_str(&format!("    {line}\n"));
        }
        for v in &row.violations {
            out.push_str(&format!("    Note over {across}: {}\n", escape(&format!("⚠ {}", violation_text(v)))));
        }
        if block.is_some() {
            out.push_str("    end\n");
        }
    }
    if d.more > 0 {
        out.push_str(&format!("    Note over {across}: {}\n", escape(&more_rows_text(d.more))));
    }
    for v in &d.late {
        out.push_str(&format!("    rect {RED}\n"));
        let text = format!("⚠ {} [its row is not shown]", violation_text(v));
        out.push_str(&format!("    Note over {across}: {}\n", escape(&text)));
        out.push_str("    end\n");
    }
    out.push_str(&format!("    Note over {across}: {}\n", escape(&d.verdict)));
    out
}

fn row_lines(row: &Row, servers: u32) -> Vec<String> {
    let participant = |lane| participant(lane, servers);
    let time = format_micros(row.t);
    let message = escape(&format!("{time} {}", row.label));
    match row.shape {
        Shape::Arrow { from, to, reply } => {
            let arrow = if reply { "-->>" } else { "->>" };
            vec![format!("{}{arrow}{}: {message}", participant(from), participant(to))]
        }
        Shape::Cut(server) => vec![
            format!("LB-xClient: {}", escape(&format!("{time} ✂ reset ({})", row.label))),
            format!("LB-x{}: reset", participant(server)),
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
    for c in crate::report::escape::control(text).chars() {
        match c {
            '#' | ';' | ':' | '<' | '>' | '"' => out.push_str(&format!("#{};", u32::from(c))),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}
