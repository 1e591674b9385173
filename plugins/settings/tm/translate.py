"""``POST /tm/translate``: memory, then the glossary, then a machine-translation provider.

1. **memory**: the best entry at ``threshold`` (default 75) answers with its target text.
2. **glossary**: a text that is exactly a glossary term answers with its translation.
3. **provider**: the text, with the glossary's terms already put in their translated form, goes
   to a server speaking LibreTranslate's HTTP API (``POST {url}/translate`` with
   ``{ q, source, target, format: "text", api_key? }``, answering ``{ translatedText }``). The
   site setting ``tm.provider`` (``{ url, apiKey? }``, secret) wins over the deployment's
   ``SVC_TM_PROVIDER_URL`` and ``SVC_TM_PROVIDER_API_KEY``. ``store: true`` (admins) keeps the
   result in the memory with the entry source ``mt:libretranslate``.

Without a provider the answer says so (``step: "none"``, ``translation: null``, a ``message``):
nothing is invented.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.base.outbound import OutboundRefused, check_url, policy
from kernel.base.outbound import client as outbound_client
from kernel.http.media import reject_unknown
from plugins.settings.api import get_setting
from plugins.settings.tm import glossary, tm, tm_lookup

PROVIDER_SETTING = "tm.provider"
ENTRY_SOURCE = "mt:libretranslate"
FIELDS = frozenset({"text", "from", "to", "threshold", "store"})


def parse_provider_url(raw: str) -> str:
    """``SVC_TM_PROVIDER_URL``: empty, or an http(s) URL (checked at boot)."""
    raw = raw.strip()
    if not raw:
        return ""
    try:
        return check_url(raw).rstrip("/")
    except ApiError as exc:
        raise ValueError(exc.message) from None


def provider_validator(kernel: Any) -> Any:
    """The check of the ``tm.provider`` setting: ``{ url, apiKey? }`` of a LibreTranslate server.
    A site admin's URL is checked by the outbound rule (docs/operations.md#outbound-requests) (``kernel.base.outbound.policy``):
    public, or inside ``SVC_OUTBOUND_ALLOW_NETWORKS``."""

    def validate(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) - {"url", "apiKey"}:
            raise ValueError("must be an object { url, apiKey? }")
        try:
            url = check_url(value.get("url"), path=["url"], policy=policy(kernel)).rstrip("/")
        except ApiError as exc:
            raise ValueError(f"url {exc.message}") from None
        out = {"url": url}
        key = value.get("apiKey")
        if key is not None:
            if not isinstance(key, str) or not key or len(key) > 500:
                raise ValueError("apiKey must be a string of at most 500 characters")
            out["apiKey"] = key
        return out

    return validate


async def provider_of(kernel: Any, site_id: str) -> dict[str, Any] | None:
    configured = await get_setting(kernel, site_id, PROVIDER_SETTING)
    if configured:
        return {**configured, "site": True}
    url = kernel.settings.get("tm_provider_url") or ""
    if not url:
        return None
    key = kernel.settings.get("tm_provider_api_key") or None
    return {"url": url.rstrip("/"), **({"apiKey": key} if key else {})}


async def libretranslate(kernel: Any, provider: dict[str, Any], text: str, source: str, target: str) -> str:
    """One call of LibreTranslate's ``/translate``; 502 ``TRANSLATION_FAILED`` on any failure."""
    import httpx

    body: dict[str, Any] = {"q": text, "source": source, "target": target, "format": "text"}
    if provider.get("apiKey"):
        body["api_key"] = provider["apiKey"]
    timeout = float(kernel.settings.get("tm_provider_timeout") or 10)
    try:
        # A site's provider is checked again on the address connected to (the outbound rule); the
        # operator's own SVC_TM_PROVIDER_URL may be internal (the operator client).
        operator = not provider.get("site")
        http = outbound_client(kernel, "settings.tm_provider" + (".operator" if operator else ""),
                               timeout=httpx.Timeout(timeout), operator=operator)
        resp = await http.post(provider["url"] + "/translate", json=body)
    except (OutboundRefused, httpx.HTTPError) as exc:
        raise ApiError(502, "TRANSLATION_FAILED", f"The translation provider could not be reached: {exc}") from None
    try:
        answer = resp.json()
    except ValueError:
        answer = None
    if resp.status_code != 200 or not isinstance(answer, dict) or not isinstance(answer.get("translatedText"), str):
        reason = answer.get("error") if isinstance(answer, dict) else None
        reason = reason[:200] if isinstance(reason, str) else None
        raise ApiError(502, "TRANSLATION_FAILED",
                       f"The translation provider answered {resp.status_code}" + (f": {reason}" if reason else ""))
    return answer["translatedText"]


async def translate(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    reject_unknown(body, FIELDS)
    text = tm.text(body.get("text"), "text")
    source = tm.language(body.get("from"), "from")
    target = tm.language(body.get("to"), "to")
    threshold = tm.threshold_of(body.get("threshold"))
    store = body.get("store", False)
    if not isinstance(store, bool):
        raise ApiError.validation("'store' must be a boolean", path=["store"])
    if store and not ctx.principal.is_admin:
        raise ApiError.forbidden("Storing into the translation memory needs admin")
    kernel, site_id = ctx.kernel, ctx.site_id
    out: dict[str, Any] = {"text": text, "from": source, "to": target, "translation": None, "step": "none",
                           "glossary": [], "stored": False}

    match = await tm_lookup.best_match(kernel, site_id, text, source, target, threshold)
    if match is not None:
        return {**out, "translation": match["targetText"], "step": "memory", "score": match["score"],
                "entryId": match["id"]}

    terms = await glossary.terms_for(kernel, site_id, source, target)
    whole = next((t for t in terms if t["term"].casefold() == text.strip().casefold()), None)
    if whole is not None:
        return {**out, "translation": whole["translation"], "step": "glossary",
                "glossary": [{"term": whole["term"], "translation": whole["translation"]}]}
    found = glossary.occurrences(text, terms)
    out["glossary"] = [{"term": t["term"], "translation": t["translation"]} for t in found]

    provider = await provider_of(kernel, site_id)
    if provider is None:
        return {**out, "message": "No translation-memory match, no glossary entry for the whole text, and no "
                                  "machine-translation provider is configured (the tm.provider setting or "
                                  "SVC_TM_PROVIDER_URL): nothing was translated."}
    translation = await libretranslate(kernel, provider, glossary.substitute(text, found), source, target)
    out.update(translation=translation, step="provider", provider="libretranslate")
    if store:
        async with ctx.unit_of_work() as uow:
            entry, _ = await tm.upsert_in(uow, {"source_lang": source, "target_lang": target, "source_text": text,
                                                "target_text": translation, "source": ENTRY_SOURCE})
        out.update(stored=True, entryId=entry["id"])
    return out
