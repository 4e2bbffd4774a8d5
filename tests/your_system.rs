//! docs/your-system.md stays true: every report the page prints between markers is what
//! `mcpsim check` prints now for the example deployment it names.
//!
//! - `<!-- check:FILE:table:begin -->` … `<!-- check:FILE:table:end -->` holds a fenced block that
//!   must equal the table of `mcpsim check docs/examples/FILE` (from its `family` line to the
//!   blank line after it);
//! - `<!-- check:FILE:excerpt:begin -->` … `end -->` holds a fenced block whose every line must
//!   be a line of that report (cell notes, replay commands, mitigations, advice).
//!
//! The page also says the CDN's 100 s maximum connection age changes no cell of the example
//! deployment; `the_cdn_changes_no_cell` keeps that true.

use mcpsim::run;
use mcpsim::studies::check::{check, render_text, Deployment};
use mcpsim::studies::pool::Silent;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The seeds `mcpsim check` runs by default, and the ones the page shows.
const SEEDS: u64 = 5;
const JOBS: usize = 2;
const PAGE: &str = "docs/your-system.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn report_of(deployment: &Deployment) -> String {
    let report = check(deployment, SEEDS, JOBS, &run, &Silent).expect("the example deployment checks");
    render_text(&report)
}

/// The table of a rendered report: from its `family` header to the first blank line after it.
fn table(report: &str) -> String {
    let lines: Vec<&str> =
        report.lines().skip_while(|l| !l.starts_with("family ")).take_while(|l| !l.is_empty()).collect();
    lines.join("\n")
}

/// The marked blocks of the page: (file, kind) → the fenced blocks' texts, in order.
fn marked_blocks(page: &str) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut open: Option<(String, String)> = None;
    let mut body: Vec<&str> = vec![];
    for (n, line) in page.lines().enumerate() {
        let marker = line.trim().strip_prefix("<!-- check:").and_then(|m| m.strip_suffix(" -->"));
        match (marker.map(|m| m.rsplitn(2, ':').collect::<Vec<_>>()), &open) {
            (Some(parts), None) if parts.len() == 2 && parts[0] == "begin" => {
                let (file, kind) = parts[1].split_once(':').unwrap_or_else(|| panic!("{PAGE}:{}: FILE:KIND", n + 1));
                open = Some((file.to_string(), kind.to_string()));
                body.clear();
            }
            (Some(parts), Some(key)) if parts.len() == 2 && parts[0] == "end" => {
                assert_eq!(parts[1], format!("{}:{}", key.0, key.1), "{PAGE}:{}: end of another block", n + 1);
                let inner: Vec<&str> = body.iter().copied().filter(|l| !l.starts_with("```")).collect();
                assert!(body.first().is_some_and(|l| l.starts_with("```")), "{PAGE}:{}: a fenced block", n + 1);
                out.entry(key.clone()).or_default().push(inner.join("\n"));
                open = None;
            }
            (Some(_), _) => panic!("{PAGE}:{}: a marker out of place: {line}", n + 1),
            (None, Some(_)) => body.push(line),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{PAGE}: a block is not closed: {open:?}");
    out
}

#[test]
fn the_page_prints_what_check_prints() {
    let page = std::fs::read_to_string(root().join(PAGE)).expect("the page exists");
    let blocks = marked_blocks(&page);
    let files: Vec<&String> =
        blocks.keys().map(|(f, _)| f).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    assert!(files.iter().any(|f| *f == "deployment.toml"), "the page marks the example deployment's table");
    assert!(files.iter().any(|f| *f == "deployment-fixed.toml"), "the page marks the fixed deployment's table");
    let mut problems = vec![];
    for file in files {
        let path = root().join("docs/examples").join(file);
        let deployment = Deployment::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let report = report_of(&deployment);
        let command = format!("cargo run -p mcpsim -- check docs/examples/{file} --seeds {SEEDS}");
        for text in blocks.get(&(file.clone(), "table".into())).into_iter().flatten() {
            if *text != table(&report) {
                problems.push(format!(
                    "{PAGE}: the table of {file} is stale; `{command}` prints now:\n{}\n",
                    table(&report)
                ));
            }
        }
        let lines: Vec<&str> = report.lines().collect();
        for text in blocks.get(&(file.clone(), "excerpt".into())).into_iter().flatten() {
            for line in text.lines().filter(|l| !lines.contains(l)) {
                problems.push(format!("{PAGE}: `{command}` no longer prints this line of the page:\n{line}\n"));
            }
        }
        for (key, _) in blocks.iter().filter(|((f, k), _)| f == file && k != "table" && k != "excerpt") {
            problems.push(format!("{PAGE}: unknown block kind {key:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_cdn_changes_no_cell() {
    let path = root().join("docs/examples/deployment.toml");
    let text = std::fs::read_to_string(&path).expect("the example exists");
    assert!(text.contains("max_lifetime = \"100s\""), "the example has the CDN the page describes");
    let without: String = text.lines().filter(|l| !l.starts_with("max_lifetime")).collect::<Vec<_>>().join("\n");
    let with = Deployment::load(&path).expect("reads");
    let plain = Deployment::parse(&without, &path.display().to_string()).expect("reads without the CDN");
    assert_ne!(with, plain, "removing the line removed the CDN");
    assert_eq!(table(&report_of(&with)), table(&report_of(&plain)), "the page says the CDN changes no cell");
}

#[test]
fn a_stale_table_is_caught() {
    let page =
        "<!-- check:deployment.toml:table:begin -->\n```\nfamily  x\n```\n<!-- check:deployment.toml:table:end -->\n";
    let blocks = marked_blocks(page);
    assert_eq!(blocks[&("deployment.toml".into(), "table".into())], vec!["family  x".to_string()]);
    assert_ne!(
        blocks[&("deployment.toml".into(), "table".into())][0],
        table("seeds\n\nfamily  ok\n---\nlong  ok\n\n[1]")
    );
    assert_eq!(table("seeds\n\nfamily  ok\n---\nlong  ok\n\n[1]"), "family  ok\n---\nlong  ok");
}

/// A number the page writes in words.
fn number_word(word: &str) -> Option<usize> {
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
        .iter()
        .position(|w| *w == word)
}

#[test]
fn the_cdn_cuts_the_page_counts_are_those_of_the_run() {
    let page = std::fs::read_to_string(root().join(PAGE)).expect("the page");
    let said = page
        .split("the trace has ")
        .skip(1)
        .find_map(|rest| rest.split_once(" `lb-lifetime-cut` steps").map(|(word, _)| word).filter(|w| !w.contains(' ')))
        .expect("the page counts the CDN's cuts");
    let said = number_word(said).unwrap_or_else(|| panic!("{said:?} is not a number in words"));
    let mut s = mcpsim::Scenario::build("chatty-tool", "rmcp", "py-sdk").expect("built-in names");
    let sets = [
        ("server.retention.max_events", "none"),
        ("server.retention.window", "10m"),
        ("lb.idle_timeout", "60s"),
        ("lb.max_lifetime", "100s"),
    ];
    s.apply_overrides(&sets.map(|(k, v)| (k.to_string(), v.to_string()))).expect("valid overrides");
    let outcome = run(&s, 0).expect("the run completes");
    let cuts = outcome
        .trace
        .steps
        .iter()
        .filter(|s| matches!(s.kind, mcpsim_model::trace::StepKind::LbLifetimeCut { .. }))
        .count();
    // Was: "four" (the run records two).
    assert_eq!(said, cuts, "docs/your-system.md §3 counts {said} lifetime cuts; the run records {cuts}");
    assert!(outcome.violations.is_empty(), "rmcp resumes without losing an event: {:?}", outcome.violations);
}

#[test]
fn every_link_to_a_section_of_the_page_names_one_of_its_headings() {
    let page = std::fs::read_to_string(root().join(PAGE)).expect("the page");
    let slug = |h: &str| -> String {
        let h: String = h
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
            .collect();
        h.replace(' ', "-")
    };
    let mut fenced = false;
    let mut headings = Vec::new();
    for line in page.lines() {
        fenced ^= line.starts_with("```");
        if !fenced && line.starts_with('#') {
            headings.push(slug(line.trim_start_matches('#')));
        }
    }
    // Was: #6-chains-of-intermediaries, for §7.
    for link in page.split("](#").skip(1).filter_map(|rest| rest.split(')').next()) {
        assert!(headings.iter().any(|h| h == link), "#{link} names no heading of the page: {headings:?}");
    }
}
