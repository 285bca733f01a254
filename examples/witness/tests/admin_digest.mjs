// A real browser against `hale admin` while the program moves under it:
// Debian's Chromium, driven headless by playwright-core, opens the page for
// a served witness (public over HTTP, as alice) and reads the digest it
// shows. It says so on stdout and waits on stdin while examples/witness/
// tests/admin_digest.rs serves a changed program on the same port. Then it
// calls Orders::place from the form, which still names the digest read
// before (the refusal digest_mismatch naming the served one), reloads the
// description (the page says the digest moved) and calls again (a result).
// Every step waits on what the page shows, with a generous deadline, never
// on a fixed delay. It asserts nothing: it reports what it saw, and saves a
// screenshot of each state.
//
// usage: node admin_digest.mjs PLAN
// plan (JSON): {"modules": DIR (node_modules holding playwright-core),
//               "chromium": PATH, "shots": DIR, "url": the launch URL}
// stdout: a line {"ready": true, "digest": D} once the page is loaded, then
//         the report, one JSON line; stdin: a line once the program moved.
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const plan = JSON.parse(process.argv[2]);
const require = createRequire(path.join(plan.modules, "playwright-core", "package.json"));
const { chromium } = require("playwright-core");

// Generous: a loaded two-core machine builds while this runs.
const WAIT = 60_000;
// The Rust side stops a server and starts another before it answers.
const MOVE_WAIT = 120_000;
const report = { steps: [], console: [], page_errors: [], shots: [] };
const step = (name) => report.steps.push(name);

// The lines on stdin, as they come.
const lines = [];
const waiting = [];
readline.createInterface({ input: process.stdin }).on("line", (l) => {
  const w = waiting.shift();
  if (w) w(l);
  else lines.push(l);
});

/** The next line on stdin, within `ms`. */
function nextLine(ms) {
  if (lines.length) return Promise.resolve(lines.shift());
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line on stdin within ${ms} ms`)), ms);
    waiting.push((l) => {
      clearTimeout(timer);
      resolve(l);
    });
  });
}

async function shot(page, name) {
  const file = path.join(plan.shots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  report.shots.push(file);
}

/** The input a card labels `name` (its label starts with the name). */
function input(card, name) {
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return card.getByLabel(new RegExp(`^${esc}(?![\\w:])`));
}

/** The digest the identity card shows. */
function shownDigest(page) {
  return page.locator(".id-card [data-digest]").first().getAttribute("data-digest");
}

/**
 * Waits for call `n` of a card to be answered and reads its outcome card:
 * outcome, kind, fields, and the request the page sent (with its digest).
 */
async function outcome(card, n) {
  const o = card.locator(`.outcomes [data-call="${n}"]:not([data-outcome="pending"])`);
  await o.waitFor({ timeout: WAIT });
  const fields = {};
  for (const kv of await o.locator("dl > [data-field]").all()) {
    const k = await kv.getAttribute("data-field");
    const chips = await kv.locator(".chip").allTextContents();
    const value = kv.locator("dd .value");
    fields[k] = chips.length ? chips : ((await value.count()) ? await value.first().textContent() : await kv.innerText()).trim();
  }
  // The raw details: the outcome's bytes, then the request as sent.
  let sent = null;
  for (const pre of await o.locator("details pre").allTextContents()) {
    try {
      const v = JSON.parse(pre);
      if (v && typeof v === "object" && "member" in v && "digest" in v) sent = v;
    } catch (_) {
      // Not JSON: not the request.
    }
  }
  return {
    outcome: await o.getAttribute("data-outcome"),
    kind: await o.getAttribute("data-kind"),
    fields,
    sent,
    why: (await o.locator("p.why").count()) ? (await o.locator("p.why").first().innerText()).trim() : null,
  };
}

/** Fills Orders::place's form and clicks Call. */
async function place(card) {
  await input(card, "symbol").fill("ACME");
  await input(card, "qty").fill("10");
  await input(card, "limit").fill("12500");
  await card.getByRole("button", { name: "Call", exact: true }).click();
}

let browser;
try {
  browser = await chromium.launch({
    executablePath: plan.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    timeout: WAIT,
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") report.console.push(m.text());
  });
  page.on("pageerror", (e) => report.page_errors.push(e.message));

  await page.goto(plan.url);
  const card = page.locator('[data-member="Orders::place"]');
  await card.waitFor();
  report.first_digest = await shownDigest(page);
  step("loaded");
  process.stdout.write(`${JSON.stringify({ ready: true, digest: report.first_digest })}\n`);

  // The program moves under the page: another server on the same port.
  report.moved_line = await nextLine(MOVE_WAIT);
  step("the program moved");

  // The page still shows the description read at load, and the call
  // names its digest: the served one differs.
  report.digest_at_call = await shownDigest(page);
  report.requires_before = (await card.locator(".requires").innerText()).replace(/\s+/g, " ").trim();
  await place(card);
  report.mismatch = await outcome(card, 1);
  await shot(page, "12-digest-mismatch");
  step("call: digest_mismatch");

  await page.getByRole("button", { name: "Reload description" }).click();
  await page.locator("#notice.notice-moved, #notice.notice-ok, #notice.notice-bad").waitFor();
  const notice = page.locator("#notice");
  report.notice = {
    class: await notice.getAttribute("class"),
    text: (await notice.innerText()).trim(),
    digests: await notice.locator("code").allTextContents(),
  };
  report.reloaded_digest = await shownDigest(page);
  await shot(page, "13-digest-moved");
  step("reload: the digest moved");

  // The forms were rebuilt from the new description, keeping what was
  // typed and the outcomes so far: calling again needs no retyping, and
  // the call is numbered on.
  const again = page.locator('[data-member="Orders::place"]');
  report.requires_after = (await again.locator(".requires").innerText()).replace(/\s+/g, " ").trim();
  report.kept = {
    values: [await input(again, "symbol").inputValue(), await input(again, "qty").inputValue(), await input(again, "limit").inputValue()],
    first_outcome: await again.locator('.outcomes [data-call="1"]').getAttribute("data-kind"),
  };
  await again.getByRole("button", { name: "Call", exact: true }).click();
  report.second = await outcome(again, 2);
  await shot(page, "14-after-reload");
  step("call again: result");
} catch (e) {
  report.error = `${e && e.stack ? e.stack : e}`;
} finally {
  if (browser) await browser.close().catch(() => {});
}
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(report.error ? 1 : 0);
