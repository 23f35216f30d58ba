//! Which models take images: a provider profile says so with `images = true|false`; otherwise
//! every model does but the families known to read text only, refused before anything is sent.

/// Name fragments of models that read text only (matched in lower case).
const TEXT_ONLY: &[(&str, &str)] = &[
    ("gpt-3.5", "GPT-3.5 models read text only"),
    ("o1-mini", "o1-mini reads text only"),
    ("o3-mini", "o3-mini reads text only"),
    ("gpt-oss", "gpt-oss models read text only"),
    (
        "deepseek",
        "DeepSeek's chat and coder models read text only",
    ),
    ("coder", "coder models read text only"),
    ("codestral", "Codestral reads text only"),
    ("codellama", "Code Llama reads text only"),
    ("starcoder", "StarCoder reads text only"),
    ("mixtral", "Mixtral reads text only"),
    ("mistral-7b", "Mistral 7B reads text only"),
    ("llama-3.1", "Llama 3.1 reads text only"),
    ("llama3.1", "Llama 3.1 reads text only"),
    ("llama-3.3", "Llama 3.3 reads text only"),
    ("llama3.3", "Llama 3.3 reads text only"),
    ("phi-3", "Phi-3 reads text only"),
];

/// Name fragments that mark a vision model of a family that otherwise reads text only.
const VISION: &[&str] = &["vision", "-vl", "vl-", "llava", "pixtral"];

/// Whether `model` of profile `profile` (whose `images` setting is `setting`) takes images;
/// `Err` says why not and what to do.
pub(crate) fn check(profile: &str, setting: Option<bool>, model: &str) -> Result<(), String> {
    let shown = if model.is_empty() { "the model" } else { model };
    let reason = match setting {
        Some(true) => return Ok(()),
        Some(false) => format!("[providers.{profile}] in config.toml says images = false"),
        None => match text_only(model) {
            Some(reason) => format!(
                "{reason}; set images = true in [providers.{profile}] of config.toml if this one does"
            ),
            None => return Ok(()),
        },
    };
    Err(format!(
        "{shown} does not take images ({reason}): send the message without them, or choose a \
         model that reads images with --model"
    ))
}

/// Why `model` is known to read text only, if it is.
fn text_only(model: &str) -> Option<&'static str> {
    let name = model.to_ascii_lowercase();
    if VISION.iter().any(|v| name.contains(v)) {
        return None;
    }
    TEXT_ONLY
        .iter()
        .find(|(fragment, _)| name.contains(fragment))
        .map(|(_, reason)| *reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_text_only_families_are_refused_with_what_to_do() {
        let err = check("local", None, "qwen2.5-coder-7b-instruct").unwrap_err();
        assert!(
            err.contains("qwen2.5-coder-7b-instruct does not take images"),
            "{err}"
        );
        assert!(err.contains("images = true in [providers.local]"), "{err}");
        assert!(check("openai", None, "deepseek-chat").is_err());
        assert!(check("openai", None, "gpt-3.5-turbo").is_err());
    }

    #[test]
    fn other_models_and_vision_variants_take_images() {
        for model in [
            "claude-sonnet-4-5",
            "gpt-5",
            "gpt-5-codex",
            "qwen2.5-vl-7b",
            "",
            "llava-phi-3",
        ] {
            assert_eq!(check("anthropic", None, model), Ok(()), "{model}");
        }
    }

    #[test]
    fn the_profile_setting_decides_first() {
        assert_eq!(check("local", Some(true), "qwen2.5-coder-7b"), Ok(()));
        let err = check("anthropic", Some(false), "claude-sonnet-4-5").unwrap_err();
        assert!(err.contains("images = false"), "{err}");
    }
}
