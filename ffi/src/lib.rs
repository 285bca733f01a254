//! limen-ffi: the C ABI of limen's machines (`include/limen.h`).
#![warn(missing_docs)]
