//! The unit a server counts columns in, as negotiated at `initialize` (UTF-16 unless it says
//! otherwise), and the one conversion to the characters the model counts.

use lsp_types::PositionEncodingKind;

/// What a position's `character` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Encoding {
    /// Bytes of UTF-8.
    Utf8,
    /// UTF-16 code units: the protocol's default.
    #[default]
    Utf16,
    /// Characters.
    Utf32,
}

impl Encoding {
    /// The encoding a server chose in its answer to `initialize` (as received): the 3.17
    /// field, or clangd's own `offsetEncoding`.
    pub(crate) fn negotiated(result: &serde_json::Value) -> Encoding {
        let chosen = result
            .pointer("/capabilities/positionEncoding")
            .or_else(|| result.get("offsetEncoding"))
            .and_then(serde_json::Value::as_str);
        match chosen {
            Some(kind) if kind == PositionEncodingKind::UTF8.as_str() => Encoding::Utf8,
            Some(kind) if kind == PositionEncodingKind::UTF32.as_str() => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }

    /// How many characters of `line` come before `units` of this encoding.
    pub(crate) fn to_chars(self, line: &str, units: u32) -> usize {
        let units = units as usize;
        let mut counted = 0;
        for (chars, c) in line.chars().enumerate() {
            if counted >= units {
                return chars;
            }
            counted += match self {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
                Encoding::Utf32 => 1,
            };
        }
        line.chars().count()
    }

    /// How many units of this encoding the first `chars` characters of `line` take.
    pub(crate) fn to_units(self, line: &str, chars: usize) -> u32 {
        let units: usize = line
            .chars()
            .take(chars)
            .map(|c| match self {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
                Encoding::Utf32 => 1,
            })
            .sum();
        u32::try_from(units).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_choice_is_read_from_either_field() {
        let standard = serde_json::json!({"capabilities": {"positionEncoding": "utf-8"}});
        let clangd = serde_json::json!({"capabilities": {}, "offsetEncoding": "utf-8"});
        assert_eq!(Encoding::negotiated(&standard), Encoding::Utf8);
        assert_eq!(Encoding::negotiated(&clangd), Encoding::Utf8);
        assert_eq!(
            Encoding::negotiated(&serde_json::json!({})),
            Encoding::Utf16
        );
    }

    #[test]
    fn columns_become_characters() {
        let line = "é😀x";
        assert_eq!(Encoding::Utf16.to_chars(line, 3), 2);
        assert_eq!(Encoding::Utf8.to_chars(line, 6), 2);
        assert_eq!(Encoding::Utf32.to_chars(line, 2), 2);
        assert_eq!(Encoding::Utf16.to_chars(line, 99), 3);
        assert_eq!(Encoding::Utf16.to_units(line, 2), 3);
        assert_eq!(Encoding::Utf8.to_units(line, 3), 7);
        assert_eq!(Encoding::Utf32.to_units(line, 9), 3);
    }
}
