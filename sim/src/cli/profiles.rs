//! `mcpsim profiles`: what can be named and set, as tables whose columns fit their longest entry.

use super::Exit;
use crate::error::SimError;
use crate::report::artifacts::write_file;
use crate::scenario::{self, Scenario, SETTINGS};
use comfy_table::presets::NOTHING;
use comfy_table::{ContentArrangement, Table};
use mcpsim_model::oracle::INVARIANTS;
use mcpsim_model::profiles;
use std::path::Path;

/// A borderless table, indented by two spaces, with a header row.
fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(NOTHING).set_content_arrangement(ContentArrangement::Disabled).set_header(header.to_vec());
    t
}

/// The table's lines, each indented, trailing blanks trimmed.
fn print_table(title: &str, t: &Table) {
    println!("{title}");
    for line in t.lines() {
        println!("  {}", line.trim_end());
    }
}

/// `mcpsim profiles`.
pub fn cmd_profiles() -> Result<Exit, SimError> {
    let named = |header: &str, names: &[&str], describe: &dyn Fn(&str) -> String| {
        let mut t = table(&[header, "what it is"]);
        for n in names {
            t.add_row(vec![n.to_string(), describe(n)]);
        }
        t
    };
    // Every built-in SDK profile, the versioned ones included, with the release it models.
    let released = |header: &str, role: profiles::Role, names: &[&str]| {
        let mut t = table(&[header, "release", "what it is"]);
        for n in names {
            t.add_row(vec![n.to_string(), profiles::release(role, n), profiles::describe(n)]);
        }
        t
    };
    let clients: Vec<&str> = profiles::CLIENT_NAMES.iter().chain(profiles::CLIENT_VERSIONED_NAMES).copied().collect();
    print_table("clients:", &released("client", profiles::Role::Client, &clients));
    let servers: Vec<&str> = profiles::SERVER_NAMES.iter().chain(profiles::SERVER_VERSIONED_NAMES).copied().collect();
    print_table("servers:", &released("server", profiles::Role::Server, &servers));
    print_table("scenarios:", &named("scenario", scenario::SCENARIO_NAMES, &|n| scenario::describe(n).to_string()));
    let mut invariants = table(&["invariant", "what it checks"]);
    for i in INVARIANTS {
        invariants.add_row(vec![i.name.to_string(), i.description.to_string()]);
    }
    print_table("invariants:", &invariants);
    let families: Vec<Scenario> = scenario::SCENARIO_NAMES
        .iter()
        .map(|n| Scenario::build(n, "reference", "reference"))
        .collect::<Result<_, _>>()?;
    let mut header = vec!["key"];
    header.extend(families.iter().map(|f| f.name.as_str()));
    header.push("meaning");
    let mut keys = table(&header);
    for s in SETTINGS {
        let mut row = vec![s.key.to_string()];
        row.extend(families.iter().map(|f| (s.show)(f)));
        row.push(s.help.to_string());
        keys.add_row(row);
    }
    print_table("settable keys (--set key=value), with defaults for the reference profiles:", &keys);
    println!("every field is also a key, by its path (client.reconnect.jitter=0.2, tool.event_interval=2s);");
    println!("`mcpsim profiles --dump client:NAME` prints a profile with every field explained:");
    for role in [profiles::Role::Client, profiles::Role::Server, profiles::Role::Lb] {
        let paths: Vec<String> = profiles::known_paths(role).into_iter().filter(|p| p != "name").collect();
        println!("  {:<8} {}", role.as_str(), paths.join(" "));
    }
    Ok(Exit::Clean)
}

/// `mcpsim profiles --sources [--doc FILE]`: every field of every SDK profile with its value and
/// source, printed as Markdown or written between the `profile-sources` markers of `doc`.
pub fn cmd_sources(doc: Option<&Path>) -> Result<Exit, SimError> {
    let tables = profiles::sources_markdown()?;
    let Some(path) = doc else {
        println!("{tables}");
        return Ok(Exit::Clean);
    };
    let io = |e: std::io::Error| SimError::Io { path: path.display().to_string(), problem: e.to_string() };
    let text = std::fs::read_to_string(path).map_err(io)?;
    let updated = profiles::with_sources_section(&text, &tables).ok_or_else(|| SimError::Io {
        path: path.display().to_string(),
        problem: format!("no {} … {} markers to write between", profiles::SOURCES_BEGIN, profiles::SOURCES_END),
    })?;
    write_file(path, &updated)?;
    println!("wrote the sources of {} SDK profiles into {}", profiles::sdk_profiles().len(), path.display());
    Ok(Exit::Clean)
}
