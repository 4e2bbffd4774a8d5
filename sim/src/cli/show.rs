//! `mcpsim show`: a trace as a sequence diagram.

use super::Exit;
use crate::error::SimError;
use crate::report::artifacts::{check_writable, read_trace, write_file};
use std::path::Path;

/// `mcpsim show`: a trace as a sequence diagram.
pub fn cmd_show(
    path: &Path,
    format: crate::report::diagram::Format,
    collapse: bool,
    max_rows: Option<usize>,
    output: Option<&Path>,
) -> Result<Exit, SimError> {
    let trace = read_trace(path)?;
    if let Some(out) = output {
        check_writable(out)?;
    }
    let opts = crate::report::diagram::DiagramOptions { collapse, max_rows };
    let drawing = match format {
        crate::report::diagram::Format::Html => crate::report::html::trace_page(&trace, &opts),
        _ => crate::report::diagram::render(&trace, format, &opts),
    };
    match output {
        Some(out) => {
            write_file(out, &drawing)?;
            println!("wrote {}", out.display());
        }
        None => print!("{}", crate::report::escape::control(&drawing)),
    }
    Ok(Exit::Clean)
}
