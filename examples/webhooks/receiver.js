// A svc webhook receiver: checks X-Svc-Signature, then prints each event.
// Run: SVC_WEBHOOK_SECRET=... node receiver.js 8080
const http = require("http"), crypto = require("crypto");
const secret = process.env.SVC_WEBHOOK_SECRET;

function verified(header, body) {
  const parts = Object.fromEntries(header.split(",").map((p) => p.split("=", 2)));
  const expected = crypto.createHmac("sha256", secret).update(`${parts.t}.`).update(body).digest("hex");
  const fresh = /^\d+$/.test(parts.t || "") && Math.abs(Date.now() / 1000 - Number(parts.t)) < 300;
  const given = Buffer.from(parts.v1 || "");
  return fresh && given.length === expected.length && crypto.timingSafeEqual(given, Buffer.from(expected));
}

http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const ok = verified(req.headers["x-svc-signature"] || "", body);
    res.writeHead(ok ? 204 : 401).end();
    // Deduplicate by event id: delivery is at least once.
    if (ok) for (const e of JSON.parse(body).events) console.log(e.id, e.type, e.itemId);
  });
}).listen(Number(process.argv[2]), "127.0.0.1");
