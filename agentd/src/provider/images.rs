//! The history's images in each wire format (docs/architecture.md#images): an image whose bytes
//! were loaded for the call goes as the format's image part, one whose bytes were not goes as
//! its text label, so that the model always hears of it and a call never fails for it.

use protocol::ImageRef;
use serde_json::{Value, json};

use crate::images::ImageData;

/// The parts of `images`: `part` of each loaded one (`None` when its bytes are not loaded),
/// `label` of the label of each other.
fn parts(
    images: &[ImageRef],
    part: impl Fn(&ImageRef) -> Option<Value>,
    label: impl Fn(String) -> Value,
) -> Vec<Value> {
    images
        .iter()
        .map(|image| part(image).unwrap_or_else(|| label(image.label())))
        .collect()
}

/// Anthropic Messages content blocks: `image` blocks with a base64 source.
pub(crate) fn anthropic_blocks(images: &[ImageRef], data: &ImageData) -> Vec<Value> {
    parts(
        images,
        |image| {
            let base64 = data.base64(image)?;
            Some(
                json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": base64}}),
            )
        },
        |label| json!({"type": "text", "text": label}),
    )
}

/// Chat Completions content parts: `image_url` parts with a `data:` URL.
pub(crate) fn chat_parts(images: &[ImageRef], data: &ImageData) -> Vec<Value> {
    parts(
        images,
        |image| {
            let url = data.data_url(image)?;
            Some(json!({"type": "image_url", "image_url": {"url": url}}))
        },
        |label| json!({"type": "text", "text": label}),
    )
}

/// Responses API content parts: `input_image` parts with a `data:` URL.
pub(crate) fn responses_parts(images: &[ImageRef], data: &ImageData) -> Vec<Value> {
    parts(
        images,
        |image| {
            let url = data.data_url(image)?;
            Some(json!({"type": "input_image", "image_url": url, "detail": "auto"}))
        },
        |label| json!({"type": "input_text", "text": label}),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 2×1 PNG's reference (the bytes do not matter to the wire formats).
    pub(crate) fn image(hash: &str) -> ImageRef {
        ImageRef {
            hash: hash.into(),
            media_type: "image/png".into(),
            size: 10,
            width: 2,
            height: 1,
            name: format!("{hash}.png"),
        }
    }

    /// Image data holding `loaded` as base64 `QUJD`.
    pub(crate) fn data(loaded: &[&ImageRef]) -> ImageData {
        let mut data = ImageData::none();
        for image in loaded {
            data.insert(image, "QUJD".into());
        }
        data
    }

    #[test]
    fn a_loaded_image_is_a_part_and_another_its_label() {
        let (a, b) = (image("a"), image("b"));
        let data = data(&[&a]);
        let both = [a.clone(), b.clone()];
        assert_eq!(
            anthropic_blocks(&both, &data),
            vec![
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}),
                json!({"type": "text", "text": "[image: b.png 2×1]"}),
            ]
        );
        assert_eq!(
            chat_parts(&both, &data)[0],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}})
        );
        assert_eq!(
            responses_parts(&both, &data),
            vec![
                json!({"type": "input_image", "image_url": "data:image/png;base64,QUJD", "detail": "auto"}),
                json!({"type": "input_text", "text": "[image: b.png 2×1]"}),
            ]
        );
    }
}
