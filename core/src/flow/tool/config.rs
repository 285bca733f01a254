//! `flow-tool.toml` (§ flow-tool.toml): how a repository's Tools run.
//!
//! ```toml
//! [tools."openai.flow"]
//! command = "acme-tools openai"     # a process speaking the Tool protocol
//!
//! [tools."search.flow"]
//! mcp = "npx @acme/search-mcp"      # an MCP server, through the MCP adapter
//! ```
//!
//! Each table is keyed by a file path relative to the repository root and
//! names exactly one of `command` or `mcp`, a command line. Anything else is
//! a [`ConfigError`] naming the file, the table and the key. Parsing is pure:
//! the text comes in, with the file's name for messages.

use std::collections::BTreeMap;
use std::fmt;

/// How one file's implementations run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `command = "…"`: a process speaking the Tool protocol.
    Command(String),
    /// `mcp = "…"`: an MCP server, through the MCP adapter.
    Mcp(String),
}

impl Entry {
    /// The command line.
    pub fn command(&self) -> &str {
        match self {
            Entry::Command(c) | Entry::Mcp(c) => c,
        }
    }
}

/// A parsed `flow-tool.toml`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolConfig {
    /// Each table, by the file path it is keyed by.
    pub tools: BTreeMap<String, Entry>,
}

/// A configuration error, which refuses the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The configuration file, as the caller named it.
    pub file: String,
    /// Where in the file: `1:7` for a syntax error, `[tools."x.flow"]` for a
    /// table, empty for the whole file.
    pub place: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.place.is_empty() {
            write!(f, "{}: {}", self.file, self.reason)
        } else {
            write!(f, "{}: {}: {}", self.file, self.place, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

const ONE_OF: &str = "a table names exactly one of `command` or `mcp`";

impl ToolConfig {
    /// Parses the text of the file named `file`.
    pub fn parse(file: &str, text: &str) -> Result<ToolConfig, ConfigError> {
        let err = |place: String, reason: String| ConfigError {
            file: file.to_owned(),
            place,
            reason,
        };
        let doc: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let place = match e.span() {
                Some(span) => {
                    let (line, col) = line_col(text, span.start);
                    format!("{line}:{col}")
                }
                None => String::new(),
            };
            err(place, e.message().trim_end().to_owned())
        })?;
        if let Some(key) = doc.keys().find(|k| *k != "tools") {
            return Err(err(
                String::new(),
                format!("unknown key `{key}`: the file holds only [tools.\"FILE\"] tables"),
            ));
        }
        let mut config = ToolConfig::default();
        let Some(tools) = doc.get("tools") else {
            return Ok(config);
        };
        let Some(tools) = tools.as_table() else {
            return Err(err(
                String::new(),
                "`tools` is a table of [tools.\"FILE\"] tables".into(),
            ));
        };
        for (path, table) in tools {
            let place = format!("[tools.{}]", quoted(path));
            if !is_relative_path(path) {
                return Err(err(
                    place,
                    "a table is keyed by a file path relative to the repository root".into(),
                ));
            }
            let Some(table) = table.as_table() else {
                return Err(err(place, format!("is not a table: {ONE_OF}")));
            };
            if let Some(key) = table.keys().find(|k| *k != "command" && *k != "mcp") {
                return Err(err(place, format!("unknown key `{key}`: {ONE_OF}")));
            }
            let entry = match (table.get("command"), table.get("mcp")) {
                (Some(_), Some(_)) => {
                    return Err(err(
                        place,
                        format!("names both `command` and `mcp`: {ONE_OF}"),
                    ))
                }
                (None, None) => {
                    return Err(err(
                        place,
                        format!("names neither `command` nor `mcp`: {ONE_OF}"),
                    ))
                }
                (Some(c), None) => Entry::Command(command(c, "command", &place, &err)?),
                (None, Some(c)) => Entry::Mcp(command(c, "mcp", &place, &err)?),
            };
            config.tools.insert(path.clone(), entry);
        }
        Ok(config)
    }
}

/// A `command` or `mcp` value: a string holding a command line that splits
/// into at least one word.
fn command(
    value: &toml::Value,
    key: &str,
    place: &str,
    err: &dyn Fn(String, String) -> ConfigError,
) -> Result<String, ConfigError> {
    let Some(text) = value.as_str() else {
        return Err(err(
            place.to_owned(),
            format!("`{key}` is a string: the command line to run"),
        ));
    };
    match split_command(text) {
        Ok(words) if words.is_empty() => Err(err(place.to_owned(), format!("`{key}` is empty"))),
        Ok(_) => Ok(text.to_owned()),
        Err(why) => Err(err(place.to_owned(), format!("`{key}`: {why}"))),
    }
}

/// A relative path: not empty, not absolute, no `.` or `..` segment, no
/// empty segment.
fn is_relative_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

fn quoted(s: &str) -> String {
    let mut out = Vec::new();
    crate::json::write_string(s, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    crate::json::line_column(text.as_bytes(), offset)
}

/// Splits a command line into words as a POSIX shell does, without running
/// one: blanks separate words, `'…'` is literal, `"…"` is literal but for
/// `\"` and `\\`, and a backslash outside quotes takes the next character
/// as itself. Nothing is expanded.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a `'` is never closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a `\"` is never closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a `\"` is never closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("it ends in a lone `\\`".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        ToolConfig::parse("repo/flow-tool.toml", text)
            .expect_err(text)
            .to_string()
    }

    #[test]
    fn the_specifications_example_reads() {
        let config = ToolConfig::parse(
            "flow-tool.toml",
            "[tools.\"openai.flow\"]\ncommand = \"acme-tools openai\"     # a process\n\n\
             [tools.\"search.flow\"]\nmcp = \"npx @acme/search-mcp\"\n",
        )
        .unwrap();
        assert_eq!(
            config.tools.get("openai.flow"),
            Some(&Entry::Command("acme-tools openai".into()))
        );
        assert_eq!(
            config.tools.get("search.flow"),
            Some(&Entry::Mcp("npx @acme/search-mcp".into()))
        );
        assert_eq!(ToolConfig::parse("f", "").unwrap(), ToolConfig::default());
        let nested = ToolConfig::parse("f", "[tools.\"lib/web.flow\"]\ncommand = \"x\"").unwrap();
        assert!(nested.tools.contains_key("lib/web.flow"));
    }

    #[test]
    fn every_configuration_error_names_the_file_the_table_and_the_key() {
        assert_eq!(
            refused("[tools.\"a.flow\"]\ncommand = \"x\"\nargs = []\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: unknown key `args`: a table names exactly \
             one of `command` or `mcp`"
        );
        assert_eq!(
            refused("[tools.\"a.flow\"]\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: names neither `command` nor `mcp`: a table \
             names exactly one of `command` or `mcp`"
        );
        assert_eq!(
            refused("[tools.\"a.flow\"]\ncommand = \"x\"\nmcp = \"y\"\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: names both `command` and `mcp`: a table \
             names exactly one of `command` or `mcp`"
        );
        assert_eq!(
            refused("[tools.\"a.flow\"]\ncommand = 3\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: `command` is a string: the command line to \
             run"
        );
        assert_eq!(
            refused("[tools.\"a.flow\"]\nmcp = \"  \"\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: `mcp` is empty"
        );
        assert_eq!(
            refused("[tools.\"a.flow\"]\ncommand = \"run 'x\"\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: `command`: a `'` is never closed"
        );
        assert_eq!(
            refused("[tools]\n\"a.flow\" = \"cmd\"\n"),
            "repo/flow-tool.toml: [tools.\"a.flow\"]: is not a table: a table names exactly one \
             of `command` or `mcp`"
        );
        assert_eq!(
            refused("[tools.\"/abs/a.flow\"]\ncommand = \"x\"\n"),
            "repo/flow-tool.toml: [tools.\"/abs/a.flow\"]: a table is keyed by a file path \
             relative to the repository root"
        );
        assert_eq!(
            refused("[tools.\"../a.flow\"]\ncommand = \"x\"\n"),
            "repo/flow-tool.toml: [tools.\"../a.flow\"]: a table is keyed by a file path \
             relative to the repository root"
        );
        assert_eq!(
            refused("[tool.\"a.flow\"]\ncommand = \"x\"\n"),
            "repo/flow-tool.toml: unknown key `tool`: the file holds only [tools.\"FILE\"] tables"
        );
        assert_eq!(
            refused("tools = 1\n"),
            "repo/flow-tool.toml: `tools` is a table of [tools.\"FILE\"] tables"
        );
        let syntax = refused("[tools.\"a.flow\"]\ncommand = \n");
        assert!(
            syntax.starts_with("repo/flow-tool.toml: 2:"),
            "a syntax error names its line and column: {syntax}"
        );
    }

    #[test]
    fn command_lines_split_as_a_shell_would_without_expanding() {
        let split = |s: &str| split_command(s).unwrap();
        assert_eq!(split("acme-tools openai"), ["acme-tools", "openai"]);
        assert_eq!(split("  a\t b  "), ["a", "b"]);
        assert_eq!(split("'a b' \"c \\\" d\" e\\ f"), ["a b", "c \" d", "e f"]);
        assert_eq!(split("x '' \"\""), ["x", "", ""]);
        assert_eq!(split("$HOME ~ *"), ["$HOME", "~", "*"]);
        assert_eq!(split_command("a\\").unwrap_err(), "it ends in a lone `\\`");
        assert_eq!(split_command("\"a").unwrap_err(), "a `\"` is never closed");
    }
}
