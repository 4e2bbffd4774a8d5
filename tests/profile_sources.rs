//! `docs/model.md` lists every field of every SDK profile with its value and the source line it
//! was read from; the section between its `profile-sources` markers must be what the profile
//! files say today.

use mcpsim_model::profiles;

mod common;

const DOC: &str = include_str!("../docs/model.md");

#[test]
fn the_sources_section_of_the_model_doc_matches_the_profile_files() {
    let checked_in = profiles::sources_section(DOC).expect("docs/model.md has the profile-sources markers");
    let now = profiles::sources_markdown().expect("the built-in profiles resolve");
    if now.trim() != checked_in {
        let first_difference = common::first_difference(now.trim(), checked_in);
        panic!(
            "docs/model.md's profile sources no longer match model/profiles:{first_difference}\n\
             regenerate them with: cargo run -p mcpsim -- profiles --sources --doc docs/model.md"
        );
    }
}
