//! The files a server has open: each is opened once with its whole text, and every later change
//! sends the whole new text with the next version, then `didSave` (some servers check only on
//! save).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::notification::{DidChangeTextDocument, DidOpenTextDocument, DidSaveTextDocument};
use lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem, Url,
    VersionedTextDocumentIdentifier,
};

use super::server::Live;

/// Files kept open on one server at most; more are not told to it.
const MAX_OPEN: usize = 2000;

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
}

impl Documents {
    /// The version the server has of `path`, when it is open.
    pub(crate) fn version(&self, path: &Path) -> Option<i32> {
        self.open.get(path).map(|doc| doc.version)
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
                if self.open.len() >= MAX_OPEN {
                    return None;
                }
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
