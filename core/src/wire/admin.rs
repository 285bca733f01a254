//! `hale admin`'s page as a pure machine: who may use it, and which route
//! a request names.
//!
//! Who may use the page (§ The clients: "the page is served only to the
//! holder of the launch token the process printed, a request whose Host or
//! Origin is not the page's is refused").
//!
//! Every request — the page, its script and style, the API, the stream —
//! passes [`Gate::check`] before anything else reads it, in this order:
//!
//! 1. `Host` must be the page's own address (`127.0.0.1:<port>`): a
//!    browser tricked into sending a page of another name to this port (DNS
//!    rebinding) names that other host here.
//! 2. `Origin`, when the browser sends one, must be the page's
//!    (`http://127.0.0.1:<port>`), and `Sec-Fetch-Site`, when sent, must
//!    not say `cross-site`: another page's script is refused before its
//!    request is read.
//! 3. The launch token, compared in constant time: from the cookie
//!    `hale-admin-<port>` (HttpOnly, SameSite=Strict, set by the launch
//!    URL), or, on the launch URL itself (`/?token=…`), from the query —
//!    answered by a redirect to `/` that sets the cookie, so no URL the
//!    page fetches after the first load carries the token.
//!
//! The checks are pure: the server hands in the request and gets a
//! [`Verdict`]; then [`route`] says which of the page's routes the request
//! names, and [`parse_call`] reads a call's body. The token never appears
//! in a refusal. The driver (`hale admin`, in limen-drivers) draws the
//! token, binds the socket and moves the bytes.

use serde_json::Value;

use crate::wire::http1::HttpRequest;

/// The launch token: 32 bytes from the kernel's generator, as 64 lowercase
/// hex digits.
#[derive(Clone, PartialEq, Eq)]
pub struct LaunchToken(String);

impl std::fmt::Debug for LaunchToken {
    // Never printed by accident (a panic message, a debug log).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LaunchToken(…)")
    }
}

impl LaunchToken {
    /// The token whose bytes are `bytes`: the driver draws 32 from the
    /// kernel's generator.
    pub fn from_bytes(bytes: &[u8]) -> LaunchToken {
        LaunchToken(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The token's text, for the launch URL the process prints.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `a` and `b` are equal, taking a time that depends on their
/// lengths only, never on where they first differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the optimizer from ending the fold at a first difference.
    std::hint::black_box(diff) == 0
}

/// What the gate says of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The holder of the token, on the page's own address: serve it.
    Admitted,
    /// The launch URL with the right token: answer with a redirect to `/`
    /// that sets this `Set-Cookie` value.
    Launch {
        /// The `Set-Cookie` header's value.
        set_cookie: String,
    },
    /// Refused 403, with the sentence that says why (no secret in it).
    Refused(String),
}

/// The page's gate: its port and its token.
#[derive(Clone, Debug)]
pub struct Gate {
    port: u16,
    token: LaunchToken,
}

/// The longest piece of a request quoted back in a refusal.
const QUOTE: usize = 80;

/// `text` as a refusal may quote it: printable ASCII, at most [`QUOTE`]
/// characters.
fn quote(bytes: &[u8]) -> String {
    let mut s: String = bytes
        .iter()
        .take(QUOTE)
        .map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '?'
            }
        })
        .collect();
    if bytes.len() > QUOTE {
        s.push('…');
    }
    s
}

impl Gate {
    /// The gate of the page on `127.0.0.1:<port>`, opened by `token`.
    pub fn new(port: u16, token: LaunchToken) -> Gate {
        Gate { port, token }
    }

    /// The page's own address, as `Host` must name it.
    pub fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The page's origin, as `Origin` must name it.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The cookie's name: one per port, since a browser keeps cookies per
    /// host, not per port, and two pages on two ports must not overwrite
    /// each other's.
    pub fn cookie_name(&self) -> String {
        format!("hale-admin-{}", self.port)
    }

    /// The launch URL the process prints.
    pub fn launch_url(&self) -> String {
        format!("{}/?token={}", self.origin(), self.token.as_str())
    }

    /// `bytes` (a header the client sent) as a refusal quotes it, unless it
    /// carries the token: a refusal never spells the token, even back to
    /// the client that sent it, so no refusal is ever worth keeping secret.
    fn quote(&self, bytes: &[u8]) -> String {
        let token = self.token.as_str().as_bytes();
        if bytes.windows(token.len()).any(|w| w == token) {
            return "(a value carrying the launch token)".into();
        }
        quote(bytes)
    }

    /// The gate's verdict on `request`. See the module documentation.
    pub fn check(&self, request: &HttpRequest) -> Verdict {
        let authority = self.authority();
        match request.header("host") {
            Some(host) if host == authority.as_bytes() => {}
            Some(host) => {
                return Verdict::Refused(format!(
                    "Host `{}` is not this page's address: open http://{authority}/ as `hale admin` printed it",
                    self.quote(host)
                ))
            }
            None => {
                return Verdict::Refused(format!(
                    "the request names no Host; this page is http://{authority}/"
                ))
            }
        }
        let origin = self.origin();
        if let Some(o) = request.header("origin") {
            if o != origin.as_bytes() {
                return Verdict::Refused(format!(
                    "Origin `{}` is not this page's ({origin}): another site's page may not use it",
                    self.quote(o)
                ));
            }
        }
        if request
            .header("sec-fetch-site")
            .is_some_and(|s| s.eq_ignore_ascii_case(b"cross-site"))
        {
            return Verdict::Refused(
                "the browser says this request comes from another site (Sec-Fetch-Site: cross-site)"
                    .into(),
            );
        }
        let name = self.cookie_name();
        if request
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
            .filter_map(|(_, v)| cookie(v, &name))
            .any(|v| constant_time_eq(v, self.token.as_str().as_bytes()))
        {
            return Verdict::Admitted;
        }
        if let Some(offered) = launch_query(&request.target) {
            if request.method == "GET" && constant_time_eq(offered, self.token.as_str().as_bytes())
            {
                return Verdict::Launch {
                    set_cookie: format!(
                        "{name}={}; HttpOnly; SameSite=Strict; Path=/",
                        self.token.as_str()
                    ),
                };
            }
            return Verdict::Refused(
                "the launch token in this URL is not this page's: open the URL `hale admin` printed"
                    .into(),
            );
        }
        Verdict::Refused(
            "this page is served only to the holder of the launch token: open the URL `hale admin` printed"
                .into(),
        )
    }
}

/// The value of the cookie `name` in one `Cookie` header's value
/// (`a=1; b=2`), if present.
pub fn cookie<'v>(header: &'v [u8], name: &str) -> Option<&'v [u8]> {
    header.split(|&b| b == b';').find_map(|pair| {
        let pair = pair.trim_ascii();
        let eq = pair.iter().position(|&b| b == b'=')?;
        (pair[..eq].trim_ascii() == name.as_bytes()).then(|| pair[eq + 1..].trim_ascii())
    })
}

/// The token of the launch URL: the target `/?token=<t>` exactly (the page
/// itself, with one query parameter), else none.
pub fn launch_query(target: &str) -> Option<&[u8]> {
    let token = target.strip_prefix("/?token=")?;
    (!token.is_empty() && !token.contains(['&', '#', '/'])).then_some(token.as_bytes())
}

/// The page's routes, as [`route`] reads a request the gate admitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /`: the page.
    Page,
    /// `GET /admin.js`: its script.
    Script,
    /// `GET /admin.css`: its style.
    Style,
    /// `GET /api/description`: the description(s), read now.
    Description,
    /// `POST /api/call`: one call (its body read by [`parse_call`]).
    Call,
    /// `GET /api/stream?topic=T`: a subscription relayed as events.
    Stream {
        /// The topic, percent-decoded.
        topic: String,
    },
    /// Answered with an error: the status and the sentence.
    Error(u16, String),
}

/// The value of the query parameter `name` in `target`, percent-decoded
/// (`+` read as a space, as a form writes it).
pub fn query_param(target: &str, name: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| crate::percent::decode(&v.replace('+', " ")))?
    })
}

/// The route `request` names (after the gate admitted it).
pub fn route(request: &HttpRequest) -> Route {
    let path = request.target.split('?').next().unwrap_or("");
    match (request.method.as_str(), path) {
        ("GET", "/") => Route::Page,
        ("GET", "/admin.js") => Route::Script,
        ("GET", "/admin.css") => Route::Style,
        ("GET", "/api/description") => Route::Description,
        ("POST", "/api/call") => Route::Call,
        ("GET", "/api/stream") => match query_param(&request.target, "topic") {
            Some(topic) if !topic.is_empty() => Route::Stream { topic },
            _ => Route::Error(400, "/api/stream names its topic: ?topic=T".into()),
        },
        (_, "/" | "/admin.js" | "/admin.css" | "/api/description" | "/api/stream") => {
            Route::Error(405, "this route is read with GET".into())
        }
        (_, "/api/call") => Route::Error(405, "a call is a POST".into()),
        _ => {
            let shown: String = path.chars().take(QUOTE).collect();
            Route::Error(404, format!("no such route: {shown}"))
        }
    }
}

/// One call as the page asks it (`POST /api/call`'s body).
#[derive(Clone, Debug, PartialEq)]
pub struct CallRequest {
    /// The member (`Orders::place`), an identifier path.
    pub member: String,
    /// The payload, any JSON value.
    pub payload: Value,
    /// The digest of the description the page displays, when it names one.
    pub digest: Option<String>,
}

/// Whether `name` may be a member's name: what an identifier path spells
/// (`Orders::place`). Anything else is refused before it reaches a request
/// line or a frame.
pub fn member_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 512
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// Reads a call's body (`{"member", "payload", "digest"}`, as
/// `application/json`); the status and the sentence when it cannot be.
pub fn parse_call(request: &HttpRequest) -> Result<CallRequest, (u16, String)> {
    let json_body = request.header("content-type").is_some_and(|t| {
        let t = String::from_utf8_lossy(t).to_ascii_lowercase();
        t.split(';').next().map(str::trim) == Some("application/json")
    });
    if !json_body {
        return Err((415, "a call's body is application/json".into()));
    }
    let bad = |why: &str| Err((400, why.to_owned()));
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return bad("the body is not JSON");
    };
    let Some(member) = body.get("member").and_then(Value::as_str) else {
        return bad("the body names no member (\"member\": \"Orders::place\")");
    };
    if !member_name_ok(member) {
        return bad("\"member\" is not a member's name (an identifier path, Orders::place)");
    }
    let Some(payload) = body.get("payload") else {
        return bad("the body carries no \"payload\"");
    };
    let digest = match body.get("digest") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(_) => return bad("\"digest\" is a string or null"),
    };
    Ok(CallRequest {
        member: member.to_owned(),
        payload: payload.clone(),
        digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate::new(7473, LaunchToken::from_bytes(&[0xab; 32]))
    }

    fn request(target: &str, headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            target: target.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
            body: Vec::new(),
        }
    }

    fn token() -> String {
        "ab".repeat(32)
    }

    #[test]
    fn the_cookie_on_the_pages_own_address_is_admitted() {
        let g = gate();
        let cookie = format!("other=1; hale-admin-7473={}", token());
        let r = request(
            "/api/description",
            &[("Host", "127.0.0.1:7473"), ("Cookie", &cookie)],
        );
        assert_eq!(g.check(&r), Verdict::Admitted);
        let same_origin = request(
            "/api/call",
            &[
                ("Host", "127.0.0.1:7473"),
                ("Origin", "http://127.0.0.1:7473"),
                ("Sec-Fetch-Site", "same-origin"),
                ("Cookie", &cookie),
            ],
        );
        assert_eq!(g.check(&same_origin), Verdict::Admitted);
    }

    #[test]
    fn the_launch_url_sets_the_cookie_and_nothing_else_does() {
        let g = gate();
        let launch = request(
            &format!("/?token={}", token()),
            &[("Host", "127.0.0.1:7473")],
        );
        match g.check(&launch) {
            Verdict::Launch { set_cookie } => {
                assert!(set_cookie.starts_with(&format!("hale-admin-7473={};", token())));
                assert!(set_cookie.contains("HttpOnly"));
                assert!(set_cookie.contains("SameSite=Strict"));
            }
            v => panic!("{v:?}"),
        }
        // The token in the query of any other route is not a credential.
        let elsewhere = request(
            &format!("/api/description?token={}", token()),
            &[("Host", "127.0.0.1:7473")],
        );
        assert!(matches!(g.check(&elsewhere), Verdict::Refused(_)));
        let wrong = request("/?token=abab", &[("Host", "127.0.0.1:7473")]);
        assert!(matches!(g.check(&wrong), Verdict::Refused(m) if !m.contains("abab")));
    }

    #[test]
    fn a_foreign_host_or_origin_is_refused_even_with_the_token() {
        let g = gate();
        let cookie = format!("hale-admin-7473={}", token());
        for headers in [
            vec![("Host", "evil.test:7473"), ("Cookie", cookie.as_str())],
            vec![("Host", "localhost:7473"), ("Cookie", cookie.as_str())],
            vec![("Host", "127.0.0.1:7474"), ("Cookie", cookie.as_str())],
            vec![("Cookie", cookie.as_str())],
            vec![
                ("Host", "127.0.0.1:7473"),
                ("Origin", "http://evil.test"),
                ("Cookie", cookie.as_str()),
            ],
            vec![
                ("Host", "127.0.0.1:7473"),
                ("Origin", "null"),
                ("Cookie", cookie.as_str()),
            ],
            vec![
                ("Host", "127.0.0.1:7473"),
                ("Sec-Fetch-Site", "cross-site"),
                ("Cookie", cookie.as_str()),
            ],
        ] {
            let v = g.check(&request("/", &headers));
            match v {
                Verdict::Refused(why) => assert!(!why.contains(&token()), "{why}"),
                v => panic!("{headers:?}: {v:?}"),
            }
        }
        let launch = request(
            &format!("/?token={}", token()),
            &[("Host", "evil.test:7473")],
        );
        assert!(matches!(g.check(&launch), Verdict::Refused(m) if m.contains("evil.test")));
    }

    #[test]
    fn a_refusal_quotes_no_header_that_carries_the_token() {
        let g = gate();
        let host = format!("127.0.=x{} HTTP/2.1", token());
        match g.check(&request("/", &[("Host", &host)])) {
            Verdict::Refused(why) => {
                assert!(!why.contains(&token()), "{why}");
                assert!(why.contains("carrying the launch token"), "{why}");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn another_ports_cookie_or_a_near_token_is_no_token() {
        let g = gate();
        let mut near = token();
        near.replace_range(63.., "c");
        for cookie in [
            format!("hale-admin-7474={}", token()),
            format!("hale-admin-7473={near}"),
            format!("hale-admin-7473={}0", token()),
            "hale-admin-7473=".to_owned(),
        ] {
            let r = request("/", &[("Host", "127.0.0.1:7473"), ("Cookie", &cookie)]);
            assert!(matches!(g.check(&r), Verdict::Refused(_)), "{cookie}");
        }
    }

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn tokens_are_64_hex_digits_never_printed() {
        let a = LaunchToken::from_bytes(&[0x0f; 32]);
        assert_eq!(a.as_str(), "0f".repeat(32));
        assert_eq!(format!("{a:?}"), "LaunchToken(…)");
    }

    fn post(target: &str, content_type: &str, body: &str) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            target: target.into(),
            headers: vec![("Content-Type".into(), content_type.as_bytes().to_vec())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn routes_are_read_by_method_and_path() {
        assert_eq!(route(&request("/", &[])), Route::Page);
        assert_eq!(route(&request("/admin.js", &[])), Route::Script);
        assert_eq!(route(&request("/admin.css", &[])), Route::Style);
        assert_eq!(route(&request("/api/description", &[])), Route::Description);
        assert_eq!(
            route(&request("/api/stream?x=1&topic=A%3AB", &[])),
            Route::Stream {
                topic: "A:B".into()
            }
        );
        assert!(matches!(
            route(&request("/api/stream", &[])),
            Route::Error(400, _)
        ));
        assert!(matches!(
            route(&request("/api/call", &[])),
            Route::Error(405, _)
        ));
        assert!(matches!(route(&post("/", "", "")), Route::Error(405, _)));
        assert!(matches!(
            route(&request("/etc/passwd", &[])),
            Route::Error(404, _)
        ));
        assert_eq!(route(&post("/api/call", "", "")), Route::Call);
    }

    #[test]
    fn a_call_body_is_member_payload_and_digest() {
        let ok = post(
            "/api/call",
            "application/json; charset=utf-8",
            r#"{"member":"Orders::place","payload":{"qty":1},"digest":"fnv1a64:00"}"#,
        );
        assert_eq!(
            parse_call(&ok),
            Ok(CallRequest {
                member: "Orders::place".into(),
                payload: serde_json::json!({"qty": 1}),
                digest: Some("fnv1a64:00".into()),
            })
        );
        for (ct, body, status) in [
            ("text/plain", r#"{"member":"A::b","payload":1}"#, 415),
            ("application/json", "{", 400),
            ("application/json", r#"{"payload":1}"#, 400),
            (
                "application/json",
                r#"{"member":"A::b HTTP/1.1","payload":1}"#,
                400,
            ),
            ("application/json", r#"{"member":"A::b"}"#, 400),
            (
                "application/json",
                r#"{"member":"A::b","payload":1,"digest":7}"#,
                400,
            ),
        ] {
            let got = parse_call(&post("/api/call", ct, body));
            assert!(matches!(got, Err((s, _)) if s == status), "{body}: {got:?}");
        }
        assert!(member_name_ok("Orders::place"));
        for bad in ["", "a\r\nb", "x/y", "%41"] {
            assert!(!member_name_ok(bad), "{bad:?}");
        }
    }
}
