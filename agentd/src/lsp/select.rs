//! Which server serves a file: a configured entry, or a built-in one whose program is on the
//! command environment's PATH (docs/architecture.md#language-servers).

use std::path::{Path, PathBuf};

use super::config::LspConfig;
use super::defaults::{BUILTINS, builtin, language_id};

/// A server that serves a file, with everything needed to start it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerSpec {
    /// Its name.
    pub(crate) name: String,
    /// The program (a path when found on PATH) and its arguments.
    pub(crate) command: Vec<String>,
    /// Root markers.
    pub(crate) root_markers: Vec<String>,
    /// The file extensions or language ids it serves.
    pub(crate) languages: Vec<String>,
    /// `initializationOptions`.
    pub(crate) init_options: Option<serde_json::Value>,
    /// The answers to `workspace/configuration`.
    pub(crate) settings: serde_json::Value,
}

impl ServerSpec {
    /// Whether a server started from `self` serves as one started from `other`: the same
    /// arguments, markers, options and settings (the program may be found in another place on
    /// another session's PATH).
    pub(crate) fn same_setup(&self, other: &ServerSpec) -> bool {
        self.command.get(1..) == other.command.get(1..)
            && self.root_markers == other.root_markers
            && self.init_options == other.init_options
            && self.settings == other.settings
    }

    /// Whether the server serves `path` (by its extension or language id).
    pub(crate) fn covers(&self, path: &Path) -> bool {
        covers(&self.languages, path)
    }
}

/// Whether a `languages` list covers `path`: by its extension or its language id.
fn covers(languages: &[String], path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let id = language_id(path).unwrap_or_default();
    languages
        .iter()
        .any(|l| (!ext.is_empty() && l == ext) || (!id.is_empty() && l == id))
}

/// The server for `path` under `config`: configured entries first (in name order), then the
/// built-in ones whose program `env`'s PATH has. `None` when none serves it.
pub(crate) fn server_for(
    config: &LspConfig,
    path: &Path,
    env: &[(String, String)],
) -> Option<ServerSpec> {
    if !config.enabled {
        return None;
    }
    let search = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let mut candidates: Vec<String> = config
        .servers
        .keys()
        .filter(|name| builtin(name).is_none())
        .cloned()
        .collect();
    candidates.extend(BUILTINS.iter().map(|b| b.name.to_string()));
    candidates.into_iter().find_map(|name| {
        let entry = config.servers.get(&name).cloned().unwrap_or_default();
        if entry.enabled == Some(false) {
            return None;
        }
        let base = builtin(&name);
        let strings = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let languages = entry
            .languages
            .or_else(|| base.map(|b| strings(b.languages)))?;
        if !covers(&languages, path) {
            return None;
        }
        let mut command = entry.command.or_else(|| base.map(|b| strings(b.command)))?;
        let program = find_program(command.first()?, search)?;
        if let Some(first) = command.first_mut() {
            *first = program.to_string_lossy().into_owned();
        }
        let json = |v: Option<toml::Value>| v.and_then(|v| serde_json::to_value(v).ok());
        Some(ServerSpec {
            root_markers: entry
                .root_markers
                .unwrap_or_else(|| base.map(|b| strings(b.root_markers)).unwrap_or_default()),
            init_options: json(entry.init_options),
            settings: json(entry.settings).unwrap_or(serde_json::Value::Null),
            languages,
            name,
            command,
        })
    })
}

/// `program` as a path to an executable file: as given when it holds a `/`, else the first match
/// in `search` (a PATH).
fn find_program(program: &str, search: Option<&str>) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    std::env::split_paths(search?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_is_used_only_when_its_program_is_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("pyright-langserver");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let env = vec![("PATH".to_string(), dir.path().display().to_string())];
        let config = LspConfig::default();
        let spec = server_for(&config, Path::new("/p/m.py"), &env).unwrap();
        assert_eq!(spec.name, "pyright");
        assert_eq!(spec.command[0], program.display().to_string());
        assert!(server_for(&config, Path::new("/p/m.py"), &[]).is_none());
        assert!(server_for(&config, Path::new("/p/notes.txt"), &env).is_none());
        let off: LspConfig = toml::from_str("enabled = false").unwrap();
        assert!(server_for(&off, Path::new("/p/m.py"), &env).is_none());
        let one_off: LspConfig = toml::from_str("[pyright]\nenabled = false").unwrap();
        assert!(server_for(&one_off, Path::new("/p/m.py"), &env).is_none());
    }
}
