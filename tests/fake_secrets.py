"""Realistic FAKE secrets, one or more per built-in kind, and near-misses that are no secret.

Every secret is assembled here from a prefix and generated characters, so no string in
the repository looks like a live token to a push-protection scanner. Each entry is
(kind, the text holding the secret, the text after redaction).
"""

from __future__ import annotations

import base64
import hashlib
import uuid

from jsonl_store._redact import marker

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
