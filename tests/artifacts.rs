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

/// Shortens every session id (a UUID, or the hex id an SDK mints) to its first 8 characters and
/// `…`, as the docs print them ("ids shortened here").
fn shorten_ids(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() > 16 && run.contains('-') && run.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            out.push_str(&run[..8]);
            out.push_str("-…");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() || ('a'..='f').contains(&c) || c == '-' {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Every `cargo run … -- run …` command a document prints in a `sh` block, directly followed by
/// the block of what it printed: the lines shown are what the command prints today.
#[test]
fn documented_run_outputs_are_what_the_command_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut stale = Vec::new();
    for doc in ["docs/your-system.md", "docs/scale-out.md", "README.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        let blocks: Vec<&str> = text.split("```").collect();
        // Odd pieces are fenced blocks (with their info string); a command block, then the
        // output block two pieces later with only blank text between.
        for i in (1..blocks.len().saturating_sub(2)).step_by(2) {
            let Some(command) = blocks[i].strip_prefix("sh\n").map(str::trim) else { continue };
            if !blocks[i + 1].trim().is_empty() || command.lines().count() != 1 || !command.contains(" -- run ") {
                continue;
            }
            let shown = blocks[i + 2].trim_start_matches(|c: char| c.is_ascii_alphabetic()).trim_start_matches('\n');
            if !(shown.starts_with("VIOLATED (") || shown.starts_with("ok: ")) {
                continue;
            }
            let args: Vec<&str> = command.split(" -- run ").nth(1).unwrap_or("").split_whitespace().collect();
            let mut target = mcpsim::scenario::ScenarioArgs {
                client: "reference".into(),
                server: "reference".into(),
                scenario: "long-tool".into(),
                sets: vec![],
            };
            let mut seed = 0;
            for pair in args.chunks(2) {
                let value = pair.get(1).copied().unwrap_or_default().to_string();
                match pair[0] {
                    "--client" => target.client = value,
                    "--server" => target.server = value,
                    "--scenario" => target.scenario = value,
                    "--set" => target.sets.push(value),
                    "--seed" => seed = value.parse().expect("a seed"),
                    other => panic!("{doc}: {other} in `{command}` is not read by this test"),
                }
            }
            let scenario = target.build().unwrap_or_else(|e| panic!("{doc}: `{command}`: {e}"));
            let outcome = mcpsim::run(&scenario, seed).expect("runs");
            let now = shorten_ids(&mcpsim::cli::verdict_text(&scenario, seed, &outcome, None));
            for line in shown.lines() {
                if !now.lines().any(|l| l == line) {
                    stale.push(format!("{doc}: `{command}` no longer prints:\n  {line}\nit prints:\n{now}"));
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 2, "the documented runs were found ({checked})");
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

/// Every plot in docs/plots that names a predicted boundary is drawn by a `sweep … --plot` command
/// printed in the docs, and the boundary it names is what advise predicts for that command today
/// (the sweep itself is not re-run: a plot's measured curve is checked by eye and by its prose).
#[test]
fn plotted_predicted_boundaries_are_what_advise_says_now() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/retention.md")).expect("docs/retention.md");
    let joined = doc.replace("\\\n", " ");
    let mut commands = std::collections::BTreeMap::new();
    for line in
        joined.lines().filter(|l| l.trim_start().starts_with("mcpsim sweep ") && l.contains("--plot docs/plots/"))
    {
        let args: Vec<&str> = line.split_whitespace().skip(2).collect();
        let mut target = mcpsim::scenario::ScenarioArgs {
            client: "reference".into(),
            server: "reference".into(),
            scenario: "long-tool".into(),
            sets: vec![],
        };
        let (mut vary, mut plot) = (Vec::new(), None);
        for pair in args.chunks(2) {
            let value = pair.get(1).copied().unwrap_or_default().to_string();
            match pair[0] {
                "--client" => target.client = value,
                "--server" => target.server = value,
                "--scenario" => target.scenario = value,
                "--set" => target.sets.push(value),
                "--vary" => vary.push(value.split_once('=').expect("KEY=RANGE").0.to_string()),
                "--plot" => plot = Some(value),
                "--seeds" => {}
                other => panic!("{other} in `{line}` is not read by this test"),
            }
        }
        let plot = plot.expect("--plot");
        let scenario = target.build().unwrap_or_else(|e| panic!("`{line}`: {e}"));
        let key = vary.last().expect("--vary").clone();
        let predicted = mcpsim::studies::advise::predict(&scenario, &key)
            .map(|p| p.unwrap_or_else(|e| panic!("`{line}`: {e}")).minimal);
        commands.insert(plot, predicted);
    }
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("docs/plots")).expect("docs/plots") {
        let path = entry.expect("a directory entry").path();
        let svg = std::fs::read_to_string(&path).expect("a plot");
        let Some(at) = svg.find("predicted boundary (") else { continue };
        let shown: f64 =
            svg[at + 20..].split(')').next().and_then(|n| n.trim_end_matches('s').parse().ok()).expect("a number");
        let name = format!("docs/plots/{}", path.file_name().and_then(|n| n.to_str()).expect("a name"));
        let predicted = commands
            .get(&name)
            .unwrap_or_else(|| panic!("{name}: no `mcpsim sweep … --plot {name}` in docs/retention.md"));
        assert_eq!(
            *predicted,
            Some(shown),
            "{name} shows a predicted boundary of {shown}; advise says {predicted:?} now: run the command again"
        );
        checked += 1;
    }
    assert!(checked >= 5, "plots with a predicted boundary: {checked}");
}
