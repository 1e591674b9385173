// Structured interfaces: JSON in a text area, parsed before the save (a syntax error shows at the
// field and nothing is sent), and geometry: a point editor (longitude and latitude, in range) for
// a field whose `geometryType` is Point or unset and whose value is a point or empty; any other
// geometry is edited as GeoJSON text, checked for a `type` before the save.

import { h, uid } from "./dom.js";
import { t } from "./i18n.js";

function jsonArea(field, value, env, check) {
  const text = value === null || value === undefined ? "" : JSON.stringify(value, null, 2);
  const el = h("textarea", { id: env.id, name: field.field, class: "code", rows: "6", readonly: env.readOnly, spellcheck: "false",
    "aria-describedby": env.describedBy, "aria-required": field.required ? "true" : null, value: text });
  return { el, input: el, read: () => {
    if (el.value.trim() === "") return null;
    let parsed;
    try {
      parsed = JSON.parse(el.value);
    } catch (err) {
      throw new Error(t("editor.invalidJson", { detail: err.message }));
    }
    if (check) check(parsed);
    return parsed;
  } };
}

export function jsonControl(field, value, env) {
  return jsonArea(field, value, env, null);
}

function isPoint(value) {
  return value === null || value === undefined || (value.type === "Point" && Array.isArray(value.coordinates));
}

export function geometryControl(field, value, env) {
  const wanted = field.options && field.options.geometryType;
  if ((wanted && wanted !== "Point") || !isPoint(value)) {
    return jsonArea(field, value, env, (parsed) => {
      if (!parsed || typeof parsed !== "object" || typeof parsed.type !== "string") throw new Error(t("editor.notGeoJson"));
    });
  }
  const [lng, lat] = value ? value.coordinates : ["", ""];
  const axis = (name, shown, limit) => {
    const id = uid("axis");
    const input = h("input", { id, type: "number", step: "any", min: String(-limit), max: String(limit), readonly: env.readOnly,
      name: `${field.field}.${name}`, value: shown });
    return { input, el: h("span", { class: "axis" }, h("label", { for: id }, t(`editor.${name}`)), input) };
  };
  const x = axis("longitude", lng, 180);
  const y = axis("latitude", lat, 90);
  return { group: true, el: h("div", { class: "point" }, x.el, y.el), input: x.input, read: () => {
    if (x.input.value === "" && y.input.value === "") return null;
    const a = Number(x.input.value);
    const b = Number(y.input.value);
    if (x.input.value === "" || y.input.value === "" || !(Math.abs(a) <= 180 && Math.abs(b) <= 90)) {
      throw new Error(t("editor.badPoint"));
    }
    return { type: "Point", coordinates: [a, b] };
  } };
}
