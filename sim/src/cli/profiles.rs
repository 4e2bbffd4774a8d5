//! `mcpsim profiles`: what can be named and set.

use super::Exit;
use crate::error::SimError;
use crate::scenario::{self, Scenario, SETTINGS};
use mcpsim_model::oracle::INVARIANTS;
use mcpsim_model::profiles;

/// `mcpsim profiles`.
pub fn cmd_profiles() -> Result<Exit, SimError> {
    println!("clients:");
    for n in profiles::CLIENT_NAMES {
        println!("  {n:<12} {}", profiles::describe(n));
    }
    println!("servers:");
    for n in profiles::SERVER_NAMES {
        println!("  {n:<12} {}", profiles::describe(n));
    }
    println!("scenarios:");
    for n in scenario::SCENARIO_NAMES {
        println!("  {n:<12} {}", scenario::describe(n));
    }
    println!("invariants:");
    for i in INVARIANTS {
        println!("  {:<26} {}", i.name, i.description);
    }
    let families: Vec<Scenario> = scenario::SCENARIO_NAMES
        .iter()
        .map(|n| Scenario::build(n, "reference", "reference"))
        .collect::<Result<_, _>>()?;
    println!("settable keys (--set key=value), with defaults for the reference profiles:");
    print!("  {:<26}", "key");
    for f in &families {
        print!(" {:<14}", f.name);
    }
    println!(" meaning");
    for s in SETTINGS {
        print!("  {:<26}", s.key);
        for f in &families {
            print!(" {:<14}", (s.show)(f));
        }
        println!(" {}", s.help);
    }
    println!("every field is also a key, by its path (client.reconnect.jitter=0.2, tool.event_interval=2s);");
    println!("`mcpsim profiles --dump client:NAME` prints a profile with every field explained:");
    for role in [profiles::Role::Client, profiles::Role::Server, profiles::Role::Lb] {
        let paths: Vec<String> = profiles::known_paths(role).into_iter().filter(|p| p != "name").collect();
        println!("  {:<8} {}", role.as_str(), paths.join(" "));
    }
    Ok(Exit::Clean)
}
