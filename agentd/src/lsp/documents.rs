//! The files a server has open: each is opened once with its whole text, and every later change
//! sends the whole new text with the next version, then `didSave` (some servers check only on
//! save).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
};
use lsp_types::{
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, TextDocumentContentChangeEvent, TextDocumentIdentifier,
    TextDocumentItem, Url, VersionedTextDocumentIdentifier,
};

use super::server::Live;

/// Files kept open on one server at most; more are not told to it.
const MAX_OPEN: usize = 2000;
/// The bytes of the open files' texts kept for one server at most (each is kept to tell what a
/// change introduced); past it no more files are opened.
const MAX_OPEN_BYTES: usize = 64 << 20;

/// An open file: the version the server has and its text.
struct Doc {
    version: i32,
    text: String,
}

/// What a sync did.
pub(crate) struct Synced {
    /// The version the server has now.
    pub(crate) version: i32,
    /// The text the server had before, when the file was open.
    pub(crate) previous: Option<String>,
}

/// The files open on one server.
#[derive(Default)]
pub(crate) struct Documents {
    open: HashMap<PathBuf, Doc>,
    /// The bytes of the texts in `open`.
    bytes: usize,
}

impl Documents {
    /// The version the server has of `path`, when it is open.
    pub(crate) fn version(&self, path: &Path) -> Option<i32> {
        self.open.get(path).map(|doc| doc.version)
    }

    /// The open files.
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        self.open.keys().cloned().collect()
    }

    /// Tells `live` that `path` is closed (it is gone from the disk); nothing when not open.
    pub(crate) fn close(&mut self, live: &Live, path: &Path) {
        let Some(doc) = self.open.remove(path) else {
            return;
        };
        self.bytes -= doc.text.len();
        if let Ok(uri) = Url::from_file_path(path) {
            live.notify::<DidCloseTextDocument>(DidCloseTextDocumentParams {
                text_document: TextDocumentIdentifier::new(uri),
            });
        }
    }

    /// Tells `live` that `path` (of language `language`) holds `text`: opened, changed (and saved
    /// when `save`), or nothing when the server has that text already. `None` when the file
    /// cannot be told (not a path for a URI, too many open).
    pub(crate) fn sync(
        &mut self,
        live: &Live,
        path: &Path,
        language: &str,
        text: &str,
        save: bool,
    ) -> Option<Synced> {
        let uri = Url::from_file_path(path).ok()?;
        let synced = match self.open.get_mut(path) {
            Some(doc) if doc.text == text => Synced {
                version: doc.version,
                previous: Some(doc.text.clone()),
            },
            Some(doc) => {
                if self.bytes - doc.text.len() + text.len() > MAX_OPEN_BYTES {
                    return None;
                }
                self.bytes = self.bytes - doc.text.len() + text.len();
                doc.version += 1;
                let previous = std::mem::replace(&mut doc.text, text.to_string());
                live.notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                    text_document: VersionedTextDocumentIdentifier::new(uri.clone(), doc.version),
                    content_changes: vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: text.to_string(),
                    }],
                });
                Synced {
                    version: doc.version,
                    previous: Some(previous),
                }
            }
            None => {
                if self.open.len() >= MAX_OPEN || self.bytes + text.len() > MAX_OPEN_BYTES {
                    return None;
                }
                self.bytes += text.len();
                live.notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                    text_document: TextDocumentItem::new(
                        uri.clone(),
                        language.to_string(),
                        1,
                        text.to_string(),
                    ),
                });
                self.open.insert(
                    path.to_path_buf(),
                    Doc {
                        version: 1,
                        text: text.to_string(),
                    },
                );
                Synced {
                    version: 1,
                    previous: None,
                }
            }
        };
        if save {
            live.notify::<DidSaveTextDocument>(DidSaveTextDocumentParams {
                text_document: TextDocumentIdentifier::new(uri),
                text: None,
            });
        }
        Some(synced)
    }
}
