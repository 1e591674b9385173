"""Address checks for every header an API caller fills: one address each, no line breaks anywhere.

The kernel's ``check_address`` refuses CR, LF and NUL and more than one address; here the other
line terminators a lenient client might honour are refused too (display names included), and
the address itself must look like ``local@domain.tld``. aiosmtplib's header-injection advisory
(GHSA-v3q9-hj7j-63hq) is the kind of bug this keeps out of our messages whatever the transport.
"""

from __future__ import annotations

import re
from email.utils import parseaddr
from typing import Any

from kernel import ApiError
from kernel.mailer import check_address
from plugins.email.render import HEADER_BREAKS

MAX_ADDRESS_CHARS = 320
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUP = re.compile(r"[:;]")
# ASCII only: an internationalised address needs SMTPUTF8, which the transport does not negotiate.
_ADDR = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                   r"[A-Za-z]{2,63}$")


def check_one(value: Any, path: list[str | int]) -> str:
    """``value`` when it is exactly one valid address (``Name <a@b.c>`` allowed), else 400."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ADDRESS_CHARS:
        raise ApiError.validation("An email address is required here", path=path)
    if HEADER_BREAKS.search(value):
        raise ApiError.validation("Line breaks are not allowed in an address", path=path)
    try:
        check_address(value, "address")
    except ValueError as exc:
        raise ApiError.validation(f"Exactly one email address is expected: {exc}", path=path) from exc
    addr, plain = parseaddr(value)[1], value.strip()
    if not _ADDR.match(addr):
        raise ApiError.validation("This is not a valid email address", path=path)
    # The address must be written as itself ("a@b.co" or "Name <a@b.co>"): a parser that reads
    # another form differently must not send to one address while the header shows another.
    if plain != addr and not plain.endswith(f"<{addr}>"):
        raise ApiError.validation("Write the address as a@example.com or Name <a@example.com>", path=path)
    # Group syntax ("Team: a@b.co;") names recipients in a form no caller means here.
    if _GROUP.search(_QUOTED.sub("", value)):
        raise ApiError.validation("Address groups (':' and ';') are not allowed; quote a display name "
                                  "that contains them", path=path)
    return value.strip()


def bare(value: str) -> str:
    """The lower-cased address part (suppression compares ignoring case)."""
    return parseaddr(value)[1].lower()


def check_list(value: Any, path: str, *, required: bool, most: int) -> list[str]:
    """A list of single addresses (a lone string is accepted as a list of one)."""
    if value is None:
        if required:
            raise ApiError.validation(f"'{path}' needs at least one address", path=[path])
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or (required and not value):
        raise ApiError.validation(f"'{path}' must be an array of email addresses", path=[path])
    if len(value) > most:
        raise ApiError.validation(f"'{path}' takes at most {most} addresses", path=[path])
    out: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(value):
        address = check_one(item, [path, index])
        if bare(address) not in seen:  # one copy per address, whatever its case
            seen.add(bare(address))
            out.append(address)
    return out
