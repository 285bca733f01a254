//! Declaration identity (§ Identity and fingerprints).
//!
//! A named type's or a Tool's identity is its repository, the repository's
//! resolved version, the file within it and its name, written
//! `repository@version/file.Name`. A declaration in a file outside any
//! repository has the file's path in place of repository and version,
//! written `path.Name`; such a path is absolute, so the two forms never read
//! alike (see `docs/decisions.md`).

use std::fmt;

/// Where a declaration lives.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// A file within a repository at a resolved version.
    Repository {
        /// The repository, e.g. `github.com/acme/tools`. Holds no `@`.
        repository: String,
        /// The repository's resolved version, e.g. `1.4.0`. Holds no `/`.
        version: String,
        /// The file within the repository, e.g. `search.flow`.
        file: String,
    },
    /// A file outside any repository, named by its absolute path.
    Path {
        /// The file's absolute path, e.g. `/home/me/run.flow`.
        path: String,
    },
}

/// The identity of a named type or a Tool declaration.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    /// Where the declaration lives.
    pub origin: Origin,
    /// The declaration's name within its file. Holds no `.`.
    pub name: String,
}

/// Why a text is not an identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityError {
    /// The text that was refused.
    pub text: String,
    /// Why it was refused.
    pub reason: &'static str,
}

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not an identity: {}", self.text, self.reason)
    }
}

impl std::error::Error for IdentityError {}

impl Identity {
    /// An identity within a repository at a version.
    pub fn in_repository(repository: &str, version: &str, file: &str, name: &str) -> Identity {
        Identity {
            origin: Origin::Repository {
                repository: repository.to_owned(),
                version: version.to_owned(),
                file: file.to_owned(),
            },
            name: name.to_owned(),
        }
    }

    /// An identity in a file outside any repository.
    pub fn at_path(path: &str, name: &str) -> Identity {
        Identity {
            origin: Origin::Path {
                path: path.to_owned(),
            },
            name: name.to_owned(),
        }
    }

    /// Reads `repository@version/file.Name` or `/abs/path.Name`.
    pub fn parse(text: &str) -> Result<Identity, IdentityError> {
        let err = |reason| IdentityError {
            text: text.to_owned(),
            reason,
        };
        let (place, name) = text
            .rsplit_once('.')
            .ok_or_else(|| err("it has no `.Name`"))?;
        if name.is_empty() || name.contains('/') {
            return Err(err("the name after the last `.` is empty or holds a `/`"));
        }
        if place.starts_with('/') {
            return Ok(Identity::at_path(place, name));
        }
        let (repository, rest) = place.split_once('@').ok_or_else(|| {
            err("it is neither `repository@version/file.Name` nor an absolute path")
        })?;
        let (version, file) = rest
            .split_once('/')
            .ok_or_else(|| err("the version is not followed by `/file`"))?;
        if repository.is_empty() || version.is_empty() || file.is_empty() {
            return Err(err("its repository, version or file is empty"));
        }
        Ok(Identity::in_repository(repository, version, file, name))
    }

    /// The identity with its version left out, as a fingerprint names types:
    /// `repository/file.Name` (a path identity is unchanged).
    pub fn without_version(&self) -> String {
        match &self.origin {
            Origin::Repository {
                repository, file, ..
            } => format!("{repository}/{file}.{}", self.name),
            Origin::Path { path } => format!("{path}.{}", self.name),
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::Repository {
                repository,
                version,
                file,
            } => write!(f, "{repository}@{version}/{file}.{}", self.name),
            Origin::Path { path } => write!(f, "{path}.{}", self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_identity_round_trips() {
        let text = "github.com/acme/tools@1.4.0/search.flow.Hit";
        let id = Identity::parse(text).unwrap();
        assert_eq!(
            id,
            Identity::in_repository("github.com/acme/tools", "1.4.0", "search.flow", "Hit")
        );
        assert_eq!(id.to_string(), text);
        assert_eq!(
            id.without_version(),
            "github.com/acme/tools/search.flow.Hit"
        );
    }

    #[test]
    fn path_identity_round_trips() {
        let id = Identity::parse("/home/me/run.flow.Fetch").unwrap();
        assert_eq!(id, Identity::at_path("/home/me/run.flow", "Fetch"));
        assert_eq!(id.to_string(), "/home/me/run.flow.Fetch");
        assert_eq!(id.without_version(), "/home/me/run.flow.Fetch");
    }

    #[test]
    fn malformed_identities_are_refused() {
        for text in [
            "",
            "NoDot",
            "repo/file.flow.X",
            "repo@1.0.X",
            "@1/f.X",
            "r@1/f.",
        ] {
            assert!(Identity::parse(text).is_err(), "{text:?} parsed");
        }
    }
}
