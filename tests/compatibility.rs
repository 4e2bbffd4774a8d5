//! The checked-in compatibility table must be what the code produces today.

use mcpsim::studies::matrix::{run_matrix, seeds_in, table_in, to_markdown, MatrixSpec};
use mcpsim::studies::pool::Silent;

mod common;

const DOC: &str = include_str!("../docs/compatibility.md");

#[test]
fn the_checked_in_compatibility_table_matches_the_code() {
    let seeds = seeds_in(DOC).expect("docs/compatibility.md names the seeds it was generated with");
    let checked_in = table_in(DOC).expect("docs/compatibility.md has the generated table between its markers");
    let results = run_matrix(&MatrixSpec::everything(seeds), &Silent).expect("every matrix cell runs");
    let now = to_markdown(&results);
    if now.trim() != checked_in {
        let first_difference = common::first_difference(now.trim(), checked_in);
        panic!(
            "docs/compatibility.md no longer matches what the code produces:{first_difference}\n\
             regenerate it with: cargo run --release -p mcpsim -- matrix --seeds {seeds} --doc docs/compatibility.md"
        );
    }
}
