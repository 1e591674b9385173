"""SmtpMailer against a real SMTP peer: aiosmtpd on a free local port, started per test.

TLS is real too: aiosmtpd with a certificate from a local CA (trustme, the ``tls_ca`` fixture),
trusted through SVC_SMTP_CA_FILE. STARTTLS (AUTH only after the upgrade) and implicit TLS deliver;
a certificate for another name or of an untrusted CA is refused before anything is sent."""

from __future__ import annotations

import contextlib
import email
import email.policy
from types import SimpleNamespace

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from kernel.mailer import (
    DeliveryFailed,
    MailerNotConfigured,
    MemoryMailer,
    OutgoingEmail,
    SmtpMailer,
    make_mailer,
)
from kernel.testing import free_port, tls_server_context

USER, PASSWORD = "mailer", "s3cret-Pa55word"

# The AUTH server runs without TLS on purpose (a loopback test peer); aiosmtpd warns about it.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")


class Collector:
    """An aiosmtpd handler that keeps every envelope it receives."""

    def __init__(self) -> None:
        self.envelopes: list = []

    async def handle_DATA(self, server, session, envelope):
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"

    def message(self, index: int = -1) -> email.message.EmailMessage:
        return email.message_from_bytes(self.envelopes[index].content, policy=email.policy.default)


def _authenticator(server, session, envelope, mechanism, auth_data):
    ok = (
        isinstance(auth_data, LoginPassword)
        and auth_data.login == USER.encode()
        and auth_data.password == PASSWORD.encode()
    )
    return AuthResult(success=ok, handled=False)


def _serve(**smtp_kwargs):
    handler = Collector()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), **smtp_kwargs)
    controller.start()
    return controller, handler


@pytest.fixture
def smtp_server():
    """A plain SMTP server (no TLS, no AUTH); yields (port, collector)."""
    controller, handler = _serve()
    yield controller.port, handler
    controller.stop()


@pytest.fixture
def smtp_auth_server():
    """An SMTP server that requires AUTH (allowed without TLS, for the test only)."""
    controller, handler = _serve(authenticator=_authenticator, auth_required=True, auth_require_tls=False)
    yield controller.port, handler
    controller.stop()


def _mailer(port: int, **kwargs) -> SmtpMailer:
    return SmtpMailer("127.0.0.1", port, sender="CMS <cms@example.com>", timeout=5, **kwargs)


async def test_plain_text_message(smtp_server):
    port, inbox = smtp_server
    message_id = await _mailer(port).send(
        OutgoingEmail(to=["ann@example.com"], subject="Hello é", text="Plain body\nline 2")
    )
    envelope = inbox.envelopes[-1]
    assert envelope.mail_from == "cms@example.com"
    assert envelope.rcpt_tos == ["ann@example.com"]
    msg = inbox.message()
    assert msg["Subject"] == "Hello é"
    assert msg["From"] == "CMS <cms@example.com>"
    assert msg["To"] == "ann@example.com"
    assert msg["Message-ID"] == message_id
    assert message_id.startswith("<") and message_id.endswith("@example.com>")
    assert msg["Date"]
    assert msg.get_content_type() == "text/plain"
    assert msg.get_content().replace("\r\n", "\n") == "Plain body\nline 2\n"


async def test_html_and_text_make_multipart_alternative(smtp_server):
    port, inbox = smtp_server
    await _mailer(port).send(
        OutgoingEmail(to=["ann@example.com"], subject="Both", text="plain", html="<p>rich</p>")
    )
    msg = inbox.message()
    assert msg.get_content_type() == "multipart/alternative"
    parts = {part.get_content_type(): part.get_content() for part in msg.iter_parts()}
    assert parts["text/plain"].strip() == "plain"
    assert parts["text/html"].strip() == "<p>rich</p>"


async def test_html_only(smtp_server):
    port, inbox = smtp_server
    await _mailer(port).send(OutgoingEmail(to=["ann@example.com"], subject="H", html="<b>x</b>"))
    assert inbox.message().get_content_type() == "text/html"


async def test_cc_bcc_reply_to_sender_and_extra_headers(smtp_server):
    port, inbox = smtp_server
    await _mailer(port).send(
        OutgoingEmail(
            to=["Ann <ann@example.com>"],
            cc=["bob@example.com", "cy@example.com"],
            bcc=["hidden@example.com"],
            subject="Team",
            text="hi",
            reply_to="support@example.com",
            sender="Editor <editor@example.org>",
            headers={"X-Svc-Site": "site-1", "List-Unsubscribe": "<mailto:u@example.com>"},
        )
    )
    envelope = inbox.envelopes[-1]
    assert envelope.mail_from == "editor@example.org"
    assert envelope.rcpt_tos == ["ann@example.com", "bob@example.com", "cy@example.com", "hidden@example.com"]
    msg = inbox.message()
    assert msg["Cc"] == "bob@example.com, cy@example.com"
    assert msg["Bcc"] is None
    assert b"hidden@example.com" not in envelope.content
    assert msg["Reply-To"] == "support@example.com"
    assert msg["From"] == "Editor <editor@example.org>"
    assert msg["X-Svc-Site"] == "site-1"


async def test_a_single_address_string_is_one_recipient(smtp_server):
    port, inbox = smtp_server
    await _mailer(port).send(OutgoingEmail(to="ann@example.com", subject="s", text="t"))  # type: ignore[arg-type]
    assert inbox.envelopes[-1].rcpt_tos == ["ann@example.com"]


async def test_auth_with_user_and_password(smtp_auth_server):
    port, inbox = smtp_auth_server
    mailer = _mailer(port, user=USER, password=PASSWORD)
    assert await mailer.check() == "ok"
    await mailer.send(OutgoingEmail(to=["ann@example.com"], subject="authed", text="t"))
    assert inbox.message()["Subject"] == "authed"


async def test_wrong_password_fails_without_leaking_it(smtp_auth_server):
    port, inbox = smtp_auth_server
    wrong = "wrong-" + PASSWORD
    mailer = _mailer(port, user=USER, password=wrong)
    with pytest.raises(DeliveryFailed) as info:
        await mailer.send(OutgoingEmail(to=["ann@example.com"], subject="s", text="t"))
    assert wrong not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert info.value.temporary is False
    assert wrong not in repr(mailer) and wrong not in mailer.describe()
    with pytest.raises(DeliveryFailed):
        await mailer.check()
    assert inbox.envelopes == []


async def test_server_requiring_auth_refuses_anonymous_mail(smtp_auth_server):
    port, inbox = smtp_auth_server
    with pytest.raises(DeliveryFailed):
        await _mailer(port).send(OutgoingEmail(to=["ann@example.com"], subject="s", text="t"))
    assert inbox.envelopes == []


async def test_connection_refused_is_delivery_failed():
    mailer = _mailer(free_port())
    with pytest.raises(DeliveryFailed) as info:
        await mailer.send(OutgoingEmail(to=["ann@example.com"], subject="s", text="t"))
    assert info.value.temporary is True
    with pytest.raises(DeliveryFailed):
        await mailer.check()


async def test_tls_modes_against_a_plain_server_fail_cleanly(smtp_server):
    port, inbox = smtp_server
    for mode in ("tls", "starttls"):
        with pytest.raises(DeliveryFailed):
            await _mailer(port, tls=mode).send(OutgoingEmail(to=["ann@example.com"], subject="s", text="t"))
    assert inbox.envelopes == []


async def test_unconfigured_mailer():
    mailer = SmtpMailer("")
    assert mailer.configured is False
    assert await mailer.check() == "not configured"
    with pytest.raises(MailerNotConfigured):
        await mailer.send(OutgoingEmail(to=["ann@example.com"], subject="s", text="t"))


INJECTIONS = [
    {"subject": "Hi\r\nBcc: victim@example.com"},
    {"subject": "Hi\nX: y"},
    {"to": ["ann@example.com\r\nBcc: victim@example.com"]},
    {"cc": ["bob@example.com\n"]},
    {"reply_to": "a@example.com\rX: y"},
    {"sender": "cms@example.com\nBcc: v@example.com"},
    {"headers": {"X-Test": "v\r\nBcc: victim@example.com"}},
    {"headers": {"X-Bad:Name": "v"}},
    {"headers": {"Bcc": "victim@example.com"}},
    {"to": ["ann@example.com, victim@example.com"]},
    {"to": ["not-an-address"]},
    {"to": []},
    {"text": None, "html": None},
]


@pytest.mark.parametrize("change", INJECTIONS, ids=repr)
async def test_header_injection_and_malformed_messages_are_refused(smtp_server, change):
    port, inbox = smtp_server
    fields = {"to": ["ann@example.com"], "subject": "s", "text": "t", **change}
    with pytest.raises(ValueError):
        await _mailer(port).send(OutgoingEmail(**fields))
    assert inbox.envelopes == []


def _settings(**overrides) -> SimpleNamespace:
    values = dict(
        smtp_host="",
        smtp_port=25,
        smtp_user="",
        smtp_password="",
        smtp_tls="none",
        smtp_ca_file="",
        email_from="svc@localhost",
    )
    values.update(overrides)
    return SimpleNamespace(**values)


async def test_make_mailer_from_settings(smtp_auth_server):
    port, inbox = smtp_auth_server
    assert make_mailer(_settings()).configured is False
    mailer = make_mailer(
        _settings(
            smtp_host="127.0.0.1",
            smtp_port=port,
            smtp_user=USER,
            smtp_password=PASSWORD,
            email_from="noreply@example.net",
        )
    )
    assert PASSWORD not in mailer.describe()
    await mailer.send(OutgoingEmail(to=["ann@example.com"], subject="s", text="t"))
    assert inbox.envelopes[-1].mail_from == "noreply@example.net"


@pytest.mark.parametrize(
    ("override", "variable"),
    [({"smtp_tls": "ssl"}, "SVC_SMTP_TLS"), ({"email_from": "nobody"}, "SVC_EMAIL_FROM")],
)
def test_make_mailer_refuses_bad_settings(override, variable):
    with pytest.raises(ValueError, match=variable):
        make_mailer(_settings(smtp_host="mail.example.com", **override))


async def test_memory_mailer_keeps_what_smtp_would_send():
    mailer = MemoryMailer(sender="cms@example.com")
    message_id = await mailer.send(
        OutgoingEmail(to=["ann@example.com"], subject="s", text="t", html="<p>t</p>")
    )
    [sent] = mailer.outbox
    assert sent.message_id == message_id
    assert sent.message.get_content_type() == "multipart/alternative"
    with pytest.raises(ValueError):
        await mailer.send(OutgoingEmail(to=["a@example.com"], subject="x\ny", text="t"))
    assert len(mailer.outbox) == 1


# --- TLS ------------------------------------------------------------------------------------------

TLS_MESSAGE = OutgoingEmail(to=["ann@example.com"], subject="Over TLS", text="body")


@contextlib.contextmanager
def tls_smtp_server(mode: str, cert):
    """aiosmtpd on 127.0.0.1: ``starttls`` (STARTTLS required, AUTH only over TLS) or ``tls``."""
    context = tls_server_context(cert)
    if mode == "tls":
        controller, handler = _serve(ssl_context=context)
    else:
        controller, handler = _serve(tls_context=context, require_starttls=True, authenticator=_authenticator,
                                     auth_required=True)
    try:
        yield controller.port, handler
    finally:
        controller.stop()


def _tls_mailer(port: int, mode: str, ca_file: str):
    login = {"smtp_user": USER, "smtp_password": PASSWORD} if mode == "starttls" else {}
    return make_mailer(_settings(smtp_host="127.0.0.1", smtp_port=port, smtp_tls=mode, smtp_ca_file=ca_file,
                                 email_from="cms@example.com", **login))


@pytest.mark.parametrize("mode", ["starttls", "tls"])
async def test_tls_delivers_to_a_server_of_the_trusted_ca(mode, tls_ca, tls_ca_file):
    with tls_smtp_server(mode, tls_ca.issue_cert("127.0.0.1")) as (port, inbox):
        await _tls_mailer(port, mode, tls_ca_file).send(TLS_MESSAGE)
        assert [(e.mail_from, e.rcpt_tos) for e in inbox.envelopes] == [("cms@example.com", ["ann@example.com"])]


async def test_starttls_server_refuses_a_plain_client(tls_ca, tls_ca_file):
    with tls_smtp_server("starttls", tls_ca.issue_cert("127.0.0.1")) as (port, inbox):
        with pytest.raises(DeliveryFailed):
            await _tls_mailer(port, "none", tls_ca_file).send(TLS_MESSAGE)
        assert inbox.envelopes == []


@pytest.mark.parametrize("mode", ["starttls", "tls"])
@pytest.mark.parametrize("case", ["another name", "untrusted CA", "no CA file"])
async def test_a_certificate_that_does_not_check_out_is_refused(mode, case, tls_ca, tls_ca_file):
    cert = {"another name": tls_ca.issue_cert("mail.example.com"),
            "untrusted CA": trustme.CA().issue_cert("127.0.0.1"),
            "no CA file": tls_ca.issue_cert("127.0.0.1")}[case]
    with tls_smtp_server(mode, cert) as (port, inbox):
        with pytest.raises(DeliveryFailed) as caught:
            await _tls_mailer(port, mode, "" if case == "no CA file" else tls_ca_file).send(TLS_MESSAGE)
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value), str(caught.value)
        assert inbox.envelopes == []


def test_a_ca_file_that_cannot_be_loaded_is_refused(tmp_path):
    from kernel.base.settings import Settings, SettingsError

    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(SettingsError, match="SVC_SMTP_CA_FILE"):
        Settings.from_env(environ={"SVC_SMTP_CA_FILE": str(bad)})
    with pytest.raises(ValueError, match="SVC_SMTP_CA_FILE"):
        make_mailer(_settings(smtp_host="h", smtp_tls="tls", smtp_ca_file=str(bad)))
