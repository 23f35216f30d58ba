//! Checking an image from outside and fitting it to what every provider takes: the format told
//! by its bytes, its size in pixels read from the header and bounded before anything is
//! decoded, decoding under `image::Limits`, then scaled down and re-encoded only when it is
//! too large (docs/architecture.md#images).

use std::borrow::Cow;
use std::io::Cursor;

use image::codecs::gif::GifDecoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{AnimationDecoder, DynamicImage, ImageDecoder, ImageReader, Limits};

use super::error::ImageError;
use super::format::{Format, looks_like};
use super::metadata::only_pixels;
use super::png_chunks::{bulky_metadata, without_metadata};
use super::whole::is_whole;

/// The longest side an image may claim in its header.
pub(crate) const MAX_SIDE: u32 = 20_000;
/// The most pixels an image may claim in its header: an 8K photo (7680×4320) is 33 megapixels.
pub(crate) const MAX_PIXELS: u64 = 40_000_000;
/// The most bytes a decoded image may take: [`MAX_PIXELS`] at 8 bits a channel with alpha. A
/// 16-bit image is counted at its real size, so it may have half the pixels.
///
/// This bounds the image, not the decode: a decoder's own buffers come on top (a progressive
/// JPEG keeps its coefficients, an animated WebP or a GIF composes frames over a canvas), and
/// scaling adds a box-filtered copy (≤ a quarter), Lanczos' buffer (≤ 128 MB) and the result.
/// Measured (debug build, optimised decoders), one decode of 40 megapixels grows the daemon by
/// ~425 MB for a progressive CMYK JPEG or an animated WebP, ~350 MB for a progressive 4:4:4 JPEG,
/// ~250–290 MB for a 20-megapixel GIF or 16-bit PNG. What decodes at once is bounded by the
/// store's decode slots (`slots::SLOTS`, in megapixels): at the worst one 40-megapixel decode
/// and 8 megapixels beside it, ~570 MB above an idle daemon (~610 MB in all).
const MAX_ALLOC: u64 = 4 * MAX_PIXELS;
/// The longest side an image is sent with (Anthropic's limit when a request carries many
/// images; OpenAI fits to 2048).
pub(crate) const FIT_SIDE: u32 = 2000;
/// The most bytes a stored image has, so that its base64 stays under Anthropic's 5 MB.
pub(crate) const FIT_BYTES: usize = 3_750_000;
/// The most bytes reading a stored image's size may take: its header only (a PNG's chunks
/// before its pixels, an ICC profile inflated no further than this).
const HEADER_ALLOC: u64 = 16 * 1024 * 1024;
/// JPEG quality of a re-encoded image.
const JPEG_QUALITY: u8 = 85;

/// An image as it will be stored.
#[derive(Debug)]
pub(crate) struct Fitted {
    /// The new bytes when it was scaled or re-encoded; `None`: the file as given.
    pub(crate) reencoded: Option<Vec<u8>>,
    /// The stored format.
    pub(crate) format: Format,
    /// Width in pixels, as stored (and displayed).
    pub(crate) width: u32,
    /// Height in pixels, as stored (and displayed).
    pub(crate) height: u32,
}

/// A decoded image, not yet turned upright.
struct Decoded {
    /// Its first frame's pixels, as stored in the file.
    image: DynamicImage,
    /// How its metadata says to turn it for display.
    orientation: Orientation,
    /// Whether it carries EXIF or XMP metadata (a camera's serial, where a photo was taken).
    metadata: bool,
    /// Whether it has more frames.
    animated: bool,
}

/// Checks `bytes` (the file `name`) and fits them: an image within the limits, whole and
/// holding nothing but what draws its pixels ([`only_pixels`]: no EXIF, XMP, IPTC, comment or
/// text, wherever it sits) is kept byte for byte; a larger one is scaled to [`FIT_SIDE`] and
/// re-encoded (PNG, or JPEG for a JPEG or when PNG stays too large); one with EXIF or XMP
/// metadata, or a PNG with more metadata than [`MAX_METADATA`](super::png_chunks::MAX_METADATA)
/// (an ICC profile that inflates to megabytes), is re-encoded turned as its orientation says
/// (the metadata is not kept: neither stored nor sent); one that is not whole (a cut JPEG the
/// decoder reads leniently) is re-encoded from what decodes; an animated GIF or WebP becomes
/// its first frame. Blocking.
pub(crate) fn fit(name: &str, bytes: &[u8]) -> Result<Fitted, ImageError> {
    let Some(format) = Format::sniff(bytes) else {
        return Err(ImageError::NotAnImage {
            name: name.to_owned(),
            looks_like: looks_like(bytes),
        });
    };
    // Bulky metadata is left out before anything decodes: the PNG decoder inflates an ICC
    // profile whole, whatever its size.
    let bulky = format == Format::Png && bulky_metadata(bytes);
    let source = if bulky {
        Cow::Owned(without_metadata(bytes))
    } else {
        Cow::Borrowed(bytes)
    };
    let (width, height) = header_size(format, &source)
        .map_err(|err| failed(name, format, err, || "too large to read".to_owned()))?;
    check_size(name, format, width, height)?;
    let decoded = decode(format, &source).map_err(|err| {
        failed(name, format, err, || {
            format!("{width}×{height} pixels, too many bytes decoded at its colour depth")
        })
    })?;
    let too_long = decoded.image.width().max(decoded.image.height()) > FIT_SIDE;
    let as_is = !bulky
        && !decoded.animated
        && !decoded.metadata
        && only_pixels(format, bytes)
        && is_whole(format, bytes);
    if !too_long && bytes.len() <= FIT_BYTES && as_is {
        return Ok(Fitted {
            reencoded: None,
            format,
            width,
            height,
        });
    }
    let mut image = if too_long {
        shrink(decoded.image)
    } else {
        decoded.image
    };
    // Turned after scaling: turning a copy of the fitted image costs a fraction of the full one.
    image.apply_orientation(decoded.orientation);
    reencode(name, format, image)
}

/// Why the image `name` (in `format`) failed to decode with `err`: over a limit (its size as
/// `size` words it) or damaged.
fn failed(
    name: &str,
    format: Format,
    err: image::ImageError,
    size: impl FnOnce() -> String,
) -> ImageError {
    match err {
        image::ImageError::Limits(_) => too_large(name, size()),
        _ => ImageError::Damaged {
            name: name.to_owned(),
            kind: format.name(),
            detail: err.to_string(),
        },
    }
}

/// The refusal of the image `name`, too large as `size` says.
fn too_large(name: &str, size: String) -> ImageError {
    ImageError::TooLarge {
        name: name.to_owned(),
        size,
        limits: format!(
            "{MAX_SIDE} px a side, {} megapixels, {} MB decoded",
            MAX_PIXELS / 1_000_000,
            MAX_ALLOC / 1_000_000
        ),
    }
}

/// `image` scaled to [`FIT_SIDE`] on its long side: first by an integer factor with a box
/// filter (each source pixel counted once; cheap in memory), so that Lanczos, whose buffer grows
/// with the source's width, scales a copy under twice the fitted size.
fn shrink(image: DynamicImage) -> DynamicImage {
    let long = image.width().max(image.height());
    let factor = long / FIT_SIDE;
    let image = if factor >= 2 {
        let (width, height) = (image.width() / factor, image.height() / factor);
        image.thumbnail_exact(width.max(1), height.max(1))
    } else {
        image
    };
    image.resize(FIT_SIDE, FIT_SIDE, FilterType::Lanczos3)
}

/// The size in pixels the header of `bytes` claims, read without decoding the pixels.
fn header_size(format: Format, bytes: &[u8]) -> image::ImageResult<(u32, u32)> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    reader.limits(limits(None));
    reader.into_dimensions()
}

/// The size in pixels of a stored image (`bytes` in `format`), its header read with at most
/// [`HEADER_ALLOC`] bytes; `None` when it cannot be read so.
pub(crate) fn stored_size(format: Format, bytes: &[u8]) -> Option<(u32, u32)> {
    let mut limits = limits(None);
    limits.max_alloc = Some(HEADER_ALLOC);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    reader.limits(limits);
    reader.into_dimensions().ok()
}

/// Refuses an image whose header claims no pixels or too many.
fn check_size(name: &str, format: Format, width: u32, height: u32) -> Result<(), ImageError> {
    if width == 0 || height == 0 {
        return Err(ImageError::Damaged {
            name: name.to_owned(),
            kind: format.name(),
            detail: format!("it claims to be {width}×{height} pixels"),
        });
    }
    if width.max(height) > MAX_SIDE || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(too_large(name, format!("{width}×{height} pixels")));
    }
    Ok(())
}

/// The decoding limits: the allocation bound, and with `side` the largest side allowed.
fn limits(side: Option<u32>) -> Limits {
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_ALLOC);
    limits.max_image_width = side;
    limits.max_image_height = side;
    limits
}

/// Decodes `bytes`: its first frame, its orientation and whether it carries metadata.
fn decode(format: Format, bytes: &[u8]) -> image::ImageResult<Decoded> {
    if format == Format::Gif {
        let mut decoder = GifDecoder::new(Cursor::new(bytes))?;
        decoder.set_limits(limits(Some(MAX_SIDE)))?;
        let mut frames = decoder.into_frames();
        let Some(first) = frames.next() else {
            return Err(image::ImageError::Decoding(
                image::error::DecodingError::from_format_hint(image::ImageFormat::Gif.into()),
            ));
        };
        return Ok(Decoded {
            image: DynamicImage::ImageRgba8(first?.into_buffer()),
            orientation: Orientation::NoTransforms,
            metadata: false,
            animated: frames.next().is_some(),
        });
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    reader.limits(limits(Some(MAX_SIDE)));
    let mut decoder = reader.into_decoder()?;
    // Metadata that cannot be read counts as there: the image is re-encoded without it.
    let metadata =
        !matches!(decoder.exif_metadata(), Ok(None)) || !matches!(decoder.xmp_metadata(), Ok(None));
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    // Counted at its real size: 16 bits a channel take twice the bytes.
    let mut budget = limits(Some(MAX_SIDE));
    budget.reserve(decoder.total_bytes())?;
    Ok(Decoded {
        image: DynamicImage::from_decoder(decoder)?,
        orientation,
        metadata,
        animated: format == Format::WebP && webp_animated(bytes),
    })
}

/// Whether a WebP file says it is animated (the animation flag of its `VP8X` header).
fn webp_animated(bytes: &[u8]) -> bool {
    bytes.get(12..16) == Some(b"VP8X") && bytes.get(20).is_some_and(|flags| flags & 0x02 != 0)
}

/// Encodes `image` small enough to store: PNG for a PNG, GIF or WebP source, JPEG for a JPEG
/// or when the PNG is too large; scaled down further while even the JPEG is.
fn reencode(name: &str, source: Format, mut image: DynamicImage) -> Result<Fitted, ImageError> {
    let failed = |err: image::ImageError| ImageError::TooManyBytesEncoded {
        name: name.to_owned(),
        limit: FIT_BYTES,
        detail: format!("encoding it failed: {err}"),
    };
    for _ in 0..4 {
        if source != Format::Jpeg {
            let png = encode_png(&image).map_err(failed)?;
            if png.len() <= FIT_BYTES {
                return Ok(fitted(png, Format::Png, &image));
            }
        }
        let jpeg = encode_jpeg(&image).map_err(failed)?;
        if jpeg.len() <= FIT_BYTES {
            return Ok(fitted(jpeg, Format::Jpeg, &image));
        }
        let (width, height) = (image.width() * 3 / 4, image.height() * 3 / 4);
        image = image.resize(width.max(1), height.max(1), FilterType::Lanczos3);
    }
    Err(ImageError::TooManyBytesEncoded {
        name: name.to_owned(),
        limit: FIT_BYTES,
        detail: "it stays larger however it is encoded".to_owned(),
    })
}

/// The stored form of `bytes` encoding `image` as `format`.
fn fitted(bytes: Vec<u8>, format: Format, image: &DynamicImage) -> Fitted {
    Fitted {
        reencoded: Some(bytes),
        format,
        width: image.width(),
        height: image.height(),
    }
}

/// `image` as PNG (8 or 16 bits a channel, as decoded).
fn encode_png(image: &DynamicImage) -> image::ImageResult<Vec<u8>> {
    let mut out = Vec::new();
    let encoder = PngEncoder::new(&mut out);
    match image {
        DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_)
        | DynamicImage::ImageLuma16(_)
        | DynamicImage::ImageLumaA16(_)
        | DynamicImage::ImageRgb16(_)
        | DynamicImage::ImageRgba16(_) => image.write_with_encoder(encoder)?,
        _ => DynamicImage::ImageRgba8(image.to_rgba8()).write_with_encoder(encoder)?,
    }
    Ok(out)
}

/// `image` as JPEG, transparent parts laid on white.
fn encode_jpeg(image: &DynamicImage) -> image::ImageResult<Vec<u8>> {
    let mut out = Vec::new();
    let rgb = if image.color().has_alpha() {
        let mut rgba = image.to_rgba8();
        for pixel in rgba.pixels_mut() {
            let [r, g, b, a] = pixel.0;
            let over_white = |c: u8| {
                let (c, a) = (u32::from(c), u32::from(a));
                ((c * a + 255 * (255 - a) + 127) / 255) as u8
            };
            pixel.0 = [over_white(r), over_white(g), over_white(b), 255];
        }
        DynamicImage::ImageRgba8(rgba).to_rgb8()
    } else {
        image.to_rgb8()
    };
    rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))?;
    Ok(out)
}
