//! Checked-in drawings must be what the code draws today: each is rendered again from its trace
//! and compared byte for byte. A failure prints the command that writes the file again.

use mcpsim::report::artifacts::read_trace;
use mcpsim::report::diagram::{render, DiagramOptions, Format};
use std::path::Path;

/// (drawing, the trace it is drawn from, format): as `mcpsim show TRACE --format F -o DRAWING`.
const DRAWINGS: [(&str, &str, Format); 1] = [(
    "docs/first-incident.svg",
    "traces/no-duplicate-execution--naive--reference--long-tool--88eec5a2.jsonl",
    Format::Svg,
)];

#[test]
fn checked_in_drawings_match_what_show_draws() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for (drawing, trace, format) in DRAWINGS {
        let trace_file = read_trace(&root.join(trace)).unwrap_or_else(|e| panic!("{e}"));
        let fresh = render(&trace_file, format, &DiagramOptions::default());
        let path = root.join(drawing);
        let checked_in = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if checked_in != fresh {
            let line = checked_in.lines().zip(fresh.lines()).position(|(a, b)| a != b);
            let at = line.map(|l| format!("first difference at line {}", l + 1)).unwrap_or("lengths differ".into());
            stale.push(format!(
                "{drawing} is not what `show` draws ({at}); write it again with:\n  \
                 cargo run --release -p mcpsim -- show {trace} --format {format} -o {drawing}"
            ));
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}
