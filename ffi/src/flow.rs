//! The Flow value encoding: a schema's type as a handle, canonical text of a
//! JSON text at it, the strict decoder's refusal (its JSON pointer and its
//! reason), and the fingerprints of a listing.

use std::ffi::CString;

use limen_core::flow::canonical::write_canonical;
use limen_core::flow::decode::{DecodeError, Segment};
use limen_core::flow::{
    check_listed_entry, decode, fingerprint_of_signature, type_from_schema, Limits, Type, TypeEnv,
};

use crate::{bytes, copy_out, free, guard, handle, limen_result, put, Failure};

/// A type read from a JSON Schema (the form `flow canon --schema` reads),
/// with the decoder's limits and the last refusal. Made by
/// [`limen_flow_schema_new`], released by [`limen_flow_schema_free`].
pub struct limen_flow_schema {
    ty: Type,
    env: TypeEnv,
    limits: Limits,
    refusal_pointer: CString,
    refusal_reason: CString,
}

/// The decoder's limits, each a count (`limen_flow_schema_set_limits`);
/// [`limen_flow_limits_default`] gives the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_flow_limits {
    /// The most bytes a text may have.
    pub max_bytes: u64,
    /// The deepest nesting of arrays and objects.
    pub max_depth: u64,
    /// The most digits an integer may have.
    pub max_int_digits: u64,
    /// The most significant digits a decimal may have.
    pub max_decimal_digits: u64,
    /// The largest decimal exponent, either sign.
    pub max_decimal_exponent: u64,
    /// The most bytes a string may have.
    pub max_string_bytes: u64,
    /// The most items a list, set, dict or record may have.
    pub max_collection_len: u64,
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The decoder's default limits.
#[no_mangle]
pub extern "C" fn limen_flow_limits_default() -> limen_flow_limits {
    let d = Limits::default();
    limen_flow_limits {
        max_bytes: d.max_bytes as u64,
        max_depth: d.max_depth as u64,
        max_int_digits: d.max_int_digits as u64,
        max_decimal_digits: d.max_decimal_digits as u64,
        max_decimal_exponent: d.max_decimal_exponent,
        max_string_bytes: d.max_string_bytes as u64,
        max_collection_len: d.max_collection_len as u64,
    }
}

/// Reads the JSON Schema `schema` (`schema_len` bytes of UTF-8 JSON) into a
/// type and writes a new handle to `*out`, with the default limits.
///
/// `LIMEN_RESULT_UNREADABLE` when the text is not JSON or not a schema limen
/// reads (the reason is [`crate::limen_last_error`]'s). The caller owns the
/// handle and frees it with [`limen_flow_schema_free`]; `schema` is not
/// kept.
///
/// # Safety
/// `schema` must be valid for `schema_len` bytes; `out` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_flow_schema_new(
    schema: *const u8,
    schema_len: usize,
    out: *mut *mut limen_flow_schema,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let text = unsafe { bytes(schema, schema_len) }?;
        let json: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the schema is not JSON: {e}"),
            )
        })?;
        let (ty, env) = type_from_schema(&json).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the schema is not one limen reads: {e}"),
            )
        })?;
        let h = Box::new(limen_flow_schema {
            ty,
            env,
            limits: Limits::default(),
            refusal_pointer: CString::default(),
            refusal_reason: CString::default(),
        });
        // SAFETY: the caller's promise, passed through.
        unsafe { put(out, Box::into_raw(h)) }
    })
}

/// Releases a schema handle; `NULL` is ignored.
///
/// # Safety
/// `schema` must be `NULL` or a handle from [`limen_flow_schema_new`] not
/// freed before; nothing it lent may be read afterwards.
#[no_mangle]
pub unsafe extern "C" fn limen_flow_schema_free(schema: *mut limen_flow_schema) {
    // SAFETY: the caller's promise, passed through.
    crate::guard_value((), || unsafe { free(schema) })
}

/// Sets the decoder's limits for later calls on `schema`.
///
/// # Safety
/// `schema` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn limen_flow_schema_set_limits(
    schema: *mut limen_flow_schema,
    limits: limen_flow_limits,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promise, passed through.
        let h = unsafe { handle(schema) }?;
        h.limits = Limits {
            max_bytes: to_usize(limits.max_bytes),
            max_depth: to_usize(limits.max_depth),
            max_int_digits: to_usize(limits.max_int_digits),
            max_decimal_digits: to_usize(limits.max_decimal_digits),
            max_decimal_exponent: limits.max_decimal_exponent,
            max_string_bytes: to_usize(limits.max_string_bytes),
            max_collection_len: to_usize(limits.max_collection_len),
        };
        Ok(())
    })
}

/// The JSON pointer (RFC 6901) of a decode error's path: `""` is the whole
/// text, `/hits/3/score` a member of an element.
pub fn json_pointer(e: &DecodeError) -> String {
    let mut out = String::new();
    for s in &e.path.0 {
        out.push('/');
        match s {
            Segment::Index(i) => out.push_str(&i.to_string()),
            Segment::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
        }
    }
    out
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

/// Decodes the JSON text `text` (`text_len` bytes) strictly at `schema`'s
/// type and writes its canonical text into `buf` (`buf_cap` bytes), its
/// length to `*written`. Not NUL-terminated.
///
/// `LIMEN_RESULT_REFUSED` when the text does not decode: the last error is
/// `<path>: <reason>`, and [`limen_flow_schema_refusal`] gives the JSON
/// pointer and the reason apart. `LIMEN_RESULT_BUFFER_TOO_SMALL` writes the
/// length needed to `*written` and nothing to `buf`. The handle keeps no
/// text of the call but the refusal.
///
/// # Safety
/// `schema` must be a live handle; `text` valid for `text_len` bytes; `buf`
/// valid for `buf_cap` bytes (or `NULL` with `buf_cap` 0); `written` for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn limen_flow_canonical(
    schema: *mut limen_flow_schema,
    text: *const u8,
    text_len: usize,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(schema) }?;
        // SAFETY: as above.
        let input = unsafe { bytes(text, text_len) }?;
        h.refusal_pointer = CString::default();
        h.refusal_reason = CString::default();
        match decode(input, &h.ty, &h.env, &h.limits) {
            Ok(value) => {
                let mut out = Vec::with_capacity(input.len());
                write_canonical(&value, &mut out);
                // SAFETY: as above.
                unsafe { copy_out(&out, buf, buf_cap, written) }
            }
            Err(e) => {
                h.refusal_pointer = c_string(&json_pointer(&e));
                h.refusal_reason = c_string(&e.message);
                Err(Failure::new(
                    limen_result::LIMEN_RESULT_REFUSED,
                    e.to_string(),
                ))
            }
        }
    })
}

/// The strict decoder's refusal: where the offending value is and why.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct limen_flow_refusal {
    /// The JSON pointer (RFC 6901) of the offending value, NUL-terminated
    /// (`""` for the whole text).
    pub pointer: *const std::ffi::c_char,
    /// Why, in words, NUL-terminated (`expected Int, found "x"`).
    pub reason: *const std::ffi::c_char,
}

/// The refusal of the last [`limen_flow_canonical`] on `schema` (both texts
/// empty when it decoded). The pointers stay valid until the next call on
/// `schema`.
///
/// # Safety
/// `schema` must be a live handle; `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_flow_schema_refusal(
    schema: *mut limen_flow_schema,
    out: *mut limen_flow_refusal,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let h = unsafe { handle(schema) }?;
        let r = limen_flow_refusal {
            pointer: h.refusal_pointer.as_ptr(),
            reason: h.refusal_reason.as_ptr(),
        };
        // SAFETY: as above.
        unsafe { put(out, r) }
    })
}

/// The fingerprint of one Tool signature (`signature`, `signature_len`
/// bytes of JSON, the `signature` of a listing's entry), written as text
/// (`sha256:…`) into `buf`, its length to `*written`.
///
/// `LIMEN_RESULT_UNREADABLE` when the signature is not JSON or not one limen
/// reads.
///
/// # Safety
/// `signature` valid for `signature_len` bytes; `buf` for `buf_cap` bytes;
/// `written` for a write.
#[no_mangle]
pub unsafe extern "C" fn limen_flow_fingerprint(
    signature: *const u8,
    signature_len: usize,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let text = unsafe { bytes(signature, signature_len) }?;
        let json: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the signature is not JSON: {e}"),
            )
        })?;
        let f = fingerprint_of_signature(&json).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the signature is not one limen reads: {e}"),
            )
        })?;
        // SAFETY: as above.
        unsafe { copy_out(f.to_string().as_bytes(), buf, buf_cap, written) }
    })
}

/// The fingerprints of a listing (`listing`, `listing_len` bytes of JSON in
/// the shape of describe's result: `{"tools": [{"tool", "fingerprint",
/// "signature"}]}`), as `flow fingerprint` prints them: one line
/// `<identity> <fingerprint>\n` per tool whose signature limen reads,
/// computed from the signature, written into `buf`, the length to
/// `*written`.
///
/// `LIMEN_RESULT_REFUSED`, with the lines still written, when a listed
/// fingerprint differs from its signature's or a signature cannot be read:
/// the last error names each such tool, one per line.
/// `LIMEN_RESULT_UNREADABLE` when the listing is not JSON or has no
/// `tools` array.
///
/// # Safety
/// As [`limen_flow_fingerprint`].
#[no_mangle]
pub unsafe extern "C" fn limen_flow_listing_fingerprints(
    listing: *const u8,
    listing_len: usize,
    buf: *mut u8,
    buf_cap: usize,
    written: *mut usize,
) -> limen_result {
    guard(|| {
        // SAFETY: the caller's promises, passed through.
        let text = unsafe { bytes(listing, listing_len) }?;
        let json: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
            Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                format!("the listing is not JSON: {e}"),
            )
        })?;
        let Some(tools) = json.get("tools").and_then(|t| t.as_array()) else {
            return Err(Failure::new(
                limen_result::LIMEN_RESULT_UNREADABLE,
                "the listing has no \"tools\" array",
            ));
        };
        let mut out = String::new();
        let mut wrong = Vec::new();
        for (i, entry) in tools.iter().enumerate() {
            let checked = check_listed_entry(i, entry);
            if let Some(computed) = &checked.computed {
                out.push_str(&format!("{} {computed}\n", checked.name));
            }
            wrong.extend(checked.wrong);
        }
        // SAFETY: as above.
        unsafe { copy_out(out.as_bytes(), buf, buf_cap, written) }?;
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(Failure::new(
                limen_result::LIMEN_RESULT_REFUSED,
                wrong.join("\n"),
            ))
        }
    })
}
