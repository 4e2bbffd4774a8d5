//! Progress bars on stderr for the commands that run many cells (sweep, matrix, advise
//! --verify), drawn by indicatif only when stderr is a terminal: stdout stays the deterministic
//! report, and a redirected stderr gets nothing.

use crate::studies::pool::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs done of all, cells done of all, runs per second and the time left.
pub(crate) struct Bar {
    bar: ProgressBar,
    cells: AtomicUsize,
    cells_done: AtomicUsize,
}

impl Bar {
    /// A bar labelled `label`; hidden unless stderr is a terminal.
    pub(crate) fn new(label: &'static str) -> Bar {
        let target =
            if std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        let style = ProgressStyle::with_template("{prefix}: [{bar:30}] {pos}/{len} runs, {msg}, {per_sec}, {eta} left")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(label);
        Bar { bar, cells: AtomicUsize::new(0), cells_done: AtomicUsize::new(0) }
    }
}

impl Progress for Bar {
    fn start(&self, cells: usize, runs: u64) {
        self.cells.store(cells, Ordering::Relaxed);
        self.bar.set_length(runs);
        self.bar.set_message(format!("0/{cells} cells"));
    }

    fn run_done(&self) {
        self.bar.inc(1);
    }

    fn cell_done(&self) {
        let done = self.cells_done.fetch_add(1, Ordering::Relaxed) + 1;
        self.bar.set_message(format!("{done}/{} cells", self.cells.load(Ordering::Relaxed)));
    }

    fn finish(&self) {
        self.bar.finish();
    }
}
