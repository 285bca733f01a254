//! The flags of a `hale` command: `--flag value`, `--flag=value`, bare
//! switches, and positional arguments, each flag at most once.

use std::collections::BTreeMap;

/// A command's arguments, read against the flags it knows.
#[derive(Debug, Default)]
pub struct Args {
    values: BTreeMap<String, String>,
    switches: Vec<String>,
    /// The positional arguments, in order.
    pub positional: Vec<String>,
}

impl Args {
    /// Reads `args`: `valued` are the flags that take a value, `switches`
    /// those that take none. An unknown flag, a flag given twice and a
    /// valued flag without its value are usage errors.
    pub fn parse(args: &[String], valued: &[&str], switches: &[&str]) -> Result<Args, String> {
        let mut out = Args::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let Some(flag) = a.strip_prefix("--") else {
                out.positional.push(a.clone());
                continue;
            };
            if flag.is_empty() {
                out.positional.extend(it.by_ref().cloned());
                break;
            }
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            if out.values.contains_key(name) || out.switches.iter().any(|s| s == name) {
                return Err(format!("--{name} is given twice"));
            }
            if valued.contains(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => it
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("--{name} takes a value"))?,
                };
                out.values.insert(name.to_string(), value);
            } else if switches.contains(&name) {
                if inline.is_some() {
                    return Err(format!("--{name} takes no value"));
                }
                out.switches.push(name.to_string());
            } else {
                return Err(format!("unknown flag --{name}"));
            }
        }
        Ok(out)
    }

    /// The value of `--name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether the switch `--name` is given.
    pub fn has(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// The one positional argument, the file.
    pub fn file(&self) -> Result<&str, String> {
        match self.positional.as_slice() {
            [one] => Ok(one),
            [] => Err("no FILE given".to_string()),
            more => Err(format!("one FILE, not {}: {}", more.len(), more.join(" "))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_values_and_positionals() {
        let a = Args::parse(
            &strings(&["--api", "--surface=Public", "--holds", "a,b", "x.hl"]),
            &["surface", "holds"],
            &["api"],
        )
        .unwrap();
        assert!(a.has("api"));
        assert_eq!(a.value("surface"), Some("Public"));
        assert_eq!(a.value("holds"), Some("a,b"));
        assert_eq!(a.file(), Ok("x.hl"));
    }

    #[test]
    fn usage_errors_are_named() {
        let parse = |v: &[&str]| Args::parse(&strings(v), &["surface"], &["api"]).unwrap_err();
        assert_eq!(parse(&["--nope"]), "unknown flag --nope");
        assert_eq!(parse(&["--api", "--api"]), "--api is given twice");
        assert_eq!(parse(&["--surface"]), "--surface takes a value");
        assert_eq!(parse(&["--api=1"]), "--api takes no value");
    }
}
