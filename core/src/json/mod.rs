//! The strict JSON tokenizer every parser in limen shares.
