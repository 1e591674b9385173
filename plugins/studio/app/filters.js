// The list's filter builder: conditions (field, an operator fitting the field's type, a value) in
// a group that matches all or any of them, and groups one level down with their own all/any.
// It reads and writes the query language's filter tree (docs/items.md, "filter"):
//   { "_and": [ { "title": { "_contains": "winter" } }, { "_or": [ {...}, {...} ] } ] }
// A filter it cannot show as rows (deeper groups, relations, JSON operators) is kept as it is and
// shown as JSON; "Clear filter" drops it.

import { h, replace } from "./dom.js";
import { t } from "./i18n.js";

const NUMERIC = new Set(["integer", "bigInteger", "float", "decimal"]);
const DATES = { date: "date", dateTime: "datetime-local", timestamp: "datetime-local", time: "time" };
const NO_VALUE = new Set(["_null", "_nnull"]);
const LISTS = new Set(["_in", "_nin"]);

/** The operators that fit a field: by its type, and choices when it has them. */
export function operatorsFor(field) {
  const type = field ? field.type : "string";
  if (type === "boolean") return ["_eq", "_neq", "_null", "_nnull"];
  if (choicesOf(field)) return ["_eq", "_neq", "_in", "_nin", "_null", "_nnull"];
  if (NUMERIC.has(type) || type in DATES) return ["_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_between", "_in", "_null", "_nnull"];
  if (type === "json" || type === "geometry" || type === "csv" || type === "files") return ["_null", "_nnull", "_has_key"];
  return ["_contains", "_icontains", "_eq", "_neq", "_starts_with", "_ends_with", "_in", "_nin", "_null", "_nnull"];
}

function choicesOf(field) {
  const choices = field && field.options && field.options.choices;
  if (!Array.isArray(choices)) return null;
  return choices.map((c) => (c !== null && typeof c === "object" ? { value: c.value, text: c.text ?? c.value } : { value: c, text: c }));
}

// One typed value from what was typed: numbers as numbers, booleans as booleans, else text.
function typed(field, text) {
  const type = field ? field.type : "string";
  if (type === "boolean") return text === "true";
  if ((type === "integer" || type === "float") && text.trim() !== "" && !Number.isNaN(Number(text))) return Number(text);
  const choices = choicesOf(field);
  if (choices) {
    const found = choices.find((c) => String(c.value) === text);
    if (found) return found.value;
  }
  return text;
}

function operand(field, op, text) {
  if (NO_VALUE.has(op)) return true;
  if (LISTS.has(op) || op === "_between") return text.split(",").map((part) => typed(field, part.trim())).filter((v) => v !== "");
  return typed(field, text);
}

function shownValue(op, value) {
  if (NO_VALUE.has(op)) return "";
  if (Array.isArray(value)) return value.map(String).join(",");
  return value === null || value === undefined ? "" : String(value);
}

/** The query language's filter of a builder group (null when it has no condition). */
export function toFilter(group, fieldsByName) {
  const parts = [];
  for (const child of group.children) {
    if (child.children) {
      const inner = toFilter(child, fieldsByName);
      if (inner) parts.push(inner);
    } else if (child.field && child.op) {
      parts.push({ [child.field]: { [child.op]: operand(fieldsByName.get(child.field), child.op, child.value) } });
    }
  }
  if (!parts.length) return null;
  return { [group.logic]: parts };
}

function conditionOf(node) {
  const keys = Object.keys(node || {});
  if (keys.length !== 1 || keys[0].startsWith("_")) return null;
  const ops = node[keys[0]];
  const opKeys = ops && typeof ops === "object" && !Array.isArray(ops) ? Object.keys(ops) : [];
  if (opKeys.length !== 1 || !opKeys[0].startsWith("_")) return null;
  return { field: keys[0], op: opKeys[0], value: shownValue(opKeys[0], ops[opKeys[0]]) };
}

function groupOf(node, depth) {
  const keys = Object.keys(node || {});
  const logic = keys.length === 1 && (keys[0] === "_and" || keys[0] === "_or") ? keys[0] : null;
  const list = logic ? node[logic] : [node];
  if (!Array.isArray(list)) return null;
  const children = [];
  for (const part of list) {
    const condition = conditionOf(part);
    const sub = condition || depth > 0 ? null : groupOf(part, depth + 1);
    if (!condition && !sub) return null;
    children.push(condition || sub);
  }
  return { logic: logic || "_and", children };
}

/** The builder's model of a filter tree: null when the tree is deeper than the builder shows. */
export function fromFilter(filter) {
  if (!filter) return { logic: "_and", children: [] };
  return groupOf(filter, 0);
}

/**
 * The builder: `fields` (name, type, options), the current `filter`, and `onApply(filter|null)`.
 * Structural changes (a condition or group added or removed, a field or an operator chosen)
 * redraw the builder and put the focus back where it was.
 */
export function filterBuilder({ fields, filter, onApply }) {
  const fieldsByName = new Map(fields.map((f) => [f.field, f]));
  const parsed = fromFilter(filter);
  let model = parsed || { logic: "_and", children: [] };
  const root = h("fieldset", { class: "filters" });
  const raw = parsed ? null : JSON.stringify(filter);

  const blank = () => {
    const field = fields[0];
    return { field: field.field, op: operatorsFor(field)[0], value: "" };
  };

  const draw = (focusKey) => {
    let count = 0;
    const focusables = new Map();
    const conditionRow = (cond, group) => {
      count += 1;
      const n = count;
      const field = fieldsByName.get(cond.field);
      const fieldSelect = h("select", { "aria-label": t("filter.field", { n }), onchange: (e) => {
        cond.field = e.target.value;
        const ops = operatorsFor(fieldsByName.get(cond.field));
        if (!ops.includes(cond.op)) cond.op = ops[0];
        cond.value = "";
        draw(`field-${n}`);
      } }, fields.map((f) => h("option", { value: f.field, selected: f.field === cond.field }, f.field)));
      const opSelect = h("select", { "aria-label": t("filter.operator", { n }), onchange: (e) => {
        cond.op = e.target.value;
        draw(`op-${n}`);
      } }, operatorsFor(field).map((op) => h("option", { value: op, selected: op === cond.op }, t(`filter.op${op}`))));
      focusables.set(`field-${n}`, fieldSelect);
      focusables.set(`op-${n}`, opSelect);
      let valueEl = null;
      if (!NO_VALUE.has(cond.op)) {
        const label = t("filter.value", { n });
        const choices = choicesOf(field);
        const single = !(LISTS.has(cond.op) || cond.op === "_between");
        if (field && field.type === "boolean") {
          if (!["true", "false"].includes(cond.value)) cond.value = "true";
          valueEl = h("select", { "aria-label": label, onchange: (e) => { cond.value = e.target.value; } },
            h("option", { value: "true", selected: cond.value === "true" }, t("filter.true")),
            h("option", { value: "false", selected: cond.value === "false" }, t("filter.false")));
        } else if (choices && single) {
          if (!choices.some((c) => String(c.value) === cond.value)) cond.value = String(choices[0].value);
          valueEl = h("select", { "aria-label": label, onchange: (e) => { cond.value = e.target.value; } },
            choices.map((c) => h("option", { value: String(c.value), selected: String(c.value) === cond.value }, String(c.text))));
        } else {
          const type = single && field && DATES[field.type] ? DATES[field.type] : single && field && NUMERIC.has(field.type) ? "number" : "text";
          valueEl = h("input", { type, "aria-label": label, value: cond.value, step: type === "number" ? "any" : null,
            placeholder: single ? null : t(cond.op === "_between" ? "filter.twoValues" : "filter.manyValues"),
            oninput: (e) => { cond.value = e.target.value; } });
        }
      }
      const remove = h("button", { type: "button", class: "quiet", onclick: () => {
        group.children.splice(group.children.indexOf(cond), 1);
        draw(group === model ? "add-top" : `add-${model.children.indexOf(group)}`);
      } }, t("filter.removeCondition", { n }));
      return h("li", { class: "condition" }, fieldSelect, opSelect, valueEl, remove);
    };
    const logicSelect = (group, label, key) => {
      const el = h("select", { "aria-label": label, onchange: (e) => { group.logic = e.target.value; } },
        h("option", { value: "_and", selected: group.logic === "_and" }, t("filter.all")),
        h("option", { value: "_or", selected: group.logic === "_or" }, t("filter.any")));
      focusables.set(key, el);
      return el;
    };
    let groupNumber = 0;
    const rows = model.children.map((child) => {
      if (!child.children) return conditionRow(child, model);
      groupNumber += 1;
      const g = groupNumber;
      const index = model.children.indexOf(child);
      const add = h("button", { type: "button", onclick: () => {
        child.children.push(blank());
        draw(`field-last-${index}`);
      } }, t("filter.addToGroup", { n: g }));
      focusables.set(`add-${index}`, add);
      const inner = child.children.map((c) => conditionRow(c, child));
      focusables.set(`field-last-${index}`, focusables.get(`field-${count}`));
      return h("li", { class: "group" }, h("div", { role: "group", "aria-label": t("filter.group", { n: g }) },
        h("p", {}, logicSelect(child, t("filter.groupMatch", { n: g }), `logic-${index}`), " ", t("filter.ofGroup")),
        h("ul", {}, inner),
        h("div", { class: "tools" }, add,
          h("button", { type: "button", class: "quiet", onclick: () => {
            model.children.splice(index, 1);
            draw("add-top");
          } }, t("filter.removeGroup", { n: g })))));
    });
    const addTop = h("button", { type: "button", onclick: () => {
      model.children.push(blank());
      draw(`field-${count + 1}`);
    } }, t("filter.add"));
    focusables.set("add-top", addTop);
    const addGroup = h("button", { type: "button", onclick: () => {
      model.children.push({ logic: "_or", children: [blank()] });
      draw(`logic-${model.children.length - 1}`);
    } }, t("filter.addGroup"));
    replace(root,
      h("legend", {}, t("filter.legend")),
      raw ? h("p", { class: "muted" }, t("filter.raw"), " ", h("code", {}, raw)) : null,
      h("p", {}, logicSelect(model, t("filter.match"), "logic-top"), " ", t("filter.ofTop")),
      rows.length ? h("ul", {}, rows) : h("p", { class: "muted" }, t("filter.none")),
      h("div", { class: "tools" }, addTop, addGroup,
        h("button", { type: "button", onclick: () => onApply(raw && !model.children.length ? filter : toFilter(model, fieldsByName)) }, t("filter.apply")),
        h("button", { type: "button", class: "quiet", onclick: () => onApply(null) }, t("filter.clear"))));
    // After a redraw the focus goes back to the control that caused it (or its successor).
    const target = focusKey && (focusables.get(focusKey) || addTop);
    if (target) target.focus();
  };
  draw(null);
  return root;
}
