//! The three wire formats the scripted server speaks, for tests that run the same steps over
//! each: how a run chooses one (run options, `agentctl` flags and environment), its scripted
//! replies, and where a request carries a user message and its images.

use protocol::RunOptions;
use serde_json::{Value, json};

use super::{ModelServer, Scripted, anthropic, openai, responses};

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages (`--provider anthropic`, the default).
    Anthropic,
    /// OpenAI Chat Completions (`--provider openai`).
    Chat,
    /// OpenAI's Responses API (`--provider responses`).
    Responses,
}

impl Wire {
    /// The three formats.
    pub const ALL: [Wire; 3] = [Wire::Anthropic, Wire::Chat, Wire::Responses];

    /// The provider and model a run over this format names (none for Anthropic: the
    /// fixture's default).
    fn provider_and_model(self) -> Option<(&'static str, &'static str)> {
        match self {
            Wire::Anthropic => None,
            Wire::Chat => Some(("openai", "gpt-4.1")),
            Wire::Responses => Some(("responses", "gpt-5")),
        }
    }

    /// Run options that speak this format to `server`.
    pub fn options(self, server: &ModelServer) -> RunOptions {
        let defaults = crate::run_options(server);
        match self.provider_and_model() {
            None => defaults,
            Some((provider, model)) => RunOptions {
                provider: Some(provider.into()),
                model: Some(model.into()),
                env: self.env(server),
                ..defaults
            },
        }
    }

    /// The `agentctl run` flags that choose this format.
    pub fn flags(self) -> Vec<&'static str> {
        match self.provider_and_model() {
            None => Vec::new(),
            Some((provider, model)) => vec!["--provider", provider, "--model", model],
        }
    }

    /// The environment that points this format's client at `server`, beside the Anthropic
    /// address the fixture always sets.
    pub fn env(self, server: &ModelServer) -> Vec<(String, String)> {
        match self {
            Wire::Anthropic => Vec::new(),
            Wire::Chat | Wire::Responses => {
                vec![("OPENAI_BASE_URL".into(), format!("{}/v1", server.url()))]
            }
        }
    }

    /// A reply of `text`.
    pub fn text(self, text: &str) -> Scripted {
        match self {
            Wire::Anthropic => anthropic::text(text),
            Wire::Chat => openai::text(text),
            Wire::Responses => responses::text(text),
        }
    }

    /// A reply that reads `path` with call `call_1`.
    pub fn read(self, path: &str) -> Scripted {
        let args = json!({"path": path});
        match self {
            Wire::Anthropic => anthropic::reply()
                .tool_with_id("call_1", "read", args)
                .build(),
            Wire::Chat => openai::reply().tool("call_1", "read", args).build(),
            Wire::Responses => responses::reply().tool("call_1", "read", args).build(),
        }
    }

    /// The first user message of a request `body` (after Chat Completions' system message).
    pub fn first_user_message(self, body: &Value) -> &Value {
        match self {
            Wire::Anthropic => &body["messages"][0],
            Wire::Chat => &body["messages"][1],
            Wire::Responses => &body["input"][0],
        }
    }

    /// The base64 data of each image of the user `message`, in order.
    pub fn images_in(self, message: &Value) -> Vec<String> {
        let parts = message["content"].as_array().cloned().unwrap_or_default();
        parts
            .iter()
            .filter_map(|part| {
                let data = match self {
                    Wire::Anthropic if part["type"] == "image" => part["source"]["data"].as_str(),
                    Wire::Chat if part["type"] == "image_url" => part["image_url"]["url"]
                        .as_str()?
                        .split_once(",")
                        .map(|s| s.1),
                    Wire::Responses if part["type"] == "input_image" => {
                        part["image_url"].as_str()?.split_once(",").map(|s| s.1)
                    }
                    _ => None,
                };
                data.map(str::to_string)
            })
            .collect()
    }

    /// The user message `text` with the PNG images of base64 `images` in exactly this format's
    /// shape, as the only (so the last) message of a request: Anthropic puts the images first
    /// and marks the last block for caching; OpenAI's APIs put the text first and the images
    /// as `data:` URLs.
    pub fn user_message(self, text: &str, images: &[String]) -> Value {
        let url = |data: &String| format!("data:image/png;base64,{data}");
        match self {
            Wire::Anthropic => {
                let mut content: Vec<Value> = images
                    .iter()
                    .map(|data| {
                        json!({"type": "image", "source": {"type": "base64",
                                "media_type": "image/png", "data": data}})
                    })
                    .collect();
                content.push(json!({"type": "text", "text": text}));
                if let Some(last) = content.last_mut() {
                    last["cache_control"] = json!({"type": "ephemeral"});
                }
                json!({"role": "user", "content": content})
            }
            Wire::Chat => {
                let mut content = vec![json!({"type": "text", "text": text})];
                content.extend(
                    images
                        .iter()
                        .map(|data| json!({"type": "image_url", "image_url": {"url": url(data)}})),
                );
                json!({"role": "user", "content": content})
            }
            Wire::Responses => {
                let mut content = vec![json!({"type": "input_text", "text": text})];
                content.extend(images.iter().map(
                    |data| json!({"type": "input_image", "image_url": url(data), "detail": "auto"}),
                ));
                json!({"type": "message", "role": "user", "content": content})
            }
        }
    }
}
