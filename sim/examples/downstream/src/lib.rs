//! An MCP gateway team's crate would live here; its tests (`tests/seeded.rs`) check, under
//! mcpsim, the deployment settings the team ships with.
