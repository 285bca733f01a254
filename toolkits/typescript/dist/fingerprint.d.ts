/**
 * A listed signature's fingerprint (§ Identity and fingerprints), as core's
 * `fingerprint_of_signature` computes it from the JSON as listed: the
 * canonical signature (`params`, `ok`, `err`, `generic`; every schema
 * stripped of `description` keywords and of the versions in `$defs` keys
 * and `$ref`s), its canonical JSON text, SHA-256. The serve loop checks each
 * listed fingerprint with it, as core's `Listing::parse` does, so a listing
 * edited by hand is refused rather than served under a fingerprint its
 * declarations do not have.
 */
/** A signature core does not read, and where (a JSON pointer into it). */
export declare class SignatureError extends Error {
    name: string;
}
/** An identity without its version: `repository/file.Name` (a path identity unchanged); core's `Identity::parse` rules. */
export declare function withoutVersion(text: string): string;
/** The canonical signature of a listed signature (core's `canonical_signature`). */
export declare function canonicalSignature(listed: unknown): unknown;
/** The fingerprint of a listed signature: `sha256:` and 64 lowercase hex digits. */
export declare function fingerprintOfSignature(listed: unknown): string;
