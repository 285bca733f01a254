// The page of `hale admin`: it reads the endpoint's description through the
// admin's own API (/api/description), builds a form per member from the
// member's request schema and a live tail per stream, and shows each call's
// outcome as the five outcomes distinguish it. Every action is one request
// to the admin, which makes one request to the endpoint. The page is served
// under a CSP that forbids inline script and style, so everything here is
// built with DOM calls and styled through classes.
"use strict";

(() => {
  // ---------------------------------------------------------------- helpers

  let nextId = 0;
  /** A fresh element id, so every label can name its input. */
  const freshId = (stem) => `${stem.replace(/[^A-Za-z0-9_-]/g, "-")}-${++nextId}`;

  /**
   * An element: `attrs` are attributes (`class`, `data-*`, `aria-*`, …),
   * except `text` (its text) and `on*` functions (listeners); children are
   * nodes or strings, null and false skipped.
   */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
      else if (v === true) node.setAttribute(k, "");
      else node.setAttribute(k, String(v));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  const clear = (node) => {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  };

  const pretty = (v) => JSON.stringify(v, null, 2);

  // Hale's integers are 64-bit; a JavaScript number is exact only to 2^53.
  // An integer past that is kept as its digits (JSON.rawJSON, which
  // JSON.stringify writes back as they were), wherever the page reads or
  // writes JSON, so an OrderId of 2^60 is sent and shown as it is.
  const canKeepDigits = typeof JSON.rawJSON === "function";
  const isDigits = (v) => canKeepDigits && JSON.isRawJSON(v);
  const exactParse = (text) =>
    JSON.parse(text, (key, value, context) =>
      typeof value === "number" && !Number.isSafeInteger(value) && canKeepDigits && context && /^-?\d+$/.test(context.source)
        ? JSON.rawJSON(context.source)
        : value
    );
  const clock = () => new Date().toLocaleTimeString([], { hour12: false });

  /** Role chips: the roles, or a word saying there are none. */
  function chips(list, none) {
    if (!Array.isArray(list) || list.length === 0) return el("span", { class: "muted", text: none });
    return el("span", { class: "chips" }, list.map((r) => el("span", { class: "chip", text: r })));
  }

  /** A `<details>` holding raw text, one click away. */
  function rawDetails(summary, text, cls) {
    return el(
      "details",
      { class: `raw ${cls || ""}` },
      el("summary", { text: summary }),
      el("pre", { class: "code", text: text === "" ? "(empty)" : text })
    );
  }

  // ---------------------------------------------------------------- state

  const state = {
    /** The last /api/description answer. */
    description: null,
    /** topic → the open subscription's record. */
    tails: new Map(),
  };

  /** The document of one Fetched, or null. */
  const doc = (fetched) => (fetched && fetched.document && typeof fetched.document === "object" ? fetched.document : null);

  /** The digest a call names: the one of the description shown now. */
  function shownDigest() {
    const d = doc(state.description && state.description.exposure);
    return d && typeof d.digest === "string" ? d.digest : null;
  }

  // ---------------------------------------------------------------- schemas

  /**
   * `schema` with its `$ref` into the document's schemas followed (as many
   * as chain), remembering the type's name; null when a reference does not
   * resolve or loops, which the form treats as "edit as JSON".
   */
  function resolve(schema, schemas, seen) {
    let s = schema;
    let name = null;
    const path = new Set(seen || []);
    while (s && typeof s === "object" && typeof s.$ref === "string") {
      const m = /^#\/schemas\/(.+)$/.exec(s.$ref);
      const key = m ? decodeURIComponent(m[1]).replace(/~1/g, "/").replace(/~0/g, "~") : null;
      if (!key || path.has(key) || !schemas || !Object.prototype.hasOwnProperty.call(schemas, key)) return null;
      path.add(key);
      name = key;
      s = schemas[key];
    }
    if (!s || typeof s !== "object") return null;
    return { schema: s, name, seen: path };
  }

  /** The one JSON type a schema's `type` names, `["T","null"]` counting as T. */
  function typeOf(s) {
    if (typeof s.type === "string") return s.type;
    if (Array.isArray(s.type)) {
      const t = s.type.filter((x) => x !== "null");
      if (t.length === 1) return t[0];
      return null;
    }
    if (s.properties && typeof s.properties === "object") return "object";
    return null;
  }

  /** A short name for a schema, for signatures: its type's name, else its JSON type. */
  function typeName(schema, schemas) {
    if (schema === "ClosureViolation") return "ClosureViolation";
    const r = resolve(schema, schemas);
    if (!r) return schema && schema.$ref ? schema.$ref : "any";
    if (r.name) return r.name;
    const s = r.schema;
    if (s["x-hale-type"]) return s["x-hale-type"];
    if (s.type === "array" && s.items) return `[${typeName(s.items, schemas)}]`;
    return typeOf(s) || "any";
  }

  // ---------------------------------------------------------------- fields

  /** A value a field cannot give: where, and why. */
  class FieldError extends Error {
    constructor(input, message) {
      super(message);
      this.input = input;
    }
  }

  /** The hint line under a field: its Hale type and its unit. */
  function hintOf(s, typeLabel) {
    const parts = [];
    if (s["x-hale-type"]) parts.push(el("span", { class: "hint-type", text: s["x-hale-type"] }));
    else if (typeLabel) parts.push(el("span", { class: "hint-type", text: typeLabel }));
    if (s["x-hale-unit"]) parts.push(el("span", { class: "hint-unit", text: `unit ${s["x-hale-unit"]}` }));
    if (typeof s.description === "string") parts.push(el("span", { class: "hint-text", text: s.description }));
    return parts;
  }

  /** A label naming `key`, marked when required. */
  function labelFor(id, key, required) {
    return el(
      "label",
      { for: id, class: "label" },
      el("span", { class: "label-name", text: key }),
      required ? el("abbr", { class: "req", title: "required", text: "*" }) : null,
      required ? el("span", { class: "sr-only", text: " (required)" }) : el("span", { class: "optional", text: "optional" })
    );
  }

  /**
   * A field for `schema` under `key`: { node, get(), set(value) }. `get`
   * answers { present, value } (absent for an optional field left empty)
   * or throws a FieldError; `set` shows a value in it.
   */
  function buildField(schema, key, required, schemas, seen, depth) {
    const r = resolve(schema, schemas, seen);
    const s = r ? r.schema : {};
    const type = r ? typeOf(s) : null;
    const id = freshId(`f-${key}`);

    if (r && type === "object" && s.properties && typeof s.properties === "object" && depth < 8) {
      return objectField(s, r, key, required, schemas, depth);
    }
    const hintId = `${id}-hint`;
    const hint = hintOf(s, r && r.name);
    const describedBy = hint.length ? hintId : null;
    const hintNode = hint.length ? el("span", { id: hintId, class: "hint" }, hint) : null;
    const unit = s["x-hale-unit"] ? el("span", { class: "unit", "aria-hidden": "true", text: s["x-hale-unit"] }) : null;
    const wrap = (input, cls) =>
      el("div", { class: `field ${cls}`, "data-field": key }, labelFor(id, key, required), el("div", { class: "control" }, input, unit), hintNode);

    if (r && Array.isArray(s.enum) && s.enum.every((v) => typeof v === "string")) {
      const select = el(
        "select",
        { id, "aria-describedby": describedBy, "aria-required": required ? "true" : null },
        required ? null : el("option", { value: "", text: "(none)" }),
        s.enum.map((v) => el("option", { value: v, text: v }))
      );
      return {
        node: wrap(select, "field-enum"),
        get: () => (select.value === "" && !required ? { present: false } : { present: true, value: select.value }),
        set: (v) => {
          select.value = typeof v === "string" ? v : "";
        },
      };
    }
    if (r && (type === "integer" || type === "number")) {
      const input = el("input", {
        id,
        type: "number",
        inputmode: type === "integer" ? "numeric" : "decimal",
        step: type === "integer" ? "1" : "any",
        "aria-describedby": describedBy,
        "aria-required": required ? "true" : null,
        class: "input",
      });
      return {
        node: wrap(input, "field-number"),
        get: () => {
          const text = input.value.trim();
          if (text === "") {
            if (input.validity && input.validity.badInput) throw new FieldError(input, `${key} is not a number`);
            if (required) throw new FieldError(input, `${key} is required`);
            return { present: false };
          }
          const n = Number(text);
          if (!Number.isFinite(n)) throw new FieldError(input, `${key} is not a number`);
          if (type === "integer" && !Number.isInteger(n)) throw new FieldError(input, `${key} must be a whole number`);
          if (type === "integer" && !Number.isSafeInteger(n)) {
            // Past 2^53 the number would be rounded: send the digits.
            if (!/^-?\d+$/.test(text) || !canKeepDigits) throw new FieldError(input, `${key}: write a whole number this large as plain digits`);
            return { present: true, value: JSON.rawJSON(text.replace(/^(-?)0+(?=\d)/, "$1")) };
          }
          return { present: true, value: n };
        },
        set: (v) => {
          input.value = typeof v === "number" ? String(v) : isDigits(v) ? v.rawJSON : "";
        },
      };
    }
    if (r && type === "boolean") {
      const input = el("input", { id, type: "checkbox", class: "check", "aria-describedby": describedBy });
      return {
        node: el(
          "div",
          { class: "field field-bool", "data-field": key },
          el("div", { class: "control" }, input, labelFor(id, key, required)),
          hintNode
        ),
        get: () => ({ present: true, value: input.checked }),
        set: (v) => {
          input.checked = v === true;
        },
      };
    }
    if (r && type === "string") {
      const input = el("input", {
        id,
        type: "text",
        class: "input",
        autocomplete: "off",
        spellcheck: "false",
        "aria-describedby": describedBy,
        "aria-required": required ? "true" : null,
      });
      return {
        node: wrap(input, "field-string"),
        get: () => (input.value === "" && !required ? { present: false } : { present: true, value: input.value }),
        set: (v) => {
          input.value = typeof v === "string" ? v : "";
        },
      };
    }
    // Anything else (arrays, unions, maps, a reference that does not
    // resolve): a JSON editor for this field.
    return jsonField(id, key, required, s, r, hint, hintId);
  }

  function jsonField(id, key, required, s, r, hint, hintId) {
    const extra = el("span", { class: "hint-text", text: "JSON" });
    const hintNode = el("span", { id: hintId, class: "hint" }, hint, extra);
    const area = el("textarea", {
      id,
      class: "input json",
      rows: "3",
      spellcheck: "false",
      "aria-describedby": hintId,
      "aria-required": required ? "true" : null,
      placeholder: r ? schemaSketch(s) : "any JSON value",
    });
    return {
      node: el(
        "div",
        { class: "field field-json", "data-field": key },
        labelFor(id, key, required),
        el("div", { class: "control" }, area),
        hintNode
      ),
      get: () => {
        const text = area.value.trim();
        if (text === "") {
          if (required) throw new FieldError(area, `${key} is required`);
          return { present: false };
        }
        try {
          return { present: true, value: exactParse(text) };
        } catch (e) {
          throw new FieldError(area, `${key} is not JSON: ${e.message}`);
        }
      },
      set: (v) => {
        area.value = v === undefined ? "" : pretty(v);
      },
    };
  }

  /** A one-line sketch of a schema, as a JSON editor's placeholder. */
  function schemaSketch(s) {
    const t = typeOf(s);
    if (t === "array") return "[ … ]";
    if (t === "object") return "{ … }";
    if (Array.isArray(s.oneOf) || Array.isArray(s.anyOf)) return "one of several shapes (JSON)";
    return t ? `${t} (JSON)` : "any JSON value";
  }

  function objectField(s, r, key, required, schemas, depth) {
    const requiredSet = new Set(Array.isArray(s.required) ? s.required : []);
    const children = Object.entries(s.properties).map(([k, sub]) => [
      k,
      buildField(sub, k, requiredSet.has(k), schemas, r.seen, depth + 1),
    ]);
    const legendHint = r.name || s["x-hale-type"];
    const node =
      depth === 0
        ? el("div", { class: "fields" }, children.map(([, c]) => c.node))
        : el(
            "fieldset",
            { class: "fieldset", "data-field": key },
            el(
              "legend",
              {},
              el("span", { class: "label-name", text: key }),
              legendHint ? el("span", { class: "hint-type", text: legendHint }) : null,
              required ? el("abbr", { class: "req", title: "required", text: "*" }) : null,
              required ? el("span", { class: "sr-only", text: " (required)" }) : el("span", { class: "optional", text: "optional" })
            ),
            el("div", { class: "fields" }, children.map(([, c]) => c.node))
          );
    return {
      node,
      get: () => {
        const value = {};
        let any = false;
        for (const [k, c] of children) {
          const got = c.get();
          if (got.present) {
            value[k] = got.value;
            any = true;
          }
        }
        return any || required || depth === 0 ? { present: true, value } : { present: false };
      },
      set: (v) => {
        for (const [k, c] of children) c.set(v && typeof v === "object" ? v[k] : undefined);
      },
    };
  }

  // ---------------------------------------------------------------- values

  /**
   * A value shown as its schema's fields: an object as a list of its
   * properties (the schema's order first, units beside), else JSON.
   */
  function renderValue(value, schema, schemas, depth) {
    const r = schema ? resolve(schema, schemas) : null;
    const s = r ? r.schema : {};
    if (value && typeof value === "object" && !Array.isArray(value) && !isDigits(value) && (depth || 0) < 6) {
      const props = s.properties && typeof s.properties === "object" ? s.properties : {};
      const keys = Object.keys(props).filter((k) => k in value);
      for (const k of Object.keys(value)) if (!keys.includes(k)) keys.push(k);
      if (keys.length === 0) return el("code", { class: "value", text: "{}" });
      return el(
        "dl",
        { class: "fields-view" },
        keys.map((k) => {
          const sub = props[k] ? resolve(props[k], schemas) : null;
          const unit = sub && sub.schema["x-hale-unit"];
          return el(
            "div",
            { class: "kv", "data-field": k },
            el("dt", { text: k }),
            el(
              "dd",
              {},
              renderValue(value[k], props[k], schemas, (depth || 0) + 1),
              unit ? el("span", { class: "unit", text: unit }) : null
            )
          );
        })
      );
    }
    if (typeof value === "string") return el("code", { class: "value value-string", text: value });
    if (value === null || typeof value !== "object" || isDigits(value)) return el("code", { class: "value", text: JSON.stringify(value) });
    return el("pre", { class: "code", text: pretty(value) });
  }

  // ---------------------------------------------------------------- identity

  function renderIdentity() {
    const d = state.description;
    const box = clear(document.getElementById("identity"));
    document.getElementById("endpoint").textContent = d ? `${d.endpoint} · ${d.transport}` : "";
    const parts = [];
    if (d && d.exposure) parts.push(fetchedCard(d.exposure, d.transport === "ws" ? "Surface on the hub" : "Exposure"));
    if (d && d.hub) parts.push(fetchedCard(d.hub, "Hub"));
    if (d && !d.exposure && !d.hub) parts.push(el("p", { class: "muted", text: "The endpoint answered no description." }));
    append(box, parts);
  }

  function fetchedCard(f, title) {
    const d = doc(f);
    const card = el("article", { class: "card id-card", "data-part": title });
    if (!d) {
      if (f.refusal) {
        append(card, [
          el("h3", { text: `${title}: the description was refused` }),
          el("div", { class: "outcome outcome-refusal", "data-outcome": "refusal" }, refusalView(f.refusal)),
        ]);
      } else if (f.error) {
        append(card, [
          el("h3", { text: `${title}: no description` }),
          el("p", { class: "outcome outcome-no_answer", text: f.error }),
        ]);
      } else {
        append(card, [el("h3", { text: `${title}: no description` })]);
      }
      if (f.raw) append(card, [rawDetails("Raw bytes", f.raw)]);
      return card;
    }
    const principal = d.caller && d.caller.principal ? d.caller.principal : {};
    const who = principal.name ? `${principal.name}` : "nobody";
    const listener = d.listener ? `${d.listener.transport} ${d.listener.address}` : "";
    append(card, [
      el("h3", {}, el("span", { class: "muted small", text: `${title} ` }), el("span", { class: "identity-name", text: d.exposure || d.name || "" })),
      el(
        "dl",
        { class: "meta" },
        metaRow("Name", d.name),
        metaRow("Surface", d.surface === null ? "none (streams only)" : d.surface),
        metaRow("Digest", el("code", { class: "digest", "data-digest": d.digest, text: d.digest })),
        metaRow("Listener", listener),
        metaRow("Caller", el("span", {}, el("strong", { class: "caller", text: who }), principal.mode ? el("span", { class: "muted", text: ` (${principal.mode})` }) : null)),
        metaRow("Roles", chips(d.caller && d.caller.roles, "none"))
      ),
      d.notes && typeof d.notes === "object"
        ? el(
            "details",
            { class: "notes" },
            el("summary", { text: "Notes" }),
            el("dl", { class: "meta" }, Object.entries(d.notes).map(([k, v]) => metaRow(k, String(v))))
          )
        : null,
      rawDetails("Raw description", f.raw || pretty(d)),
    ]);
    return card;
  }

  function metaRow(k, v) {
    return el("div", { class: "kv" }, el("dt", { text: k }), el("dd", {}, v === undefined || v === null ? "" : v));
  }

  // ---------------------------------------------------------------- members

  function renderMembers() {
    const carried = carryMembers();
    const box = clear(document.getElementById("members"));
    const d = doc(state.description && state.description.exposure);
    const members = d && Array.isArray(d.members) ? d.members : [];
    const schemas = (d && d.schemas) || {};
    if (d && members.length === 0) box.append(el("p", { class: "muted", text: "This description lists no member this caller may call." }));
    if (!d && state.description && !state.description.exposure) box.append(el("p", { class: "muted", text: "This endpoint carries no surface: streams only." }));
    for (const m of members) box.append(memberCard(m, schemas, carried.get(m.name)));
    if (d) box.append(anyMemberCard(members));
  }

  /**
   * What each member's card holds before the forms are rebuilt (a reload
   * whose digest moved): what was typed and the outcomes shown, so the
   * history stays on the page and the calls go on being numbered.
   */
  function carryMembers() {
    const carried = new Map();
    for (const card of document.querySelectorAll("#members article.member")) {
      if (card.carry) carried.set(card.dataset.member, card.carry());
    }
    return carried;
  }

  function memberCard(m, schemas, carried) {
    const formId = freshId(`m-${m.name}`);
    const titleId = `${formId}-title`;
    const request = resolve(m.request, schemas);
    const topType = request ? typeOf(request.schema) : null;
    let root;
    if (request && topType === "null") {
      root = { node: el("p", { class: "muted", text: "This member takes no payload." }), get: () => ({ present: true, value: null }), set: () => {} };
    } else if (request && topType === "object" && request.schema.properties) {
      root = buildField(m.request, "payload", true, schemas, [], 0);
    } else {
      root = buildField(m.request, "payload", true, schemas, [], 1);
    }

    const jsonId = `${formId}-json`;
    const toggleId = `${formId}-toggle`;
    const jsonArea = el("textarea", { id: jsonId, class: "input json json-payload", rows: "6", spellcheck: "false" });
    const jsonBox = el("div", { class: "field field-json", hidden: true }, el("label", { for: jsonId, class: "label" }, el("span", { class: "label-name", text: "Payload (JSON)" })), jsonArea);
    const formFields = el("div", { class: "form-fields" }, root.node);
    const toggle = el("input", { id: toggleId, type: "checkbox", class: "check" });
    const error = el("p", { class: "form-error", role: "alert" });
    const outcomes = el("div", { class: "outcomes", "aria-live": "polite", "aria-relevant": "additions text", "aria-label": `Outcomes of ${m.name}` });
    let counter = 0;
    if (carried) {
      // A field the new schema no longer has is dropped; one it changed
      // is left as the form's set makes it.
      try {
        if (carried.value !== undefined) root.set(carried.value);
      } catch (_) {
        /* the old value does not fit the new form */
      }
      for (const node of carried.nodes) outcomes.append(node);
      counter = carried.counter;
    }

    toggle.addEventListener("change", () => {
      error.textContent = "";
      if (toggle.checked) {
        let value;
        try {
          value = root.get().value;
        } catch (_) {
          value = skeleton(m.request, schemas, 0);
        }
        jsonArea.value = pretty(value === undefined ? null : value);
        jsonBox.hidden = false;
        formFields.hidden = true;
        jsonArea.focus();
      } else {
        let value;
        try {
          value = exactParse(jsonArea.value);
        } catch (e) {
          toggle.checked = true;
          error.textContent = `The payload is not JSON (${e.message}); fix it to go back to the form.`;
          return;
        }
        root.set(value);
        jsonBox.hidden = true;
        formFields.hidden = false;
      }
    });

    const form = el(
      "form",
      { class: "member-form", "aria-labelledby": titleId, novalidate: true },
      formFields,
      jsonBox,
      error,
      el(
        "div",
        { class: "form-actions" },
        el("button", { type: "submit", class: "button primary", text: "Call" }),
        el("span", { class: "toggle" }, toggle, el("label", { for: toggleId, text: "Edit the payload as JSON" }))
      )
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      error.textContent = "";
      let payload;
      if (toggle.checked) {
        try {
          payload = exactParse(jsonArea.value);
        } catch (e) {
          error.textContent = `The payload is not JSON: ${e.message}`;
          jsonArea.focus();
          return;
        }
      } else {
        try {
          payload = root.get().value;
        } catch (e) {
          error.textContent = e.message;
          if (e.input) e.input.focus();
          return;
        }
      }
      call(m.name, payload, outcomes, ++counter, m, schemas);
    });

    const errorLabel = m.error === "ClosureViolation" ? "ClosureViolation (server error)" : typeName(m.error, schemas);
    const article = el(
      "article",
      { class: "card member", "data-member": m.name },
      el(
        "header",
        { class: "card-head" },
        el("h3", { id: titleId, class: "member-name", text: m.name }),
        el("span", { class: "requires" }, el("span", { class: "muted", text: "requires " }), chips(m.requires, "nothing"))
      ),
      el(
        "p",
        { class: "signature" },
        el("code", { text: typeName(m.request, schemas) }),
        el("span", { class: "arrow", "aria-label": "returns", text: " → " }),
        el("code", { text: typeName(m.response, schemas) }),
        el("span", { class: "muted", text: " · error " }),
        el("code", { text: errorLabel })
      ),
      form,
      outcomes
    );
    article.carry = () => {
      let value;
      try {
        value = toggle.checked ? exactParse(jsonArea.value) : root.get().value;
      } catch (_) {
        value = undefined;
      }
      return { value, nodes: Array.from(outcomes.children), counter };
    };
    return article;
  }

  /** A card to call any member by name, as the description lists only what this caller may use. */
  function anyMemberCard(members) {
    const id = freshId("any");
    const listId = `${id}-list`;
    const nameInput = el("input", { id: `${id}-member`, class: "input", type: "text", list: listId, autocomplete: "off", spellcheck: "false", "aria-required": "true" });
    const area = el("textarea", { id: `${id}-payload`, class: "input json", rows: "4", spellcheck: "false" });
    area.value = "{}";
    const error = el("p", { class: "form-error", role: "alert" });
    const outcomes = el("div", { class: "outcomes", "aria-live": "polite", "aria-relevant": "additions text", "aria-label": "Outcomes of calls by name" });
    let counter = 0;
    const form = el(
      "form",
      { class: "member-form", "aria-labelledby": `${id}-title`, novalidate: true },
      el(
        "div",
        { class: "fields" },
        el("div", { class: "field field-string" }, labelFor(`${id}-member`, "member", true), el("div", { class: "control" }, nameInput)),
        el("div", { class: "field field-json" }, labelFor(`${id}-payload`, "payload (JSON)", true), el("div", { class: "control" }, area))
      ),
      el("datalist", { id: listId }, members.map((m) => el("option", { value: m.name }))),
      error,
      el("div", { class: "form-actions" }, el("button", { type: "submit", class: "button", text: "Call" }))
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      error.textContent = "";
      const name = nameInput.value.trim();
      if (!name) {
        error.textContent = "Name a member (Surface::member).";
        nameInput.focus();
        return;
      }
      let payload;
      try {
        payload = exactParse(area.value);
      } catch (e) {
        error.textContent = `The payload is not JSON: ${e.message}`;
        area.focus();
        return;
      }
      const d = doc(state.description && state.description.exposure);
      const known = d && Array.isArray(d.members) ? d.members.find((m) => m.name === name) : null;
      call(name, payload, outcomes, ++counter, known, (d && d.schemas) || {});
    });
    return el(
      "article",
      { class: "card member any-member", "data-member": "*" },
      el("header", { class: "card-head" }, el("h3", { id: `${id}-title`, class: "member-name", text: "Call a member by name" })),
      el("p", { class: "muted small", text: "The description lists what this caller may use; the exposure still decides every call. Name any member to see how it answers." }),
      form,
      outcomes
    );
  }

  /** A value of a schema's shape with empty leaves, to start a JSON payload from. */
  function skeleton(schema, schemas, depth) {
    const r = resolve(schema, schemas);
    if (!r || depth > 6) return null;
    const s = r.schema;
    switch (typeOf(s)) {
      case "object": {
        const out = {};
        for (const [k, sub] of Object.entries(s.properties || {})) out[k] = skeleton(sub, schemas, depth + 1);
        return out;
      }
      case "integer":
      case "number":
        return 0;
      case "boolean":
        return false;
      case "string":
        return Array.isArray(s.enum) && s.enum.length ? s.enum[0] : "";
      case "array":
        return [];
      default:
        return null;
    }
  }

  // ---------------------------------------------------------------- calls

  const OUTCOME_LABEL = {
    result: "Result",
    handler_error: "Handler error",
    refusal: "Refusal",
    server_error: "Server error",
    no_answer: "No answer",
    pending: "Pending",
    admin: "Not sent",
  };

  /**
   * One call: POST /api/call naming the digest of the description shown,
   * an outcome card shown at once as pending and filled in when the answer
   * comes. Calls do not wait for each other.
   */
  function call(member, payload, outcomes, n, m, schemas) {
    const digest = shownDigest();
    const sent = { member, payload, digest };
    const started = clock();
    const card = el("article", { class: "outcome outcome-pending", "data-outcome": "pending", "data-call": String(n), "aria-busy": "true" });
    const head = (kind, extra) =>
      el(
        "header",
        { class: "outcome-head" },
        el("span", { class: `badge badge-${kind}`, text: OUTCOME_LABEL[kind] || kind }),
        extra ? el("span", { class: "badge-sub", text: extra }) : null,
        el("span", { class: "outcome-meta muted", text: `#${n} · ${member} · ${started}` })
      );
    append(card, [head("pending", "waiting for the endpoint"), el("p", { class: "muted small", text: `Sent with digest ${digest || "(none)"}.` }), rawDetails("Request", pretty(sent))]);
    outcomes.prepend(card);
    trim(outcomes, 30);

    const finish = (kind, sub, body, raw, meta) => {
      clear(card);
      card.className = `outcome outcome-${kind}`;
      card.setAttribute("data-outcome", kind);
      card.removeAttribute("aria-busy");
      if (sub) card.setAttribute("data-kind", sub);
      const h = head(kind, sub);
      if (meta) h.append(el("span", { class: "outcome-meta muted", text: meta }));
      append(card, [h, body, raw === null ? null : rawDetails("Raw bytes", raw), rawDetails("Request", pretty(sent))]);
    };

    fetch("/api/call", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(sent),
      credentials: "same-origin",
      cache: "no-store",
    })
      .then(async (res) => {
        const text = await res.text();
        if (!res.ok) {
          finish("admin", `HTTP ${res.status}`, el("p", { class: "why", text: `The admin did not make the call: ${adminReason(text)}` }), text, null);
          return;
        }
        let o;
        try {
          o = exactParse(text);
        } catch (e) {
          finish("admin", "unreadable", el("p", { text: `The admin's answer is not JSON: ${e.message}` }), text, null);
          return;
        }
        const meta = [typeof o.elapsed_ms === "number" ? `${o.elapsed_ms} ms` : null, typeof o.status === "number" ? `HTTP ${o.status}` : null].filter(Boolean).join(" · ");
        const raw = typeof o.raw === "string" ? o.raw : "";
        switch (o.outcome) {
          case "result":
            finish("result", null, el("div", { class: "outcome-body" }, renderValue(o.value, m && m.response, schemas, 0)), raw, meta);
            break;
          case "handler_error": {
            const schema = m && m.error !== "ClosureViolation" ? m.error : null;
            finish("handler_error", schema ? typeName(schema, schemas) : null, el("div", { class: "outcome-body" }, renderValue(o.error, schema, schemas, 0)), raw, meta);
            break;
          }
          case "refusal": {
            const ref = o.refusal || {};
            finish("refusal", ref.kind || null, el("div", { class: "outcome-body" }, refusalView(ref)), raw, meta);
            break;
          }
          case "server_error":
            finish(
              "server_error",
              (o.refusal && o.refusal.kind) || "server",
              el("div", { class: "outcome-body" }, el("p", { class: "why", text: "The handler failed with its row's ClosureViolation. The exposure says no more than that; the program reports the violation." })),
              raw,
              meta
            );
            break;
          case "no_answer":
            finish(
              "no_answer",
              null,
              el(
                "div",
                { class: "outcome-body" },
                el("p", { class: "why", "data-field": "reason", text: o.reason || "the endpoint did not answer" }),
                el("p", { class: "muted small", text: "A call accepted runs to completion: no answer does not mean it did not run." })
              ),
              raw,
              meta
            );
            break;
          default:
            finish("admin", "unknown", el("p", { text: `The admin answered an outcome this page does not know: ${String(o.outcome)}` }), text, meta);
        }
      })
      .catch((e) => {
        finish("admin", "unreachable", el("p", { class: "why", text: `The admin did not answer (${e.message}). Is hale admin still running?` }), null, null);
      });
  }

  /** The sentence of an admin error body ({"error": …} or text). */
  function adminReason(text) {
    try {
      const v = exactParse(text);
      if (v && typeof v.error === "string") return v.error;
    } catch (_) {
      /* a text body */
    }
    return text.trim() || "no reason given";
  }

  /** A refusal's kind, reason, requires and served digest. */
  function refusalView(ref) {
    const rows = [
      el("div", { class: "kv", "data-field": "kind" }, el("dt", { text: "kind" }), el("dd", {}, el("code", { class: "value", text: ref.kind || "?" }))),
      el("div", { class: "kv", "data-field": "reason" }, el("dt", { text: "reason" }), el("dd", {}, el("span", { class: "value", text: ref.reason || "" }))),
    ];
    if ("requires" in ref) rows.push(el("div", { class: "kv", "data-field": "requires" }, el("dt", { text: "requires" }), el("dd", {}, chips(ref.requires, "nothing"))));
    if ("served" in ref) rows.push(el("div", { class: "kv", "data-field": "served" }, el("dt", { text: "served digest" }), el("dd", {}, el("code", { class: "value digest", text: String(ref.served) }))));
    for (const [k, v] of Object.entries(ref)) {
      if (["kind", "reason", "requires", "served"].includes(k)) continue;
      rows.push(el("div", { class: "kv", "data-field": k }, el("dt", { text: k }), el("dd", {}, el("code", { class: "value", text: JSON.stringify(v) }))));
    }
    const out = [el("dl", { class: "fields-view" }, rows)];
    if (ref.kind === "digest_mismatch") out.push(el("p", { class: "why", text: "The program changed under this page: reload the description to call the contract it serves now." }));
    if (ref.kind === "full") out.push(el("p", { class: "muted small", text: "The exposure holds its bound of requests accepted and not yet answered; try again when one is answered." }));
    return out;
  }

  /** Keeps at most `max` finished cards in a list. */
  function trim(list, max) {
    const cards = Array.from(list.children);
    for (let i = cards.length - 1; i >= max; i--) {
      if (cards[i].getAttribute("data-outcome") !== "pending") cards[i].remove();
    }
  }

  // ---------------------------------------------------------------- streams

  function renderStreams() {
    for (const t of state.tails.values()) if (t.source) t.source.close();
    state.tails.clear();
    const box = clear(document.getElementById("streams"));
    const d = state.description;
    const hub = doc(d && d.hub);
    const own = doc(d && d.exposure);
    const rows = [];
    if (hub && Array.isArray(hub.streams)) for (const s of hub.streams) rows.push([s, hub.schemas || {}]);
    if (own && Array.isArray(own.streams) && own !== hub) for (const s of own.streams) rows.push([s, own.schemas || {}]);
    if (rows.length === 0) {
      box.append(
        el("p", { class: "muted", text: d && d.transport === "ws" ? "The hub lists no stream this caller may subscribe to." : "Streams are a hub's: give hale admin the hub's ws:// address to tail them." })
      );
      return;
    }
    for (const [s, schemas] of rows) box.append(streamCard(s, schemas, d.transport === "ws"));
  }

  function streamCard(s, schemas, live) {
    const id = freshId(`s-${s.topic}`);
    const status = el("span", { class: "pill pill-idle", role: "status", text: "not subscribed" });
    const counts = el("span", { class: "counts muted small", "aria-live": "off" });
    const tail = el("ol", { class: "tail", "aria-live": "polite", "aria-relevant": "additions", "aria-label": `Frames of ${s.topic}`, tabindex: "0" });
    const subscribe = el("button", { type: "button", class: "button primary", text: "Subscribe", disabled: !live });
    const unsubscribe = el("button", { type: "button", class: "button", text: "Unsubscribe", disabled: true });
    const clearButton = el("button", { type: "button", class: "button ghost", text: "Clear" });
    const t = { topic: s.topic, source: null, lastSeq: 0, events: 0, shed: 0, status, counts, tail, subscribe, unsubscribe, schemas, payload: s.payload };
    state.tails.set(s.topic, t);
    subscribe.addEventListener("click", () => open(t));
    unsubscribe.addEventListener("click", () => {
      if (!t.source) return;
      t.source.close();
      t.source = null;
      row(t, "local", "unsubscribed", [el("span", { text: "the page closed the stream; the admin closes its hub connection" })]);
      setStatus(t, "idle", "not subscribed");
      subscribe.disabled = false;
      unsubscribe.disabled = true;
      subscribe.focus();
    });
    clearButton.addEventListener("click", () => clear(tail));

    const payloadView = payloadSummary(s.payload, schemas);
    return el(
      "article",
      { class: "card stream", "data-topic": s.topic, "aria-labelledby": `${id}-title` },
      el(
        "header",
        { class: "card-head" },
        el("h3", { id: `${id}-title`, class: "member-name", text: s.topic }),
        el("span", { class: "requires" }, el("span", { class: "muted", text: "requires " }), chips(s.requires, "nothing"))
      ),
      el(
        "dl",
        { class: "meta meta-inline" },
        metaRow("subject", s.subject),
        metaRow("direction", s.direction),
        metaRow("payload", el("code", { text: typeName(s.payload, schemas) })),
        metaRow("bound", s.bound),
        metaRow("on full", s.on_full),
        metaRow("replay", s.replay ? "yes" : "no")
      ),
      payloadView,
      s.loss ? el("details", { class: "notes" }, el("summary", { text: "Delivery" }), el("p", { class: "small", text: s.loss })) : null,
      el("div", { class: "form-actions" }, subscribe, unsubscribe, clearButton, status, counts),
      tail
    );
  }

  function payloadSummary(schema, schemas) {
    const r = resolve(schema, schemas);
    if (!r || !r.schema.properties) return null;
    const req = new Set(r.schema.required || []);
    return el(
      "p",
      { class: "payload-fields small" },
      Object.entries(r.schema.properties).map(([k, sub]) => {
        const rs = resolve(sub, schemas);
        const sch = rs ? rs.schema : {};
        return el(
          "span",
          { class: "pfield" },
          el("code", { text: k }),
          req.has(k) ? null : el("span", { class: "muted", text: "?" }),
          el("span", { class: "muted", text: `: ${sch["x-hale-type"] || typeName(sub, schemas)}` }),
          sch["x-hale-unit"] ? el("span", { class: "unit", text: sch["x-hale-unit"] }) : null
        );
      })
    );
  }

  function setStatus(t, kind, text) {
    t.status.className = `pill pill-${kind}`;
    t.status.textContent = text;
    t.counts.textContent = t.events || t.shed ? `${t.events} event${t.events === 1 ? "" : "s"} · last seq ${t.lastSeq} · ${t.shed} shed` : "";
  }

  /** Appends one frame's row to a tail, keeping the newest 300. */
  function row(t, kind, label, body, raw, extra) {
    const li = el(
      "li",
      Object.assign({ class: `frame frame-${kind}`, "data-frame": kind }, extra || {}),
      el("span", { class: "when muted", text: clock() }),
      el("span", { class: `tag tag-${kind}`, text: label }),
      el("span", { class: "frame-body" }, body),
      raw ? rawDetails("frame", raw, "raw-inline") : null
    );
    t.tail.append(li);
    while (t.tail.children.length > 300) t.tail.firstChild.remove();
    t.tail.scrollTop = t.tail.scrollHeight;
  }

  /**
   * Subscribes: one EventSource on /api/stream, each SSE message one hub
   * frame. A frame that ends the subscription closes the EventSource, as a
   * browser would otherwise reconnect.
   */
  function open(t) {
    if (t.source) return;
    const source = new EventSource(`/api/stream?topic=${encodeURIComponent(t.topic)}`);
    t.source = source;
    // seq starts at 1 for each subscription: the counts are this one's.
    t.lastSeq = 0;
    t.events = 0;
    t.shed = 0;
    t.subscribe.disabled = true;
    t.unsubscribe.disabled = false;
    setStatus(t, "pending", "subscribing…");
    row(t, "local", "subscribe", [el("span", { text: `asked the hub for ${t.topic}` })]);
    const end = (kind, text) => {
      source.close();
      if (t.source !== source) return;
      t.source = null;
      setStatus(t, kind, text);
      t.subscribe.disabled = false;
      t.unsubscribe.disabled = true;
    };
    source.addEventListener("message", (e) => {
      if (t.source !== source) return;
      let f;
      try {
        f = exactParse(e.data);
      } catch (_) {
        row(t, "unknown", "unreadable", [el("span", { text: "a frame that is not JSON" })], e.data);
        return;
      }
      switch (f && f.type) {
        case "subscribed":
          row(t, "subscribed", "subscribed", [el("span", { text: `the hub admitted the subscription to ${f.topic}` })], e.data);
          setStatus(t, "live", "live");
          break;
        case "event": {
          const seq = Number(f.seq);
          if (Number.isInteger(seq) && seq > t.lastSeq + 1) {
            const lost = seq - t.lastSeq - 1;
            t.shed += lost;
            const span = lost === 1 ? `seq ${t.lastSeq + 1}` : `seq ${t.lastSeq + 1}–${seq - 1}`;
            row(t, "gap", "gap", [el("span", { text: `${lost} event${lost === 1 ? "" : "s"} shed (${span})` })], null, { "data-lost": String(lost) });
          }
          if (Number.isInteger(seq)) t.lastSeq = seq;
          t.events += 1;
          row(t, "event", `#${f.seq}`, [renderValue(f.payload, t.payload, t.schemas, 0)], e.data, { "data-seq": String(f.seq) });
          setStatus(t, "live", "live");
          break;
        }
        case "refusal": {
          const ref = f.refusal || {};
          row(t, "refusal", "refusal", [el("div", { class: "outcome outcome-refusal", "data-outcome": "refusal" }, refusalView(ref))], e.data, { "data-kind": ref.kind || "" });
          end("refused", `refused: ${ref.kind || "?"}`);
          break;
        }
        case "unauthorized":
          row(t, "unauthorized", "unauthorized", [el("span", { class: "value", "data-field": "reason", text: f.reason || "" }), el("span", { class: "muted", text: " — the grant is gone; what was buffered is lost" })], e.data, { "data-reason": f.reason || "" });
          end("refused", `unauthorized: ${f.reason || "?"}`);
          break;
        case "closed":
          row(t, "closed", "closed", [el("span", { class: "value", "data-field": "reason", text: f.reason || "" }), el("span", { class: "muted", text: " — the hub stopped" })], e.data, { "data-reason": f.reason || "" });
          end("ended", `closed: ${f.reason || "?"}`);
          break;
        case "hale-admin.no_answer":
          row(t, "no_answer", "no answer", [el("span", { class: "value", "data-field": "reason", text: f.reason || "" })], e.data);
          end("ended", "no answer");
          break;
        default:
          row(t, "unknown", String((f && f.type) || "frame"), [el("span", { text: "a frame this page does not know" })], e.data);
      }
    });
    source.addEventListener("error", () => {
      if (t.source !== source) return;
      row(t, "no_answer", "ended", [el("span", { text: "the stream ended without a frame saying why (the admin refused it or went away)" })]);
      end("ended", "ended");
    });
  }

  // ---------------------------------------------------------------- loading

  function notice(kind, nodes) {
    const box = clear(document.getElementById("notice"));
    box.className = `notice notice-${kind}`;
    append(box, nodes);
  }

  function digestsOf(d) {
    return {
      exposure: doc(d && d.exposure) ? doc(d.exposure).digest : null,
      hub: doc(d && d.hub) ? doc(d.hub).digest : null,
    };
  }

  /** Reads the description (again); says whether a digest moved. */
  async function load(again) {
    const button = document.getElementById("reload");
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    try {
      const res = await fetch("/api/description", { credentials: "same-origin", cache: "no-store" });
      const text = await res.text();
      if (!res.ok) {
        notice("bad", [`The admin refused the description (HTTP ${res.status}): ${adminReason(text)}`]);
        return;
      }
      const d = exactParse(text);
      const before = digestsOf(state.description);
      const after = digestsOf(d);
      const moved = again && (before.exposure !== after.exposure || before.hub !== after.hub);
      state.description = d;
      renderIdentity();
      if (!again || moved) {
        renderMembers();
        renderStreams();
      }
      if (!again) {
        notice("quiet", []);
      } else if (moved) {
        const says = [];
        if (before.exposure !== after.exposure) says.push(digestMove("surface", before.exposure, after.exposure));
        if (before.hub !== after.hub) says.push(digestMove("hub", before.hub, after.hub));
        notice("moved", [el("strong", { text: "The digest moved. " }), says, " The forms and streams were rebuilt from the new description; what was typed and the outcomes so far were kept."]);
      } else {
        notice("ok", [`Reloaded at ${clock()}: the digest has not moved (`, el("code", { text: after.exposure || after.hub || "none" }), ")."]);
      }
    } catch (e) {
      notice("bad", [`The admin did not answer (${e.message}).`]);
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  }

  function digestMove(what, a, b) {
    return el("span", { class: "move" }, `${what}: `, el("code", { text: a || "none" }), " → ", el("code", { text: b || "none" }), ". ");
  }

  document.getElementById("reload").addEventListener("click", () => load(true));
  load(false);
})();
