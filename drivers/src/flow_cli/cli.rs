//! The `flow` command line as `clap` reads it: every command, its flags and
//! their help. The commands' own files run what was read.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// `flow`: the Flow host boundary from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "flow",
    version,
    about = "The Flow host boundary from the command line: canonical texts, tool fingerprints, \
             Tool implementations described, checked and called, typed Rust for a listing.",
    after_help = "Every command has its own --help.",
    subcommand_required = true
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// `flow`'s commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decode one JSON text on stdin at a schema's type; print its canonical text.
    Canon(CanonArgs),
    /// Each listed tool's fingerprint, computed from its signature and checked.
    Fingerprint(FingerprintArgs),
    /// Tool implementations: describe one, check a listing's binding, call one.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Generated code for a listing's Tools.
    #[command(subcommand)]
    Toolkit(ToolkitCommand),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
}

/// `flow canon --schema FILE [--max-… N] < TEXT`.
#[derive(Debug, Args)]
#[command(
    after_help = "The schema is JSON Schema: a root without $schema is read as draft \
                        2020-12. Exit status: 0 the canonical text and a newline on stdout, 1 \
                        refused (`refused: <path>: <reason>` on stderr), 2 usage or a schema \
                        limen does not read."
)]
pub struct CanonArgs {
    /// The JSON Schema of the type the text is read at.
    #[arg(long, value_name = "FILE")]
    pub schema: PathBuf,
    /// The most bytes the text may have.
    #[arg(long = "max-bytes", value_name = "N")]
    pub max_bytes: Option<usize>,
    /// The deepest nesting.
    #[arg(long = "max-depth", value_name = "N")]
    pub max_depth: Option<usize>,
    /// The most digits of an integer.
    #[arg(long = "max-int-digits", value_name = "N")]
    pub max_int_digits: Option<usize>,
    /// The most digits of a decimal.
    #[arg(long = "max-decimal-digits", value_name = "N")]
    pub max_decimal_digits: Option<usize>,
    /// The largest decimal exponent.
    #[arg(long = "max-decimal-exponent", value_name = "N")]
    pub max_decimal_exponent: Option<u64>,
    /// The most bytes of a string.
    #[arg(long = "max-string-bytes", value_name = "N")]
    pub max_string_bytes: Option<usize>,
    /// The most items of an array or members of an object.
    #[arg(long = "max-collection-len", value_name = "N")]
    pub max_collection_len: Option<usize>,
}

/// `flow fingerprint LISTING`.
#[derive(Debug, Args)]
#[command(
    after_help = "One line per tool, `<identity> <fingerprint>`. Exit status: 0 all \
                        listed fingerprints hold, 1 some differ (named on stderr), 2 usage."
)]
pub struct FingerprintArgs {
    /// A listing in the shape of describe's result.
    #[arg(value_name = "LISTING")]
    pub listing: PathBuf,
}

/// `flow tools`'s commands.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Run an implementation's describe and print its result.
    Describe(DescribeArgs),
    /// Bind a listing's Tools and print the binding report.
    Check(CheckArgs),
    /// Call one Tool; the exit status is the outcome.
    Call(CallArgs),
}

/// `flow tools describe -- CMD…`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 described, 1 the implementation failed, 64 usage.")]
pub struct DescribeArgs {
    /// The implementation's command and its arguments (after `--`).
    #[arg(
        value_name = "CMD",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}

/// What `flow tools check` and `flow tools call` share: the listing and how
/// to bind it.
#[derive(Debug, Args)]
pub struct Binding {
    /// The listing.
    #[arg(long, value_name = "L")]
    pub listing: PathBuf,
    /// A flow-tool.toml for every repository the listing names (its
    /// commands run in the file's folder).
    #[arg(long, value_name = "FILE")]
    pub config: Vec<String>,
    /// A flow-tool.toml for one repository (over --config for it).
    #[arg(long = "config-for", value_name = "REPOSITORY=FILE", value_parser = pair)]
    pub config_for: Vec<(String, String)>,
    /// The host's override: a Tool's implementation by identity.
    #[arg(long, value_name = "IDENTITY=CMD", value_parser = pair)]
    pub bind: Vec<(String, String)>,
    /// The host's override, an MCP server.
    #[arg(long = "bind-mcp", value_name = "IDENTITY=CMD", value_parser = pair)]
    pub bind_mcp: Vec<(String, String)>,
    /// The longest reply line read, in bytes.
    #[arg(long = "max-reply", value_name = "BYTES")]
    pub max_reply: Option<usize>,
}

fn pair(v: &str) -> Result<(String, String), String> {
    v.split_once('=')
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .ok_or_else(|| format!("takes NAME=VALUE, not {v:?}"))
}

/// `flow tools check --listing L …`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 every Tool bound, 1 not, 64 usage.")]
pub struct CheckArgs {
    /// The listing and its binding.
    #[command(flatten)]
    pub binding: Binding,
}

/// `flow tools call --listing L --tool IDENTITY --args JSON …`.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints the outcome as JSON. A call with no reply within --timeout is \
                        cancelled (the protocol's `cancel`, MCP's notifications/cancelled) and \
                        its outcome is Unknown, since it may have happened; one the Tool never \
                        read is NotRun; either is named on stderr with the Tool, the method and \
                        the deadline. Exit status: 0 Ok, 1 Failed, 2 NotRun, 3 Unknown (a \
                        call past its deadline among them), 4 BadReply, 5 the run is refused (a \
                        binding, a configuration, args that do not decode), 64 usage."
)]
pub struct CallArgs {
    /// The listing and its binding.
    #[command(flatten)]
    pub binding: Binding,
    /// The Tool's identity.
    #[arg(long, value_name = "IDENTITY")]
    pub tool: String,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON")]
    pub args: String,
    /// The run's id.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// The call's id.
    #[arg(long, value_name = "ID")]
    pub call: Option<String>,
    /// What a type parameter stands for, as a JSON Schema (else json.Value).
    #[arg(long = "type", value_name = "NAME=SCHEMA", value_parser = pair)]
    pub types: Vec<(String, String)>,
    /// How long the Tool may take to reply once the call is written to it:
    /// a number and a unit, ms, s, m or h (a bare number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = duration, default_value = "60s")]
    pub timeout: Duration,
}

/// A span of time as `--timeout` takes it: `N`, `Nms`, `Ns`, `Nm` or `Nh`,
/// N a whole number above 0.
pub fn duration(v: &str) -> Result<Duration, String> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let bad = || format!("takes a whole number and a unit (500ms, 30s, 2m, 1h), not {v:?}");
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let scale = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    let ms = n.checked_mul(scale).ok_or_else(bad)?;
    if ms == 0 {
        return Err(format!("must be above 0, not {v:?}"));
    }
    Ok(Duration::from_millis(ms))
}

/// `flow toolkit`'s commands.
#[derive(Debug, Subcommand)]
pub enum ToolkitCommand {
    /// Rust types and a typed trait for a listing's Tools.
    Rust(ListingArgs),
    /// Python dataclasses, tagged unions and a typed protocol for a
    /// listing's Tools.
    Python(ListingArgs),
    /// TypeScript interfaces and a typed interface `Tools` for a listing's Tools.
    Typescript(ListingArgs),
}

/// `flow toolkit LANG LISTING [-o FILE]`.
#[derive(Debug, Args)]
#[command(after_help = "Exit status: 0 written, 1 the listing refused, 64 usage.")]
pub struct ListingArgs {
    /// The listing.
    #[arg(value_name = "LISTING")]
    pub listing: String,
    /// Write the code to FILE, not stdout.
    #[arg(short = 'o', value_name = "FILE")]
    pub out: Option<String>,
}

/// `completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
