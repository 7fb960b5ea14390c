"""Realistic FAKE secrets, one or more per built-in kind, and near-misses that are no secret.

Every secret is assembled here from a prefix and generated characters, so no string in
the repository looks like a live token to a push-protection scanner. Each entry is
(kind, the text holding the secret, the text after redaction).
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections.abc import Callable
from typing import NamedTuple

from jsonl_store._text.redact import MARKER_RE, marker

_ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"


def body(n: int, alphabet: str = _ALNUM) -> str:
    """``n`` characters cycling through ``alphabet`` (mixed case and digits, like a random token)."""
    return (alphabet * (n // len(alphabet) + 1))[:n]


def _upper(n: int) -> str:
    return body(n, "QZ7XW3VT9RK2MP5LN8")


_PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + body(32) + "\n" + body(64) + "\n" + body(20) + "=="

#: (kind, text, redacted text)
SECRETS: list[tuple[str, str, str]] = [
    ("aws-access-key", "id AKIA" + _upper(16) + " ok", f"id {marker('aws-access-key')} ok"),
    ("aws-access-key", "temporary ASIA" + _upper(16), f"temporary {marker('aws-access-key')}"),
    (
        "aws-secret-key",
        "aws_secret_access_key = " + body(30) + "/+" + body(8),
        f"aws_secret_access_key = {marker('aws-secret-key')}",
    ),
    (
        "aws-secret-key",
        '"AWS_SECRET_ACCESS_KEY": "' + body(40) + '"',
        f'"AWS_SECRET_ACCESS_KEY": "{marker("aws-secret-key")}"',
    ),
    (
        "gcp-service-account-key",
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + body(64)
        + "\\n"
        + body(40)
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "x@y.iam.gserviceaccount.com"}',
        '{"type": "service_account", "private_key": "'
        + marker("gcp-service-account-key")
        + '", "client_email": "x@y.iam.gserviceaccount.com"}',
    ),
    (
        "azure-storage-key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + body(86)
        + "==;EndpointSuffix=core.windows.net",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={marker('azure-storage-key')};"
        "EndpointSuffix=core.windows.net",
    ),
    *[
        ("github-token", f"token {prefix}_" + body(36) + ".", f"token {marker('github-token')}.")
        for prefix in ("ghp", "gho", "ghu", "ghs", "ghr")
    ],
    ("github-token", "github_pat_" + body(22) + "_" + body(59), marker("github-token")),
    ("gitlab-token", "use glpat-" + body(20) + " here", f"use {marker('gitlab-token')} here"),
    ("anthropic-api-key", "sk-ant-api03-" + body(93) + "AA", marker("anthropic-api-key")),
    ("openai-api-key", "key: sk-" + body(48), f"key: {marker('openai-api-key')}"),
    ("openai-api-key", "sk-proj-" + body(40) + "_" + body(20) + "-x", marker("openai-api-key")),
    ("google-api-key", "AIza" + body(35), marker("google-api-key")),
    ("slack-token", "xoxb-1234567890-" + body(24), marker("slack-token")),
    ("slack-token", "xapp-1-A0" + body(12) + "-1234-" + body(20), marker("slack-token")),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/T0" + _upper(8) + "/B0" + _upper(8) + "/" + body(24),
        "https://hooks.slack.com/services/" + marker("slack-webhook"),
    ),
    ("stripe-key", "sk_live_" + body(24), marker("stripe-key")),
    ("stripe-key", "rk_test_" + body(24), marker("stripe-key")),
    (
        "jwt",
        "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + body(43),
        "jwt=" + marker("jwt"),
    ),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\n" + _PEM_BODY + "\n-----END RSA PRIVATE KEY-----\ndone",
        marker("private-key") + "\ndone",
    ),
    (
        "private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + _PEM_BODY + "\n-----END OPENSSH PRIVATE KEY-----",
        marker("private-key"),
    ),
    (
        "private-key",
        "cut off: -----BEGIN EC PRIVATE KEY-----\n" + _PEM_BODY,
        "cut off: " + marker("private-key"),
    ),
    (
        "bearer-token",
        "curl -H 'Authorization: Bearer " + body(32) + "' https://api.example.com",
        f"curl -H 'Authorization: Bearer {marker('bearer-token')}' https://api.example.com",
    ),
    (
        "bearer-token",
        '{"authorization": "Bearer ' + body(20) + "." + body(10) + '"}',
        '{"authorization": "Bearer ' + marker("bearer-token") + '"}',
    ),
    (
        "basic-auth",
        "Authorization: Basic " + base64.b64encode(b"user:" + body(12).encode()).decode(),
        f"Authorization: Basic {marker('basic-auth')}",
    ),
    (
        "sendgrid-api-key",
        "SENDGRID_API_KEY=SG." + body(22) + "." + body(43),
        f"SENDGRID_API_KEY={marker('sendgrid-api-key')}",
    ),
    ("twilio-api-key", "sid SK" + body(32, "0123456789abcdef"), f"sid {marker('twilio-api-key')}"),
    ("pypi-token", "password = pypi-AgEIcHlwaS5vcmc" + body(60), f"password = {marker('pypi-token')}"),
    ("npm-token", "npm_" + body(36), marker("npm-token")),
    (
        "npm-token",
        "//registry.npmjs.org/:_authToken=" + body(36),
        f"//registry.npmjs.org/:_authToken={marker('npm-token')}",
    ),
    (
        "password",
        "postgres://app:" + body(16) + "@db.internal:5432/main",
        f"postgres://app:{marker('password')}@db.internal:5432/main",
    ),
    (
        "password",
        "curl -u deploy:" + body(14) + " https://ci",
        f"curl -u deploy:{marker('password')} https://ci",
    ),
    (
        "aws-secret-key",
        '"SecretAccessKey": "' + body(40) + '",',
        f'"SecretAccessKey": "{marker("aws-secret-key")}",',
    ),
    ("env-secret", "DB_PASSWORD=" + body(12), f"DB_PASSWORD={marker('env-secret')}"),
    ("env-secret", "export STRIPE_API_KEY=" + body(10), f"export STRIPE_API_KEY={marker('env-secret')}"),
    ("env-secret", "MY_SERVICE_TOKEN='" + body(16) + "'", f"MY_SERVICE_TOKEN='{marker('env-secret')}'"),
    ("env-secret", "client_secret = " + body(20), f"client_secret = {marker('env-secret')}"),
    ("env-secret", "app --db-password=" + body(9) + " run", f"app --db-password={marker('env-secret')} run"),
]

_IMAGE = base64.b64encode(bytes(range(256)) * 8).decode()

#: Texts that must come back unchanged.
NEAR_MISSES: list[str] = [
    "commit " + hashlib.sha1(b"x").hexdigest() + " fixed it",
    "sha256 " + hashlib.sha256(b"x").hexdigest(),
    "id " + str(uuid.UUID(int=0x0192B1C2AAAA7BBB8CCC1234567890AB)),
    "data:image/png;base64," + _IMAGE,
    "the task-runner, a disk-space check, sk-learn and a risk-free desk-lamp",
    "MAX_TOKENS=4096\nTOKEN_COUNT=3\nDEBUG=true\nPORT=8080\nCOMPASS=north",
    "PASSWORD=\nAPI_KEY=$API_KEY\nGITHUB_TOKEN=${GITHUB_TOKEN}\nSECRET=<your secret>",
    "AKIA is a prefix; AKIA" + _upper(10) + " is too short and xAKIA" + _upper(16) + " is glued",
    "ghp_" + body(20) + " is too short",
    "the bearer of bad news; Authorization: Bearer $TOKEN",
    "pk_live_" + body(24) + " is a publishable key",
    "-----BEGIN PUBLIC KEY-----\n" + body(64) + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n" + body(64) + "\n-----END CERTIFICATE-----",
    "x = 1; y == 2; a=b",
    "eyJ is how a JWT starts",
]


# -- the labelled set -------------------------------------------------------------------
# Realistic FAKE secrets in the contexts agents see them in: real formats with random
# bodies from a seeded generator (never a live credential), each in code, `.env`,
# JSON/YAML, shell output, URLs and curl commands. `benchmarks/redaction_corpus.py`
# measures recall on all of it; tests/unit/test_redaction_corpus.py checks a slice.

_BASE62 = string.ascii_letters + string.digits
_URLSAFE = _BASE62 + "-_"
_B64 = _BASE62 + "+/"
_HEX = "0123456789abcdef"


class Labelled(NamedTuple):
    """One fake secret in its context: what kind it is, where it sits, the text, and the
    secret's random part (what must not survive redaction, not even in part)."""

    kind: str
    context: str
    text: str
    secret: str


def _random(rng: random.Random, n: int, alphabet: str = _BASE62) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _password(rng: random.Random) -> str:
    """A password as generators make them: pwgen -s, token_urlsafe or openssl rand -base64."""
    style = rng.randrange(3)
    if style == 0:
        return _random(rng, rng.randint(14, 24))
    if style == 1:
        return _random(rng, rng.randint(16, 32), _URLSAFE)
    return _random(rng, 32, _B64) + "="


def _url_password(rng: random.Random) -> str:
    return _random(rng, rng.randint(14, 24), _BASE62 + "-_.~")


#: Schemes whose URLs carry a password in their user info (each vendor's connection URL).
DATABASE_SCHEMES = (
    "postgres", "postgresql", "mysql", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss",
    "amqp", "amqps", "mssql", "sqlserver", "oracle", "cockroachdb", "clickhouse", "ftp",
    "smtp", "ldap", "https",
)  # fmt: skip

#: How a tool shows the lines of a file: (name, the prefix of line n).
GUTTERS: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("plain", lambda n: ""),
    ("cat-n", lambda n: f"{n:6d}\t"),
    ("pipe", lambda n: f"  {n} | "),
    ("colon", lambda n: f"{n}:"),
    ("arrow", lambda n: f"{n:6d}\u2192"),
    ("quote", lambda n: "> "),
)


def _key_block(rng: random.Random, label: str) -> tuple[str, str]:
    """A PEM private key of random base64: (the block's lines joined by newlines, its body)."""
    lines = [_random(rng, 64, _B64) for _ in range(rng.randint(6, 12))] + [_random(rng, 28, _B64) + "=="]
    block = "\n".join([f"-----BEGIN {label}PRIVATE KEY-----", *lines, f"-----END {label}PRIVATE KEY-----"])
    return block, "".join(lines)


def _prefixed(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, a variable name for it, the token) for every prefixed format, random bodies."""
    return [
        ("aws-access-key", "AWS_ACCESS_KEY_ID", "AKIA" + _random(rng, 16, string.ascii_uppercase + string.digits)),
        ("aws-access-key", "AWS_ACCESS_KEY_ID", "ASIA" + _random(rng, 16, string.ascii_uppercase + string.digits)),
        *[("github-token", "GITHUB_TOKEN", p + "_" + _random(rng, 36)) for p in ("ghp", "gho", "ghu", "ghs", "ghr")],
        ("github-token", "GH_TOKEN", "github_pat_" + _random(rng, 22) + "_" + _random(rng, 59)),
        ("gitlab-token", "GITLAB_TOKEN", "glpat-" + _random(rng, 20, _URLSAFE)),
        ("anthropic-api-key", "ANTHROPIC_API_KEY", "sk-ant-api03-" + _random(rng, 93, _URLSAFE) + "AA"),
        ("openai-api-key", "OPENAI_API_KEY", "sk-proj-" + _random(rng, 48, _URLSAFE) + "T3BlbkFJ" + _random(rng, 48, _URLSAFE)),
        ("openai-api-key", "OPENAI_API_KEY", "sk-" + _random(rng, 48)),
        ("google-api-key", "GOOGLE_API_KEY", "AIza" + _random(rng, 35, _URLSAFE)),
        ("slack-token", "SLACK_BOT_TOKEN", f"xoxb-{rng.randint(10**10, 10**11)}-{rng.randint(10**12, 10**13)}-" + _random(rng, 24)),
        ("slack-token", "SLACK_USER_TOKEN", f"xoxp-{rng.randint(10**10, 10**11)}-{rng.randint(10**10, 10**11)}-" + _random(rng, 32, _HEX)),
        ("slack-token", "SLACK_APP_TOKEN", f"xapp-1-A{_random(rng, 10, string.ascii_uppercase + string.digits)}-{rng.randint(10**12, 10**13)}-" + _random(rng, 64, _HEX)),
        ("stripe-key", "STRIPE_SECRET_KEY", "sk_live_" + _random(rng, 99)),
        ("stripe-key", "STRIPE_RESTRICTED_KEY", "rk_live_" + _random(rng, 99)),
        ("sendgrid-api-key", "SENDGRID_API_KEY", "SG." + _random(rng, 22, _URLSAFE) + "." + _random(rng, 43, _URLSAFE)),
        ("pypi-token", "TWINE_PASSWORD", "pypi-AgEIcHlwaS5vcmc" + _random(rng, 140, _URLSAFE)),
        ("npm-token", "NPM_TOKEN", "npm_" + _random(rng, 36)),
        ("twilio-api-key", "TWILIO_API_KEY", "SK" + _random(rng, 32, _HEX)),
        ("jwt", "ID_TOKEN", "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI" + _random(rng, 60, _URLSAFE) + "." + _random(rng, 86, _URLSAFE)),
    ]  # fmt: skip


def _contexts(name: str, token: str) -> list[tuple[str, str]]:
    """(context, text) for one token under its variable name."""
    lower = name.lower()
    return [
        ("env", f"{name}={token}\n"),
        ("shell", f"$ export {name}={token}\n$ ./deploy.sh\nDeploying with {lower}...\n"),
        ("python", f'import os\n\nclient = Client(api_key="{token}")\nprint(client.ping())\n'),
        ("javascript", f"const {lower} = '{token}';\nmodule.exports = {{ {lower} }};\n"),
        ("json", f'{{\n  "{lower}": "{token}",\n  "region": "us-east-1"\n}}\n'),
        ("yaml", f"service:\n  {lower}: {token}\n  retries: 3\n"),
        ("prose", f"Sure, I used the key {token} to call the API and it worked.\n"),
    ]


def _named(rng: random.Random) -> list[Labelled]:
    """Passwords and keys recognisable only by their names, in every context."""
    out: list[Labelled] = []
    pairs = [
        ("DB_PASSWORD", "password"), ("POSTGRES_PASSWORD", "password"), ("SECRET_KEY", "secret_key"),
        ("API_KEY", "api_key"), ("CLIENT_SECRET", "client_secret"), ("TWILIO_AUTH_TOKEN", "auth_token"),
        ("REDIS_PASSWORD", "redis_password"), ("SMTP_PASSWORD", "smtp_password"),
    ]  # fmt: skip
    for upper, lower in pairs:
        for context in ("env", "shell", "json", "yaml", "yaml-quoted", "ini", "python", "toml"):
            value = _random(rng, 32, _HEX) if "TWILIO" in upper else _password(rng)
            text = {
                "env": f"{upper}={value}\n",
                "shell": f"$ cat .env\nDEBUG=false\n{upper}={value}\nPORT=8080\n",
                "json": f'{{"user": "app", "{lower}": "{value}", "port": 5432}}',
                "yaml": f"database:\n  user: app\n  {lower}: {value}\n  port: 5432\n",
                "yaml-quoted": f'database:\n  {lower}: "{value}"\n',
                "ini": f"[database]\nuser = app\n{lower} = {value}\n",
                "python": f'settings = Settings(\n    {lower}="{value}",\n)\n',
                "toml": f'[service]\n{lower} = "{value}"\n',
            }[context]
            out.append(Labelled("env-secret", context, text, value))
    return out


def _urls(rng: random.Random) -> list[Labelled]:
    out = []
    for scheme in DATABASE_SCHEMES:
        for context in ("env", "shell", "code"):
            password = _url_password(rng)
            url = f"{scheme}://app_user:{password}@db-{rng.randrange(100)}.internal.example.net:5432/main"
            text = {
                "env": f"DATABASE_URL={url}\n",
                "shell": f"$ psql '{url}'\npsql: connection refused\n",
                "code": f'engine = create_engine("{url}")\n',
            }[context]
            out.append(Labelled("password", f"url-{context}", text, password))
    return out


def _curl(rng: random.Random) -> list[Labelled]:
    out = []
    for _ in range(6):
        token = _random(rng, 40, _URLSAFE)
        out.append(
            Labelled(
                "bearer-token",
                "curl-bearer",
                f"curl -s -H 'Authorization: Bearer {token}' https://api.example.net/v1/items\n",
                token,
            )
        )
        password = _password(rng)
        out.append(
            Labelled(
                "password",
                "curl-user",
                f"curl -u deploy:{password} https://ci.example.net/api/json\n",
                password,
            )
        )
        basic = base64.b64encode(f"deploy:{_password(rng)}".encode()).decode()
        out.append(
            Labelled(
                "basic-auth",
                "curl-basic",
                f'curl -H "Authorization: Basic {basic}" https://ci.example.net/\n',
                basic,
            )
        )
    return out


def _keys(rng: random.Random) -> list[Labelled]:
    out = []
    for label in ("", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "):
        for gutter, prefix in GUTTERS:
            block, secret = _key_block(rng, label)
            start = rng.randint(1, 40)
            lines = ["$ cat id_key"] if gutter == "plain" else []
            lines += [prefix(start + i) + line for i, line in enumerate(block.split("\n"))]
            out.append(Labelled("private-key", f"key-{gutter}", "\n".join(lines) + "\n", secret))
        block, secret = _key_block(rng, label)
        escaped = block.replace("\n", "\\n")
        out.append(Labelled("private-key", "key-json-escaped", f'{{"key": "{escaped}\\n"}}', secret))
        truncated = block.rsplit("\n", 4)[0]
        out.append(
            Labelled("private-key", "key-truncated", truncated, secret[: 64 * (truncated.count("\n"))])
        )
    return out


def _aws(rng: random.Random) -> list[Labelled]:
    out = []
    for _ in range(5):
        key_id = "AKIA" + _random(rng, 16, string.ascii_uppercase + string.digits)
        secret = _random(rng, 40, _B64)
        created = (
            '{\n    "AccessKey": {\n        "UserName": "deploy",\n'
            f'        "AccessKeyId": "{key_id}",\n        "Status": "Active",\n'
            f'        "SecretAccessKey": "{secret}",\n'
            '        "CreateDate": "2026-01-02T03:04:05+00:00"\n    }\n}\n'
        )
        out.append(Labelled("aws-secret-key", "aws-cli-json", created, secret))
        out.append(Labelled("aws-access-key", "aws-cli-json", created, key_id))
        secret = _random(rng, 40, _B64)
        credentials = f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n"
        out.append(Labelled("aws-secret-key", "aws-credentials", credentials, secret))
    return out


def _npmrc(rng: random.Random) -> list[Labelled]:
    out = []
    for _ in range(4):
        token = "npm_" + _random(rng, 36)
        out.append(Labelled("npm-token", "npmrc", f"//registry.npmjs.org/:_authToken={token}\n", token))
        legacy = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        out.append(
            Labelled(
                "npm-token",
                "npmrc-legacy",
                f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={legacy}\n",
                legacy,
            )
        )
    return out


def _cloud(rng: random.Random) -> list[Labelled]:
    out = []
    for _ in range(3):
        key = _random(rng, 86, _B64) + "=="
        text = f"DefaultEndpointsProtocol=https;AccountName=acct{rng.randrange(99)};AccountKey={key};EndpointSuffix=core.windows.net"
        out.append(Labelled("azure-storage-key", "connection-string", text, key))
        body_lines = [_random(rng, 64, _B64) for _ in range(8)]
        pem = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(body_lines) + "\\n-----END PRIVATE KEY-----\\n"
        text = f'{{"type": "service_account", "project_id": "p{rng.randrange(999)}", "private_key": "{pem}", "client_email": "a@p.iam.gserviceaccount.com"}}'
        out.append(Labelled("gcp-service-account-key", "key-file", text, "".join(body_lines)))
        hook = (
            "T"
            + _random(rng, 10, string.ascii_uppercase + string.digits)
            + "/B"
            + _random(rng, 10, string.ascii_uppercase + string.digits)
            + "/"
            + _random(rng, 24)
        )
        out.append(
            Labelled(
                "slack-webhook",
                "url",
                f"curl -X POST https://hooks.slack.com/services/{hook} -d @msg.json",
                hook,
            )
        )
    return out


def labelled(seed: int = 20) -> list[Labelled]:
    """The labelled set: every kind in every context it occurs in, bodies from ``seed``."""
    rng = random.Random(seed)
    out: list[Labelled] = []
    for kind, name, token in _prefixed(rng):
        out += [Labelled(kind, context, text, token) for context, text in _contexts(name, token)]
    for make in (_named, _urls, _curl, _keys, _aws, _npmrc, _cloud):
        out += make(rng)
    return out


def removed_whole(secret: str, text: str, redacted: str, width: int = 6) -> bool | None:
    """True when no piece of ``secret`` (``width`` characters, as ``text`` shows it) is left
    in ``redacted``, False when none was removed, None when part was: never allowed."""
    pieces = [secret[i : i + width] for i in range(max(1, len(secret) - width + 1))]
    pieces = [piece for piece in pieces if piece in text]
    rest = MARKER_RE.sub("", redacted)  # the marker's own words ("github") are no leftover
    left = sum(piece in rest for piece in pieces)
    return True if left == 0 else False if left == len(pieces) else None
