//! What the `code` tool asks of a file's server (docs/architecture.md#language-servers): the server,
//! started when needed, with the file open at the text the tool read; questions retried while
//! the server says the content changed under it; and whether any server covers a session's
//! directory, which decides whether the tool is offered at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lsp_types::request::Request;

use super::config::LspConfig;
use super::encoding::Encoding;
use super::instance::{InUse, Running};
use super::{FileText, LspHub, defaults, select};

/// How many times a question is asked again when the server answers `ContentModified`.
const CONTENT_MODIFIED_RETRIES: usize = 3;
/// How long one question may take (a server still indexing answers late).
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// Entries of the session directory looked at when deciding whether a server covers it.
const MAX_TOP_ENTRIES: usize = 1000;

/// A server ready for questions about one file, in use while this lives.
pub(crate) struct Asking {
    /// Keeps the instance from being stopped as idle meanwhile.
    _in_use: InUse,
    /// The running server.
    running: Arc<Running>,
    /// The server's name, for the model.
    pub(crate) name: String,
}

impl Asking {
    /// The column unit the server counts in.
    pub(crate) fn encoding(&self) -> Encoding {
        self.running.live.encoding
    }

    /// Asks `R`, again (up to three times) while the server answers `ContentModified`; the
    /// error is worded for the model.
    pub(crate) async fn ask<R: Request>(&self, params: R::Params) -> Result<R::Result, String>
    where
        R::Params: Clone,
    {
        let mut tries = 0;
        loop {
            let asked = self.running.live.request::<R>(params.clone());
            let Ok(answered) = tokio::time::timeout(ANSWER_TIMEOUT, asked).await else {
                return Err(format!(
                    "the language server {} gave no answer to {} within {} s (it may still be indexing the project); try again later or use grep",
                    self.name,
                    R::METHOD,
                    ANSWER_TIMEOUT.as_secs()
                ));
            };
            match answered {
                Ok(answer) => return Ok(answer),
                Err(async_lsp::Error::Response(e))
                    if e.code == async_lsp::ErrorCode::CONTENT_MODIFIED
                        && tries < CONTENT_MODIFIED_RETRIES =>
                {
                    tries += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100 * tries as u64)).await;
                }
                Err(e) => {
                    return Err(format!(
                        "the language server {} could not answer {}: {e}",
                        self.name,
                        R::METHOD
                    ));
                }
            }
        }
    }
}

impl LspHub {
    /// The server of `file`, started when needed, with the file open at `file.text`; an error
    /// for the model when no server covers it or it cannot run.
    pub(crate) async fn asking(&self, file: FileText<'_>) -> Result<Asking, String> {
        let shown = file
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let Some(in_use) = self.instance_for(&file) else {
            return Err(format!(
                "no language server covers {shown}; use grep to find the name"
            ));
        };
        let instance = in_use.instance().clone();
        let name = instance.spec.name.clone();
        let running = match self.ensure(&instance, file.env).await {
            Ok(Ok(running)) => running,
            Ok(Err(why)) => return Err(format!("{why}; use grep meanwhile")),
            Err(_) => {
                return Err(format!(
                    "the language server {name} did not start; use grep meanwhile"
                ));
            }
        };
        let language = defaults::document_language(file.path);
        let synced =
            running
                .docs
                .lock()
                .await
                .sync(&running.live, file.path, &language, file.text, false);
        if synced.is_none() {
            return Err(format!(
                "the language server {name} has too many files open to take {shown}; use grep"
            ));
        }
        Ok(Asking {
            _in_use: in_use,
            running,
            name,
        })
    }

    /// A file at the top of `cwd` that a server serves, for a question about the whole
    /// project.
    pub(crate) fn covered_file(&self, cwd: &Path, env: &[(String, String)]) -> Option<PathBuf> {
        let config = (self.inner.config)();
        std::fs::read_dir(cwd)
            .ok()?
            .flatten()
            .take(MAX_TOP_ENTRIES)
            .map(|e| e.path())
            .find(|p| p.is_file() && select::server_for(&config, p, env).is_some())
    }

    /// Whether a server covers the files of a session working in `cwd` with command
    /// environment `env` (see [`covers`]).
    pub(crate) fn covers_dir(&self, cwd: &Path, env: &[(String, String)]) -> bool {
        covers(&(self.inner.config)(), cwd, env)
    }
}

/// Whether a server covers the files of a session working in `cwd` with command environment
/// `env`: an enabled server whose program `env`'s PATH has (or is configured by path) serves a
/// file at the top of `cwd`, or one of its root markers is there, and servers may start on
/// this machine ([`super::confine::permitted`]). Only the top of the directory
/// is looked at, so that the check costs one directory listing.
fn covers(config: &LspConfig, cwd: &Path, env: &[(String, String)]) -> bool {
    // No server may start here (no sandbox, and servers are to run in it): nothing is covered.
    if !config.enabled || !super::confine::permitted(config) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(cwd) else {
        return false;
    };
    let names: Vec<String> = entries
        .flatten()
        .take(MAX_TOP_ENTRIES)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let served = |path: &Path| select::server_for(config, path, env);
    if names.iter().any(|n| served(&cwd.join(n)).is_some()) {
        return true;
    }
    // A marker at the top (Cargo.toml, go.mod) with the sources further down.
    let mut languages: Vec<String> = defaults::BUILTINS
        .iter()
        .flat_map(|b| b.languages.iter().map(|l| l.to_string()))
        .collect();
    for entry in config.servers.values() {
        languages.extend(entry.languages.iter().flatten().cloned());
    }
    languages.iter().any(|language| {
        served(&cwd.join(format!("file.{language}")))
            .is_some_and(|spec| spec.root_markers.iter().any(|m| names.contains(m)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_covered_by_a_served_file_or_a_marker_at_its_top() {
        let bin = tempfile::tempdir().unwrap();
        let program = bin.path().join("pyright-langserver");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = vec![("PATH".to_string(), bin.path().display().to_string())];
        // Servers unconfined, so that the answer does not hang on this machine's sandbox.
        let config: LspConfig = toml::from_str("sandbox = false").unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("notes.txt"), "").unwrap();
        assert!(!covers(&config, project.path(), &env));
        // A marker with the sources further down.
        std::fs::write(project.path().join("pyproject.toml"), "").unwrap();
        assert!(covers(&config, project.path(), &env));
        std::fs::remove_file(project.path().join("pyproject.toml")).unwrap();
        std::fs::write(project.path().join("m.py"), "").unwrap();
        assert!(covers(&config, project.path(), &env));
        // No program on PATH, or servers off: not covered.
        assert!(!covers(&config, project.path(), &[]));
        let off: LspConfig = toml::from_str("enabled = false").unwrap();
        assert!(!covers(&off, project.path(), &env));
    }
}
