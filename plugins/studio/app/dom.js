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

// -- flows43: a pointer drag (the flow drawing's steps, the dashboard's panels); each screen that
// uses it offers buttons or keys that do the same.
/** On `el`, a drag of the primary pointer past `threshold` screen pixels: `move(dx, dy, event)`
 * while it goes and `drop(dx, dy, event)` at its end, in units of `scale()` screen pixels (the
 * flow drawing's SVG units; 1: pixels). A press without a drag is left to click; the click that
 * ends a drag finds `data-dragged` on `el` (remove it and ignore that click). */
export function dragging(el, { move, drop, scale = () => 1, threshold = 4 }) {
  el.addEventListener("pointerdown", (down) => {
    if (down.button !== 0) return;
    down.stopPropagation();
    const per = scale();
    let moving = false;
    const delta = (e) => [(e.clientX - down.clientX) / per, (e.clientY - down.clientY) / per];
    const onMove = (e) => {
      if (!moving && Math.hypot(e.clientX - down.clientX, e.clientY - down.clientY) < threshold) return;
      moving = true;
      move(...delta(e), e);
    };
    const onUp = (e) => {
      el.removeEventListener("pointermove", onMove);
      el.removeEventListener("pointerup", onUp);
      el.removeEventListener("pointercancel", onUp);
      if (el.hasPointerCapture(down.pointerId)) el.releasePointerCapture(down.pointerId);
      if (!moving || e.type === "pointercancel") return;
      el.dataset.dragged = "1";
      drop(...delta(e), e);
    };
    el.setPointerCapture(down.pointerId);
    el.addEventListener("pointermove", onMove);
    el.addEventListener("pointerup", onUp);
    el.addEventListener("pointercancel", onUp);
  });
}
// -- end flows43
