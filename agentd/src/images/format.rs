//! The four image formats every provider takes, told apart by their first bytes (never by a
//! file's name), and a plain word for what anything else looks like.

/// A format the daemon stores and sends: PNG, JPEG, GIF or WebP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Portable Network Graphics.
    Png,
    /// JPEG (JFIF, Exif).
    Jpeg,
    /// GIF (87a or 89a); an animated one is stored as its first frame.
    Gif,
    /// WebP (RIFF container).
    WebP,
}

impl Format {
    /// Every format, in the order the stored files are looked for.
    pub(crate) const ALL: [Format; 4] = [Format::Png, Format::Jpeg, Format::Gif, Format::WebP];

    /// The format `bytes` are in, by their magic numbers; `None` for anything else.
    pub(crate) fn sniff(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Format::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Format::Gif)
        } else if bytes.len() >= 12
            && bytes.starts_with(b"RIFF")
            && bytes.get(8..12) == Some(b"WEBP")
        {
            Some(Format::WebP)
        } else {
            None
        }
    }

    /// The stored file's extension.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpg",
            Format::Gif => "gif",
            Format::WebP => "webp",
        }
    }

    /// The format whose stored file has `extension` (as [`Format::extension`] gives it).
    pub(crate) fn from_extension(extension: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.extension() == extension)
    }

    /// Its name in messages: "PNG", "JPEG", "GIF" or "WebP".
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Png => "PNG",
            Format::Jpeg => "JPEG",
            Format::Gif => "GIF",
            Format::WebP => "WebP",
        }
    }

    /// The format of a media type (`image/png`, ...).
    pub(crate) fn from_media_type(media_type: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.media_type() == media_type)
    }

    /// Its media type, as the providers name it.
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::WebP => "image/webp",
        }
    }

    /// The `image` crate's name for it.
    pub(crate) fn image_format(self) -> image::ImageFormat {
        match self {
            Format::Png => image::ImageFormat::Png,
            Format::Jpeg => image::ImageFormat::Jpeg,
            Format::Gif => image::ImageFormat::Gif,
            Format::WebP => image::ImageFormat::WebP,
        }
    }
}

/// What `bytes` (not an image of the four formats) look like, for the refusal: "text", "a PDF
/// document", "an empty file", ...
pub(crate) fn looks_like(bytes: &[u8]) -> &'static str {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let head = bytes.get(..bytes.len().min(4096)).unwrap_or(bytes);
    let ftyp = bytes.get(4..8) == Some(b"ftyp");
    if bytes.is_empty() {
        "an empty file"
    } else if starts(b"%PDF") {
        "a PDF document"
    } else if starts(b"BM") && bytes.len() > 14 {
        "a BMP image, which the models do not take; convert it to PNG"
    } else if starts(b"II*\0") || starts(b"MM\0*") {
        "a TIFF image, which the models do not take; convert it to PNG"
    } else if ftyp
        && matches!(
            bytes.get(8..12),
            Some(b"heic" | b"heix" | b"mif1" | b"msf1")
        )
    {
        "a HEIC image, which the models do not take; convert it to JPEG"
    } else if ftyp && matches!(bytes.get(8..12), Some(b"avif" | b"avis")) {
        "an AVIF image, which the models do not take; convert it to PNG"
    } else if ftyp {
        "a video or other media file"
    } else if starts(&[0, 0, 1, 0]) {
        "an ICO icon, which the models do not take; convert it to PNG"
    } else if starts(b"PK\x03\x04") {
        "a zip archive"
    } else if starts(b"\x7fELF") {
        "a program"
    } else if is_text(head) {
        if contains(head, b"<svg") {
            "an SVG drawing, which is text; read it as text or convert it to PNG"
        } else {
            "text"
        }
    } else {
        "binary data of another kind"
    }
}

/// Whether `head` (a file's first bytes) reads as text: UTF-8 (a character cut at the end
/// allowed) without NUL bytes.
fn is_text(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(err) => err.error_len().is_none(),
    }
}

/// Whether `haystack` contains `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_formats_are_told_by_their_first_bytes() {
        assert_eq!(Format::sniff(b"\x89PNG\r\n\x1a\nrest"), Some(Format::Png));
        assert_eq!(Format::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(Format::Jpeg));
        assert_eq!(Format::sniff(b"GIF89a...."), Some(Format::Gif));
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Format::WebP));
        assert_eq!(Format::sniff(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(Format::sniff(b"hello"), None);
    }

    #[test]
    fn a_stored_extension_names_its_format_and_nothing_else_does() {
        for format in Format::ALL {
            assert_eq!(Format::from_extension(format.extension()), Some(format));
        }
        assert_eq!(Format::from_extension("jpeg"), None);
        assert_eq!(Format::from_extension("PNG"), None);
        assert_eq!(Format::from_extension(""), None);
    }

    #[test]
    fn anything_else_is_named_for_the_refusal() {
        assert_eq!(looks_like(b"fn main() {}\n"), "text");
        assert_eq!(looks_like(b""), "an empty file");
        assert_eq!(looks_like(b"%PDF-1.7\n"), "a PDF document");
        assert!(looks_like(b"<?xml version=\"1.0\"?><svg></svg>").starts_with("an SVG"));
        assert_eq!(
            looks_like(&[0xde, 0xad, 0, 0xef]),
            "binary data of another kind"
        );
    }
}
