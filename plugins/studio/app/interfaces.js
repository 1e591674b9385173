// Which interface edits a field: relations first (m2o, m2m, o2m aliases), then the
// `translations` convention, file fields, and the field's type with its `interface` and options.
// One module per interface family: iface_text, iface_number, iface_choice, iface_datetime,
// iface_json, iface_relation, iface_file, iface_translations.

import { booleanControl, choiceControl, choicesOf, isTags, tagsControl } from "./iface_choice.js";
import { DATE_TYPES, dateControl } from "./iface_datetime.js";
import { fileControl, isFileField } from "./iface_file.js";
import { geometryControl, jsonControl } from "./iface_json.js";
import { NUMBER_TYPES, numberControl } from "./iface_number.js";
import { m2mControl, m2oControl, o2mControl } from "./iface_relation.js";
import { textControl } from "./iface_text.js";
import { isTranslations, translationsControl } from "./iface_translations.js";

/** The relations of `collection` by field: { field: { type, relatedCollection, foreignKey? } },
 * and its o2m aliases (an o2m's field, or an m2o's `relatedField` on the other side). */
export function relationsOf(relations, collection) {
  const byField = {};
  const aliases = [];
  for (const r of relations) {
    if (r.collection === collection && (r.type === "m2o" || r.type === "m2m")) {
      byField[r.field] = { type: r.type, relatedCollection: r.relatedCollection };
    } else if (r.collection === collection && r.type === "o2m" && r.relatedField) {
      aliases.push({ field: r.field, type: "o2m", relatedCollection: r.relatedCollection, foreignKey: r.relatedField });
    }
    if (r.type === "m2o" && r.relatedCollection === collection && r.relatedField) {
      aliases.push({ field: r.relatedField, type: "o2m", relatedCollection: r.collection, foreignKey: r.field });
    }
  }
  return { byField, aliases };
}

async function pickControl(field, value, env) {
  // A relation to a collection the user may not read is edited as the plain ids it stores.
  const relation = env.relation && env.shell.ctx.may(env.relation.relatedCollection, "read") ? env.relation : null;
  if (relation && relation.type === "o2m") return o2mControl(field, env);
  if (relation && relation.type === "m2o") return m2oControl(field, value, env);
  if (relation && relation.type === "m2m") return m2mControl(field, value, env);
  if (isTranslations(field)) return translationsControl(field, value, env);
  if (isFileField(field)) return fileControl(field, value, env);
  if (field.type === "boolean") return booleanControl(field, value, env);
  if (choicesOf(field)) return choiceControl(field, value, env);
  if (isTags(field)) return tagsControl(field, value, env);
  if (field.type === "geometry") return geometryControl(field, value, env);
  if (field.type === "json") return jsonControl(field, value, env);
  if (NUMBER_TYPES.has(field.type)) return numberControl(field, value, env);
  if (DATE_TYPES.has(field.type)) return dateControl(field, value, env);
  return textControl(field, value, env);
}

// -- studio42: the options each interface and display declares, [key, kind] (kind: "text",
// "number", "check" or "select:a,b"). They are kept in the field's options as `interfaceOptions`
// and `displayOptions` (free-form keys to the API); the schema screen generates their form from
// these lists (schema_field.js), the editor and the list honour them.
export const INTERFACE_OPTIONS = {
  input: [["placeholder", "text"]],
  "input-multiline": [["placeholder", "text"], ["rows", "number"]],
  textarea: [["placeholder", "text"], ["rows", "number"]],
  markdown: [["placeholder", "text"], ["rows", "number"]],
  "input-rich-text-md": [["placeholder", "text"], ["rows", "number"]],
};
export const DISPLAY_OPTIONS = {
  "formatted-value": [["prefix", "text"], ["suffix", "text"]],
  boolean: [["labelOn", "text"], ["labelOff", "text"]],
  datetime: [["format", "select:date,dateTime,time"]],
};

const declared = (field, kind) => ((field.options && field.options[kind]) || {});

export async function controlFor(field, value, env) {
  const control = await pickControl(field, value, env);
  const own = declared(field, "interfaceOptions");
  const input = control && control.input;
  if (input && (input.tagName === "INPUT" || input.tagName === "TEXTAREA") && typeof own.placeholder === "string") input.placeholder = own.placeholder;
  if (input && input.tagName === "TEXTAREA" && Number.isInteger(own.rows) && own.rows > 0) input.rows = own.rows;
  return control;
}

const DATE_STYLES = { date: { dateStyle: "medium" }, dateTime: { dateStyle: "medium", timeStyle: "short" }, time: { timeStyle: "short" } };

/** A value as the field's display shows it in a list (text). */
export function displayed(field, value, language) {
  if (value === null || value === undefined) return "";
  const own = declared(field, "displayOptions");
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  if (field.display === "boolean" && typeof value === "boolean") return (value ? own.labelOn : own.labelOff) || text;
  if (field.display === "formatted-value") return `${own.prefix || ""}${text}${own.suffix || ""}`;
  if (field.display === "datetime" && DATE_STYLES[own.format]) {
    const date = new Date(field.type === "time" ? `1970-01-01T${value}` : value);
    return Number.isNaN(date.getTime()) ? text : new Intl.DateTimeFormat(language, DATE_STYLES[own.format]).format(date);
  }
  return text;
}
// -- end studio42
