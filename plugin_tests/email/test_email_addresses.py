"""Address checks as properties (pure functions, no app): whatever the input, an accepted value
is exactly one address with no line terminator anywhere, and the MIME message built from it
has exactly the recipients asked for (no smuggled header)."""

from __future__ import annotations

import email
import email.policy

from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import ApiError
from kernel.mailer import OutgoingEmail, build_message
from kernel.testing import examples
from plugins.email import addresses
from plugins.email.render import HEADER_BREAKS

PIECES = st.sampled_from(["a", "b@example.com", "Ann", " ", "<", ">", ",", ";", '"', "\r", "\n", "\r\n",
                          "\u2028", "\x85", "\x00", "Bcc: evil@example.net", "@", ".", "é", "(x)", ":"])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_an_accepted_address_is_one_address_on_one_line(raw):
    try:
        value = addresses.check_one(raw, ["to"])
    except ApiError as exc:
        assert exc.status == 400
        return
    assert not HEADER_BREAKS.search(value)
    message = build_message(OutgoingEmail(to=[value], subject="s", text="t"), "news@example.com")
    parsed = email.message_from_bytes(message.as_bytes(), policy=email.policy.default)
    assert [a.addr_spec.lower() for a in parsed["To"].addresses] == [addresses.bare(value)]
    assert parsed["Bcc"] is None and all(group.display_name is None for group in parsed["To"].groups)
