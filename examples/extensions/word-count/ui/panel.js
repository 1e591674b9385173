// word-count's panel: the latest articles with the word count the item hook stored. It runs in a
// sandboxed frame with no network: it asks the studio (docs/extensions.md#ui-panels), which answers
// only what the site granted this extension (items:articles), as the signed-in user.
let next = 0;
const waiting = new Map();
addEventListener("message", (e) => {
  if (e.source === parent && waiting.has(e.data?.id)) {
    waiting.get(e.data.id)(e.data);
    waiting.delete(e.data.id);
  }
});
const ask = (call, args = {}) => new Promise((resolve) => {
  waiting.set(++next, resolve);
  parent.postMessage({ svc: 1, id: next, call, args }, "*");
});

const list = document.createElement("ul");
document.body.append(Object.assign(document.createElement("h1"), { textContent: "Word count" }), list);
const line = (text) => list.append(Object.assign(document.createElement("li"), { textContent: text }));

const articles = await ask("items.list", { collection: "articles", limit: 20, sort: "-updatedAt" });
if (articles.error) {
  line(`Cannot read articles: ${articles.error.code}`);
} else if (articles.data.length === 0) {
  line("No articles yet.");
} else {
  for (const article of articles.data) {
    // items.read is there too: one article by id ({ collection, id }).
    line(`${article.title ?? article.id}: ${article.words ?? "not counted yet"} words`);
  }
}
