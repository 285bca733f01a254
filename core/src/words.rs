//! The reserved words of the languages limen writes code in: Python and
//! TypeScript, for the clients `hale api client` makes (`hale::client`) and
//! the toolkit modules `flow toolkit` makes. A name the source gives (a
//! field, a parameter, a type) that is one of these is changed by the
//! generator, never written as is.

/// Python's keywords (3.10 and later): never an identifier. The soft
/// keywords (`match`, `case`, `type`, `_`) are identifiers and are not
/// here.
pub const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// ECMAScript's reserved words, strict mode's and a module's (`await`), and
/// the two names strict mode forbids binding (`arguments`, `eval`): none may
/// name a binding in an ES module.
pub const ECMASCRIPT_RESERVED: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "arguments",
    "eval",
];
