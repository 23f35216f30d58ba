//! How a tool is described to a model: the one shape every provider turns into its own
//! wire format, and the tools and MCP servers produce.

/// A tool as the model is told of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    /// The tool's name.
    pub(crate) name: std::borrow::Cow<'static, str>,
    /// What it does and when to use it.
    pub(crate) description: std::borrow::Cow<'static, str>,
    /// The JSON schema of its arguments.
    pub(crate) input_schema: serde_json::Value,
}

impl ToolSpec {
    /// The same tool described in few tokens, for a model with a small context window: the
    /// first sentence of its description, and no descriptions of its arguments.
    pub(crate) fn compact(&self) -> ToolSpec {
        let first = match self.description.split_once(". ") {
            Some((sentence, _)) => format!("{sentence}."),
            None => self.description.to_string(),
        };
        let mut schema = self.input_schema.clone();
        if let Some(properties) = schema["properties"].as_object_mut() {
            for property in properties.values_mut() {
                if let Some(property) = property.as_object_mut() {
                    property.remove("description");
                }
            }
        }
        ToolSpec {
            name: self.name.clone(),
            description: first.trim().to_string().into(),
            input_schema: schema,
        }
    }
}
