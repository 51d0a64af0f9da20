"""A real SMTP server for the tests (aiosmtpd, Debian's python3-aiosmtpd): on 127.0.0.1,
STARTTLS or implicit TLS, AUTH PLAIN/LOGIN required, each accepted message saved as a file.

    /usr/bin/python3 smtp_server.py --dir DIR --cert CERT --key KEY --user U --password P
        [--implicit-tls]

Prints "port N" on stdout once listening; runs until SIGTERM. Recipients decide the reply:
reject-*@... get 550 (permanent), later-*@... get 451 (temporary), everyone else 250.
"""

import argparse
import asyncio
import os
import signal
import ssl
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Handler:
    def __init__(self, directory, implicit_tls):
        self.dir = directory
        self.implicit_tls = implicit_tls  # every connection is TLS (aiosmtpd's session.ssl
                                          # is set only after STARTTLS)
        self.count = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@")[0].lower()
        if local.startswith("reject-"):
            return "550 5.1.1 No such user here"
        if local.startswith("later-"):
            return "451 4.3.0 Try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        name = os.path.join(self.dir, f"{self.count:05d}.eml")
        with open(name + ".tmp", "wb") as f:
            f.write(f"X-Envelope-From: {envelope.mail_from}\r\n".encode())
            f.write(f"X-Envelope-To: {','.join(envelope.rcpt_tos)}\r\n".encode())
            f.write(f"X-Tls: {'yes' if session.ssl or self.implicit_tls else 'no'}\r\n".encode())
            login = session.auth_data.login.decode() if session.auth_data else ""
            f.write(f"X-Auth: {login}\r\n".encode())
            f.write(envelope.original_content)
        os.rename(name + ".tmp", name)
        return "250 Message accepted"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--implicit-tls", action="store_true")
    a = p.parse_args()

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(a.cert, a.key)

    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword) and auth_data.login == a.user.encode()
              and auth_data.password == a.password.encode())
        return AuthResult(success=ok, handled=False, auth_data=auth_data)

    kwargs = dict(hostname="127.0.0.1", port=0, authenticator=authenticate,
                  auth_required=True, auth_require_tls=True)
    if a.implicit_tls:
        kwargs["ssl_context"] = context
        # aiosmtpd 1.4 does not count implicit TLS as TLS for AUTH; the socket is TLS.
        kwargs["auth_require_tls"] = False
    else:
        kwargs["tls_context"] = context
        kwargs["require_starttls"] = True
    # Port 0 is not supported by Controller's readiness check: bind a free port first.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    kwargs["port"] = s.getsockname()[1]
    s.close()
    controller = Controller(Handler(a.dir, a.implicit_tls), **kwargs)
    controller.start()
    print(f"port {controller.port}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (controller.stop(), sys.exit(0)))
    signal.pause()


if __name__ == "__main__":
    main()
