// Number interfaces: integer, bigInteger, float and decimal, with the field's `min`, `max` and
// `step` options on the input (the API checks them too; its error shows at the field). decimal and
// bigInteger are sent as text, so no digit is lost to a JavaScript number.

import { h } from "./dom.js";
import { t } from "./i18n.js";

const WHOLE = new Set(["integer", "bigInteger"]);
export const NUMBER_TYPES = new Set(["integer", "bigInteger", "float", "decimal"]);

export function numberControl(field, value, env) {
  const o = field.options || {};
  const step = o.step ?? (WHOLE.has(field.type) ? 1 : "any");
  const el = h("input", { id: env.id, name: field.field, type: "number", inputmode: WHOLE.has(field.type) ? "numeric" : "decimal",
    min: o.min ?? null, max: o.max ?? null, step, readonly: env.readOnly, "aria-describedby": env.describedBy,
    "aria-required": field.required ? "true" : null, value: value ?? "" });
  return { el, input: el, read: () => {
    if (el.value === "") {
      if (el.validity.badInput) throw new Error(t("editor.notANumber"));
      return null;
    }
    if (field.type === "decimal" || field.type === "bigInteger") return el.value;
    return WHOLE.has(field.type) ? parseInt(el.value, 10) : Number(el.value);
  } };
}
