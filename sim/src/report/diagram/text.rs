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
    let mut names = Canvas::blank(d.last());
    for lane in d.lanes() {
        names.write(col(lane), &lane.name(d.servers));
    }
    push_line(&mut out, &format!(" {:>TIME_W$}  {}", "time", names.text()));
    for row in &d.rows {
        push_line(&mut out, &row_line(d, row));
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
fn row_line(d: &Diagram, row: &Row) -> String {
    let mut canvas = Canvas::lifelines(d);
    let suffix = match row.shape {
        Shape::Arrow { from, to, reply } => canvas.arrow(col(from), col(to), reply, &row.label),
        Shape::Cut(server) => {
            canvas.arrow(col(Lane::Lb), col(Lane::Client), false, "reset");
            canvas.arrow(col(Lane::Lb), col(server), false, "reset");
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

/// One row of characters, and the column of its rightmost lifeline.
struct Canvas(Vec<char>, usize);

impl Canvas {
    fn blank(last: Lane) -> Canvas {
        Canvas(vec![' '; col(last) + 1], col(last))
    }

    fn lifelines(d: &Diagram) -> Canvas {
        let mut c = Canvas::blank(d.last());
        for lane in d.lanes() {
            c.set(col(lane), '|');
        }
        c
    }

    fn is_lifeline(&self, at: usize) -> bool {
        at.is_multiple_of(GAP) && at <= self.1
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
                if self.is_lifeline(at) {
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
