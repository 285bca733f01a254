//! limen-ffi: the C ABI of limen's machines (`include/limen.h`).
//!
//! Every export follows the conventions of `docs/c-abi.md`:
//!
//! - machines are opaque handles, made by a `limen_<thing>_new` and released
//!   by `limen_<thing>_free` (which accepts `NULL`);
//! - a call that can fail returns a [`limen_result`]; the reason of the last
//!   failure on the calling thread is [`limen_last_error`]'s text;
//! - no panic unwinds into C: every export runs behind a panic boundary and
//!   a panic becomes [`limen_result::LIMEN_RESULT_PANIC`];
//! - time comes in as `now`, nanoseconds of the caller's monotonic clock;
//! - output is copied into the caller's buffer with the length written out;
//!   a buffer too small is [`limen_result::LIMEN_RESULT_BUFFER_TOO_SMALL`],
//!   with the length needed written out and nothing consumed;
//! - events are polled as plain structs whose pointers stay valid until the
//!   next call on the same handle; no callback is needed to move bytes.
#![warn(missing_docs)]
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod exposure;
pub mod flow;
pub mod front;
pub mod hale;
pub mod hub;
pub mod tool;
pub mod ws;

/// What a call that can fail returns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_result {
    /// The call did what it says.
    LIMEN_RESULT_OK = 0,
    /// A pointer that must not be `NULL` was, or a text was not UTF-8, or a
    /// number was out of range.
    LIMEN_RESULT_INVALID_ARGUMENT = 1,
    /// The caller's buffer is too small: the length needed is written out
    /// and nothing was consumed; call again with a larger buffer.
    LIMEN_RESULT_BUFFER_TOO_SMALL = 2,
    /// The input was read and refused (a text that does not decode at its
    /// type, a program that does not pass its check, a listing whose
    /// fingerprints differ); [`limen_last_error`] says why.
    LIMEN_RESULT_REFUSED = 3,
    /// A schema, program or listing is not one limen reads.
    LIMEN_RESULT_UNREADABLE = 4,
    /// A named thing (an exposure, a member, a request) does not exist.
    LIMEN_RESULT_NOT_FOUND = 5,
    /// The call does not fit the handle's state (no request is held to hand
    /// over, no delivery is held to deliver).
    LIMEN_RESULT_INVALID_STATE = 6,
    /// The library panicked inside the call; the handle it was given must
    /// only be freed.
    LIMEN_RESULT_PANIC = 7,
}

/// A failure inside an export: its result and its reason.
pub(crate) struct Failure(pub limen_result, pub String);

impl Failure {
    pub(crate) fn new(result: limen_result, reason: impl Into<String>) -> Failure {
        Failure(result, reason.into())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// `s` as a C string, a NUL inside written `\0`.
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

fn set_last_error(reason: &str) {
    let text = CString::new(reason.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// Runs `f` behind the panic boundary: its failure becomes the result and
/// the thread's last error, a panic becomes `LIMEN_RESULT_PANIC`.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> limen_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => limen_result::LIMEN_RESULT_OK,
        Ok(Err(Failure(result, reason))) => {
            set_last_error(&reason);
            result
        }
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            set_last_error(&format!("limen panicked: {why}"));
            limen_result::LIMEN_RESULT_PANIC
        }
    }
}

/// Runs `f` behind the panic boundary for an export that returns a value
/// rather than a result: a panic returns `fallback`.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            set_last_error("limen panicked");
            fallback
        }
    }
}

/// The bytes at `ptr`, `len` of them; `NULL` is the empty slice when `len`
/// is 0.
///
/// # Safety
/// `ptr` must be valid for reads of `len` bytes for `'a`, or `NULL`.
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        if len == 0 {
            return Ok(&[]);
        }
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            "a NULL pointer with a nonzero length",
        ));
    }
    // SAFETY: the caller promises `ptr` is valid for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The UTF-8 text at `ptr`, `len` bytes of it.
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn text<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a str, Failure> {
    // SAFETY: passed through from the caller's promise.
    let b = unsafe { bytes(ptr, len) }?;
    std::str::from_utf8(b).map_err(|_| {
        Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            format!("{what} is not UTF-8"),
        )
    })
}

/// The NUL-terminated UTF-8 text at `ptr`.
///
/// # Safety
/// `ptr` must be `NULL` or point at a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn c_text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            format!("{what} is NULL"),
        ));
    }
    // SAFETY: the caller promises a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str().map_err(|_| {
        Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            format!("{what} is not UTF-8"),
        )
    })
}

/// The handle behind `ptr`.
///
/// # Safety
/// `ptr` must be `NULL` or a live handle of type `T` made by this library,
/// not used by another thread during the call.
pub(crate) unsafe fn handle<'a, T>(ptr: *mut T) -> Result<&'a mut T, Failure> {
    // SAFETY: the caller promises a live, unshared handle or NULL.
    unsafe { ptr.as_mut() }.ok_or_else(|| {
        Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            "the handle is NULL",
        )
    })
}

/// Writes `value` through `out`.
///
/// # Safety
/// `out` must be `NULL` or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            "an output pointer is NULL",
        ));
    }
    // SAFETY: non-NULL, and the caller promises it is valid for a write.
    unsafe { out.write(value) };
    Ok(())
}

/// Refuses a consume of `n` bytes when only `pending` are pending, with
/// `LIMEN_RESULT_INVALID_ARGUMENT`, so nothing is consumed: the check every
/// handle's `_consume_output` makes before it tells its machine.
pub(crate) fn check_consume(n: usize, pending: usize) -> Result<(), Failure> {
    if n > pending {
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
            format!("{n} bytes consumed, {pending} pending"),
        ));
    }
    Ok(())
}

/// Copies `data` into the caller's buffer `buf` of `cap` bytes and writes
/// its length to `written`; when `cap` is too small, writes the length
/// needed and fails with `LIMEN_RESULT_BUFFER_TOO_SMALL`, copying nothing.
///
/// # Safety
/// `buf` must be valid for writes of `cap` bytes (or `NULL` with `cap` 0);
/// `written` must be valid for a write.
pub(crate) unsafe fn copy_out(
    data: &[u8],
    buf: *mut u8,
    cap: usize,
    written: *mut usize,
) -> Result<(), Failure> {
    // SAFETY: passed through from the caller's promise.
    unsafe { put(written, data.len()) }?;
    if data.len() > cap {
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_BUFFER_TOO_SMALL,
            format!("the output is {} bytes, the buffer {cap}", data.len()),
        ));
    }
    if !data.is_empty() {
        if buf.is_null() {
            return Err(Failure::new(
                limen_result::LIMEN_RESULT_INVALID_ARGUMENT,
                "the output buffer is NULL",
            ));
        }
        // SAFETY: `buf` holds `cap >= data.len()` bytes, and a caller's
        // buffer cannot overlap a slice this library owns.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, data.len()) };
    }
    Ok(())
}

/// Frees a handle made by `Box::into_raw`.
///
/// # Safety
/// `ptr` must be `NULL` or a handle of type `T` made by this library and
/// not freed before.
pub(crate) unsafe fn free<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: the caller promises the handle is live and ours.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// A text this library lends to C: its bytes and its length, valid as long
/// as what lends it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_str {
    /// The bytes (UTF-8), not NUL-terminated; `NULL` when `len` is 0.
    pub ptr: *const u8,
    /// How many bytes.
    pub len: usize,
}

impl limen_str {
    /// The empty text.
    pub const EMPTY: limen_str = limen_str {
        ptr: std::ptr::null(),
        len: 0,
    };

    /// Lends `s` (the caller keeps `s` alive as long as C may read it).
    pub(crate) fn lend(s: &[u8]) -> limen_str {
        if s.is_empty() {
            return limen_str::EMPTY;
        }
        limen_str {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }
}

static VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(v) => v,
        Err(_) => panic!("the version has no NUL inside"),
    };

/// The library's version (the crate's, `MAJOR.MINOR.PATCH`), a static
/// NUL-terminated string: never freed, valid forever.
#[no_mangle]
pub extern "C" fn limen_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The reason of the last call on this thread that did not return
/// `LIMEN_RESULT_OK`, as NUL-terminated UTF-8 (the empty string before any
/// failure). The pointer stays valid until the next `limen_` call on this
/// thread; copy the text to keep it.
#[no_mangle]
pub extern "C" fn limen_last_error() -> *const c_char {
    guard_value(std::ptr::null(), || {
        LAST_ERROR.with(|e| e.borrow().as_ptr())
    })
}

/// The fixed name of the `limen_result` numbered `result`
/// (`"LIMEN_RESULT_OK"`, …; the empty string for a number that names none),
/// a static NUL-terminated string valid forever.
#[no_mangle]
pub extern "C" fn limen_result_name(result: u32) -> *const c_char {
    let name: &'static CStr = match result {
        0 => c"LIMEN_RESULT_OK",
        1 => c"LIMEN_RESULT_INVALID_ARGUMENT",
        2 => c"LIMEN_RESULT_BUFFER_TOO_SMALL",
        3 => c"LIMEN_RESULT_REFUSED",
        4 => c"LIMEN_RESULT_UNREADABLE",
        5 => c"LIMEN_RESULT_NOT_FOUND",
        6 => c"LIMEN_RESULT_INVALID_STATE",
        7 => c"LIMEN_RESULT_PANIC",
        _ => c"",
    };
    name.as_ptr()
}
