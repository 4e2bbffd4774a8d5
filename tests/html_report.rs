//! `mcpsim show --format html` in a real browser: a corpus trace is rendered to a page, Debian's
//! headless Chromium loads it (`--dump-dom`), and the DOM after the page's script ran must say the
//! script drew every step, threw nothing, and put the violating step in view when asked to jump
//! to it (the page reports all that as attributes of `<html>`; see `sim/src/report/html/mod.rs`).
//!
//! `mcpsim check deployment.toml --format html` gets the same: a deployment with one broken
//! cell is checked, its report loaded, and each broken cell's section must show its diagram with
//! the violation marked and its violating timeline row laid out.
//!
//! Without Chromium the test prints why it is skipped and passes, unless `CI` is set: CI installs
//! Chromium (`.ci/run`), and a missing browser there is a failure. `MCPSIM_CHROMIUM=PATH` picks
//! another binary; `MCPSIM_CHROMIUM=none` acts as if there were none.

mod common;

use mcpsim::report::artifacts::read_trace;
use mcpsim::report::diagram::{violation_step, DiagramOptions};
use mcpsim::report::html;
use mcpsim::run;
use mcpsim::studies::check::{anchor, check, render_html, Deployment};
use mcpsim::studies::pool::Silent;
use mcpsim_model::trace::Trace;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const TRACE: &str = "traces/no-duplicate-execution--naive--reference--long-tool--88eec5a2.jsonl";
/// A watchdog, not a measurement: a browser that hangs this long is killed and the test fails.
const BROWSER_DEADLINE: Duration = Duration::from_secs(180);

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MCPSIM_CHROMIUM") {
        return (path != "none").then(|| PathBuf::from(path));
    }
    let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
    candidates.iter().map(PathBuf::from).find(|p| p.is_file())
}

/// The browser, or `None` after saying why the test is skipped (a failure in CI).
fn browser_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            !in_ci(),
            "CI is set but Chromium is missing: install it with `apt-get install -y chromium` (.ci/run does)"
        );
        common::skipped(
            "html_report",
            "no Chromium at /usr/bin/chromium (apt-get install -y chromium); CI would fail here",
        );
    }
    found
}

/// A fresh directory for one page and one browser profile, removed when dropped (also when the
/// test panics).
fn scratch(name: &str) -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("mcpsim-html-{name}-"))
        .tempdir()
        .unwrap_or_else(|e| panic!("{}: {e}", std::env::temp_dir().display()));
    let profile = dir.path().join("profile");
    std::fs::create_dir_all(&profile).unwrap_or_else(|e| panic!("{}: {e}", profile.display()));
    dir
}

/// What the browser made of a page.
struct Loaded {
    dom: String,
    stderr: String,
}

impl Loaded {
    /// An attribute of the `<html>` element after the script ran.
    fn root_attr(&self, name: &str) -> Option<&str> {
        let start = self.dom.find("<html")?;
        let tag = &self.dom[start..start + self.dom[start..].find('>')?];
        let key = format!(" {name}=\"");
        let at = tag.find(&key)? + key.len();
        Some(&tag[at..at + tag[at..].find('"')?])
    }

    /// The opening tag of the timeline row of step `i`.
    fn row_tag(&self, i: usize) -> Option<&str> {
        let id = format!("-s{i}\" data-step=\"{i}\" data-actor=");
        let at = self.dom.find(&id)?;
        let start = self.dom[..at].rfind("<tr ")?;
        Some(&self.dom[start..at + self.dom[at..].find('>')?])
    }
}

/// Loads `page` (opened at `#fragment`) in headless Chromium and returns the DOM after its
/// scripts ran.
fn load(browser: &Path, name: &str, page: &str, fragment: &str) -> Loaded {
    let tmp = scratch(name);
    let dir = tmp.path();
    let file = dir.join("page.html");
    std::fs::write(&file, page).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}#{fragment}", file.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    // Read both pipes on threads so a chatty browser never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > BROWSER_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{} did not finish within {BROWSER_DEADLINE:?}; killed", browser.display());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("waiting for {}: {e}", browser.display()),
        }
    };
    let loaded = Loaded { dom: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() };
    assert!(status.success(), "{} exited with {status}:\n{}", browser.display(), loaded.stderr);
    loaded
}

fn corpus_trace() -> Trace {
    read_trace(&Path::new(env!("CARGO_MANIFEST_DIR")).join(TRACE)).unwrap_or_else(|e| panic!("{e}"))
}

/// The browser's log without its complaints about the machine (no D-Bus, no GPU).
fn log(stderr: &str) -> String {
    let noise = ["dbus", "bus.cc", "vaapi", "bluez", "gpu", "unexpected operator"];
    stderr.lines().filter(|l| !noise.iter().any(|n| l.contains(n))).collect::<Vec<_>>().join("\n")
}

/// Script errors the browser logged (`Uncaught …`), as lines.
fn uncaught(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("Uncaught")).collect()
}

#[test]
fn the_page_draws_every_step_and_jumps_to_the_violation_in_chromium() {
    let Some(browser) = browser_or_skip() else { return };
    let trace = corpus_trace();
    let first = trace.footer.as_ref().and_then(|f| f.verdict.first()).expect("the corpus trace has a violation");
    let violating = violation_step(first, &trace.steps).expect("its violation has a step");
    let page = html::trace_page(&trace, &DiagramOptions::default());
    let loaded = load(&browser, "ok", &page, "jump");
    let attr = |name| loaded.root_attr(name);
    let context = || format!("<html> says {:?}; browser log:\n{}", loaded.dom.lines().nth(1), log(&loaded.stderr));

    assert_eq!(attr("data-ready"), Some("1"), "the page's script did not finish: {}", context());
    assert_eq!(attr("data-errors"), Some("0"), "uncaught script errors: {}", context());
    assert!(uncaught(&loaded.stderr).is_empty(), "{:?}", uncaught(&loaded.stderr));
    let steps = trace.steps.len().to_string();
    assert_eq!(attr("data-rows"), Some(steps.as_str()), "rows drawn: {}", context());
    assert_eq!(loaded.dom.matches("<tr id=\"t").count(), trace.steps.len(), "timeline rows in the DOM");

    let index = violating.to_string();
    assert_eq!(attr("data-violation-step"), Some(index.as_str()), "{}", context());
    assert_eq!(attr("data-violation-visible"), Some("1"), "the violating row is not shown: {}", context());
    assert_eq!(attr("data-jumped"), Some(index.as_str()), "the jump button went elsewhere: {}", context());
    assert_eq!(attr("data-jumped-on-screen"), Some("1"), "after the jump the row is off screen: {}", context());
    let row = loaded.row_tag(violating).unwrap_or_else(|| panic!("no row for step {violating}"));
    assert!(row.contains("m-violating") && row.contains("m-current"), "{row}");
    assert!(row.contains(&format!("data-violation=\"{}", first.invariant)), "{row}");
}

/// The same harness on a page whose script throws: it must notice, or the test above proves
/// nothing.
#[test]
fn a_page_whose_script_throws_is_caught() {
    let Some(browser) = browser_or_skip() else { return };
    let page = html::trace_page(&corpus_trace(), &DiagramOptions::default());
    let broken = page.replacen("'use strict';", "'use strict'; undefinedFunctionOfABrokenPage();", 1);
    assert_ne!(broken, page, "the page script changed: update how this test breaks it");
    let loaded = load(&browser, "broken", &broken, "jump");
    assert_eq!(loaded.root_attr("data-errors"), Some("1"), "{}", loaded.stderr);
    assert_eq!(loaded.root_attr("data-ready"), None);
    assert_eq!(loaded.root_attr("data-violation-visible"), None);
}

/// The first incident as a deployment: naive × long-tool breaks, reference × long-tool does not.
const DEPLOYMENT: &str = r#"
clients = ["naive", "reference"]
families = ["long-tool"]
server = "reference"
lb = { idle_timeout = "60s" }
"#;

/// The opening tag of every `<section class="m-trace"` in the DOM.
fn trace_sections(dom: &str) -> Vec<&str> {
    dom.match_indices("<section class=\"m-trace\"")
        .map(|(at, _)| &dom[at..at + dom[at..].find('>').unwrap_or(0)])
        .collect()
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

#[test]
fn the_check_report_shows_each_broken_cells_diagram_and_violating_step_in_chromium() {
    let Some(browser) = browser_or_skip() else { return };
    let deployment = Deployment::parse(DEPLOYMENT, "deployment.toml").expect("a valid deployment");
    let report = check(&deployment, 2, 2, &run, &Silent).expect("the check runs");
    let broken: Vec<_> = report.cells.iter().filter(|c| c.broken()).collect();
    assert_eq!(broken.len(), 1, "naive × long-tool breaks");
    let page = render_html(&report, &run).expect("the report renders");
    let loaded = load(&browser, "check", &page, "");
    let context = || format!("<html> says {:?}; browser log:\n{}", loaded.dom.lines().nth(1), log(&loaded.stderr));
    assert_eq!(loaded.root_attr("data-ready"), Some("1"), "the page's script did not finish: {}", context());
    assert_eq!(loaded.root_attr("data-errors"), Some("0"), "uncaught script errors: {}", context());
    assert!(uncaught(&loaded.stderr).is_empty(), "{:?}", uncaught(&loaded.stderr));
    let sections = trace_sections(&loaded.dom);
    assert_eq!(sections.len(), broken.len(), "one trace section per broken cell");
    for (cell, tag) in broken.iter().zip(&sections) {
        let id = anchor(cell);
        assert!(loaded.dom.contains(&format!("id=\"{id}\"")), "the table links to a section {id}");
        assert!(attr(tag, "data-violation-step").is_some(), "{tag}: no violating step");
        assert_eq!(attr(tag, "data-violation-visible"), Some("1"), "{tag}: the violating row is not shown");
        assert_eq!(attr(tag, "data-diagram-violation-visible"), Some("1"), "{tag}: the diagram shows no violation");
        assert!(attr(tag, "data-rows").is_some_and(|n| n != "0"), "{tag}: no timeline rows");
    }
    // The same page with a broken script: the harness notices.
    let broken_page = page.replacen("'use strict';", "'use strict'; undefinedFunctionOfABrokenPage();", 1);
    assert_ne!(broken_page, page);
    let loaded = load(&browser, "check-broken", &broken_page, "");
    assert_eq!(loaded.root_attr("data-errors"), Some("1"), "{}", loaded.stderr);
    assert!(trace_sections(&loaded.dom).iter().all(|t| attr(t, "data-violation-visible").is_none()));
}
