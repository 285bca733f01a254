//! Finding whom a line was meant for without holding it.
//!
//! A reply larger than the host's limit is still admitted, as BadReply, to
//! the call it names, and a line that is not JSON may still name one. The
//! [`IdScanner`] reads a line in pieces in constant memory and keeps only the
//! few short members that correlate a message: the top-level `method` and
//! `id`, and `params.runId` and `params.callId`. It follows JSON's structure
//! loosely (strings, escapes, nesting) and never fails: what it cannot read
//! is simply not found.

use crate::json::{Event, Tokenizer};

/// The longest member text kept, in bytes; a longer one is not found.
const MAX_CAPTURE: usize = 1024;
/// How deep containers are followed; deeper ones are only counted.
const MAX_TRACKED: usize = 4;

/// The correlating members of a line, as far as they could be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ids {
    /// The top-level `method`.
    pub method: Option<String>,
    /// The top-level `id`, as raw JSON text.
    pub id: Option<Vec<u8>>,
    /// `params.runId`.
    pub run: Option<String>,
    /// `params.callId`.
    pub call: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Method,
    Id,
    Run,
    Call,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Frame {
    object: bool,
    expect_key: bool,
    /// Whether this object is the top-level `params`.
    params: bool,
}

/// A constant-memory scanner over one line fed in pieces.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdScanner {
    depth: usize,
    frames: Vec<Frame>,
    in_string: bool,
    escape: bool,
    /// The string being read is a key.
    string_is_key: bool,
    /// The last key read at the current object, raw, when short.
    key: Vec<u8>,
    key_long: bool,
    /// What the value being read is captured as.
    target: Option<Target>,
    capture: Vec<u8>,
    capture_long: bool,
    /// A number (or literal) is being read into `capture`.
    in_scalar: bool,
    /// The value about to start is `params`' object.
    next_is_params: bool,
    found: Ids,
}

impl IdScanner {
    /// A scanner at the start of a line.
    pub(crate) fn new() -> IdScanner {
        IdScanner::default()
    }

    /// Reads the next piece of the line.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// What was found.
    pub(crate) fn finish(mut self) -> Ids {
        self.end_scalar();
        self.found
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            self.push_string_byte(b);
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                self.end_string();
            }
            return;
        }
        if self.in_scalar {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.') {
                self.push_capture(b);
                return;
            }
            self.end_scalar();
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.string_is_key = self.frames_top().is_some_and(|f| f.object && f.expect_key)
                    && self.depth <= MAX_TRACKED;
                if self.string_is_key {
                    self.key.clear();
                    self.key_long = false;
                }
                self.start_value_capture();
                self.push_string_byte(b);
            }
            b'{' | b'[' => {
                let params = std::mem::take(&mut self.next_is_params) && b == b'{';
                self.target = None;
                self.depth += 1;
                if self.depth <= MAX_TRACKED {
                    self.frames.push(Frame {
                        object: b == b'{',
                        expect_key: b == b'{',
                        params,
                    });
                }
            }
            b'}' | b']' => {
                if self.depth <= MAX_TRACKED {
                    self.frames.pop();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' => {
                if let Some(f) = self.frames_top_mut() {
                    f.expect_key = false;
                }
                self.choose_target();
            }
            b',' => {
                if let Some(f) = self.frames_top_mut() {
                    f.expect_key = f.object;
                }
                self.target = None;
                self.next_is_params = false;
            }
            b if b.is_ascii_whitespace() => {}
            _ => {
                // The start of a number or a literal.
                self.start_value_capture();
                self.in_scalar = true;
                self.push_capture(b);
            }
        }
    }

    fn frames_top(&self) -> Option<&Frame> {
        if self.depth == 0 || self.depth > MAX_TRACKED {
            None
        } else {
            self.frames.last()
        }
    }

    fn frames_top_mut(&mut self) -> Option<&mut Frame> {
        if self.depth == 0 || self.depth > MAX_TRACKED {
            None
        } else {
            self.frames.last_mut()
        }
    }

    /// After a key's `:`, what its value is captured as.
    fn choose_target(&mut self) {
        self.target = None;
        self.next_is_params = false;
        if self.key_long {
            return;
        }
        let in_params = self.frames_top().is_some_and(|f| f.params) && self.depth == 2;
        self.target = match (self.depth, self.key.as_slice()) {
            (1, b"\"method\"") => Some(Target::Method),
            (1, b"\"id\"") => Some(Target::Id),
            (1, b"\"params\"") => {
                self.next_is_params = true;
                None
            }
            (2, b"\"runId\"") if in_params => Some(Target::Run),
            (2, b"\"callId\"") if in_params => Some(Target::Call),
            _ => None,
        };
    }

    fn start_value_capture(&mut self) {
        self.capture.clear();
        self.capture_long = false;
        if self.string_is_key && self.in_string {
            self.target = None;
        }
        self.next_is_params = false;
    }

    fn push_string_byte(&mut self, b: u8) {
        if self.string_is_key {
            if self.key.len() < MAX_CAPTURE {
                self.key.push(b);
            } else {
                self.key_long = true;
            }
        } else {
            self.push_capture(b);
        }
    }

    fn push_capture(&mut self, b: u8) {
        if self.target.is_none() {
            return;
        }
        if self.capture.len() < MAX_CAPTURE {
            self.capture.push(b);
        } else {
            self.capture_long = true;
        }
    }

    fn end_string(&mut self) {
        if self.string_is_key {
            self.string_is_key = false;
            return;
        }
        self.end_value();
    }

    fn end_scalar(&mut self) {
        if self.in_scalar {
            self.in_scalar = false;
            self.end_value();
        }
    }

    fn end_value(&mut self) {
        let Some(target) = self.target.take() else {
            return;
        };
        if self.capture_long {
            return;
        }
        let raw = std::mem::take(&mut self.capture);
        let text = || match Tokenizer::new(&raw).next_event() {
            Ok(Some(Event::String(s))) => Some(s.into_owned()),
            _ => None,
        };
        match target {
            Target::Method => self.found.method = self.found.method.take().or_else(text),
            Target::Run => self.found.run = self.found.run.take().or_else(text),
            Target::Call => self.found.call = self.found.call.take().or_else(text),
            Target::Id => {
                let valid = matches!(
                    Tokenizer::new(&raw).next_event(),
                    Ok(Some(Event::String(_) | Event::Number(_) | Event::Null))
                );
                if valid && self.found.id.is_none() {
                    self.found.id = Some(raw);
                }
            }
        }
    }
}

/// Scans a whole line at once.
pub(crate) fn scan(line: &[u8]) -> Ids {
    let mut s = IdScanner::new();
    s.feed(line);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_correlating_members_wherever_they_sit() {
        let line = br#"{"params":{"outcome":{"Ok":{"runId":"no","x":[1,{"callId":"no"}]}},"callId":"c\"1","runId":"r"},"method":"reply","jsonrpc":"2.0"}"#;
        let ids = scan(line);
        assert_eq!(ids.method.as_deref(), Some("reply"));
        assert_eq!(ids.run.as_deref(), Some("r"));
        assert_eq!(ids.call.as_deref(), Some("c\"1"));
        assert_eq!(ids.id, None);
    }

    #[test]
    fn reads_in_any_split_and_through_broken_json() {
        let line = br#"{"jsonrpc":"2.0","id":17,"method":"reply","params":{"runId":"r","callId":"7","outcome":{"Ok":}}"#;
        let whole = scan(line);
        assert_eq!(whole.id.as_deref(), Some(&b"17"[..]));
        assert_eq!(whole.call.as_deref(), Some("7"));
        for split in 0..line.len() {
            let mut s = IdScanner::new();
            s.feed(&line[..split]);
            s.feed(&line[split..]);
            assert_eq!(s.finish(), whole, "split at {split}");
        }
        assert_eq!(scan(b"not json at all"), Ids::default());
        assert_eq!(scan(b"}}]]\"\\"), Ids::default());
    }

    #[test]
    fn a_long_member_is_not_found() {
        let long = "x".repeat(MAX_CAPTURE + 10);
        let line = format!(r#"{{"method":"reply","params":{{"runId":"{long}","callId":"1"}}}}"#);
        let ids = scan(line.as_bytes());
        assert_eq!(ids.run, None);
        assert_eq!(ids.call.as_deref(), Some("1"));
    }
}
