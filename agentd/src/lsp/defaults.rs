//! The built-in language servers (used when their program is on the command environment's
//! PATH, docs/architecture.md#language-servers), and the language id of a file.

use std::path::Path;

/// A built-in server: how it is run and what it serves.
pub(crate) struct Builtin {
    /// Its name, as `[lsp.NAME]` refers to it.
    pub(crate) name: &'static str,
    /// The program and its arguments.
    pub(crate) command: &'static [&'static str],
    /// File extensions it serves.
    pub(crate) languages: &'static [&'static str],
    /// Files that mark a project's root, nearest first.
    pub(crate) root_markers: &'static [&'static str],
}

/// The built-in servers, in the order they are preferred (pyright before pylsp).
pub(crate) const BUILTINS: [Builtin; 6] = [
    Builtin {
        name: "rust-analyzer",
        command: &["rust-analyzer"],
        languages: &["rs"],
        root_markers: &["Cargo.toml", "Cargo.lock"],
    },
    Builtin {
        name: "pyright",
        command: &["pyright-langserver", "--stdio"],
        languages: &["py", "pyi"],
        root_markers: &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
            "Pipfile",
            "pyrightconfig.json",
        ],
    },
    Builtin {
        name: "pylsp",
        command: &["pylsp"],
        languages: &["py"],
        root_markers: &[
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "requirements.txt",
            "Pipfile",
        ],
    },
    Builtin {
        name: "typescript-language-server",
        command: &["typescript-language-server", "--stdio"],
        languages: &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
        root_markers: &[
            "tsconfig.json",
            "jsconfig.json",
            "package.json",
            "package-lock.json",
        ],
    },
    Builtin {
        name: "gopls",
        command: &["gopls"],
        languages: &["go"],
        root_markers: &["go.work", "go.mod"],
    },
    Builtin {
        name: "clangd",
        command: &["clangd"],
        languages: &["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"],
        root_markers: &[
            "compile_commands.json",
            "compile_flags.txt",
            ".clangd",
            "CMakeLists.txt",
            "Makefile",
        ],
    },
];

/// The built-in server called `name`.
pub(crate) fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// The language id of a file, from its extension; `None` for files no server is known for.
pub(crate) fn language_id(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?;
    Some(match ext {
        "py" | "pyi" => "python",
        "rs" => "rust",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        _ => return None,
    })
}

/// The language id told to a server for `path`: the known one, else the extension itself (a
/// configured server of a language agentd does not know), else `plaintext`.
pub(crate) fn document_language(path: &Path) -> String {
    match language_id(path) {
        Some(id) => id.to_string(),
        None => path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("plaintext")
            .to_string(),
    }
}
