//! Unit tests of the documents over small programs.
