"""Default redaction on real code and on the labelled fake secrets: it rewrites only what is certain.

A slice of what `benchmarks/redaction_corpus.py` runs in full: named standard-library
files, the lines issue 20 found rewritten, samples that look like keys; and every third
item of the labelled set (`fake_secrets.labelled`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import sysconfig
import uuid

import msgspec
import pytest
from fake_secrets import GUTTERS, Labelled, labelled, removed_whole

from jsonl_store import REDACTION_KINDS, Redactor, redact_text
from jsonl_store._text.redact import Found


def _stored(text: str) -> str:
    """``text`` as the default redactor stores it as a tool's output (the pre-filter included)."""
    data = msgspec.json.encode({"role": "tool", "tool_call_id": "call_1", "content": text})
    content: str = msgspec.json.decode(Redactor().redact_json(data))["content"]
    return content


#: Standard-library files (relative to its folder) holding names like password, token, pwd, secret.
STDLIB_FILES = (
    "getpass.py", "netrc.py", "smtplib.py", "imaplib.py", "ftplib.py", "poplib.py", "tokenize.py",
    "token.py", "secrets.py", "hmac.py", "shlex.py", "configparser.py", "argparse.py", "tarfile.py",
    "zipfile.py", "http/client.py", "http/cookiejar.py", "urllib/request.py", "urllib/parse.py",
    "xmlrpc/client.py", "email/utils.py", "logging/handlers.py", "ssl.py", "os.py", "subprocess.py",
    "json/decoder.py", "sqlite3/__init__.py", "asyncio/base_events.py", "venv/__init__.py",
    "test/test_urllib2.py", "test/test_netrc.py", "test/test_smtplib.py", "test/test_imaplib.py",
    "test/test_tokenize.py", "test/test_getpass.py", "test/test_urlparse.py", "test/test_ftplib.py",
)  # fmt: skip
_STDLIB = sysconfig.get_paths()["stdlib"]


@pytest.mark.parametrize("name", STDLIB_FILES)
def test_a_standard_library_file_is_stored_unchanged(name: str) -> None:
    """A source file of this interpreter's standard library comes back from the default redactor as it was."""
    path = os.path.join(_STDLIB, name)
    if not os.path.exists(path):
        pytest.skip(f"{name} is not installed with this interpreter")
    with open(path, encoding="utf-8") as file:
        text = file.read()
    assert _stored(text) == text


def test_most_of_the_standard_library_slice_is_installed() -> None:
    """The slice above is real: at least 25 of its files are there to be checked."""
    assert sum(os.path.exists(os.path.join(_STDLIB, name)) for name in STDLIB_FILES) >= 25


#: Lines of code, shell output and docs that issue 20 or the corpus found rewritten.
CODE = [
    "self.password = password",
    "token = parser.next_token()",
    "pwd = os.getcwd()",
    "tokenizer.pad_token = tokenizer.eos_token",
    "    def login(self, user: str, password: str) -> None:",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "secret = secrets.token_hex(16)",
    'headers = {"Authorization": f"Bearer {token}"}',
    "password=getpass.getpass(prompt)",
    "PWD=/work/project\nOLDPWD=/home/user",
    'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):',
    "const token = req.headers.authorization;",
    "model = Model(password='IAmSensitive', password_bytes=b'IAmSensitiveBytes')",
    "mhu = MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
    "//registry.npmjs.org/:_authToken=MYTOKEN1",
    "  password: 'bm90IG15IHJlYWwgcGFzc3dvcmQ=',",
    "DB_PASSWORD=${DB_PASSWORD}\nAPI_KEY=<your-api-key>\nSECRET=changeme\nTOKEN=xxxxxxxx",
    "Authorization: Bearer YOUR_TOKEN_HERE",
    "secret_key: Optional[str] = None",
    "token_count: int = 0\nMAX_TOKENS=4096",
    ' *   "PWD": "/Users/maciej",',
    "    password: 's00pers3cret'",
    "[badge]: https://codecov.io/gh/o/r/graph/badge.svg?token=6B6NxtsZc3",
    "fastURI.parse('uri://us\\xA0er:pa\\uD7FFss@example.com:123/')",
    " * one pass: `d===t?a:b`, or `x=d===t?a:b`",
    'body:f,duplex:"half",credentials:fe?T:void 0}),l&&(T',
]


@pytest.mark.parametrize("text", CODE)
def test_code_that_names_a_secret_is_stored_unchanged(text: str) -> None:
    """A name like password or token in front of code, a reference or a placeholder rewrites nothing."""
    assert _stored(text) == text
    assert redact_text(text) == text


_IMAGE = base64.b64encode(hashlib.sha512(b"png").digest() * 40).decode()
SAMPLES = [
    "commit " + hashlib.sha1(b"x").hexdigest() + "\nAuthor: A <a@example.org>",
    "sha256:" + hashlib.sha256(b"x").hexdigest(),
    "request " + str(uuid.UUID(int=0x0192B1C2AAAA7BBB8CCC1234567890AB)),
    '"integrity": "sha512-' + base64.b64encode(hashlib.sha512(b"pkg").digest()).decode() + '"',
    "![plot](data:image/png;base64," + _IMAGE + ")",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    '{"AccessKeyId": "AKIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
]


@pytest.mark.parametrize("text", SAMPLES)
def test_hashes_ids_images_and_documentation_keys_stay(text: str) -> None:
    """Hashes, UUIDs, git SHAs, npm integrity strings, base64 images and AWS's example keys are no secrets."""
    assert _stored(text) == text
    assert [found for found in Redactor().find(text) if found.certain] == []


_SLICE = labelled()[::3]


@pytest.mark.parametrize("item", _SLICE, ids=[f"{i.kind}-{i.context}-{n}" for n, i in enumerate(_SLICE)])
def test_a_labelled_secret_is_never_removed_in_part(item: Labelled) -> None:
    """A fake secret of the labelled set is removed whole or left whole: never a piece behind a marker."""
    assert removed_whole(item.secret, item.text, _stored(item.text)) is not None


def test_the_labelled_slice_is_removed_whole_at_least_95_percent() -> None:
    """At least 95% of the labelled slice is removed whole by the default redactor."""
    whole = sum(bool(removed_whole(i.secret, i.text, _stored(i.text))) for i in _SLICE)
    assert whole >= 0.95 * len(_SLICE)


def test_the_labelled_set_covers_every_kind_in_many_contexts() -> None:
    """The labelled set holds at least 300 secrets, every built-in kind, 16 database schemes and 6 gutters."""
    items = labelled()
    assert len(items) >= 300
    assert {item.kind for item in items} == set(REDACTION_KINDS)
    assert (
        len({item.text.split("://")[0].split()[-1] for item in items if item.context.startswith("url")}) >= 16
    )
    assert {item.context for item in items} >= {f"key-{name}" for name, _ in GUTTERS}


@pytest.mark.parametrize(("name", "gutter"), GUTTERS, ids=[name for name, _ in GUTTERS])
def test_a_private_key_block_goes_whole_whatever_its_lines_carry(name: str, gutter: object) -> None:
    """A key shown with line numbers, a '|' or ':' gutter or '> ' quotes is removed from BEGIN to END."""
    body = [base64.b64encode(hashlib.sha512(bytes([n])).digest()[:48]).decode() for n in range(5)]
    block = ["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"]
    prefix = dict(GUTTERS)[name]
    text = "before\n" + "\n".join(prefix(n) + line for n, line in enumerate(block, 3)) + "\nafter"
    stored = _stored(text)
    assert stored == "before\n" + prefix(3) + "[REDACTED:private-key]\nafter"
    assert not any(line[:16] in stored for line in body)


def test_a_truncated_key_block_goes_up_to_its_last_line() -> None:
    """A key cut off before its END line is removed up to its last line of key data; what follows stays."""
    lines = [base64.b64encode(hashlib.sha512(bytes([n])).digest()[:48]).decode() for n in range(3)]
    text = "> -----BEGIN PRIVATE KEY-----\n> " + "\n> ".join(lines) + "\n(output truncated)"
    assert _stored(text) == "> [REDACTED:private-key]\n(output truncated)"


GUESSES = [
    ('password = "hunter22"', "env-secret"),
    ("DB_PASSWORD=correct-horse-battery", "env-secret"),
    ("postgres://scott:tiger@localhost/test", "password"),
    ("curl -u admin:letmein https://ci", "password"),
    ('"api_key": "a lovely phrase with spaces"', "env-secret"),
]


@pytest.mark.parametrize(("text", "kind"), GUESSES)
def test_a_name_based_guess_is_reported_and_left_in_place(text: str, kind: str) -> None:
    """A value a name points at that is not certain is a finding with certain=False, and stays in the text."""
    [found] = Redactor().find(text)
    assert (found.kind, found.certain) == (kind, False)
    assert redact_text(text) == text == _stored(text)


CERTAIN = [
    ("DB_PASSWORD=q7Rt2xLm9Vp4Kd8s", "DB_PASSWORD=[REDACTED:env-secret]"),
    ('"password": "q7Rt2xLm9Vp4Kd8s"', '"password": "[REDACTED:env-secret]"'),
    ("  password: q7Rt2xLm9Vp4Kd8s", "  password: [REDACTED:env-secret]"),
    ("password = q7Rt2xLm9Vp4Kd8s", "password = [REDACTED:env-secret]"),
    ("client = Client(api_key='q7Rt2x/m9V+4Kd8s=')", "client = Client(api_key='[REDACTED:env-secret]')"),
    ("mongodb+srv://app:q7Rt2xLm9Vp4Kd8s@c0.x.net/db", "mongodb+srv://app:[REDACTED:password]@c0.x.net/db"),
]


@pytest.mark.parametrize(("text", "redacted"), CERTAIN)
def test_a_literal_generated_value_after_a_secret_name_is_redacted(text: str, redacted: str) -> None:
    """A quoted or config value after a secret's name, varied like a generated one, is certain and goes."""
    assert redact_text(text) == redacted == _stored(text)


def test_a_guess_never_hides_a_certain_secret_inside_it() -> None:
    """A guessed value holding a token of a known format: the token is still redacted."""
    token = "ghp_" + "q7Rt2xLm9Vp4Kd8s" * 2 + "a1B2"
    text = f'note = "use {token} today"'
    assert redact_text(text) == 'note = "use [REDACTED:github-token] today"'
    text = f'password = "use {token} today"'
    assert redact_text(text) == 'password = "use [REDACTED:github-token] today"'
    assert [f.certain for f in Redactor().find(text)] == [True]


def test_found_keeps_its_fields_and_adds_certain_last() -> None:
    """`Found` is (kind, start, end, certain), certain defaulting to True, as user patterns' findings are."""
    assert Found._fields == ("kind", "start", "end", "certain")
    assert Found("custom", 0, 1) == ("custom", 0, 1, True)
    assert Redactor([r"ACME-\d+"], builtin=False).find("x ACME-12") == [Found("custom", 2, 9, True)]
