// -- releases: wall-clock times in a named time zone (the site's releases.timezone), with the
// browser's Intl data: no library. "2030-01-05T01:00" in America/New_York <-> an ISO UTC instant.

function wallClock(ms, zone) {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit",
  }).formatToParts(new Date(ms));
  const get = (type) => Number(parts.find((p) => p.type === type).value);
  return { y: get("year"), mo: get("month"), d: get("day"), h: get("hour"), mi: get("minute"), s: get("second") };
}

/** How far `zone`'s wall clock is ahead of UTC at the instant `ms`, in ms. */
function offset(ms, zone) {
  const w = wallClock(ms, zone);
  return Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s) - Math.floor(ms / 1000) * 1000;
}

/** "YYYY-MM-DDTHH:MM" read in `zone` as an ISO UTC instant ("...Z"). */
export function fromZoned(local, zone) {
  const [date, time] = local.split("T");
  const [y, mo, d] = date.split("-").map(Number);
  const [hh, mm] = time.split(":").map(Number);
  const asUtc = Date.UTC(y, mo - 1, d, hh, mm);
  let instant = asUtc - offset(asUtc, zone);
  const again = asUtc - offset(instant, zone); // across a change of offset, the second guess holds
  if (again !== instant) instant = again;
  return new Date(instant).toISOString();
}

/** An ISO instant as "YYYY-MM-DD HH:MM" on `zone`'s wall clock. */
export function toZoned(iso, zone) {
  const w = wallClock(Date.parse(iso), zone);
  const p = (n) => String(n).padStart(2, "0");
  return `${w.y}-${p(w.mo)}-${p(w.d)} ${p(w.h)}:${p(w.mi)}`;
}
// -- end releases
