//! The pull tokenizer.
//!
//! One pass over a complete text, one [`Event`] per call, no recursion: the
//! open arrays and objects are an explicit stack, so nesting is bounded by a
//! limit checked on every `[` and `{`, never by the thread's stack. Strings
//! without escapes are borrowed from the input; only a string holding an
//! escape is copied out.

use std::borrow::Cow;

use super::error::{Error, ErrorKind};
use super::number::Number;
use super::swar::LANES;

/// One step of a JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// `{`.
    BeginObject,
    /// `}`.
    EndObject,
    /// `[`.
    BeginArray,
    /// `]`.
    EndArray,
    /// An object member's key (its `:` is consumed with it).
    Key(Cow<'a, str>),
    /// A string value.
    String(Cow<'a, str>),
    /// A number value, as its raw token.
    Number(Number<'a>),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Array,
    Object,
}

/// The open arrays and objects, innermost last: one bit each (set for an
/// object) in a word while they fit, the words further out spilled to a
/// list. Most texts nest a few levels, and a tokenizer is made per message
/// and per value: it must not allocate for them.
#[derive(Clone, Debug, Default)]
struct Nesting {
    /// The innermost word's bits (up to 64 containers).
    bits: u64,
    /// How many containers are open.
    depth: usize,
    /// The full words further out, outermost first.
    outer: Vec<u64>,
}

impl Nesting {
    #[inline]
    fn len(&self) -> usize {
        self.depth
    }

    #[inline]
    fn last(&self) -> Option<Container> {
        let depth = self.depth.checked_sub(1)?;
        Some(Self::of(self.bits >> (depth % 64)))
    }

    #[inline]
    fn push(&mut self, container: Container) {
        if self.depth > 0 && self.depth % 64 == 0 {
            self.outer.push(self.bits);
            self.bits = 0;
        }
        let bit = 1u64 << (self.depth % 64);
        match container {
            Container::Object => self.bits |= bit,
            Container::Array => self.bits &= !bit,
        }
        self.depth += 1;
    }

    #[inline]
    fn pop(&mut self) -> Option<Container> {
        self.depth = self.depth.checked_sub(1)?;
        let container = Self::of(self.bits >> (self.depth % 64));
        if self.depth > 0 && self.depth % 64 == 0 {
            self.bits = self.outer.pop().unwrap_or(0);
        }
        Some(container)
    }

    #[inline]
    fn of(bits: u64) -> Container {
        if bits & 1 == 1 {
            Container::Object
        } else {
            Container::Array
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A value must come next: the start, after `:`, after `,` in an array.
    Value,
    /// Just after `[`: a value or `]`.
    ArrayStart,
    /// Just after `{`: a key or `}`.
    ObjectStart,
    /// After a value: `,` or the container's close, or the end.
    AfterValue,
    /// The one top-level value is complete and only whitespace followed.
    Done,
}

/// The deepest nesting a [`Tokenizer::new`] allows, as serde_json does.
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// A strict RFC 8259 pull tokenizer over a complete text.
///
/// Refuses invalid UTF-8 anywhere, a byte order mark, unescaped control
/// characters, lone surrogate escapes, anything after the one top-level
/// value, and nesting past its depth limit. Duplicate keys are the
/// consumer's to refuse (see [`DuplicateKeys`](super::DuplicateKeys)).
#[derive(Clone, Debug)]
pub struct Tokenizer<'a> {
    pub(super) input: &'a [u8],
    /// The input's longest valid UTF-8 prefix, validated once up front so
    /// strings are sliced from it rather than validated one by one.
    pub(super) text: &'a str,
    pub(super) pos: usize,
    event_start: usize,
    stack: Nesting,
    state: State,
    max_depth: usize,
    failed: Option<Error>,
}

impl<'a> Tokenizer<'a> {
    /// A tokenizer over `input` nesting at most [`DEFAULT_MAX_DEPTH`] deep.
    pub fn new(input: &'a [u8]) -> Tokenizer<'a> {
        Tokenizer::with_max_depth(input, DEFAULT_MAX_DEPTH)
    }

    /// A tokenizer over `input` nesting arrays and objects at most
    /// `max_depth` deep (0 admits only scalars).
    pub fn with_max_depth(input: &'a [u8], max_depth: usize) -> Tokenizer<'a> {
        let text = match std::str::from_utf8(input) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&input[..e.valid_up_to()]).unwrap_or(""),
        };
        Tokenizer {
            input,
            text,
            pos: 0,
            event_start: 0,
            stack: Nesting::default(),
            state: State::Value,
            max_depth,
            failed: None,
        }
    }

    /// A tokenizer over `input` as it stands once it has read `input[..pos]`,
    /// a text that opens `objects` objects and nothing else, the last one
    /// just opened (a key or `}` comes next). For a reader that has matched
    /// a known opening byte for byte: the rest is read as strictly as ever.
    pub(crate) fn inside_objects(input: &'a [u8], pos: usize, objects: usize) -> Tokenizer<'a> {
        let mut t = Tokenizer::new(input);
        for _ in 0..objects {
            t.stack.push(Container::Object);
        }
        t.pos = pos;
        t.event_start = pos;
        t.state = if objects == 0 {
            State::Value
        } else {
            State::ObjectStart
        };
        t
    }

    /// The text being read.
    pub fn input(&self) -> &'a [u8] {
        self.input
    }

    /// The byte offset where the last event's token starts.
    pub fn event_offset(&self) -> usize {
        self.event_start
    }

    /// The byte offset just past the last event's token.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// How many arrays and objects are open.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// An error of `kind` at byte `offset`, with its line and column.
    pub fn error_at(&self, offset: usize, kind: ErrorKind) -> Error {
        Error::at(self.input, offset, kind)
    }

    pub(super) fn fail<T>(&mut self, offset: usize, kind: ErrorKind) -> Result<T, Error> {
        let e = self.error_at(offset, kind);
        self.failed = Some(e.clone());
        Err(e)
    }

    /// The next event, or `None` once the one value is complete and only
    /// whitespace followed it. After an error, every call returns it again.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next_event(&mut self) -> Result<Option<Event<'a>>, Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.skip_whitespace();
        match self.state {
            State::Value => {
                if self.pos == 0 && self.input.starts_with(b"\xef\xbb\xbf") {
                    return self.fail(0, ErrorKind::ByteOrderMark);
                }
                self.value().map(Some)
            }
            State::ArrayStart => {
                if self.peek() == Some(b']') {
                    self.close()
                } else {
                    self.value().map(Some)
                }
            }
            State::ObjectStart => {
                if self.peek() == Some(b'}') {
                    self.close()
                } else {
                    self.key().map(Some)
                }
            }
            State::AfterValue => self.after_value(),
            State::Done => Ok(None),
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        const SPACES: u64 = LANES * b' ' as u64;
        let bytes = self.input;
        let mut i = self.pos;
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(i) {
            i += 1;
            // Indentation: runs of spaces, eight at a time.
            while let Some(chunk) = bytes.get(i..i + 8) {
                let word = u64::from_le_bytes([
                    chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
                ]);
                if word != SPACES {
                    break;
                }
                i += 8;
            }
        }
        self.pos = i;
    }

    /// The character at `offset`, for an error (U+FFFD if not UTF-8).
    pub(super) fn char_at(&self, offset: usize) -> char {
        let rest = &self.input[offset..self.input.len().min(offset + 4)];
        match std::str::from_utf8(rest) {
            Ok(s) => s.chars().next().unwrap_or('\u{fffd}'),
            Err(e) if e.valid_up_to() > 0 => std::str::from_utf8(&rest[..e.valid_up_to()])
                .ok()
                .and_then(|s| s.chars().next())
                .unwrap_or('\u{fffd}'),
            Err(_) => '\u{fffd}',
        }
    }

    /// Refuses the byte at `pos` as not what `expected` names.
    fn unexpected<T>(&mut self, expected: &'static str) -> Result<T, Error> {
        let pos = self.pos;
        match self.peek() {
            None => self.fail(pos, ErrorKind::UnexpectedEnd),
            Some(b) if b >= 0x80 && self.char_at(pos) == '\u{fffd}' => {
                self.fail(pos, ErrorKind::InvalidUtf8)
            }
            Some(_) => {
                let found = self.char_at(pos);
                self.fail(pos, ErrorKind::Unexpected { found, expected })
            }
        }
    }

    fn after_value(&mut self) -> Result<Option<Event<'a>>, Error> {
        match self.stack.last() {
            None => {
                if self.pos == self.input.len() {
                    self.state = State::Done;
                    Ok(None)
                } else {
                    let pos = self.pos;
                    self.fail(pos, ErrorKind::TrailingContent)
                }
            }
            Some(Container::Array) => match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_whitespace();
                    self.value().map(Some)
                }
                Some(b']') => self.close(),
                _ => self.unexpected("`,` or `]`"),
            },
            Some(Container::Object) => match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_whitespace();
                    self.key().map(Some)
                }
                Some(b'}') => self.close(),
                _ => self.unexpected("`,` or `}`"),
            },
        }
    }

    /// Consumes the `]` or `}` at `pos` closing the innermost container.
    fn close(&mut self) -> Result<Option<Event<'a>>, Error> {
        self.event_start = self.pos;
        self.pos += 1;
        let event = match self.stack.pop() {
            Some(Container::Array) => Event::EndArray,
            _ => Event::EndObject,
        };
        self.state = State::AfterValue;
        Ok(Some(event))
    }

    fn open(&mut self, container: Container) -> Result<Event<'a>, Error> {
        if self.stack.len() >= self.max_depth {
            let (pos, limit) = (self.pos, self.max_depth);
            return self.fail(pos, ErrorKind::TooDeep { limit });
        }
        self.stack.push(container);
        self.pos += 1;
        Ok(match container {
            Container::Array => {
                self.state = State::ArrayStart;
                Event::BeginArray
            }
            Container::Object => {
                self.state = State::ObjectStart;
                Event::BeginObject
            }
        })
    }

    #[inline]
    fn value(&mut self) -> Result<Event<'a>, Error> {
        self.event_start = self.pos;
        let Some(b) = self.peek() else {
            let pos = self.pos;
            return self.fail(pos, ErrorKind::UnexpectedEnd);
        };
        let event = match b {
            b'"' => Event::String(self.string()?),
            b'-' | b'0'..=b'9' => Event::Number(self.number()?),
            b'{' => return self.open(Container::Object),
            b'[' => return self.open(Container::Array),
            b't' => self.literal(b"true", Event::Bool(true))?,
            b'f' => self.literal(b"false", Event::Bool(false))?,
            b'n' => self.literal(b"null", Event::Null)?,
            _ => return self.unexpected("a value"),
        };
        self.state = State::AfterValue;
        Ok(event)
    }

    fn literal(&mut self, word: &'static [u8], event: Event<'a>) -> Result<Event<'a>, Error> {
        if self.input[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(event)
        } else {
            // Point at the first byte that differs.
            let matched = self.input[self.pos..]
                .iter()
                .zip(word)
                .take_while(|(a, b)| a == b)
                .count();
            self.pos += matched;
            self.unexpected(match word {
                b"true" => "`true`",
                b"false" => "`false`",
                _ => "`null`",
            })
        }
    }

    fn key(&mut self) -> Result<Event<'a>, Error> {
        self.event_start = self.pos;
        if self.peek() != Some(b'"') {
            return self.unexpected("a string key");
        }
        let key = self.string()?;
        self.skip_whitespace();
        if self.peek() != Some(b':') {
            return self.unexpected("`:`");
        }
        self.pos += 1;
        self.state = State::Value;
        Ok(Event::Key(key))
    }

    /// Reads the number starting at `pos`.
    #[inline]
    fn number(&mut self) -> Result<Number<'a>, Error> {
        let bytes = self.input;
        let start = self.pos;
        let mut i = start;
        let digit = |i: usize| matches!(bytes.get(i), Some(b'0'..=b'9'));
        if bytes[i] == b'-' {
            i += 1;
        }
        match bytes.get(i) {
            Some(b'0') => {
                i += 1;
                if digit(i) {
                    return self.fail(
                        i - 1,
                        ErrorKind::InvalidNumber("leading zeros are not allowed"),
                    );
                }
            }
            Some(b'1'..=b'9') => {
                i += 1;
                while digit(i) {
                    i += 1;
                }
            }
            _ => {
                return self.fail(i, ErrorKind::InvalidNumber("a digit must follow `-`"));
            }
        }
        let int_end = i;
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            if !digit(i) {
                return self.fail(i, ErrorKind::InvalidNumber("a digit must follow `.`"));
            }
            while digit(i) {
                i += 1;
            }
        }
        let frac_end = i;
        if let Some(b'e' | b'E') = bytes.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = bytes.get(i) {
                i += 1;
            }
            if !digit(i) {
                return self.fail(
                    i,
                    ErrorKind::InvalidNumber("a digit must follow the exponent's `e`"),
                );
            }
            while digit(i) {
                i += 1;
            }
        }
        self.pos = i;
        // The token is ASCII by construction, so this cannot fail.
        // The token is ASCII, so it lies inside the valid prefix.
        let raw = self.utf8(start, i)?;
        match (
            u32::try_from(int_end - start),
            u32::try_from(frac_end - start),
        ) {
            (Ok(int_end), Ok(frac_end)) if u32::try_from(i - start).is_ok() => {
                Ok(Number::new(raw, int_end, frac_end))
            }
            _ => self.fail(
                start,
                ErrorKind::InvalidNumber("the token is 4 GiB or longer"),
            ),
        }
    }

    /// Consumes the rest of a value whose first event was `first`, so a
    /// consumer can pass over what it ignores. Returns the offset just past
    /// the value.
    pub fn skip_value(&mut self, first: &Event<'a>) -> Result<usize, Error> {
        if matches!(first, Event::BeginArray | Event::BeginObject) {
            // Misuse (a `first` that was not just read) must not panic.
            let target = self.stack.len().saturating_sub(1);
            while self.stack.len() > target {
                if self.next_event()?.is_none() {
                    let pos = self.pos;
                    return self.fail(pos, ErrorKind::UnexpectedEnd);
                }
            }
        }
        Ok(self.pos)
    }

    /// Reads every event left, for a caller that only asks whether the
    /// input is one well-formed JSON text: `Ok` at its end, else the first
    /// error with its offset.
    pub fn read_to_end(&mut self) -> Result<(), Error> {
        while self.next_event()?.is_some() {}
        Ok(())
    }

    /// Checks that nothing but whitespace follows the one value; call it
    /// once the top-level value's last event has been read.
    pub fn finish(&mut self) -> Result<(), Error> {
        match self.next_event()? {
            None => Ok(()),
            Some(_) => {
                let pos = self.event_start;
                self.fail(pos, ErrorKind::TrailingContent)
            }
        }
    }
}
