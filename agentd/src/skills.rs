//! Skills (docs/architecture.md#skills-and-commands): `SKILL.md` files (front matter `name`,
//! `description`) in the project's `.agents/skills/*/` and `.claude/skills/*/` and the user's
//! `<config>/skills/*/`. The system prompt lists each one's name, description and path, 8 kB at
//! most for all of them; the model reads a skill's body with `read` when it uses it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The most skills read from one directory.
const MAX_SKILLS: usize = 100;
/// The most bytes the system prompt's list of skills takes.
pub(crate) const MAX_PROMPT_BYTES: usize = 8 * 1024;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    /// Its name.
    pub(crate) name: String,
    /// When to use it.
    pub(crate) description: String,
    /// Its `SKILL.md`.
    pub(crate) path: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Head {
    name: Option<String>,
    description: Option<String>,
}

/// The directories skills are read from: the project's (at `cwd` and its git root) before the
/// user's.
pub(crate) fn directories(cwd: &Path, config_dir: &Path) -> Vec<PathBuf> {
    crate::front_matter::directories(cwd, config_dir, "skills")
}

/// Every skill in `dirs` (the first of a name wins).
pub(crate) fn discover(dirs: &[PathBuf]) -> Vec<Skill> {
    let mut found: Vec<Skill> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut skills: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path().join("SKILL.md"))
            .take(MAX_SKILLS * 4)
            .collect();
        skills.sort();
        for path in skills.into_iter().take(MAX_SKILLS) {
            let Ok(doc) = crate::front_matter::read::<Head>(&path) else {
                continue;
            };
            let folder = path
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = one_line(&doc.head.name.unwrap_or(folder), 64);
            if name.is_empty() || found.iter().any(|s| s.name == name) {
                continue;
            }
            let description = doc
                .head
                .description
                .unwrap_or_else(|| doc.body.lines().next().unwrap_or_default().to_string());
            found.push(Skill {
                name,
                description: one_line(&description, 300),
                path,
            });
        }
    }
    found
}

/// `text` on one line, without control characters, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect()
}

/// The system prompt's part that lists `skills`; `None` when there are none.
pub(crate) fn prompt(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut text = "# Skills\n\nSkills are instructions for particular kinds of task. When a task \
                    matches a skill's description, read its SKILL.md with `read` before you \
                    start, and follow it (files it names are beside it).\n"
        .to_string();
    for skill in skills {
        let line = format!(
            "- {}: {} ({})\n",
            skill.name,
            skill.description,
            skill.path.display()
        );
        if text.len() + line.len() > MAX_PROMPT_BYTES {
            text.push_str("- (more skills exist; they did not fit)\n");
            break;
        }
        text.push_str(&line);
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_listed_with_their_path_and_the_list_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..200 {
            let skill = dir.path().join(format!(".claude/skills/s{i:03}"));
            std::fs::create_dir_all(&skill).unwrap();
            std::fs::write(
                skill.join("SKILL.md"),
                format!(
                    "---\nname: skill-{i}\ndescription: Does thing {i}. {}\n---\nSECRET-BODY\n",
                    "x".repeat(100)
                ),
            )
            .unwrap();
        }
        let skills = discover(&directories(dir.path(), &dir.path().join("cfg")));
        assert_eq!(skills.len(), MAX_SKILLS);
        let text = prompt(&skills).unwrap();
        assert!(text.len() <= MAX_PROMPT_BYTES + 64);
        assert!(text.contains("- skill-0: Does thing 0."));
        assert!(text.contains("SKILL.md"));
        assert!(!text.contains("SECRET-BODY"));
    }
}
