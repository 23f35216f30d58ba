//! The history's images in each wire format (docs/architecture.md#images): an image whose bytes
//! were loaded for the call goes as the format's image part, one whose bytes were not goes as
//! its text label, so that the model always hears of it and a call never fails for it. A part
//! carries a placeholder where the data goes: [`super::body::to_bytes`] writes the data in.

use protocol::ImageRef;
use serde_json::{Value, json};

use super::body::{Splice, placeholder};
use crate::images::ImageData;

/// The parts of `images`: `part` of each loaded one the request does not carry yet, given the
/// placeholder of its data written as `splice` says; `label` of the label of each other (an
/// image sent earlier in the request is said to be).
fn parts(
    images: &[ImageRef],
    data: &ImageData,
    splice: Splice,
    part: impl Fn(&ImageRef, String) -> Value,
    label: impl Fn(String) -> Value,
) -> Vec<Value> {
    images
        .iter()
        .map(|image| {
            if data.take(image) {
                part(image, placeholder(splice, &image.hash))
            } else if data.has(image) {
                label(format!("{} (the same image as above)", image.label()))
            } else {
                label(image.label())
            }
        })
        .collect()
}

/// Anthropic Messages content blocks: `image` blocks with a base64 source.
pub(crate) fn anthropic_blocks(images: &[ImageRef], data: &ImageData) -> Vec<Value> {
    parts(
        images,
        data,
        Splice::Base64,
        |image, base64| json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": base64}}),
        |label| json!({"type": "text", "text": label}),
    )
}

/// Chat Completions content parts: `image_url` parts with a `data:` URL.
pub(crate) fn chat_parts(images: &[ImageRef], data: &ImageData) -> Vec<Value> {
    parts(
        images,
        data,
        Splice::DataUrl,
        |_, url| json!({"type": "image_url", "image_url": {"url": url}}),
        |label| json!({"type": "text", "text": label}),
    )
}

/// Responses API content parts: `input_image` parts with a `data:` URL.
pub(crate) fn responses_parts(images: &[ImageRef], data: &ImageData) -> Vec<Value> {
    parts(
        images,
        data,
        Splice::DataUrl,
        |_, url| json!({"type": "input_image", "image_url": url, "detail": "auto"}),
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

    /// Image data holding `loaded`, each with the bytes `ABC` (base64 `QUJD`).
    pub(crate) fn data(loaded: &[&ImageRef]) -> ImageData {
        let mut data = ImageData::none();
        for image in loaded {
            data.insert(image, "image/png", b"ABC".to_vec());
        }
        data
    }

    /// `values` as the server gets them: serialized with the images' data written in, and read
    /// back.
    pub(crate) fn sent(values: Vec<Value>, data: &ImageData) -> Vec<Value> {
        let bytes = crate::provider::body::to_bytes(&Value::Array(values), data).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn a_loaded_image_is_a_part_and_another_its_label() {
        let (a, b) = (image("a"), image("b"));
        let data = data(&[&a]);
        let both = [a.clone(), b.clone()];
        assert_eq!(
            sent(anthropic_blocks(&both, &data), &data),
            vec![
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}),
                json!({"type": "text", "text": "[image: b.png 2×1]"}),
            ]
        );
        data.new_request();
        let part = &anthropic_blocks(&both, &data)[0];
        assert!(
            !part.to_string().contains("QUJD"),
            "the part carries a placeholder, not the data: {part}"
        );
        data.new_request();
        assert_eq!(
            sent(chat_parts(&both, &data), &data)[0],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}})
        );
        data.new_request();
        assert_eq!(
            sent(responses_parts(&both, &data), &data),
            vec![
                json!({"type": "input_image", "image_url": "data:image/png;base64,QUJD", "detail": "auto"}),
                json!({"type": "input_text", "text": "[image: b.png 2×1]"}),
            ]
        );
    }

    #[test]
    fn a_request_carries_an_image_once_and_names_its_repeats() {
        let a = image("a");
        let data = data(&[&a]);
        data.new_request();
        let first = anthropic_blocks(std::slice::from_ref(&a), &data);
        let again = anthropic_blocks(std::slice::from_ref(&a), &data);
        assert_eq!(first[0]["type"], "image");
        assert_eq!(
            again[0],
            json!({"type": "text", "text": "[image: a.png 2×1] (the same image as above)"})
        );
        data.new_request();
        assert_eq!(anthropic_blocks(&[a], &data)[0]["type"], "image");
    }
}
