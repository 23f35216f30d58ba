//! `read` of an image: a PNG, JPEG, GIF or WebP file (told by its bytes) is stored and given
//! to the model as an image rather than refused as binary (docs/architecture.md#images).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::ToolOutput;
use crate::images::{Format, ImageError};
use crate::regular_file::{self, describe};

/// The largest image file `read` takes.
const MAX_IMAGE_BYTES: usize = 20 << 20;

/// The result of reading `path` (shown as `shown`) when it is an image; `None` when it is not
/// (or cannot be opened: the text path says why).
pub(crate) async fn read(path: &Path, shown: &str, ctx: &super::ToolContext) -> Option<ToolOutput> {
    let hidden = ctx.hidden.clone();
    let owned: PathBuf = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || read_if_image(&owned, &hidden))
        .await
        .ok()??;
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(message) => return Some(ToolOutput::error(format!("cannot read {shown}: {message}"))),
    };
    // The reason (worded for the user: a setting, `--model`) is theirs; the model is told what
    // it can do instead.
    let Ok(store) = &ctx.images else {
        return Some(ToolOutput::error(format!(
            "{shown} is an image, and the model of this run takes no images: describe what you \
             need from the file instead, or read it as text with bash (e.g. `file {shown}`, \
             `identify {shown}`)"
        )));
    };
    Some(match store.put_async(shown.to_owned(), bytes).await {
        Ok(image) => {
            let output = format!(
                "{} ({} kB, {})",
                image.label(),
                image.size.div_ceil(1000),
                image.media_type
            );
            ToolOutput {
                output,
                is_error: false,
                images: vec![image],
            }
        }
        Err(err) => ToolOutput::error(refusal(shown, &err)),
    })
}

/// Why the image `shown` cannot be given to the model, worded for the model: what it can do
/// instead of attaching a file.
fn refusal(shown: &str, err: &ImageError) -> String {
    let smaller = format!(
        "make a smaller copy with bash (e.g. `convert {shown} -resize 2000x2000 /tmp/small.png`, \
         if ImageMagick is installed) and read that"
    );
    match err {
        ImageError::TooLarge { size, limits, .. } => format!(
            "{shown} is an image of {size}, more than the model may be given ({limits}): \
             {smaller}"
        ),
        ImageError::TooManyBytesEncoded { detail, limit, .. } => format!(
            "{shown} cannot be made smaller than {limit} bytes for the model ({detail}): {smaller}"
        ),
        ImageError::NotAnImage { looks_like, .. } => {
            format!("{shown} is not an image (it looks like {looks_like}): read it as text")
        }
        ImageError::Damaged { kind, detail, .. } => format!(
            "{shown} starts like a {kind} image but does not decode ({detail}): it may be damaged \
             or of a kind the daemon does not take; inspect it with bash instead (e.g. `file \
             {shown}`, `identify {shown}`)"
        ),
        ImageError::Io { source, .. } => format!(
            "{shown} could not be stored for the model ({source}): the disk may be full; go on \
             without the image, and tell the user if it matters"
        ),
        _ => format!("{shown} could not be given to the model ({err})"),
    }
}

/// The bytes of `path` when its first bytes say it is an image (`Err`: why they cannot be
/// read); `None` for anything else, which `read` handles as a text file.
fn read_if_image(
    path: &Path,
    hidden: &crate::sandbox::hidden::HiddenPaths,
) -> Option<Result<Vec<u8>, String>> {
    let file = regular_file::open(path).ok()?;
    if hidden
        .check_opened(&file, &path.display().to_string())
        .is_err()
    {
        return None;
    }
    let mut bytes = Vec::with_capacity(16);
    (&file).take(16).read_to_end(&mut bytes).ok()?;
    Format::sniff(&bytes)?;
    let rest = (MAX_IMAGE_BYTES + 1).saturating_sub(bytes.len()) as u64;
    if let Err(err) = (&file).take(rest).read_to_end(&mut bytes) {
        return Some(Err(describe(&err)));
    }
    Some(if bytes.len() > MAX_IMAGE_BYTES {
        Err(format!(
            "it is an image larger than {} MB; scale it down first (e.g. with ImageMagick's \
             `convert -resize 2000x2000`)",
            MAX_IMAGE_BYTES >> 20
        ))
    } else {
        Ok(bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::ImageStore;

    /// A tiny PNG.
    fn png() -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        image::RgbImage::from_pixel(4, 3, image::Rgb([9, 9, 9]))
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    #[tokio::test]
    async fn an_image_is_stored_and_given_to_the_model() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), png()).unwrap();
        let mut ctx = super::super::ToolContext::standalone(dir.path());
        ctx.images = Ok(ImageStore::new(&dir.path().join("session")));
        let out = read(&dir.path().join("shot.png"), "shot.png", &ctx)
            .await
            .unwrap();
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(out.output, "[image: shot.png 4×3] (1 kB, image/png)");
        assert_eq!(out.images.len(), 1);
    }

    #[tokio::test]
    async fn a_damaged_image_tells_the_model_what_to_do_instead() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = png();
        std::fs::write(dir.path().join("cut.png"), &bytes[..bytes.len() / 2]).unwrap();
        let mut ctx = super::super::ToolContext::standalone(dir.path());
        ctx.images = Ok(ImageStore::new(&dir.path().join("session")));
        let out = read(&dir.path().join("cut.png"), "cut.png", &ctx)
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(
            out.output
                .starts_with("cut.png starts like a PNG image but does not decode"),
            "{}",
            out.output
        );
        assert!(out.output.contains("`file cut.png`"), "{}", out.output);
        assert!(!out.output.contains("attach"), "{}", out.output);
    }

    #[test]
    fn an_image_too_large_tells_the_model_how_to_make_a_smaller_copy() {
        let err = ImageError::TooLarge {
            name: "big.png".into(),
            size: "30000×20000 pixels".into(),
            limits: "20000 px a side".into(),
        };
        let text = refusal("big.png", &err);
        assert!(
            text.starts_with("big.png is an image of 30000×20000 pixels"),
            "{text}"
        );
        assert!(text.contains("convert big.png -resize 2000x2000"), "{text}");
        assert!(!text.contains("attach"), "{text}");
    }

    #[tokio::test]
    async fn a_model_without_images_is_told_what_to_do_instead_and_text_is_left_to_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), png()).unwrap();
        std::fs::write(dir.path().join("notes.png"), "plain text").unwrap();
        std::fs::write(dir.path().join("data.bin"), [0u8, 1, 2]).unwrap();
        let ctx = super::super::ToolContext::standalone(dir.path());
        let out = read(&dir.path().join("shot.png"), "shot.png", &ctx)
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(
            out.output.starts_with(
                "shot.png is an image, and the model of this run takes no images: describe what \
                 you need from the file instead, or read it as text with bash"
            ),
            "{}",
            out.output
        );
        assert!(!out.output.contains("--model"), "{}", out.output);
        assert!(
            read(&dir.path().join("notes.png"), "notes.png", &ctx)
                .await
                .is_none()
        );
        assert!(
            read(&dir.path().join("data.bin"), "data.bin", &ctx)
                .await
                .is_none()
        );
        assert!(
            read(&dir.path().join("missing.png"), "missing.png", &ctx)
                .await
                .is_none()
        );
    }
}
