"""SmtpMailer over real TLS: aiosmtpd with a certificate from a local CA (trustme, ``tls_ca``),
trusted through SVC_SMTP_CA_FILE. STARTTLS (with AUTH only after the upgrade) and implicit TLS
deliver; a certificate for another name or of an untrusted CA is refused before anything is sent."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from kernel.mailer import DeliveryFailed, OutgoingEmail, make_mailer
from kernel.testing import free_port, tls_server_context

USER, PASSWORD = "mailer", "s3cret-Pa55word"
MESSAGE = OutgoingEmail(to=["ann@example.com"], subject="Over TLS", text="body")


class Collector:
    def __init__(self) -> None:
        self.envelopes: list = []

    async def handle_DATA(self, server, session, envelope):
        self.envelopes.append(envelope)
        return "250 Message accepted for delivery"


def _authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USER.encode(), PASSWORD.encode())
    return AuthResult(success=ok, handled=False)


@contextlib.contextmanager
def smtp_server(mode: str, cert):
    """aiosmtpd on 127.0.0.1: ``starttls`` (STARTTLS required, AUTH only over TLS) or ``tls``."""
    handler = Collector()
    context = tls_server_context(cert)
    if mode == "tls":
        options = {"ssl_context": context}
    else:
        options = {"tls_context": context, "require_starttls": True, "authenticator": _authenticator,
                   "auth_required": True}
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), **options)
    controller.start()
    try:
        yield controller.port, handler
    finally:
        controller.stop()


def _mailer(port: int, mode: str, ca_file: str):
    return make_mailer(SimpleNamespace(
        smtp_host="127.0.0.1", smtp_port=port, smtp_tls=mode, smtp_ca_file=ca_file,
        smtp_user=USER if mode == "starttls" else "", smtp_password=PASSWORD if mode == "starttls" else "",
        email_from="cms@example.com"))


@pytest.fixture
def ca_file(tls_ca, tmp_path):
    path = tmp_path / "ca.pem"
    tls_ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.mark.parametrize("mode", ["starttls", "tls"])
async def test_tls_delivers_to_a_server_of_the_trusted_ca(mode, tls_ca, ca_file):
    with smtp_server(mode, tls_ca.issue_cert("127.0.0.1")) as (port, inbox):
        await _mailer(port, mode, ca_file).send(MESSAGE)
        assert [(e.mail_from, e.rcpt_tos) for e in inbox.envelopes] == [("cms@example.com", ["ann@example.com"])]


async def test_starttls_server_refuses_a_plain_client(tls_ca, ca_file):
    with smtp_server("starttls", tls_ca.issue_cert("127.0.0.1")) as (port, inbox):
        with pytest.raises(DeliveryFailed):
            await _mailer(port, "none", ca_file).send(MESSAGE)
        assert inbox.envelopes == []


@pytest.mark.parametrize("mode", ["starttls", "tls"])
@pytest.mark.parametrize("case", ["another name", "untrusted CA", "no CA file"])
async def test_a_certificate_that_does_not_check_out_is_refused(mode, case, tls_ca, ca_file):
    cert = {"another name": tls_ca.issue_cert("mail.example.com"),
            "untrusted CA": trustme.CA().issue_cert("127.0.0.1"),
            "no CA file": tls_ca.issue_cert("127.0.0.1")}[case]
    with smtp_server(mode, cert) as (port, inbox):
        with pytest.raises(DeliveryFailed) as caught:
            await _mailer(port, mode, "" if case == "no CA file" else ca_file).send(MESSAGE)
        assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value) or "certificate verify failed" in str(
            caught.value), str(caught.value)
        assert inbox.envelopes == []


async def test_a_ca_file_that_cannot_be_loaded_is_refused(tmp_path):
    from kernel.settings import Settings, SettingsError

    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    with pytest.raises(SettingsError, match="SVC_SMTP_CA_FILE"):
        Settings.from_env(environ={"SVC_SMTP_CA_FILE": str(bad)})
    with pytest.raises(ValueError, match="SVC_SMTP_CA_FILE"):
        make_mailer(SimpleNamespace(smtp_host="h", smtp_port=25, smtp_tls="tls", smtp_ca_file=str(bad),
                                    smtp_user="", smtp_password="", email_from="cms@example.com"))
