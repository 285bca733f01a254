//! The strict JSON tokenizer every parser in limen shares,
//! [`write_string`], the string escaper every JSON writer shares, and
//! [`jsonrpc`], JSON-RPC 2.0 messages one to a line (the Flow Tool protocol,
//! MCP).
//!
//! [`Tokenizer`] is a pull tokenizer over a complete `&[u8]`: each call to
//! [`Tokenizer::next_event`] yields one [`Event`] (begin or end of an object
//! or array, a key, a string, a number as its raw [`Number`] token, a bool,
//! null), or an [`Error`] naming the exact byte, line and column at fault.
//!
//! It holds the text to RFC 8259 and to the stricter rules every limen
//! parser wants: UTF-8 only, checked everywhere (inside strings too), no
//! byte order mark, no lone surrogate escapes, no unescaped control
//! characters, nothing after the one value, and nesting bounded by a depth
//! limit on an explicit stack (so a million `[` is a clean refusal, not a
//! stack overflow). Strings without escapes are borrowed from the input.
//!
//! What a number means, and whether an object may repeat a key, is the
//! consumer's to decide: numbers come as raw tokens with their parts
//! ([`Number::scientific`]), and [`DuplicateKeys`] helps refuse repeats.
//!
//! ```
//! use limen_core::json::{Event, Tokenizer};
//!
//! let text = br#"{"id": 7, "params": [1.50, "x"]}"#;
//! let mut t = Tokenizer::new(text);
//! assert_eq!(t.next_event()?, Some(Event::BeginObject));
//! assert_eq!(t.next_event()?, Some(Event::Key("id".into())));
//! match t.next_event()? {
//!     Some(Event::Number(n)) => assert!(n.is_plain_integer() && n.raw() == "7"),
//!     other => panic!("{other:?}"),
//! }
//! // Keep a member's value as raw bytes without building it.
//! assert_eq!(t.next_event()?, Some(Event::Key("params".into())));
//! let first = t.next_event()?.unwrap();
//! let start = t.event_offset();
//! let end = t.skip_value(&first)?;
//! assert_eq!(&text[start..end], br#"[1.50, "x"]"#);
//! assert_eq!(t.next_event()?, Some(Event::EndObject));
//! t.finish()?;
//!
//! // Refusals carry the byte offset, line and column.
//! let mut t = Tokenizer::new(b"[1,\n 2,]");
//! let e = loop {
//!     match t.next_event() {
//!         Ok(Some(_)) => continue,
//!         Ok(None) => unreachable!("the text is not JSON"),
//!         Err(e) => break e,
//!     }
//! };
//! assert_eq!((e.offset, e.line, e.column), (7, 2, 4));
//! assert_eq!(e.to_string(), "2:4: expected a value, found `]`");
//! # Ok::<(), limen_core::json::Error>(())
//! ```

mod error;
mod escape;
pub mod jsonrpc;
mod number;
pub(crate) mod plain;
mod string;
mod swar;
mod tokenizer;

use std::borrow::Cow;
use std::collections::BTreeSet;

pub use error::{line_column, Error, ErrorKind};
pub use escape::write_string;
pub use number::{Number, Scientific};
pub(crate) use string::scan_plain;
pub use tokenizer::{Event, Tokenizer, DEFAULT_MAX_DEPTH};

/// The keys seen so far in one object, to refuse a key given twice.
///
/// The first few are kept in place and compared one by one (most objects
/// have a handful of members, and one made per object must not allocate
/// for them); past those, ordered (not hashed), so it needs no entropy and
/// costs `O(log n)` per key however many keys an object holds.
#[derive(Clone, Debug, Default)]
pub struct DuplicateKeys<'a> {
    /// The first keys, searched in place: most objects have a few, and a
    /// set for them would cost an allocation an object.
    few: [Option<Cow<'a, str>>; FEW_KEYS],
    /// The keys past the first few.
    seen: BTreeSet<Cow<'a, str>>,
}

const FEW_KEYS: usize = 8;

impl<'a> DuplicateKeys<'a> {
    /// No keys seen.
    pub fn new() -> DuplicateKeys<'a> {
        DuplicateKeys::default()
    }

    /// Records `key`; `false` if it was already seen in this object.
    // A `&Cow` rather than `&str`: a borrowed key is kept borrowed, not copied.
    #[allow(clippy::ptr_arg)]
    pub fn insert(&mut self, key: &Cow<'a, str>) -> bool {
        for slot in &mut self.few {
            match slot {
                Some(k) if k.as_ref() == key.as_ref() => return false,
                Some(_) => {}
                None => {
                    *slot = Some(key.clone());
                    return true;
                }
            }
        }
        if self.seen.contains(key.as_ref()) {
            return false;
        }
        self.seen.insert(key.clone());
        true
    }
}

#[cfg(test)]
mod tests;
