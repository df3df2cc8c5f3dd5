"""The user's SSH public key, imported as the cluster's EC2 key pair.

Only the public half is read; a path to a private key is refused without echoing its contents.
EC2 accepts ed25519 and RSA keys.
"""

from __future__ import annotations

from pathlib import Path

from foundation.errors import UsageError
from provisioning import tags
from provisioning.errors import refuse_foreign_name
from provisioning.ledger import Ledger

DEFAULT_PUBLIC_KEYS = ("~/.ssh/id_ed25519.pub", "~/.ssh/id_rsa.pub")
KEY_TYPES = ("ssh-ed25519", "ssh-rsa")


def find_public_key(path: Path | None) -> tuple[Path, str] | None:
    """The public key file (``path``, else the first default that exists) and its one-line text;
    None when there is no such file (a dry run goes on without one)."""
    candidates = [path] if path else [Path(p).expanduser() for p in DEFAULT_PUBLIC_KEYS]
    for candidate in candidates:
        candidate = candidate.expanduser()
        if not candidate.is_file():
            continue
        text = candidate.read_text(errors="replace").strip()
        if "PRIVATE KEY" in text:
            raise UsageError(f"--ssh-key: {candidate} is a private key; pass the public one ({candidate}.pub)")
        if text.split(" ", 1)[0] not in KEY_TYPES:
            raise UsageError(f"--ssh-key: {candidate} is not an OpenSSH public key of type {' or '.join(KEY_TYPES)}")
        return candidate, text
    return None


def missing_key(path: Path | None) -> str:
    """Why there is no key to import, and how to get one."""
    wanted = str(path) if path else " or ".join(DEFAULT_PUBLIC_KEYS)
    return f"no public key at {wanted}; create one with `ssh-keygen -t ed25519` or pass --ssh-key PATH.pub"


def read_public_key(path: Path | None) -> tuple[Path, str]:
    """The public key `up` imports: as :func:`find_public_key`, and its absence is an error."""
    found = find_public_key(path)
    if found is None:
        raise UsageError(f"--ssh-key: {missing_key(path)}")
    return found


def ensure_key_pair(ledger: Ledger, public_key: str) -> str:
    """The cluster's key pair name: found by tag, else imported from ``public_key``."""
    found = ledger.aws.call("describe_key_pairs", Filters=tags.filters(ledger.cluster))["KeyPairs"]
    if found:
        return found[0]["KeyName"]
    name = tags.resource_name(ledger.cluster)
    with refuse_foreign_name("InvalidKeyPair.Duplicate", "key pair", name, ledger.cluster):
        ledger.aws.call(
            "import_key_pair",
            KeyName=name,
            PublicKeyMaterial=public_key.encode(),
            TagSpecifications=[tags.tag_specification("key-pair", ledger.tags("key-pair", 0))],
        )
    ledger.created.add("key_pairs", name)
    ledger.report(f"imported key pair {name}")
    return name
