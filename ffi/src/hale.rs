//! The Hale contract: a program's text checked (its diagnostics), and its
//! descriptions and projections (OpenAPI, JSON Schema, MCP tools, proto3).

use std::ffi::{c_char, CString};

use limen_core::hale::check_program;
use limen_core::hale::docs::{describe_offline, json_schema, mcp, openapi, proto};
use limen_core::hale::model::Program;
use limen_core::hale::syntax::Diagnostic;

use crate::{
    bytes, c_text, copy_out, free, guard, guard_value, handle, limen_result, put, Failure,
};

struct Diag {
    note: bool,
    line: u32,
    col: u32,
    width: usize,
    file: CString,
    message: CString,
    source_line: CString,
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

impl Diag {
    fn of(d: &Diagnostic, note: bool) -> Diag {
        Diag {
            note,
            line: d.line,
            col: d.col,
            width: d.width,
            file: c_string(&d.file),
            message: c_string(&d.message),
            source_line: c_string(&d.source_line),
        }
    }
}

/// A program's text, checked: its model (when it parsed) and its
/// diagnostics. Made by [`limen_hale_check`], released by
/// [`limen_hale_checked_free`].
pub struct limen_hale_checked {
    program: Option<Program>,
    passed: bool,
    diagnostics: Vec<Diag>,
}

/// One diagnostic of a check. The texts are NUL-terminated UTF-8 and stay
/// valid until the checked handle is freed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_hale_diagnostic {
    /// Whether it is a note (law 6: a statement of a row, failing nothing)
    /// rather than an error.
    pub is_note: bool,
    /// The line of the offending text, from 1.
    pub line: u32,
    /// The column of the offending text, from 1, in characters.
    pub col: u32,
    /// How many characters of the line the diagnostic marks (at least 1).
    pub width: usize,
    /// The file name as the caller gave it.
    pub file: *const c_char,
    /// What was wrong, one sentence without a trailing period.
    pub message: *const c_char,
    /// The whole source line, without its line ending.
    pub source_line: *const c_char,
}

/// Checks the program text `src` (`src_len` bytes of UTF-8) of the file
/// named `file` (NUL-terminated, used in the diagnostics) as `hale check`
/// does, and writes a new handle to `*out`: the check's verdict
/// ([`limen_hale_checked_passed`]) and its diagnostics, errors and notes in
/// source order. A program that fails its check is still
/// `LIMEN_RESULT_OK`: the failure is in the handle. The caller frees the
/// handle with [`limen_hale_checked_free`].
///
/// # Safety
/// `file` must be a NUL-terminated string; `src` valid for `src_len`
/// bytes; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_check(
    file: *const c_char,
    src: *const u8,
    src_len: usize,
    out: *mut *mut limen_hale_checked,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let file = unsafe { c_text(file, "the file name") }?;
        // SAFETY: as above.
        let src = unsafe { crate::text(src, src_len, "the program") }?;
        let checked = check_program(file, src);
        let passed = checked.passed();
        let mut diagnostics: Vec<Diag> = checked
            .errors
            .iter()
            .map(|d| Diag::of(d, false))
            .chain(checked.notes.iter().map(|d| Diag::of(d, true)))
            .collect();
        diagnostics.sort_by_key(|d| (d.line, d.col));
        let h = Box::new(limen_hale_checked {
            program: checked.program,
            passed,
            diagnostics,
        });
        // SAFETY: as above.
        unsafe { put(out, Box::into_raw(h)) }
    })
}

/// Releases a checked handle; `NULL` is ignored.
///
/// # Safety
/// `checked` must be `NULL` or a handle from [`limen_hale_check`] not freed
/// before.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_checked_free(checked: *mut limen_hale_checked) {
    // SAFETY: the caller's promise, passed through.
    guard_value((), || unsafe { free(checked) })
}

/// Whether the program passed its check (it parsed and no law refused
/// it); `false` for a `NULL` handle.
///
/// # Safety
/// `checked` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_checked_passed(checked: *const limen_hale_checked) -> bool {
    // SAFETY: the caller's promise, passed through.
    guard_value(false, || {
        unsafe { checked.as_ref() }.is_some_and(|h| h.passed)
    })
}

/// How many diagnostics (errors and notes) the check found; 0 for a `NULL`
/// handle.
///
/// # Safety
/// `checked` must be `NULL` or a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_checked_count(checked: *const limen_hale_checked) -> usize {
    // SAFETY: the caller's promise, passed through.
    guard_value(0, || {
        unsafe { checked.as_ref() }.map_or(0, |h| h.diagnostics.len())
    })
}

/// Writes diagnostic `index` (from 0, below [`limen_hale_checked_count`]) to
/// `*out`; `LIMEN_RESULT_NOT_FOUND` past the end.
///
/// # Safety
/// `checked` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_checked_diagnostic(
    checked: *mut limen_hale_checked,
    index: usize,
    out: *mut limen_hale_diagnostic,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(checked) }?;
        let d = h.diagnostics.get(index).ok_or_else(|| {
            Failure::new(
                limen_result::LIMEN_RESULT_NOT_FOUND,
                format!("the check has {} diagnostics", h.diagnostics.len()),
            )
        })?;
        let v = limen_hale_diagnostic {
            is_note: d.note,
            line: d.line,
            col: d.col,
            width: d.width,
            file: d.file.as_ptr(),
            message: d.message.as_ptr(),
            source_line: d.source_line.as_ptr(),
        };
        // SAFETY: as above.
        unsafe { put(out, v) }
    })
}

/// What [`limen_hale_project`] writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum limen_hale_projection {
    /// The OpenAPI 3.1 document of a surface.
    LIMEN_HALE_PROJECTION_OPENAPI = 0,
    /// The JSON Schema bundle of a surface.
    LIMEN_HALE_PROJECTION_JSON_SCHEMA = 1,
    /// The MCP tool list of a surface.
    LIMEN_HALE_PROJECTION_MCP = 2,
    /// The proto3 service of a surface.
    LIMEN_HALE_PROJECTION_PROTO = 3,
}

fn program(h: &limen_hale_checked) -> Result<&Program, Failure> {
    if !h.passed {
        return Err(Failure::new(
            limen_result::LIMEN_RESULT_REFUSED,
            "the program did not pass its check",
        ));
    }
    h.program.as_ref().ok_or_else(|| {
        Failure::new(
            limen_result::LIMEN_RESULT_REFUSED,
            "the program did not parse",
        )
    })
}

/// Writes the projection `kind` (a [`limen_hale_projection`] number) of
/// the surface `surface` (NUL-terminated) of a checked program into `buf`,
/// its length to `*written`: JSON for OpenAPI, JSON Schema and MCP, proto3
/// text for proto.
///
/// `LIMEN_RESULT_REFUSED` when the program did not pass its check,
/// `LIMEN_RESULT_NOT_FOUND` when the projection cannot be made (no such
/// surface, or `kind` names no projection).
///
/// # Safety
/// `checked` must be a live handle; `surface` NUL-terminated; `buf` valid
/// for `buf_cap` bytes; `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_project(
    checked: *mut limen_hale_checked,
    kind: u32,
    surface: *const c_char,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(checked) }?;
        // SAFETY: as above.
        let surface = unsafe { c_text(surface, "the surface") }?;
        let p = program(h)?;
        let not_found = |e: String| Failure::new(limen_result::LIMEN_RESULT_NOT_FOUND, e);
        let out: Vec<u8> = match kind {
            0 => openapi(p, surface).map(|v| v.to_string().into_bytes()),
            1 => json_schema(p, surface).map(|v| v.to_string().into_bytes()),
            2 => mcp(p, surface).map(|v| v.to_string().into_bytes()),
            3 => proto(p, surface).map(String::into_bytes),
            other => return Err(not_found(format!("{other} names no projection"))),
        }
        .map_err(|e| not_found(e.to_string()))?;
        // SAFETY: as above.
        unsafe { copy_out(&out, buf, buf_cap, written) }
    })
}

/// Writes the description of the exposure `exposure` (NUL-terminated) of a
/// checked program, as `caller` sees it, into `buf` as compact JSON, its
/// length to `*written` (what `hale describe --offline` prints).
///
/// `caller` (NUL-terminated) is a principal's name or its JSON object
/// (`{"mode":"unix","name":"uid:1000","uid":1000}`); `holds` (`holds_len`
/// bytes) the roles the caller holds, one per line. `LIMEN_RESULT_REFUSED`
/// when the program did not pass its check; `LIMEN_RESULT_NOT_FOUND` when
/// it serves no such exposure or the caller cannot be read.
///
/// # Safety
/// `checked` must be a live handle; `exposure` and `caller` NUL-terminated;
/// `holds` valid for `holds_len` bytes; `buf` for `buf_cap`; `written` for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn limen_hale_describe(
    checked: *mut limen_hale_checked,
    exposure: *const c_char,
    caller: *const c_char,
    holds: *const u8,
    holds_len: usize,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(checked) }?;
        // SAFETY: as above.
        let exposure = unsafe { c_text(exposure, "the exposure") }?;
        // SAFETY: as above.
        let caller = unsafe { c_text(caller, "the caller") }?;
        // SAFETY: as above.
        let holds = unsafe { bytes(holds, holds_len) }?;
        let holds: Vec<String> = String::from_utf8_lossy(holds)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        let p = program(h)?;
        let doc = describe_offline(p, exposure, caller, &holds)
            .map_err(|e| Failure::new(limen_result::LIMEN_RESULT_NOT_FOUND, e.to_string()))?;
        // SAFETY: as above.
        unsafe { copy_out(doc.to_string().as_bytes(), buf, buf_cap, written) }
    })
}
