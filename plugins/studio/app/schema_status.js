// -- schema: what the schema screens say after an action: a message kept across the redraw that
// follows a change (flash), and the API's refusal with the path of the part it names.

import { ApiError } from "./api.js";
import { h } from "./dom.js";
import { refusal } from "./media.js";

let kept = "";

/** Keep `message` for the next schema screen drawn (after a change, the screen is drawn again). */
export function flash(message) {
  kept = message;
}

export function takeFlash() {
  const message = kept;
  kept = "";
  return message;
}

/** The API's refusal as an error line: its message, code and reason, and the path it names. */
export function apiProblem(err) {
  const first = (err instanceof ApiError && err.errors[0]) || {};
  const path = first.path && first.path.length ? ` [${first.path.join(" / ")}]` : "";
  return h("span", { class: "error" }, refusal(err) + path);
}
// -- end schema
