// A small markdown renderer of our own for the editor's preview (docs/decisions/studio-build.md):
// it builds DOM nodes through h(), never HTML text, so nothing the author types can become markup.
// Blocks: headings (#), paragraphs, fenced code (```), block quotes (>), lists (- * + and 1.),
// rules (---). Inline: `code`, **strong**, *emphasis* / _emphasis_, [links](url) whose URL is
// http(s), mailto or relative (anything else, javascript: included, is shown as text).

import { h } from "./dom.js";

const SAFE_URL = /^(https?:\/\/|mailto:|\/|#|\.{0,2}\/)[^\s]*$/i;
const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/;

export function inline(text) {
  const out = [];
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      out.push(rest);
      break;
    }
    if (m.index) out.push(rest.slice(0, m.index));
    const token = m[0];
    if (m[1]) out.push(h("code", {}, token.slice(1, -1)));
    else if (m[2]) out.push(h("strong", {}, inline(token.slice(2, -2))));
    else if (m[3]) out.push(h("em", {}, inline(token.slice(1, -1))));
    else {
      const [, label, url] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token);
      out.push(SAFE_URL.test(url) ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, inline(label)) : token);
    }
    rest = rest.slice(m.index + token.length);
  }
  return out;
}

/** The markdown `source` as an array of DOM nodes. */
export function render(source) {
  const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    if (line.startsWith("```")) {
      const code = [];
      for (i += 1; i < lines.length && !lines[i].startsWith("```"); i += 1) code.push(lines[i]);
      i += 1;
      blocks.push(h("pre", {}, h("code", {}, code.join("\n"))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      blocks.push(h(`h${Math.min(6, heading[1].length + 2)}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^(-{3,}|\*{3,})\s*$/.test(line)) {
      blocks.push(h("hr"));
      i += 1;
      continue;
    }
    if (line.startsWith(">")) {
      const quoted = [];
      for (; i < lines.length && lines[i].startsWith(">"); i += 1) quoted.push(lines[i].replace(/^>\s?/, ""));
      blocks.push(h("blockquote", {}, render(quoted.join("\n"))));
      continue;
    }
    const bullet = /^\s*([-*+]|\d+[.)])\s+/;
    if (bullet.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items = [];
      for (; i < lines.length && bullet.test(lines[i]); i += 1) items.push(h("li", {}, inline(lines[i].replace(bullet, ""))));
      blocks.push(h(ordered ? "ol" : "ul", {}, items));
      continue;
    }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !/^(#|```|>|\s*([-*+]|\d+[.)])\s)/.test(lines[i]); i += 1) para.push(lines[i].trim());
    if (!para.length) { para.push(line.trim()); i += 1; }
    blocks.push(h("p", {}, inline(para.join(" "))));
  }
  return blocks;
}
