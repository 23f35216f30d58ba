//! Checking an image from outside and fitting it to what every provider takes: the format told
//! by its bytes, its size in pixels read from the header and bounded before anything is
//! decoded, decoding under `image::Limits`, then scaled down and re-encoded only when it is
//! too large (docs/architecture.md#images).

use std::io::Cursor;

use image::codecs::gif::GifDecoder;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::{AnimationDecoder, DynamicImage, ImageDecoder, ImageReader, Limits};

use super::error::ImageError;
use super::format::{Format, looks_like};

/// The longest side an image may claim in its header.
pub(crate) const MAX_SIDE: u32 = 20_000;
/// The most pixels an image may claim in its header.
pub(crate) const MAX_PIXELS: u64 = 100_000_000;
/// The most bytes a decoder may allocate for one image.
const MAX_ALLOC: u64 = 512 << 20;
/// The longest side an image is sent with (Anthropic's limit when a request carries many
/// images; OpenAI fits to 2048).
pub(crate) const FIT_SIDE: u32 = 2000;
/// The most bytes a stored image has, so that its base64 stays under Anthropic's 5 MB.
pub(crate) const FIT_BYTES: usize = 3_750_000;
/// JPEG quality of a re-encoded image.
const JPEG_QUALITY: u8 = 85;

/// An image as it will be stored.
#[derive(Debug)]
pub(crate) struct Fitted {
    /// The new bytes when it was scaled or re-encoded; `None`: the file as given.
    pub(crate) reencoded: Option<Vec<u8>>,
    /// The stored format.
    pub(crate) format: Format,
    /// Width in pixels, as stored.
    pub(crate) width: u32,
    /// Height in pixels, as stored.
    pub(crate) height: u32,
}

/// Checks `bytes` (the file `name`) and fits them: an image within the limits is kept byte for
/// byte; a larger one is scaled to [`FIT_SIDE`] and re-encoded (PNG, or JPEG for a JPEG or
/// when PNG stays too large); an animated GIF or WebP becomes its first frame. Blocking.
pub(crate) fn fit(name: &str, bytes: &[u8]) -> Result<Fitted, ImageError> {
    let Some(format) = Format::sniff(bytes) else {
        return Err(ImageError(format!(
            "{name} is not a PNG, JPEG, GIF or WebP image (it looks like {}): attach an image \
             file",
            looks_like(bytes)
        )));
    };
    let kind = format.extension().to_ascii_uppercase();
    let damaged = |err: image::ImageError| match err {
        image::ImageError::Limits(_) => ImageError(format!(
            "{name} needs more memory to decode than an attached image may take ({err}): scale \
             it down before attaching it"
        )),
        _ => ImageError(format!(
            "{name} is a damaged or unsupported {kind} image ({err}): attach an intact PNG, \
             JPEG, GIF or WebP file"
        )),
    };
    let (width, height) = header_size(format, bytes).map_err(damaged)?;
    check_size(name, width, height)?;
    let (image, animated) = decode(format, bytes).map_err(damaged)?;
    let too_long = image.width().max(image.height()) > FIT_SIDE;
    if !too_long && bytes.len() <= FIT_BYTES && !animated {
        return Ok(Fitted {
            reencoded: None,
            format,
            width,
            height,
        });
    }
    let image = if too_long {
        image.resize(FIT_SIDE, FIT_SIDE, FilterType::Lanczos3)
    } else {
        image
    };
    reencode(name, format, image)
}

/// The size in pixels the header of `bytes` claims, read without decoding the pixels.
fn header_size(format: Format, bytes: &[u8]) -> image::ImageResult<(u32, u32)> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    reader.limits(limits(None));
    reader.into_dimensions()
}

/// Refuses an image whose header claims no pixels or absurdly many.
fn check_size(name: &str, width: u32, height: u32) -> Result<(), ImageError> {
    if width == 0 || height == 0 {
        return Err(ImageError(format!(
            "{name} claims to be {width}×{height} pixels: attach an intact image file"
        )));
    }
    if width.max(height) > MAX_SIDE || u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError(format!(
            "{name} is {width}×{height} pixels, more than an attached image may have ({MAX_SIDE} \
             px a side, {} megapixels): scale it down before attaching it",
            MAX_PIXELS / 1_000_000
        )));
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

/// Decodes `bytes` (its first frame, turned upright), and whether it has more frames.
fn decode(format: Format, bytes: &[u8]) -> image::ImageResult<(DynamicImage, bool)> {
    if format == Format::Gif {
        let mut decoder = GifDecoder::new(Cursor::new(bytes))?;
        decoder.set_limits(limits(Some(MAX_SIDE)))?;
        let mut frames = decoder.into_frames();
        let Some(first) = frames.next() else {
            return Err(image::ImageError::Decoding(
                image::error::DecodingError::from_format_hint(image::ImageFormat::Gif.into()),
            ));
        };
        let first = DynamicImage::ImageRgba8(first?.into_buffer());
        return Ok((first, frames.next().is_some()));
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format.image_format());
    reader.limits(limits(Some(MAX_SIDE)));
    let mut decoder = reader.into_decoder()?;
    let orientation = decoder.orientation()?;
    let mut budget = limits(Some(MAX_SIDE));
    budget.reserve(decoder.total_bytes())?;
    let mut image = DynamicImage::from_decoder(decoder)?;
    image.apply_orientation(orientation);
    Ok((image, format == Format::WebP && webp_animated(bytes)))
}

/// Whether a WebP file says it is animated (the animation flag of its `VP8X` header).
fn webp_animated(bytes: &[u8]) -> bool {
    bytes.get(12..16) == Some(b"VP8X") && bytes.get(20).is_some_and(|flags| flags & 0x02 != 0)
}

/// Encodes `image` small enough to store: PNG for a PNG, GIF or WebP source, JPEG for a JPEG
/// or when the PNG is too large; scaled down further while even the JPEG is.
fn reencode(name: &str, source: Format, mut image: DynamicImage) -> Result<Fitted, ImageError> {
    let failed = |err: image::ImageError| {
        ImageError(format!(
            "{name} could not be re-encoded ({err}): attach a smaller PNG or JPEG file"
        ))
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
    Err(ImageError(format!(
        "{name} stays larger than {FIT_BYTES} bytes however it is encoded: attach a smaller \
         image"
    )))
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
