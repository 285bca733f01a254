/**
 * A small strict JSON reader that keeps numbers exact, and the canonical
 * writing of a string.
 *
 * `JSON.parse` rounds a number to a double, so a value at its declared type
 * could not be exact: {@link readRaw} keeps each number as the text it was
 * spelled with ({@link RawNum}) until the type says what it is, and each
 * object as its members in order ({@link RawObj}), duplicates kept so the
 * decoder can refuse them where they are. RFC 8259 and nothing more: no
 * comments, no trailing commas, no byte order mark, no lone surrogate
 * escape (a Text is Unicode scalar values).
 */
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A JSON path as core writes it: `$`, `.key`, `["key"]`, `[i]`. */
export function pathText(path) {
    let out = "$";
    for (const seg of path) {
        if (typeof seg === "number") {
            out += `[${seg}]`;
        }
        else if (IDENT.test(seg)) {
            out += "." + seg;
        }
        else {
            out += "[" + stringText(seg) + "]";
        }
    }
    return out;
}
/** A value refused at its declared type: where (a JSON path), and why, worded as core words it. */
export class Refused extends Error {
    name = "Refused";
    /** The JSON path of the offending value. */
    path;
    /** What is wrong there. */
    reason;
    /** A refusal at `path` (copied) for `reason`. */
    constructor(path, reason) {
        super(`${pathText(path)}: ${reason}`);
        this.path = path.slice();
        this.reason = reason;
    }
}
/** A number token, kept as spelled. */
export class RawNum {
    /** The token's text. */
    text;
    /** The token `text`. */
    constructor(text) {
        this.text = text;
    }
}
/** An object's members in the text's order (duplicates kept). */
export class RawObj {
    /** The keys. */
    keys = [];
    /** The values, one per key. */
    values = [];
}
// Control characters and the two that need escaping, for the fast check.
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;
const SHORT = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };
/**
 * A string's canonical text: escapes only `"`, `\` and U+0000 to U+001F
 * (`\b \f \n \r \t` where one exists, `\u00XX` otherwise).
 */
export function stringText(s) {
    if (!NEEDS_ESCAPE.test(s)) {
        return '"' + s + '"';
    }
    let out = '"';
    let from = 0;
    for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x20 && c !== 0x22 && c !== 0x5c)
            continue;
        out += s.slice(from, i);
        from = i + 1;
        if (c === 0x22)
            out += '\\"';
        else if (c === 0x5c)
            out += "\\\\";
        else
            out += SHORT[c] ?? "\\u00" + c.toString(16).padStart(2, "0");
    }
    return out + s.slice(from) + '"';
}
/** How deep the reader nests before it refuses (the decoder's own depth limit is lower; this keeps the stack safe). */
const READ_DEPTH = 1024;
/**
 * Reads one JSON text (the whole of `text`, whitespace around it allowed),
 * or throws {@link Refused} at `$` with a reason that starts `not JSON`.
 */
export function readRaw(text) {
    const r = new Reader(text);
    r.ws();
    const v = r.value(0);
    r.ws();
    if (r.i !== text.length) {
        r.fail("trailing characters");
    }
    return v;
}
/** The reader's state over one text; {@link readRaw} and the serve loop's line reader use it. */
export class Reader {
    s;
    /** The position. */
    i = 0;
    /** A reader of `s`. */
    constructor(s) {
        this.s = s;
    }
    /** Refuses at `$`: not JSON. */
    fail(what) {
        const at = this.i < this.s.length ? `at character ${this.i}` : "at the end";
        throw new Refused([], `not JSON: ${what} ${at}`);
    }
    /** Skips whitespace. */
    ws() {
        const s = this.s;
        let i = this.i;
        for (;;) {
            const c = s.charCodeAt(i);
            if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09)
                i++;
            else
                break;
        }
        this.i = i;
    }
    /** One value at nesting `depth`. */
    value(depth) {
        const c = this.s.charCodeAt(this.i);
        switch (c) {
            case 0x22:
                return this.string();
            case 0x7b:
                return this.object(depth);
            case 0x5b:
                return this.array(depth);
            case 0x74:
                return this.word("true", true);
            case 0x66:
                return this.word("false", false);
            case 0x6e:
                return this.word("null", null);
            default:
                if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
                    return this.number();
                }
                return this.fail(Number.isNaN(c) ? "a value expected" : "an unexpected character");
        }
    }
    word(w, v) {
        if (!this.s.startsWith(w, this.i)) {
            this.fail("an unexpected character");
        }
        this.i += w.length;
        return v;
    }
    /** A number token, checked against JSON's grammar. */
    number() {
        const s = this.s;
        const start = this.i;
        let i = start;
        if (s.charCodeAt(i) === 0x2d)
            i++;
        let c = s.charCodeAt(i);
        if (c === 0x30) {
            i++;
        }
        else if (c >= 0x31 && c <= 0x39) {
            do
                i++;
            while ((c = s.charCodeAt(i)) >= 0x30 && c <= 0x39);
        }
        else {
            this.i = i;
            this.fail("a digit expected");
        }
        if (s.charCodeAt(i) === 0x2e) {
            i++;
            const d = i;
            while ((c = s.charCodeAt(i)) >= 0x30 && c <= 0x39)
                i++;
            if (i === d) {
                this.i = i;
                this.fail("a digit expected");
            }
        }
        c = s.charCodeAt(i);
        if (c === 0x65 || c === 0x45) {
            i++;
            c = s.charCodeAt(i);
            if (c === 0x2b || c === 0x2d)
                i++;
            const d = i;
            while ((c = s.charCodeAt(i)) >= 0x30 && c <= 0x39)
                i++;
            if (i === d) {
                this.i = i;
                this.fail("a digit expected");
            }
        }
        this.i = i;
        return new RawNum(s.slice(start, i));
    }
    /** A string (the reader at its opening quote). */
    string() {
        const s = this.s;
        const start = this.i + 1;
        let i = start;
        // Most strings have no escape: one scan, one slice.
        for (;;) {
            const c = s.charCodeAt(i);
            if (c === 0x22) {
                this.i = i + 1;
                return s.slice(start, i);
            }
            if (c === 0x5c || c < 0x20 || Number.isNaN(c))
                break;
            i++;
        }
        let out = s.slice(start, i);
        for (;;) {
            const c = s.charCodeAt(i);
            if (c === 0x22) {
                this.i = i + 1;
                return out;
            }
            if (Number.isNaN(c)) {
                this.i = i;
                this.fail("an unterminated string");
            }
            if (c < 0x20) {
                this.i = i;
                this.fail("a control character in a string");
            }
            if (c !== 0x5c) {
                const from = i;
                while (i < s.length) {
                    const d = s.charCodeAt(i);
                    if (d === 0x22 || d === 0x5c || d < 0x20)
                        break;
                    i++;
                }
                out += s.slice(from, i);
                continue;
            }
            const e = s.charCodeAt(i + 1);
            i += 2;
            switch (e) {
                case 0x22:
                    out += '"';
                    break;
                case 0x5c:
                    out += "\\";
                    break;
                case 0x2f:
                    out += "/";
                    break;
                case 0x62:
                    out += "\b";
                    break;
                case 0x66:
                    out += "\f";
                    break;
                case 0x6e:
                    out += "\n";
                    break;
                case 0x72:
                    out += "\r";
                    break;
                case 0x74:
                    out += "\t";
                    break;
                case 0x75: {
                    const u = this.hex4(i);
                    i += 4;
                    if (u >= 0xd800 && u <= 0xdbff) {
                        // A high surrogate must be followed by an escaped low one.
                        if (s.charCodeAt(i) !== 0x5c || s.charCodeAt(i + 1) !== 0x75) {
                            this.i = i;
                            this.fail("a lone surrogate escape");
                        }
                        const lo = this.hex4(i + 2);
                        if (lo < 0xdc00 || lo > 0xdfff) {
                            this.i = i;
                            this.fail("a lone surrogate escape");
                        }
                        i += 6;
                        out += String.fromCharCode(u, lo);
                    }
                    else if (u >= 0xdc00 && u <= 0xdfff) {
                        this.i = i;
                        this.fail("a lone surrogate escape");
                    }
                    else {
                        out += String.fromCharCode(u);
                    }
                    break;
                }
                default:
                    this.i = i - 1;
                    this.fail("an invalid escape");
            }
        }
    }
    hex4(at) {
        let n = 0;
        for (let k = 0; k < 4; k++) {
            const c = this.s.charCodeAt(at + k);
            let d;
            if (c >= 0x30 && c <= 0x39)
                d = c - 0x30;
            else if (c >= 0x61 && c <= 0x66)
                d = c - 0x57;
            else if (c >= 0x41 && c <= 0x46)
                d = c - 0x37;
            else {
                this.i = at + k;
                return this.fail("an invalid \\u escape");
            }
            n = n * 16 + d;
        }
        return n;
    }
    /** An array (the reader at its `[`). */
    array(depth) {
        if (depth >= READ_DEPTH)
            this.fail("nested too deep");
        this.i++;
        const out = [];
        this.ws();
        if (this.s.charCodeAt(this.i) === 0x5d) {
            this.i++;
            return out;
        }
        for (;;) {
            this.ws();
            out.push(this.value(depth + 1));
            this.ws();
            const c = this.s.charCodeAt(this.i);
            this.i++;
            if (c === 0x2c)
                continue;
            if (c === 0x5d)
                return out;
            this.i--;
            this.fail("`,` or `]` expected");
        }
    }
    /** An object (the reader at its `{`). */
    object(depth) {
        if (depth >= READ_DEPTH)
            this.fail("nested too deep");
        this.i++;
        const out = new RawObj();
        this.ws();
        if (this.s.charCodeAt(this.i) === 0x7d) {
            this.i++;
            return out;
        }
        for (;;) {
            this.ws();
            if (this.s.charCodeAt(this.i) !== 0x22)
                this.fail("a key expected");
            out.keys.push(this.string());
            this.ws();
            if (this.s.charCodeAt(this.i) !== 0x3a)
                this.fail("`:` expected");
            this.i++;
            this.ws();
            out.values.push(this.value(depth + 1));
            this.ws();
            const c = this.s.charCodeAt(this.i);
            this.i++;
            if (c === 0x2c)
                continue;
            if (c === 0x7d)
                return out;
            this.i--;
            this.fail("`,` or `}` expected");
        }
    }
}
