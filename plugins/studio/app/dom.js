// A tiny element builder: h("button", { type: "button", onclick }, "Save").
// Attributes starting with "on" become listeners; false/null attributes are left out.
// Text is always set as text, never parsed as HTML.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

let counter = 0;
export function uid(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

// -- files: a drop zone: files dropped on `zone` go to `onFiles` (the zone is marked while dragged over)
export function dropFiles(zone, onFiles) {
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    onFiles([...event.dataTransfer.files]);
  });
}
// -- end files

// -- schema: a modal question (a <dialog> named by its heading): resolves with the value of the
// button chosen, or `dismiss` on Escape. `choices` are [label, value, attributes?].
export function ask({ title, body = null, choices, dismiss = false, className = "confirm" }) {
  return new Promise((resolve) => {
    const headingId = uid("dialog");
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    const dialog = h("dialog", { "aria-labelledby": headingId, class: className },
      h("h2", { id: headingId }, title), body,
      h("div", { class: "tools" }, choices.map(([label, value, attrs = {}]) =>
        h("button", { type: "button", ...attrs, onclick: () => done(value) }, label))));
    dialog.addEventListener("cancel", (event) => { event.preventDefault(); done(dismiss); });
    document.body.append(dialog);
    dialog.showModal();
  });
}
// -- end schema
