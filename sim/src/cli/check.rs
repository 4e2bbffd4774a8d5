//! `mcpsim check deployment.toml`.

use super::progress::Bar;
use super::Exit;
use crate::engine::runner::run;
use crate::error::SimError;
use crate::report::artifacts::{check_writable, write_file};
use crate::studies::check::{check, render_html, render_text, Deployment};
use std::path::{Path, PathBuf};

/// The flags of `mcpsim check`.
#[derive(Clone, Debug)]
pub struct CheckArgs {
    pub file: PathBuf,
    pub seeds: u64,
    /// `text` or `html`.
    pub format: String,
    pub output: Option<PathBuf>,
    pub jobs: usize,
}

/// `mcpsim check`: exits 1 when any client × family cell broke an invariant, 0 when every cell
/// is clean, 2 on bad input.
pub fn cmd_check(args: &CheckArgs) -> Result<Exit, SimError> {
    if args.seeds == 0 {
        return Err(SimError::Usage("--seeds must be at least 1".into()));
    }
    let html = match args.format.as_str() {
        "text" => false,
        "html" => true,
        other => return Err(SimError::Usage(format!("unknown format {other:?} (use text or html)"))),
    };
    if html && args.output.is_none() {
        return Err(SimError::Usage("--format html writes a file: give it with -o FILE.html".into()));
    }
    if let Some(out) = &args.output {
        check_writable(out)?;
    }
    let deployment = Deployment::load(&args.file)?;
    let report = check(&deployment, args.seeds, args.jobs, &run, &Bar::new("check"))?;
    let text = render_text(&report);
    match (&args.output, html) {
        (Some(out), true) => {
            print!("{text}");
            write_file(out, &render_html(&report, &run)?)?;
            println!("\nwrote {}", show(out));
        }
        (Some(out), false) => {
            write_file(out, &text)?;
            println!("wrote {}", show(out));
        }
        (None, _) => print!("{text}"),
    }
    Ok(if report.broken() { Exit::Violated } else { Exit::Clean })
}

fn show(path: &Path) -> String {
    path.display().to_string()
}
