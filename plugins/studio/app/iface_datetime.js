// Date and time interfaces: date, time, dateTime and timestamp through the browser's own inputs
// (keyboard-editable segments). A timestamp is shown in local time and sent as UTC; a dateTime
// keeps what was typed (no offset), as the API stores it.

import { h } from "./dom.js";
import { interfaceOptions } from "./iface_own.js"; // -- studio42b

const INPUT_TYPES = { date: "date", dateTime: "datetime-local", timestamp: "datetime-local", time: "time" };
export const DATE_TYPES = new Set(Object.keys(INPUT_TYPES));

function local(value) {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function dateControl(field, value, env) {
  const type = INPUT_TYPES[field.type];
  let shown = value ?? "";
  if (value && field.type === "timestamp") shown = local(value);
  else if (value && field.type === "dateTime") shown = String(value).replace(/Z$|[+-]\d\d:\d\d$/, "").slice(0, 19);
  else if (value && field.type === "time") shown = String(value).slice(0, 8);
  // -- studio42b: `includeSeconds: false` keeps the input to minutes.
  const seconds = interfaceOptions(field).includeSeconds !== false;
  if (!seconds && type !== "date" && shown) shown = shown.slice(0, type === "time" ? 5 : 16);
  const el = h("input", { id: env.id, name: field.field, type, step: type === "date" ? null : seconds ? "1" : "60", readonly: env.readOnly,
    "aria-describedby": env.describedBy, "aria-required": field.required ? "true" : null, value: shown });
  return { el, input: el, read: () => {
    if (el.value === "") return null;
    return field.type === "timestamp" ? new Date(el.value).toISOString() : el.value;
  } };
}
