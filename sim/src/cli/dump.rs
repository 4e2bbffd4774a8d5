//! `mcpsim profiles --dump NAME`: a built-in profile as a TOML file to start from.

use super::Exit;
use crate::error::SimError;
use mcpsim_model::profiles::{self, Role};

/// Prints the built-in profile `spec` (`NAME`, or `client:NAME` / `server:NAME` / `lb:NAME` when a
/// name is both a client and a server profile, as `reference` is) as a complete TOML file.
pub fn cmd_dump(spec: &str) -> Result<Exit, SimError> {
    let (roles, name): (Vec<Role>, &str) = match spec.split_once(':') {
        Some((role, name)) => {
            let role = Role::ALL
                .into_iter()
                .find(|r| r.as_str() == role)
                .ok_or_else(|| SimError::Usage(format!("--dump {spec:?}: {role:?} is not client, server or lb")))?;
            (vec![role], name)
        }
        None => (Role::ALL.into_iter().filter(|r| r.names().contains(&spec)).collect(), spec),
    };
    match roles.as_slice() {
        [role] => {
            let text = profiles::dump(*role, name).ok_or_else(|| unknown(spec))??;
            print!("{text}");
            Ok(Exit::Clean)
        }
        [] => Err(unknown(spec)),
        several => {
            let options: Vec<String> = several.iter().map(|r| format!("{}:{name}", r.as_str())).collect();
            Err(SimError::Usage(format!(
                "--dump {name}: both a client and a server profile; say {}",
                options.join(" or ")
            )))
        }
    }
}

fn unknown(spec: &str) -> SimError {
    let known: Vec<String> =
        Role::ALL.iter().flat_map(|r| r.names().iter().map(move |n| format!("{}:{n}", r.as_str()))).collect();
    SimError::Usage(format!("--dump {spec:?}: no built-in profile of that name (known: {})", known.join(", ")))
}
