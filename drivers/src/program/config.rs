//! `serve.toml`: what `hale serve` needs beside the program — where each
//! exposure listens, who answers each receiver instance, and the identity
//! sources the program's source params stand for.
//!
//! ```toml
//! broker = "nats://127.0.0.1:4222"  # the hubs span every node naming it
//!
//! [bind]                       # by exposure name (`as:`), over the program's
//! public = "127.0.0.1:8080"
//! admin = "/tmp/desk/admin.sock"
//!
//! [handlers.orders]            # by receiver instance (a main-locus param)
//! command = ["./orders-tool", "--verbose"]   # a Flow Tool process
//! tools = { place = "place_order" }          # a member answered by another name
//! timeout_ms = 60000                         # the reply deadline
//!
//! [handlers.ledger]
//! mcp = ["node", "ledger-server.js"]          # an MCP server on stdio
//!
//! [sources.bearer]             # by the source param the exposures name
//! tokens = { "t-alice" = "alice", "t-bob" = { principal = "bob", expires_ms = 1767225600000 } }
//! refused = "no such token"
//!
//! [sources.public_roles]
//! grants = { trader = ["alice"] }
//! # grants_file = "grants.toml" (the same table in a file of its own)
//! ```
//!
//! Every path (a command's program with a `/` in it, a working directory,
//! a file) is relative to the folder holding the configuration. What is
//! not understood is refused by name: a misspelt key is an error, never a
//! silently ignored line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// Who answers one receiver instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerConfig {
    /// `command = [...]`: a Flow Tool process.
    Command(Vec<String>),
    /// `mcp = [...]`: an MCP server on stdio.
    Mcp(Vec<String>),
    /// `http = "http://host:port/prefix"`: an upstream HTTP service.
    Http(String),
}

/// Where the upstream is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// `host:port`.
    pub authority: String,
    /// The path every member's is under (`/desk`, or empty).
    pub prefix: String,
}

impl Upstream {
    /// Reads `http://host:port/prefix`.
    pub fn parse(url: &str) -> Result<Upstream, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("`{url}` is not an http:// URL (an upstream is plain HTTP/1.1)")
        })?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains(['@', '?', '#']) {
            return Err(format!("`{url}` names no host:port"));
        }
        if path.contains(['?', '#']) {
            return Err(format!("`{url}`: a prefix is a path, without query"));
        }
        Ok(Upstream {
            authority: authority.to_owned(),
            prefix: path.trim_end_matches('/').to_owned(),
        })
    }
}

/// One `[handlers.NAME]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handler {
    /// The process.
    pub run: HandlerConfig,
    /// Its working directory (the configuration's folder by default).
    pub dir: Option<PathBuf>,
    /// Member functions answered by Tools of other names.
    pub tools: BTreeMap<String, String>,
    /// The reply deadline, in milliseconds.
    pub timeout_ms: Option<u64>,
}

/// A bearer token's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The principal's name.
    pub principal: String,
    /// When the credential expires, in milliseconds since the Unix epoch.
    pub expires_ms: Option<u64>,
}

/// One `[sources.NAME]` table: a bearer source, a role source, or both
/// read from files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceConfig {
    /// Tokens written in the configuration.
    pub tokens: Option<BTreeMap<String, Token>>,
    /// A file of tokens (the same table), read at boot and on reload.
    pub tokens_file: Option<PathBuf>,
    /// What a refused token is answered with.
    pub refused: Option<String>,
    /// Grants written in the configuration: role → holders.
    pub grants: Option<BTreeMap<String, Vec<String>>>,
    /// A file of grants (the same table), read at boot and on reload.
    pub grants_file: Option<PathBuf>,
}

impl SourceConfig {
    /// Whether it can stand for a bearer source.
    pub fn is_bearer(&self) -> bool {
        self.tokens.is_some() || self.tokens_file.is_some()
    }

    /// Whether it can stand for a role source.
    pub fn is_roles(&self) -> bool {
        self.grants.is_some() || self.grants_file.is_some()
    }
}

/// `serve.toml`, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServeConfig {
    /// Where the configuration was read from (its folder anchors paths).
    pub path: Option<PathBuf>,
    /// Addresses by exposure name.
    pub bind: BTreeMap<String, String>,
    /// Handlers by receiver instance.
    pub handlers: BTreeMap<String, Handler>,
    /// Identity sources by source param.
    pub sources: BTreeMap<String, SourceConfig>,
    /// `broker = "nats://host:port"`: the NATS server through which the
    /// program's hubs span its nodes ([`super::broker`]).
    pub broker: Option<String>,
}

/// Why a configuration was refused: where, and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(at: &str, message: impl std::fmt::Display) -> Result<T, ConfigError> {
    Err(ConfigError(format!("{at}: {message}")))
}

fn only(table: &Table, at: &str, keys: &[&str]) -> Result<(), ConfigError> {
    match table.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => err(
            &format!("{at}.{k}"),
            format!("not a key of {at} (its keys: {})", keys.join(", ")),
        ),
        None => Ok(()),
    }
}

fn table<'a>(v: &'a Value, at: &str) -> Result<&'a Table, ConfigError> {
    v.as_table()
        .ok_or_else(|| ConfigError(format!("{at}: a table, not {}", v.type_str())))
}

fn text(v: &Value, at: &str) -> Result<String, ConfigError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| ConfigError(format!("{at}: a string, not {}", v.type_str())))
}

fn words(v: &Value, at: &str) -> Result<Vec<String>, ConfigError> {
    let list = v
        .as_array()
        .ok_or_else(|| ConfigError(format!("{at}: a list of strings, not {}", v.type_str())))?;
    let words = list
        .iter()
        .enumerate()
        .map(|(i, w)| text(w, &format!("{at}[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    if words.is_empty() {
        return err(at, "the command is empty");
    }
    Ok(words)
}

impl ServeConfig {
    /// Reads the file at `path`.
    pub fn read(path: &Path) -> Result<ServeConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("{}: cannot read it: {e}", path.display())))?;
        let mut config = ServeConfig::parse(&text)
            .map_err(|ConfigError(m)| ConfigError(format!("{}: {m}", path.display())))?;
        config.path = Some(path.to_owned());
        Ok(config)
    }

    /// Reads a configuration's text.
    pub fn parse(source: &str) -> Result<ServeConfig, ConfigError> {
        let doc: Table = source
            .parse()
            .map_err(|e: toml::de::Error| ConfigError(e.to_string().trim().to_owned()))?;
        only(
            &doc,
            "serve.toml",
            &["broker", "bind", "handlers", "sources"],
        )?;
        let mut config = ServeConfig::default();
        if let Some(v) = doc.get("broker") {
            let url = text(v, "broker")?;
            parse_broker_url(&url).map_err(|e| ConfigError(format!("broker: {e}")))?;
            config.broker = Some(url);
        }
        if let Some(bind) = doc.get("bind") {
            for (name, v) in table(bind, "bind")? {
                config
                    .bind
                    .insert(name.clone(), text(v, &format!("bind.{name}"))?);
            }
        }
        if let Some(handlers) = doc.get("handlers") {
            for (name, v) in table(handlers, "handlers")? {
                let at = format!("handlers.{name}");
                config.handlers.insert(name.clone(), handler(v, &at)?);
            }
        }
        if let Some(sources) = doc.get("sources") {
            for (name, v) in table(sources, "sources")? {
                let at = format!("sources.{name}");
                config.sources.insert(name.clone(), source_config(v, &at)?);
            }
        }
        Ok(config)
    }

    /// The folder paths are relative to.
    pub fn base(&self) -> PathBuf {
        self.path
            .as_deref()
            .and_then(Path::parent)
            .map(Path::to_owned)
            .unwrap_or_default()
    }

    /// `path` read from the configuration's folder.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base().join(path)
        }
    }
}

fn handler(v: &Value, at: &str) -> Result<Handler, ConfigError> {
    let t = table(v, at)?;
    only(
        t,
        at,
        &["command", "mcp", "http", "dir", "tools", "timeout_ms"],
    )?;
    let given: Vec<&str> = ["command", "mcp", "http"]
        .into_iter()
        .filter(|k| t.contains_key(*k))
        .collect();
    let run = match given.as_slice() {
        ["command"] => HandlerConfig::Command(words(&t["command"], &format!("{at}.command"))?),
        ["mcp"] => HandlerConfig::Mcp(words(&t["mcp"], &format!("{at}.mcp"))?),
        ["http"] => {
            let url = text(&t["http"], &format!("{at}.http"))?;
            Upstream::parse(&url)
                .map_err(|e| ConfigError(format!("{at}.http: {e}")))?;
            HandlerConfig::Http(url)
        }
        [] => {
            return err(
                at,
                "no handler: give `command = [...]` (a Flow Tool process), `mcp = [...]` (an MCP server) or `http = \"http://…\"` (an upstream service)",
            )
        }
        more => {
            return err(
                at,
                format!(
                    "both `{}` and `{}`: a receiver has one handler",
                    more[0], more[1]
                ),
            )
        }
    };
    let mut tools = BTreeMap::new();
    if let Some(map) = t.get("tools") {
        for (function, name) in table(map, &format!("{at}.tools"))? {
            tools.insert(
                function.clone(),
                text(name, &format!("{at}.tools.{function}"))?,
            );
        }
    }
    let timeout_ms = match t.get("timeout_ms") {
        None => None,
        Some(Value::Integer(n)) if *n > 0 => Some(*n as u64),
        Some(other) => {
            return err(
                &format!("{at}.timeout_ms"),
                format!("a positive integer, not {other}"),
            )
        }
    };
    Ok(Handler {
        run,
        dir: t
            .get("dir")
            .map(|d| text(d, &format!("{at}.dir")).map(PathBuf::from))
            .transpose()?,
        tools,
        timeout_ms,
    })
}

fn source_config(v: &Value, at: &str) -> Result<SourceConfig, ConfigError> {
    let t = table(v, at)?;
    only(
        t,
        at,
        &["tokens", "tokens_file", "refused", "grants", "grants_file"],
    )?;
    let file = |key: &str| {
        t.get(key)
            .map(|f| text(f, &format!("{at}.{key}")).map(PathBuf::from))
            .transpose()
    };
    let config = SourceConfig {
        tokens: t
            .get("tokens")
            .map(|v| tokens(v, &format!("{at}.tokens")))
            .transpose()?,
        tokens_file: file("tokens_file")?,
        refused: t
            .get("refused")
            .map(|v| text(v, &format!("{at}.refused")))
            .transpose()?,
        grants: t
            .get("grants")
            .map(|v| grants(v, &format!("{at}.grants")))
            .transpose()?,
        grants_file: file("grants_file")?,
    };
    if config.tokens.is_some() && config.tokens_file.is_some() {
        return err(at, "both `tokens` and `tokens_file`: give one");
    }
    if config.grants.is_some() && config.grants_file.is_some() {
        return err(at, "both `grants` and `grants_file`: give one");
    }
    if !config.is_bearer() && !config.is_roles() {
        return err(
            at,
            "no source: give `tokens`/`tokens_file` (a bearer source) or `grants`/`grants_file` (a role source)",
        );
    }
    Ok(config)
}

/// A table of tokens: `"t-alice" = "alice"`, or `{ principal, expires_ms }`.
pub fn tokens(v: &Value, at: &str) -> Result<BTreeMap<String, Token>, ConfigError> {
    let mut out = BTreeMap::new();
    for (token, entry) in table(v, at)? {
        // A credential is never printed: the place names it by position.
        let here = format!("{at}[{}]", out.len());
        let token_entry = match entry {
            Value::String(name) => Token {
                principal: name.clone(),
                expires_ms: None,
            },
            Value::Table(t) => {
                only(t, &here, &["principal", "expires_ms"])?;
                let principal = t
                    .get("principal")
                    .map(|p| text(p, &format!("{here}.principal")))
                    .transpose()?
                    .ok_or_else(|| ConfigError(format!("{here}: no `principal`")))?;
                let expires_ms = match t.get("expires_ms") {
                    None => None,
                    Some(Value::Integer(n)) if *n >= 0 => Some(*n as u64),
                    Some(other) => {
                        return err(
                            &format!("{here}.expires_ms"),
                            format!(
                                "milliseconds since the Unix epoch, not {}",
                                other.type_str()
                            ),
                        )
                    }
                };
                Token {
                    principal,
                    expires_ms,
                }
            }
            other => {
                return err(
                    &here,
                    format!(
                        "a principal's name or {{ principal, expires_ms }}, not {}",
                        other.type_str()
                    ),
                )
            }
        };
        out.insert(token.clone(), token_entry);
    }
    Ok(out)
}

/// A table of grants: `trader = ["alice", "uid:1000"]`.
pub fn grants(v: &Value, at: &str) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
    let mut out = BTreeMap::new();
    for (role, holders) in table(v, at)? {
        let here = format!("{at}.{role}");
        let list = match holders {
            Value::String(one) => vec![one.clone()],
            Value::Array(list) => list
                .iter()
                .enumerate()
                .map(|(i, h)| text(h, &format!("{here}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?,
            other => {
                return err(
                    &here,
                    format!("a holder or a list of holders, not {}", other.type_str()),
                )
            }
        };
        out.insert(role.clone(), list);
    }
    Ok(out)
}

/// Reads a tokens file: the `tokens` table's form, at the top level.
pub fn read_tokens(path: &Path) -> Result<BTreeMap<String, Token>, ConfigError> {
    let doc = read_table(path)?;
    tokens(&Value::Table(doc), &path.display().to_string())
}

/// Reads a grants file: the `grants` table's form, at the top level.
pub fn read_grants(path: &Path) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
    let doc = read_table(path)?;
    grants(&Value::Table(doc), &path.display().to_string())
}

fn read_table(path: &Path) -> Result<Table, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("{}: cannot read it: {e}", path.display())))?;
    text.parse().map_err(|e: toml::de::Error| {
        // The parser's message may quote the line, and a tokens file's
        // lines are credentials: say where only.
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start].matches('\n').count() + 1;
                format!(" at line {line}")
            })
            .unwrap_or_default();
        ConfigError(format!("{}: not TOML{at}", path.display()))
    })
}

/// Reads a broker's `nats://host:port` (serve.toml's `broker`, `--broker`):
/// the host and port.
pub fn parse_broker_url(url: &str) -> Result<(String, u16), String> {
    let form = || format!("`{url}` is not nats://host:port (nats://127.0.0.1:4222)");
    let rest = url.strip_prefix("nats://").ok_or_else(form)?;
    let (host, port) = rest.rsplit_once(':').ok_or_else(form)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || host.contains(['/', '@', '?', '#']) {
        return Err(form());
    }
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(form)?;
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_configuration_reads() {
        let c = ServeConfig::parse(
            r#"
            [bind]
            public = "127.0.0.1:0"
            [handlers.orders]
            command = ["./tool", "--instance", "orders"]
            tools = { place = "place_order" }
            timeout_ms = 500
            [handlers.ledger]
            mcp = ["node", "ledger.js"]
            [sources.bearer]
            tokens = { "t-alice" = "alice", "t-bob" = { principal = "bob", expires_ms = 5 } }
            [sources.roles]
            grants = { trader = ["alice"], operator = "uid:1000" }
            "#,
        )
        .unwrap();
        assert_eq!(c.bind["public"], "127.0.0.1:0");
        assert_eq!(
            c.handlers["orders"].run,
            HandlerConfig::Command(vec!["./tool".into(), "--instance".into(), "orders".into()])
        );
        assert_eq!(c.handlers["orders"].tools["place"], "place_order");
        assert_eq!(c.handlers["orders"].timeout_ms, Some(500));
        assert!(matches!(c.handlers["ledger"].run, HandlerConfig::Mcp(_)));
        let bearer = &c.sources["bearer"];
        assert!(bearer.is_bearer() && !bearer.is_roles());
        assert_eq!(bearer.tokens.as_ref().unwrap()["t-bob"].expires_ms, Some(5));
        assert_eq!(
            c.sources["roles"].grants.as_ref().unwrap()["operator"],
            ["uid:1000"]
        );
    }

    #[test]
    fn what_is_not_understood_is_refused_by_name() {
        let refused = |text: &str| ServeConfig::parse(text).unwrap_err().0;
        assert!(refused("[handler.orders]\ncommand = [\"x\"]")
            .starts_with("serve.toml.handler: not a key"));
        let e = refused("[handlers.orders]\ncommand = [\"x\"]\nmcp = [\"y\"]");
        assert_eq!(
            e,
            "handlers.orders: both `command` and `mcp`: a receiver has one handler"
        );
        let e = refused("[handlers.orders]\nhttp = \"https://h:1/x\"");
        assert!(
            e.starts_with("handlers.orders.http: `https://h:1/x` is not an http:// URL"),
            "{e}"
        );
        let e = refused("broker = \"127.0.0.1:4222\"");
        assert!(
            e.starts_with("broker: `127.0.0.1:4222` is not nats://host:port"),
            "{e}"
        );
        assert_eq!(
            ServeConfig::parse("broker = \"nats://127.0.0.1:4222\"")
                .unwrap()
                .broker
                .as_deref(),
            Some("nats://127.0.0.1:4222")
        );
        let e = refused("[handlers.orders]\ncomand = [\"x\"]");
        assert!(e.starts_with("handlers.orders.comand: not a key"), "{e}");
        let e = refused("[handlers.orders]\ncommand = []");
        assert_eq!(e, "handlers.orders.command: the command is empty");
        let e = refused("[sources.bearer]\ntokens = { \"t-secret\" = 5 }");
        assert!(e.starts_with("sources.bearer.tokens[0]:"), "{e}");
        assert!(
            !e.contains("t-secret"),
            "a credential is never printed: {e}"
        );
    }

    #[test]
    fn a_tokens_file_that_is_not_toml_names_the_line_not_the_credential() {
        let dir = std::env::temp_dir().join(format!("hale-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens.toml");
        std::fs::write(&file, "\"t-alice\" = \"alice\"\nt-secret-token oops\n").unwrap();
        let e = read_tokens(&file).unwrap_err().0;
        assert!(e.ends_with("not TOML at line 2"), "{e}");
        assert!(!e.contains("t-secret"), "{e}");
        let e = read_tokens(&dir.join("absent.toml")).unwrap_err().0;
        assert!(e.contains("cannot read it"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
