//! Test support: a fixture that runs the real `agentd` binary in a private temporary home and
//! drives it with the real `agentctl` binary or the protocol client, plus a scripted model
//! server that speaks the providers' wire formats.

pub mod acp;
mod fixture;
pub mod fuzz;
pub mod images;
pub mod json_run;
pub mod language_servers;
mod logs;
pub mod mcp;
mod measure;
pub mod model_server;
mod processes;
pub mod pty;
pub mod restart;
pub mod sandboxed;
mod session;
pub mod shells;
pub mod shown;
pub mod sshd;
mod test_env;
pub mod web_server;
pub mod wire;

pub use fixture::*;
pub use logs::*;
pub use measure::*;
pub use processes::*;
pub use session::*;
pub use test_env::{TestEnv, TestEnvBuilder};

use std::time::Duration;

/// How long any single wait in a test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);
