// A real browser against `hale admin`: Debian's Chromium, driven headless by
// playwright-core, opens the pages three `hale admin` processes serve for one
// `hale demo` (a hub as dave, public over HTTP as alice and as bob) and does
// what a person would: fill forms, call, subscribe, and watch the outcomes
// and frames arrive while the control socket gates, revokes and stops the
// demo. Then it tries the pages without the token, under a foreign Host and
// from a foreign Origin. Every step waits on what the page shows (with a
// generous deadline), never on a fixed delay. It asserts nothing: it reports
// what it saw as one JSON object for drivers/tests/admin_page.rs, and saves a
// screenshot of each state.
//
// usage: node admin_browser.mjs < plan.json
// plan: {"modules": DIR (node_modules holding playwright-core), "chromium": PATH,
//        "shots": DIR, "control": PATH, "public": "host:port",
//        "hub": URL, "alice": URL, "bob": URL}   (the URLs are the launch URLs)
import { createRequire } from "node:module";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";

const plan = JSON.parse(fs.readFileSync(0, "utf8"));
const require = createRequire(path.join(plan.modules, "playwright-core", "package.json"));
const { chromium } = require("playwright-core");

// Generous: a loaded two-core machine builds while this runs.
const WAIT = 60_000;
const report = { steps: [], console: [], page_errors: [], shots: [] };
const step = (name) => report.steps.push(name);

/** One control-socket line, answered `ok` (anything else is an error). */
function control(line) {
  return new Promise((resolve, reject) => {
    const s = net.connect(plan.control);
    let got = "";
    s.on("connect", () => s.write(`${line}\n`));
    s.on("data", (d) => {
      got += d;
      if (got.includes("\n")) {
        s.end();
        if (got.trim() === "ok") resolve();
        else reject(new Error(`control \`${line}\`: ${got.trim()}`));
      }
    });
    s.on("error", reject);
  });
}

/** Waits until nothing listens at host:port any more (the demo has stopped). */
async function portClosed(addr) {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(":")), Number(addr.slice(addr.lastIndexOf(":") + 1))];
  const deadline = Date.now() + WAIT;
  while (Date.now() < deadline) {
    const open = await new Promise((resolve) => {
      const s = net.connect({ host, port });
      s.on("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.on("error", () => resolve(false));
    });
    if (!open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${addr} still listens`);
}

async function shot(page, name) {
  const file = path.join(plan.shots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  report.shots.push(file);
}

/** A page that records its console errors, failed scripts and every URL it asks for. */
async function adminPage(context, who) {
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") report.console.push(`${who}: ${m.text()}`);
  });
  page.on("pageerror", (e) => report.page_errors.push(`${who}: ${e.message}`));
  const asked = [];
  page.on("request", (r) => asked.push(r.url()));
  return { page, asked };
}

/**
 * The input a card labels `name`: its label starts with the name (then the
 * required mark), so a form or region whose name merely contains it is not
 * taken for it.
 */
function input(card, name) {
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return card.getByLabel(new RegExp(`^${esc}(?![\\w:])`));
}

/** The inputs of a page no label names (there should be none). */
function unlabelled(page) {
  return page.locator("input, select, textarea").evaluateAll((l) => l.filter((i) => !i.labels || i.labels.length === 0).map((i) => i.outerHTML));
}

/** What the identity card shows. */
async function identity(page) {
  const card = page.locator(".id-card").first();
  return {
    exposure: await card.locator(".identity-name").textContent(),
    digest: await card.locator("[data-digest]").getAttribute("data-digest"),
    caller: await card.locator(".caller").textContent(),
    roles: await card.locator(".chip").allTextContents(),
  };
}

/** The members (by name) and streams (by topic) a page lists. */
async function listed(page) {
  const members = (await page.locator("article.member").evaluateAll((a) => a.map((e) => e.dataset.member))).filter((m) => m !== "*");
  const streams = await page.locator("article.stream").evaluateAll((a) => a.map((e) => e.dataset.topic));
  return { members, streams };
}

/**
 * Waits for call `n` of a member's card to be answered, and reads what the
 * outcome card shows: its outcome, its kind, its fields and its raw bytes.
 */
async function outcome(card, n) {
  const o = card.locator(`.outcomes [data-call="${n}"]:not([data-outcome="pending"])`);
  await o.waitFor({ timeout: WAIT });
  return readOutcome(o);
}

async function readOutcome(o) {
  const fields = {};
  for (const kv of await o.locator("dl > [data-field], .why[data-field]").all()) {
    const k = await kv.getAttribute("data-field");
    const chips = await kv.locator(".chip").allTextContents();
    const value = kv.locator("dd .value");
    fields[k] = chips.length ? chips : ((await value.count()) ? await value.first().textContent() : await kv.innerText()).trim();
  }
  return {
    outcome: await o.getAttribute("data-outcome"),
    kind: await o.getAttribute("data-kind"),
    fields,
    raw: (await o.locator("details.raw pre").count()) ? await o.locator("details.raw pre").first().textContent() : null,
    badge: (await o.locator(".badge").count()) ? await o.locator(".badge").textContent() : null,
  };
}

/** The latest frame of a kind in a stream's tail, once it is there. */
async function frame(stream, kind, nth) {
  const f = stream.locator(`.tail [data-frame="${kind}"]`).nth(nth || 0);
  await f.waitFor({ timeout: WAIT });
  return {
    seq: await f.getAttribute("data-seq"),
    reason: await f.getAttribute("data-reason"),
    kind: await f.getAttribute("data-kind"),
    text: (await f.locator(".frame-body").innerText()).trim(),
    raw: await f.locator("details pre").count() ? await f.locator("details pre").first().textContent() : null,
  };
}

const launchArgs = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  // evil.test is 127.0.0.1: a name that rebinds to the page's address.
  "--host-resolver-rules=MAP evil.test 127.0.0.1",
];

// playwright starts Chromium with a fresh --user-data-dir of its own (a
// temporary directory it removes at close), so no earlier profile, cookie or
// cache is read.
let browser;
try {
  browser = await chromium.launch({ executablePath: plan.chromium, headless: true, args: launchArgs, timeout: WAIT });
  const fresh = async () => {
    const c = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    c.setDefaultTimeout(WAIT);
    return c;
  };
  const context = await fresh();

  // ---- alice over HTTP: the page, a result, a handler error, `full`.
  const alice = await adminPage(context, "alice");
  const a = alice.page;
  await a.goto(plan.alice);
  await a.locator('[data-member="Orders::place"]').waitFor();
  report.alice = { url_after_launch: a.url(), identity: await identity(a), ...(await listed(a)) };
  report.unlabelled = await unlabelled(a);
  await shot(a, "01-alice-loaded");
  step("alice loaded");

  // Keyboard only: focus the first field, type, Tab on, Enter submits.
  const place = a.locator('[data-member="Orders::place"]');
  const form = place.locator("form");
  report.alice.place_labels = await form.locator("label").allTextContents();
  report.alice.place_units = await form.locator(".unit").allTextContents();
  report.alice.place_input_types = await form.locator("input:not(.check)").evaluateAll((l) => l.map((i) => [i.labels[0] && i.labels[0].querySelector(".label-name").textContent, i.type]));
  await input(place, "symbol").focus();
  await a.keyboard.type("ACME");
  await a.keyboard.press("Tab");
  await a.keyboard.type("10");
  await a.keyboard.press("Tab");
  await a.keyboard.type("12500");
  await a.keyboard.press("Enter");
  report.alice.place = await outcome(place, 1);
  await shot(a, "02-result");
  step("place: result");

  const cancel = a.locator('[data-member="Orders::cancel"]');
  await input(cancel, "order").fill("999999");
  await cancel.getByRole("button", { name: "Call", exact: true }).click();
  report.alice.cancel = await outcome(cancel, 1);
  // The whole payload as JSON: the toggle shows what the form holds.
  await cancel.getByLabel("Edit the payload as JSON").check();
  report.alice.cancel_json = JSON.parse(await cancel.getByLabel("Payload (JSON)", { exact: true }).inputValue());
  await cancel.getByLabel("Edit the payload as JSON").uncheck();
  // Past 2^53 (a JavaScript number's exact range): i64's largest crosses
  // as its digits, so the handler names that very order.
  await input(cancel, "order").fill("9223372036854775807");
  await cancel.getByRole("button", { name: "Call", exact: true }).click();
  report.alice.cancel_big = await outcome(cancel, 2);
  await shot(a, "03-handler-error");
  step("cancel: handler error");

  // `full`: one call held at the gate, a second refused while it waits.
  await control("gate orders");
  const call = place.getByRole("button", { name: "Call", exact: true });
  await call.click();
  await call.click();
  const full = place.locator('.outcomes [data-outcome="refusal"][data-kind="full"]');
  await full.waitFor();
  const held = place.locator('.outcomes [data-outcome="pending"]');
  report.alice.full = {
    refused: await readOutcome(full),
    pending_while_refused: await held.count(),
    pending_call: await held.first().getAttribute("data-call"),
  };
  await shot(a, "04-full");
  await control("open orders");
  report.alice.full.held = await outcome(place, Number(report.alice.full.pending_call));
  step("full, then the held call answered");

  // Over the position limit: the handler violates its closure, and the
  // caller sees the server error, nothing of the violation.
  await input(place, "qty").fill("20000");
  const next = (await place.locator(".outcomes [data-call]").count()) + 1;
  await call.click();
  report.alice.violated = await outcome(place, next);
  await input(place, "qty").fill("10");
  await shot(a, "04b-server-error");
  step("place over the limit: server error");

  // Reload: the program has not moved.
  await a.getByRole("button", { name: "Reload description" }).click();
  await a.locator(".notice-ok, .notice-moved").waitFor();
  report.alice.reload = (await a.locator("#notice").innerText()).trim();
  step("reload");

  // ---- bob: the description lists no cancel; calling it by name is refused.
  const bob = await adminPage(context, "bob");
  const b = bob.page;
  await b.goto(plan.bob);
  await b.locator('[data-member="Orders::place"]').waitFor();
  report.bob = { identity: await identity(b), ...(await listed(b)) };
  report.unlabelled.push(...(await unlabelled(b)));
  const any = b.locator('[data-member="*"]');
  await input(any, "member").fill("Orders::cancel");
  await input(any, "payload (JSON)").fill('{"order": 1}');
  await any.getByRole("button", { name: "Call", exact: true }).click();
  report.bob.cancel = await outcome(any, 1);
  await shot(b, "05-refusal-requires");
  step("bob: refusal naming requires");

  // ---- dave over the hub: members (the hub's desk), Fills, its frames.
  const dave = await adminPage(context, "dave");
  const h = dave.page;
  await h.goto(plan.hub);
  await h.locator('[data-topic="Fills"]').waitFor();
  report.hub = { ...(await listed(h)), identities: await h.locator(".id-card .identity-name").allTextContents() };
  report.unlabelled.push(...(await unlabelled(h)));
  const fills = h.locator('[data-topic="Fills"]');
  const subscribe = fills.getByRole("button", { name: "Subscribe", exact: true });
  await subscribe.click();
  report.hub.subscribed = await frame(fills, "subscribed");
  const hubPlace = h.locator('[data-member="Orders::place"]');
  await input(hubPlace, "symbol").fill("ACME");
  await input(hubPlace, "qty").fill("7");
  await input(hubPlace, "limit").fill("12600");
  await hubPlace.getByRole("button", { name: "Call", exact: true }).click();
  report.hub.place = await outcome(hubPlace, 1);
  report.hub.event = await frame(fills, "event");
  await shot(h, "06-stream-event");
  step("hub: an event with its seq");

  await control("revoke dave operator");
  report.hub.revoked = await frame(fills, "unauthorized");
  report.hub.status_after_revoke = await fills.locator(".pill").textContent();
  await shot(h, "07-stream-revoked");
  await subscribe.click();
  report.hub.refused = await frame(fills, "refusal");
  report.hub.refused_fields = await readOutcome(fills.locator('.tail [data-frame="refusal"] .outcome').first()).catch(() => null);
  step("hub: revoked, then refused");

  await control("grant dave operator");
  await subscribe.click();
  await frame(fills, "subscribed", 1);
  const unsubscribe = fills.getByRole("button", { name: "Unsubscribe", exact: true });
  await unsubscribe.click();
  await fills.locator(".pill-idle").waitFor();
  report.hub.unsubscribed = await fills.locator(".pill").textContent();
  await subscribe.click();
  await frame(fills, "subscribed", 2);
  await control("stop");
  report.hub.closed = await frame(fills, "closed");
  report.hub.status_after_stop = await fills.locator(".pill").textContent();
  await shot(h, "08-stream-closed");
  step("hub: closed at stop");

  // The demo is gone: alice's next call has no answer.
  await portClosed(plan.public);
  await place.getByRole("button", { name: "Call", exact: true }).click();
  const last = Number(await place.locator(".outcomes [data-call]").first().getAttribute("data-call"));
  report.alice.after_stop = await outcome(place, last);
  await shot(a, "09-no-answer");
  step("alice: no answer");

  // After the launch URL, no request the pages made carried the token.
  report.token_in_later_urls = [alice, bob, dave].flatMap((p) => p.asked.slice(1)).filter((u) => /token=/.test(u));

  // ---- the refusals: no token, a foreign Host, a foreign Origin.
  const launch = new URL(plan.hub);
  const origin = launch.origin;
  const port = launch.port;
  const token = launch.searchParams.get("token");
  const routes = ["/", "/admin.js", "/admin.css", "/api/description", "/api/stream?topic=Fills"];

  // A second context: a browser that never opened the launch URL.
  const stranger = await (await fresh()).newPage();
  report.no_token = {};
  for (const r of routes) report.no_token[r] = (await stranger.goto(origin + r)).status();
  report.no_token["POST /api/call"] = await stranger.evaluate(async () => {
    const res = await fetch("/api/call", { method: "POST", headers: { "Content-Type": "application/json" }, body: '{"member":"Orders::place","payload":{},"digest":null}' });
    return res.status;
  });
  await stranger.goto(origin + "/");
  report.no_token_body = (await stranger.locator("body").innerText()).trim();
  await shot(stranger, "10-no-token");

  // A foreign Host: evil.test resolves to 127.0.0.1, and the request names
  // the right token; it is refused all the same, and sets no cookie.
  report.foreign_host = {};
  for (const r of ["/?token=" + token, ...routes]) {
    report.foreign_host[r] = (await stranger.goto(`http://evil.test:${port}${r}`)).status();
  }
  report.foreign_host_cookies = (await stranger.context().cookies()).map((c) => `${c.domain} ${c.name}`);
  await shot(stranger, "11-foreign-host");

  // A foreign Origin: a page at another port of 127.0.0.1 (same site, so
  // dave's cookie rides along) fetching the admin's routes with credentials.
  const elsewhere = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<!doctype html><title>elsewhere</title><p>another origin</p>");
  });
  await new Promise((r) => elsewhere.listen(0, "127.0.0.1", r));
  const other = `http://127.0.0.1:${elsewhere.address().port}`;
  const visitor = await context.newPage();
  await visitor.goto(other + "/");
  // The browser withholds a cross-origin answer from the script (no CORS
  // header), and playwright reports such a request as failed; the
  // DevTools protocol's network events still carry what went on the wire:
  // the headers sent (Origin, Cookie) and the status answered.
  const wire = new Map();
  const entry = (id) => wire.get(id) || wire.set(id, {}).get(id);
  const cdp = await context.newCDPSession(visitor);
  await cdp.send("Network.enable");
  cdp.on("Network.requestWillBeSent", (e) => Object.assign(entry(e.requestId), { url: e.request.url, method: e.request.method }));
  cdp.on("Network.requestWillBeSentExtraInfo", (e) => {
    const h = Object.fromEntries(Object.entries(e.headers).map(([k, v]) => [k.toLowerCase(), v]));
    Object.assign(entry(e.requestId), { origin: h.origin || null, cookie: /hale-admin-/.test(h.cookie || "") });
  });
  cdp.on("Network.responseReceivedExtraInfo", (e) => Object.assign(entry(e.requestId), { status: e.statusCode }));
  report.foreign_origin = {};
  const attempts = routes.filter((r) => r !== "/").map((r) => ["GET", r]).concat([["POST", "/api/call"]]);
  for (const [method, r] of attempts) {
    const url = origin + r;
    await visitor.evaluate(
      async ([u, m]) => {
        try {
          await fetch(u, { method: m, mode: "cors", credentials: "include", body: m === "POST" ? '{"member":"Orders::place","payload":{},"digest":null}' : undefined });
        } catch (_) {
          // Withheld from the script, as a cross-origin answer is.
        }
      },
      [url, method]
    );
    const deadline = Date.now() + WAIT;
    let seen = null;
    while (!seen && Date.now() < deadline) {
      seen = [...wire.values()].find((w) => w.url === url && w.method === method && w.status !== undefined && w.cookie !== undefined) || null;
      if (!seen) await new Promise((res) => setTimeout(res, 20));
    }
    report.foreign_origin[`${method} ${r}`] = seen && { status: seen.status, origin: seen.origin, cookie: seen.cookie };
    wire.clear();
  }
  elsewhere.close();
  step("403s");
} catch (e) {
  report.error = `${e && e.stack ? e.stack : e}`;
} finally {
  if (browser) await browser.close().catch(() => {});
}
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(report.error ? 1 : 0);
