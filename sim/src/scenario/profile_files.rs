//! Profiles as a command names them: a built-in name (`ts-sdk`) or a TOML file
//! (`./my-server.toml`; an argument that contains `/` or ends in `.toml` is a file). A file may
//! start `extends = "NAME"` — a built-in name, or a path relative to the file — and change only
//! what differs. Every problem is one line, `FILE:LINE:COL: message` ([`super::layers`]), by the
//! rules of [`super::settings`].

use super::layers::load;
use super::settings::{client_problems, lb_problems, server_problems};
use crate::error::SimError;
use mcpsim_model::config::{ClientPolicy, LbConfig, ServerPolicy};
use mcpsim_model::profiles::{self, Role};

pub use super::files::is_path;

/// The client profile a command names.
pub fn client(arg: &str) -> Result<ClientPolicy, SimError> {
    load(Role::Client, arg, profiles::client, client_problems)
}

/// The server profile a command names.
pub fn server(arg: &str) -> Result<ServerPolicy, SimError> {
    load(Role::Server, arg, profiles::server, server_problems)
}

/// The load-balancer profile a command names.
pub fn lb(arg: &str) -> Result<LbConfig, SimError> {
    load(Role::Lb, arg, profiles::lb, lb_problems)
}
