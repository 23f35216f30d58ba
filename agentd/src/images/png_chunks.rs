//! A PNG's chunks, read without decoding (docs/architecture.md#images): its metadata (ICC
//! profile, text, EXIF, chunks no decoder needs) measured with compressed chunks inflated only
//! to a small bound, a copy without it for the decoder (which would inflate an ICC profile of
//! any size, on every read), and whether the file ends with its `IEND` chunk.

/// The most bytes of metadata, inflated, a PNG keeps when stored as it is: a display's ICC
/// profile takes 0.5–4 KB, a photo editor's XMP a few KB.
pub(crate) const MAX_METADATA: usize = 64 * 1024;

/// The PNG signature's length: the chunks start after it.
const SIGNATURE_LEN: usize = 8;

/// Ancillary chunks that tell how to show the pixels, each of a small fixed size the decoder
/// checks: kept in the decoded copy and not counted as metadata.
const RENDERING: [&[u8; 4]; 10] = [
    b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"sBIT", b"pHYs", b"bKGD", b"cICP", b"mDCV", b"cLLI",
];

/// The chunks a PNG is stored byte for byte with: the critical ones, those that tell how to
/// show the pixels, and an ICC profile (within [`MAX_METADATA`]). Anything else (text, XMP,
/// EXIF, an animation's frames, chunks of any other name) makes it re-encoded without them.
const KEPT: [&[u8; 4]; 12] = [
    b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"sBIT", b"pHYs",
    b"bKGD", b"iCCP",
];

/// One chunk of a PNG file.
struct Chunk<'a> {
    /// Its four-letter type.
    kind: [u8; 4],
    /// Its data.
    data: &'a [u8],
    /// The whole chunk: length, type, data and CRC.
    whole: &'a [u8],
}

impl Chunk<'_> {
    /// Whether a decoder needs it for the pixels: a critical chunk (`IHDR`, `PLTE`, `IDAT`,
    /// `IEND`; upper-case first letter) or one of [`RENDERING`].
    fn renders(&self) -> bool {
        self.kind[0].is_ascii_uppercase() || RENDERING.contains(&&self.kind)
    }
}

/// The chunks of a PNG file, in order, up to the first that does not fit in the file.
struct Chunks<'a> {
    /// The file.
    bytes: &'a [u8],
    /// Where the next chunk starts.
    at: usize,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Chunk<'a>;

    /// The chunk at [`Chunks::at`], if the file holds it whole.
    fn next(&mut self) -> Option<Chunk<'a>> {
        let start = self.at;
        let head = self.bytes.get(start..start.checked_add(8)?)?;
        let (len, kind) = head.split_at(4);
        let len = usize::try_from(u32::from_be_bytes(len.try_into().ok()?)).ok()?;
        let end = start.checked_add(12)?.checked_add(len)?;
        let whole = self.bytes.get(start..end)?;
        self.at = end;
        Some(Chunk {
            kind: kind.try_into().ok()?,
            data: whole.get(8..8 + len)?,
            whole,
        })
    }
}

/// The chunks of the PNG file `bytes` (its signature already checked).
fn chunks(bytes: &[u8]) -> Chunks<'_> {
    Chunks {
        bytes,
        at: SIGNATURE_LEN,
    }
}

/// Whether the metadata of the PNG file `bytes` holds more than [`MAX_METADATA`] bytes, its
/// compressed chunks counted inflated (inflated no further than that); metadata that does not
/// inflate counts as too much.
pub(crate) fn bulky_metadata(bytes: &[u8]) -> bool {
    let mut total = 0usize;
    for chunk in chunks(bytes).filter(|chunk| !chunk.renders()) {
        let left = MAX_METADATA.saturating_sub(total);
        let Some(size) = metadata_size(&chunk, left) else {
            return true;
        };
        total = total.saturating_add(size);
        if total > MAX_METADATA {
            return true;
        }
    }
    false
}

/// How many bytes the metadata `chunk` holds, a compressed one inflated (at most one byte more
/// than `left`: enough to tell it is over); `None` when it does not inflate.
fn metadata_size(chunk: &Chunk<'_>, left: usize) -> Option<usize> {
    let after_keyword =
        |data: &[u8]| -> Option<usize> { Some(data.iter().position(|&b| b == 0)? + 1) };
    let compressed: Option<&[u8]> = match &chunk.kind {
        // Keyword, NUL, compression method, zlib stream.
        b"iCCP" | b"zTXt" => Some(chunk.data.get(after_keyword(chunk.data)? + 1..)?),
        // Keyword, NUL, compressed?, method, language, NUL, translated keyword, NUL, text.
        b"iTXt" => {
            let at = after_keyword(chunk.data)?;
            let flag = *chunk.data.get(at)?;
            let rest = chunk.data.get(at + 2..)?;
            let rest = rest.get(after_keyword(rest)?..)?;
            let text = rest.get(after_keyword(rest)?..)?;
            (flag != 0).then_some(text)
        }
        _ => None,
    };
    let Some(stream) = compressed else {
        return Some(chunk.data.len());
    };
    match fdeflate::decompress_to_vec_bounded(stream, left.saturating_add(1)) {
        Ok(inflated) => Some(chunk.data.len().max(inflated.len())),
        Err(fdeflate::BoundedDecompressionError::OutputTooLarge { .. }) => {
            Some(left.saturating_add(1))
        }
        Err(_) => None,
    }
}

/// A copy of the PNG file `bytes` without its metadata (`eXIf` kept: it says how to turn the
/// image, and it is read as it is, not inflated); whatever follows the last whole chunk is
/// kept, so that a damaged file reads as damaged.
pub(crate) fn without_metadata(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(bytes.get(..SIGNATURE_LEN).unwrap_or(bytes));
    let mut walk = chunks(bytes);
    for chunk in walk.by_ref() {
        if chunk.renders() || &chunk.kind == b"eXIf" {
            out.extend_from_slice(chunk.whole);
        }
        if &chunk.kind == b"IEND" {
            return out;
        }
    }
    out.extend_from_slice(bytes.get(walk.at..).unwrap_or_default());
    out
}

/// Whether every chunk of the PNG file `bytes` is one of [`KEPT`].
pub(crate) fn only_pixels(bytes: &[u8]) -> bool {
    chunks(bytes).all(|chunk| KEPT.contains(&&chunk.kind))
}

/// Whether the PNG file `bytes` is whole: its chunks fill it and the last is `IEND`.
pub(crate) fn ends_with_iend(bytes: &[u8]) -> bool {
    let mut walk = chunks(bytes);
    let last = walk.by_ref().last();
    walk.at == bytes.len() && last.is_some_and(|chunk| &chunk.kind == b"IEND")
}
