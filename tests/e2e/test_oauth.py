"""Cortex as an OAuth 2.1 protected resource with its own authorization server (issue #34):
discovery from a 401, registration, consent in the inbox, the code exchange with PKCE, a tool
call, refresh, revocation; and each bad input refused with the RFC's error and nothing issued.
The person's browser is played with http.client (tests/clients/v1_oauth.mjs drives a real
one). Python 3 stdlib only.

    CORTEX_BIN=/path/to/cortex python3 -m unittest test_oauth -v
"""

import base64
import hashlib
import http.client
import http.server
import json
import os
import re
import secrets
import ssl
import subprocess
import tempfile
import threading
import unittest
import urllib.parse

from test_drafter import call_tool
from test_http import Server, cli, create_token

REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the test reads the Location


def pkce():
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.rstrip(b"=").decode()


class Http:
    """One client of the server: requests, and (for a browser) the inbox's cookie."""

    def __init__(self, port):
        self.port = port
        self.cookie = ""

    def request(self, method, target, body=None, headers=None, form=None):
        headers = dict(headers or {})
        headers.setdefault("Host", f"127.0.0.1:{self.port}")
        if self.cookie:
            headers["Cookie"] = self.cookie
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None and not isinstance(body, (str, bytes)):
            body = json.dumps(body)
            headers["Content-Type"] = "application/json"
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        c.request(method, target, body, headers)
        r = c.getresponse()
        r.text = r.read().decode("utf-8", "replace")
        c.close()
        for name, value in r.getheaders():
            if name.lower() == "set-cookie" and value.startswith("cortex_inbox="):
                self.cookie = value.split(";")[0]
        return r

    def json(self, *args, **kwargs):
        r = self.request(*args, **kwargs)
        return r.status, json.loads(r.text) if r.text else None


class OAuthBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-oauth-")
        cls.data = cls.tmp.name
        cls.ctk = create_token(cls.data, "alpha", "read,act")  # the workspace, and a ctk_
        cls.server = Server(cls.data)
        cls.base = f"http://127.0.0.1:{cls.server.port}"
        cls.resource = cls.base + "/mcp"

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.kill()
        cls.tmp.cleanup()

    def client(self):
        return Http(self.server.port)

    def browser(self, workspace="alpha"):
        """A browser signed in to the inbox of `workspace`."""
        b = Http(self.server.port)
        link = cli(self.data, "inbox", "link", "--data", self.data, "--workspace", workspace,
                   "--base-url", self.base).stdout.strip()
        r = b.request("GET", urllib.parse.urlsplit(link).path + "?" +
                      urllib.parse.urlsplit(link).query)
        self.assertEqual(r.status, 303, r.text)
        self.assertTrue(b.cookie)
        return b

    def register(self, redirect_uris=(REDIRECT,), name="Test agent"):
        status, body = self.client().json("POST", "/oauth/register", {
            "redirect_uris": list(redirect_uris), "client_name": name,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none"})
        self.assertEqual(status, 201, body)
        return body["client_id"]

    def authorize_query(self, client_id, challenge, scope="read act", redirect=REDIRECT,
                        **extra):
        q = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "xyz",
             "scope": scope, "resource": self.resource, **extra}
        return "/inbox/authorize?" + urllib.parse.urlencode(q)

    def consent(self, browser, client_id, challenge, scope="read act", grant=("read", "act"),
                decision="allow", redirect=REDIRECT):
        """The person opens the consent page and decides; returns the redirect's query."""
        page = browser.request("GET", self.authorize_query(client_id, challenge, scope,
                                                           redirect))
        self.assertEqual(page.status, 200, page.text)
        fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">',
                                 page.text))
        form = {k: v.replace("&amp;", "&").replace("&quot;", '"') for k, v in fields.items()}
        for g in grant:
            form["grant_" + g] = "on"
        form["decision"] = decision
        r = browser.request("POST", "/inbox/authorize", form=form,
                            headers={"Origin": self.base})
        self.assertEqual(r.status, 303, r.text)
        location = r.getheader("Location")
        self.assertTrue(location.startswith(redirect), location)
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))

    def token(self, form):
        return self.client().json("POST", "/oauth/token", form=form)

    def code_flow(self, scope="read act", grant=("read", "act")):
        client_id = self.register()
        verifier, challenge = pkce()
        answer = self.consent(self.browser(), client_id, challenge, scope, grant)
        self.assertEqual(answer["state"], "xyz")
        self.assertEqual(answer["iss"], self.base)
        return client_id, verifier, answer["code"]

    def exchange(self, client_id, verifier, code, redirect=REDIRECT):
        return self.token({"grant_type": "authorization_code", "code": code,
                           "client_id": client_id, "code_verifier": verifier,
                           "redirect_uri": redirect, "resource": self.resource})

    def tokens_listed(self):
        out = cli(self.data, "token", "list", "--data", self.data, "--workspace", "alpha").stdout
        return [line.split("\t") for line in out.splitlines()[1:]]

    def mcp_status(self, token):
        r = self.client().request("POST", "/mcp", json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "decision.list", "arguments": {},
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}), {
            "Content-Type": "application/json", "Accept": "application/json",
            "Authorization": "Bearer " + token, "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call", "Mcp-Name": "decision.list"})
        return r.status


class TestDiscovery(OAuthBase):
    def test_a_401_leads_to_the_authorization_server(self):
        r = self.client().request("POST", "/mcp", "{}", {"Content-Type": "application/json"})
        self.assertEqual(r.status, 401)
        challenge = r.getheader("WWW-Authenticate")
        m = re.search(r'resource_metadata="([^"]+)"', challenge)
        self.assertTrue(m, challenge)
        path = urllib.parse.urlsplit(m.group(1)).path
        status, prm = self.client().json("GET", path)
        self.assertEqual(status, 200)
        self.assertEqual(prm["resource"], self.resource)
        self.assertEqual(prm["scopes_supported"], ["read", "act", "approve"])
        status, asm = self.client().json(
            "GET", "/.well-known/oauth-authorization-server")
        self.assertEqual(status, 200)
        self.assertEqual(asm["issuer"], prm["authorization_servers"][0])
        self.assertEqual(asm["code_challenge_methods_supported"], ["S256"])
        self.assertEqual(asm["token_endpoint"], self.base + "/oauth/token")
        self.assertEqual(asm["registration_endpoint"], self.base + "/oauth/register")


class TestFlow(OAuthBase):
    def test_code_token_tool_call_refresh_and_revocation(self):
        client_id, verifier, code = self.code_flow()
        status, tokens = self.exchange(client_id, verifier, code)
        self.assertEqual(status, 200, tokens)
        self.assertEqual(tokens["token_type"], "Bearer")
        self.assertEqual(tokens["scope"], "read act")
        self.assertEqual(tokens["expires_in"], 3600)
        access = tokens["access_token"]
        result = call_tool(self.server.port, access, "decision.list", {})
        self.assertFalse(result.get("isError"), result)
        # Listed with its client, and stored hashed (the secret is nowhere on disk).
        rows = [r for r in self.tokens_listed() if client_id in r]
        self.assertEqual(len(rows), 1, self.tokens_listed())
        self.assertIn("Test agent", rows[0])
        # Refresh: a new pair; the old access token and the old refresh token are spent.
        status, fresh = self.token({"grant_type": "refresh_token", "client_id": client_id,
                                    "refresh_token": tokens["refresh_token"]})
        self.assertEqual(status, 200, fresh)
        self.assertNotEqual(fresh["access_token"], access)
        self.assertNotEqual(fresh["refresh_token"], tokens["refresh_token"])
        self.assertEqual(self.mcp_status(access), 401)
        self.assertEqual(self.mcp_status(fresh["access_token"]), 200)
        # Revoked from the CLI: the token and its refresh token stop at once.
        cli(self.data, "token", "revoke", "--data", self.data, "--workspace", "alpha",
            rows[0][0])
        self.assertEqual(self.mcp_status(fresh["access_token"]), 401)
        status, body = self.token({"grant_type": "refresh_token", "client_id": client_id,
                                   "refresh_token": fresh["refresh_token"]})
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        # ctk_ tokens keep working beside them.
        self.assertEqual(self.mcp_status(self.ctk), 200)

    def test_a_refresh_token_used_twice_ends_the_grant(self):
        client_id, verifier, code = self.code_flow()
        _, tokens = self.exchange(client_id, verifier, code)
        form = {"grant_type": "refresh_token", "client_id": client_id,
                "refresh_token": tokens["refresh_token"]}
        status, fresh = self.token(form)
        self.assertEqual(status, 200)
        status, body = self.token(form)  # the stolen copy comes back
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        self.assertEqual(self.mcp_status(fresh["access_token"]), 401)

    def test_revocation_endpoint(self):
        client_id, verifier, code = self.code_flow()
        _, tokens = self.exchange(client_id, verifier, code)
        r = self.client().request("POST", "/oauth/revoke", form={
            "token": tokens["refresh_token"], "client_id": client_id})
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(self.mcp_status(tokens["access_token"]), 401)

    def test_approve_only_when_the_person_ticks_it(self):
        # The agent asks for approve; the person leaves it unticked (the default).
        client_id = self.register()
        verifier, challenge = pkce()
        answer = self.consent(self.browser(), client_id, challenge, "read act approve",
                              grant=("read", "act"))
        status, tokens = self.exchange(client_id, verifier, answer["code"])
        self.assertEqual((status, tokens["scope"]), (200, "read act"))
        result = call_tool(self.server.port, tokens["access_token"], "action.approve",
                           {"decision_id": "dec_" + "0" * 26})
        self.assertTrue(result.get("isError"))
        self.assertEqual(result["structuredContent"]["error"], "unauthorized")
        # Nor can it widen its grant at refresh.
        status, body = self.token({"grant_type": "refresh_token", "client_id": client_id,
                                   "refresh_token": tokens["refresh_token"],
                                   "scope": "read act approve"})
        self.assertEqual((status, body["error"]), (400, "invalid_scope"))
        # Ticked explicitly, it is granted.
        verifier, challenge = pkce()
        answer = self.consent(self.browser(), client_id, challenge, "read act approve",
                              grant=("read", "act", "approve"))
        status, tokens = self.exchange(client_id, verifier, answer["code"])
        self.assertEqual((status, tokens["scope"]), (200, "read act approve"))

    def test_deny(self):
        client_id = self.register()
        _, challenge = pkce()
        answer = self.consent(self.browser(), client_id, challenge, decision="deny")
        self.assertEqual(answer["error"], "access_denied")
        self.assertNotIn("code", answer)

    def test_a_loopback_redirect_may_use_any_port(self):
        client_id = self.register(["http://127.0.0.1/callback"])
        verifier, challenge = pkce()
        answer = self.consent(self.browser(), client_id, challenge,
                              redirect="http://127.0.0.1:61234/callback")
        status, _ = self.exchange(client_id, verifier, answer["code"],
                                  redirect="http://127.0.0.1:61234/callback")
        self.assertEqual(status, 200)


class TestBadInput(OAuthBase):
    """Each refused with the RFC's error, and nothing issued."""

    def assertNothingIssued(self, before):
        self.assertEqual(len(self.tokens_listed()), before, self.tokens_listed())

    def test_wrong_verifier_and_then_the_right_one(self):
        client_id, verifier, code = self.code_flow()
        before = len(self.tokens_listed())
        status, body = self.exchange(client_id, pkce()[0], code)
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        # The code is spent by a wrong guess: the right verifier comes too late.
        status, body = self.exchange(client_id, verifier, code)
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        self.assertNothingIssued(before)

    def test_a_reused_code_revokes_what_it_gave(self):
        client_id, verifier, code = self.code_flow()
        status, tokens = self.exchange(client_id, verifier, code)
        self.assertEqual(status, 200)
        before = len(self.tokens_listed())
        status, body = self.exchange(client_id, verifier, code)
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        self.assertNothingIssued(before)
        self.assertEqual(self.mcp_status(tokens["access_token"]), 401)

    def test_a_code_for_another_client(self):
        _, verifier, code = self.code_flow()
        other = self.register(name="Other app")
        before = len(self.tokens_listed())
        status, body = self.exchange(other, verifier, code)
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        self.assertNothingIssued(before)

    def test_a_mismatched_redirect_uri(self):
        client_id = self.register()
        _, challenge = pkce()
        # At the authorization endpoint: shown to the person, never redirected to.
        for uri in ("http://127.0.0.1:9/elsewhere", "https://attacker.example/callback"):
            r = self.browser().request("GET", self.authorize_query(client_id, challenge,
                                                                    redirect=uri))
            self.assertEqual(r.status, 400, r.text)
            self.assertIsNone(r.getheader("Location"))
        # At the token endpoint: invalid_grant.
        client_id, verifier, code = self.code_flow()
        before = len(self.tokens_listed())
        status, body = self.exchange(client_id, verifier, code,
                                     redirect="http://127.0.0.1:9/other")
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        self.assertNothingIssued(before)

    def test_registration_refuses_unsafe_redirect_uris(self):
        for uri in ("http://attacker.example/cb", "javascript:alert(1)", "https://a.example/#f",
                    "data:text/html,x", "", "https://" + "a" * 2100 + ".example/"):
            status, body = self.client().json("POST", "/oauth/register",
                                              {"redirect_uris": [uri]})
            self.assertEqual((status, body["error"]), (400, "invalid_redirect_uri"), uri)
        status, body = self.client().json("POST", "/oauth/register", "not json")
        self.assertEqual((status, body["error"]), (400, "invalid_client_metadata"))

    def test_the_authorization_request_must_use_pkce_s256(self):
        client_id = self.register()
        b = self.browser()
        q = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
             "state": "s", "code_challenge": pkce()[1], "code_challenge_method": "plain"}
        r = b.request("GET", "/inbox/authorize?" + urllib.parse.urlencode(q))
        self.assertEqual(r.status, 302)
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(
            r.getheader("Location")).query))
        self.assertEqual((answer["error"], answer["state"]), ("invalid_request", "s"))
        del q["code_challenge"], q["code_challenge_method"]
        r = b.request("GET", "/inbox/authorize?" + urllib.parse.urlencode(q))
        self.assertIn("error=invalid_request", r.getheader("Location"))
        q.update(code_challenge=pkce()[1], code_challenge_method="S256", scope="admin")
        r = b.request("GET", "/inbox/authorize?" + urllib.parse.urlencode(q))
        self.assertIn("error=invalid_scope", r.getheader("Location"))
        q.update(scope="read", resource="https://elsewhere.example/mcp")
        r = b.request("GET", "/inbox/authorize?" + urllib.parse.urlencode(q))
        self.assertIn("error=invalid_target", r.getheader("Location"))

    def test_consent_needs_the_inbox_session_and_its_csrf_token(self):
        client_id = self.register()
        _, challenge = pkce()
        stranger = self.client()
        r = stranger.request("GET", self.authorize_query(client_id, challenge) +
                             "&cortex_retry=1")
        self.assertEqual(r.status, 401)
        self.assertIn("cortex inbox link", r.text)
        before = len(self.tokens_listed())
        b = self.browser()
        r = b.request("POST", "/inbox/authorize", form={
            "client_id": client_id, "redirect_uri": REDIRECT, "response_type": "code",
            "code_challenge": challenge, "code_challenge_method": "S256",
            "grant_read": "on", "decision": "allow", "csrf": "0" * 64})
        self.assertEqual(r.status, 403)
        self.assertIsNone(r.getheader("Location"))
        self.assertNothingIssued(before)

    def test_token_endpoint_refusals(self):
        status, body = self.token({"grant_type": "password", "username": "a"})
        self.assertEqual((status, body["error"]), (400, "unsupported_grant_type"))
        status, body = self.token({"grant_type": "authorization_code"})
        self.assertEqual((status, body["error"]), (400, "invalid_request"))
        status, body = self.token({"grant_type": "authorization_code", "code": "0" * 64,
                                   "client_id": "cli_x", "code_verifier": pkce()[0],
                                   "redirect_uri": REDIRECT})
        self.assertEqual((status, body["error"]), (400, "invalid_grant"))
        status, body = self.client().json("POST", "/oauth/token", {"grant_type": "x"})
        self.assertEqual((status, body["error"]), (400, "invalid_request"))


class Documents(http.server.BaseHTTPRequestHandler):
    """Serves client ID metadata documents by path, over HTTPS."""
    docs = {}
    requests = 0

    def do_GET(self):
        Documents.requests += 1
        body = self.docs.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


class MetadataDocumentsBase(OAuthBase):
    """A Cortex and an HTTPS server on 127.0.0.1 that publishes client ID metadata
    documents. Loopback is not a public address: Cortex fetches from it only when
    `private_hosts` lets it."""
    private_hosts = True

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cortex-e2e-cimd-")
        cls.data = cls.tmp.name
        cert, key = os.path.join(cls.data, "cert.pem"), os.path.join(cls.data, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        cls.https = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Documents)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        cls.https.socket = context.wrap_socket(cls.https.socket, server_side=True)
        threading.Thread(target=cls.https.serve_forever, daemon=True).start()
        cls.docs = f"https://127.0.0.1:{cls.https.server_address[1]}"
        config = os.path.join(cls.data, "cortex.toml")
        with open(config, "w") as f:
            f.write(f"[http]\nclient_metadata_ca_file = {json.dumps(cert)}\n"
                    f"client_metadata_private_hosts = {str(cls.private_hosts).lower()}\n")
        cls.ctk = create_token(cls.data, "alpha", "read,act")
        cls.server = Server(cls.data, ["--config", config])
        cls.base = f"http://127.0.0.1:{cls.server.port}"
        cls.resource = cls.base + "/mcp"

    @classmethod
    def tearDownClass(cls):
        cls.https.shutdown()
        super().tearDownClass()

    def publish(self, path, doc):
        Documents.docs[path] = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        return self.docs + path

    def refused(self, client_id):
        """The consent page refuses the client: 400, shown to the person, no redirect."""
        _, challenge = pkce()
        r = self.browser().request("GET", self.authorize_query(client_id, challenge))
        self.assertEqual(r.status, 400, r.text)
        self.assertIsNone(r.getheader("Location"))
        return r.text


class TestClientMetadataDocuments(MetadataDocumentsBase):
    """A client_id that is an https:// URL: its document is fetched (HTTPS only, at most
    5 KB, within 5 s), checked and remembered."""

    def test_a_metadata_document_client_connects(self):
        url = self.docs + "/client.json"
        self.publish("/client.json", {"client_id": url, "client_name": "Hosted assistant",
                                      "redirect_uris": [REDIRECT]})
        status, asm = self.client().json("GET", "/.well-known/oauth-authorization-server")
        self.assertTrue(asm["client_id_metadata_document_supported"])
        verifier, challenge = pkce()
        answer = self.consent(self.browser(), url, challenge)
        status, tokens = self.exchange(url, verifier, answer["code"])
        self.assertEqual(status, 200, tokens)
        self.assertEqual(self.mcp_status(tokens["access_token"]), 200)
        self.assertTrue([r for r in self.tokens_listed() if url in r and "Hosted assistant" in r])

    def test_refusals(self):
        before = len(self.tokens_listed())
        big = self.publish("/big.json", b'{"pad":"' + b"x" * 6000 + b'"}')
        self.assertIn("exceeds 5120 bytes", self.refused(big))
        plain = f"http://127.0.0.1:{self.https.server_address[1]}/client.json"
        self.assertIn("https://", self.refused(plain))
        other = self.publish("/other.json", {"client_id": self.docs + "/elsewhere.json",
                                             "redirect_uris": [REDIRECT]})
        self.assertIn("its own URL", self.refused(other))
        unsafe = self.docs + "/unsafe.json"
        self.publish("/unsafe.json", {"client_id": unsafe,
                                      "redirect_uris": ["http://attacker.example/cb"]})
        self.refused(unsafe)
        self.refused(self.docs + "/missing.json")
        self.assertEqual(len(self.tokens_listed()), before)


class TestMetadataDocumentsOnPrivateAddresses(MetadataDocumentsBase):
    private_hosts = False

    def test_a_document_on_a_private_address_is_refused(self):
        """By default a document URL cannot make Cortex reach its own network: the
        loopback server is never asked, the person is told why, nothing is issued."""
        url = self.docs + "/client.json"
        self.publish("/client.json", {"client_id": url, "client_name": "Hosted assistant",
                                      "redirect_uris": [REDIRECT]})
        before = len(self.tokens_listed())
        Documents.requests = 0
        text = self.refused(url)
        self.assertIn("127.0.0.1, which is not a public address", text)
        self.assertEqual(Documents.requests, 0)
        self.assertEqual(len(self.tokens_listed()), before)


class TestBehindAProxy(unittest.TestCase):
    def test_base_url_names_issuer_and_resource(self):
        with tempfile.TemporaryDirectory(prefix="cortex-e2e-oauth-proxy-") as data:
            create_token(data, "alpha", "read")
            server = Server(data, ["--base-url", "https://cortex.example.org/"])
            try:
                c = Http(server.port)
                status, prm = c.json("GET", "/.well-known/oauth-protected-resource/mcp")
                self.assertEqual(prm["resource"], "https://cortex.example.org/mcp")
                status, asm = c.json("GET", "/.well-known/oauth-authorization-server")
                self.assertEqual(asm["issuer"], "https://cortex.example.org")
                self.assertEqual(asm["authorization_endpoint"],
                                 "https://cortex.example.org/inbox/authorize")
            finally:
                server.terminate()
                server.kill()


if __name__ == "__main__":
    unittest.main()
