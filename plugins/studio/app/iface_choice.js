// Choice interfaces: boolean (a checkbox, or a switch for the `boolean`/`toggle` interfaces),
// a field with `choices` (a dropdown, radio buttons for `select-radio`, check boxes for a list
// field: csv or json), and tags (csv fields, and json fields whose interface is `tags`): typed
// and added with Enter or a comma, each removable by its own button.

import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { interfaceOptions } from "./iface_own.js"; // -- studio42b

// The field's enforced `choices`, else (studio42b) the ones its interface offers (not enforced:
// with `allowOther` any other value can be typed).
export function choicesOf(field) {
  const own = interfaceOptions(field).choices;
  const choices = (field.options && field.options.choices) || (Array.isArray(own) && own.length ? own : null);
  if (!Array.isArray(choices)) return null;
  return choices.map((c) => (c !== null && typeof c === "object" ? { value: c.value, text: c.text ?? c.value } : { value: c, text: c }));
}

export function booleanControl(field, value, env) {
  const toggle = field.interface === "toggle" || field.interface === "boolean";
  const el = h("input", { id: env.id, name: field.field, type: "checkbox", role: toggle ? "switch" : null, checked: value === true,
    disabled: env.readOnly, "aria-describedby": env.describedBy });
  return { el, input: el, read: () => el.checked, check: true };
}

const LIST_TYPES = new Set(["csv", "json"]);

export function choiceControl(field, value, env) {
  const choices = choicesOf(field);
  if (LIST_TYPES.has(field.type)) {
    // Several of the choices: a check box each.
    const chosen = new Set((Array.isArray(value) ? value : []).map((v) => JSON.stringify(v)));
    const boxes = choices.map((c) => {
      const id = uid("choice");
      const box = h("input", { id, type: "checkbox", name: field.field, checked: chosen.has(JSON.stringify(c.value)), disabled: env.readOnly });
      return { c, box, el: h("span", { class: "choice" }, box, h("label", { for: id }, String(c.text))) };
    });
    return { group: true, el: h("div", { class: "choices" }, boxes.map((b) => b.el)), input: boxes[0] && boxes[0].box,
      read: () => boxes.filter((b) => b.box.checked).map((b) => b.c.value) };
  }
  if (field.interface === "select-radio") {
    const radios = choices.map((c) => {
      const id = uid("choice");
      const radio = h("input", { id, type: "radio", name: `${field.field}-${env.id}`, checked: c.value === value, disabled: env.readOnly });
      return { c, radio, el: h("span", { class: "choice" }, radio, h("label", { for: id }, String(c.text))) };
    });
    const none = !offersNone(field) ? null : (() => {
      const id = uid("choice");
      const radio = h("input", { id, type: "radio", name: `${field.field}-${env.id}`, checked: value === null || value === undefined, disabled: env.readOnly });
      return { c: { value: null }, radio, el: h("span", { class: "choice" }, radio, h("label", { for: id }, t("editor.none"))) };
    })();
    const all = none ? [...radios, none] : radios;
    return { group: true, radiogroup: true, el: h("div", { class: "choices" }, all.map((r) => r.el)), input: all[0].radio,
      read: () => {
        const on = all.find((r) => r.radio.checked);
        return on ? on.c.value : null;
      } };
  }
  const empty = value === null || value === undefined;
  // -- studio42b: a value outside the choices (allowOther) is shown as "Other" with its text.
  const other = Boolean(interfaceOptions(field).allowOther) && !(field.options && field.options.choices);
  const outside = !empty && !choices.some((c) => c.value === value);
  const el = h("select", { id: env.id, name: field.field, disabled: env.readOnly, "aria-describedby": env.describedBy,
    "aria-required": field.required ? "true" : null },
  offersNone(field) || empty ? h("option", { value: "" }, t("editor.none")) : null,
  choices.map((c, i) => h("option", { value: String(i), selected: c.value === value }, String(c.text))),
  other ? h("option", { value: "other", selected: outside }, t("editor.otherChoice")) : null);
  if (!other) return { el, input: el, read: () => (el.value === "" ? null : choices[Number(el.value)].value) };
  const otherId = uid("other");
  const typed = h("input", { id: otherId, type: "text", name: `${field.field}.other`, readonly: env.readOnly, value: outside ? String(value) : "" });
  const wrap = h("span", { class: "other-choice", hidden: el.value !== "other" }, h("label", { for: otherId }, t("editor.otherValue", { field: field.field })), typed);
  el.addEventListener("change", () => {
    wrap.hidden = el.value !== "other";
    if (!wrap.hidden) typed.focus();
  });
  return { el: h("div", { class: "choice-other" }, el, wrap), input: el, read: () => {
    if (el.value === "other") return typed.value.trim() === "" ? null : typed.value;
    return el.value === "" ? null : choices[Number(el.value)].value;
  } };
}

// Whether a "None" entry is offered: the interface's `allowNone` when set, else when not required.
function offersNone(field) {
  const allow = interfaceOptions(field).allowNone;
  return typeof allow === "boolean" ? allow : !field.required;
}

export function isTags(field) {
  return field.type === "csv" || (field.type === "json" && field.interface === "tags");
}

export function tagsControl(field, value, env) {
  let tags = Array.isArray(value) ? value.map(String) : typeof value === "string" && value ? value.split(",").map((s) => s.trim()) : [];
  const list = h("ul", { class: "tags", "aria-label": t("editor.tagsOf", { field: field.field }) });
  const status = h("p", { class: "sr-only", role: "status" });
  const input = h("input", { id: env.id, type: "text", name: field.field, readonly: env.readOnly, "aria-describedby": env.describedBy,
    placeholder: env.readOnly ? null : t("editor.tagHint"), autocomplete: "off" });
  const draw = () => replace(list, tags.map((tag, i) => h("li", {}, h("span", {}, tag), env.readOnly ? null
    : h("button", { type: "button", class: "chip", "aria-label": t("editor.removeTag", { tag }), onclick: () => {
      tags = tags.filter((_, j) => j !== i);
      replace(status, t("editor.tagRemoved", { tag }));
      draw();
      input.focus();
    } }, "×"))));
  const add = () => {
    const fresh = input.value.split(",").map((s) => s.trim()).filter((s) => s && !tags.includes(s));
    if (!fresh.length) return false;
    tags = [...tags, ...fresh];
    input.value = "";
    replace(status, t("editor.tagAdded", { tag: fresh.join(", ") }));
    draw();
    return true;
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === ",") {
      event.preventDefault();
      add();
    } else if (event.key === "Backspace" && !input.value && tags.length) {
      replace(status, t("editor.tagRemoved", { tag: tags[tags.length - 1] }));
      tags = tags.slice(0, -1);
      draw();
    }
  });
  draw();
  // Text still in the input counts as tags too (without being moved into the list).
  const pending = () => input.value.split(",").map((s) => s.trim()).filter((s) => s && !tags.includes(s));
  return { el: h("div", { class: "tag-input" }, list, input, status), input, read: () => {
    const all = [...tags, ...pending()];
    return all.length || value ? all : null;
  } };
}
