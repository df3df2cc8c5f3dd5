"""EBS encryption, the same for every volume of the cluster: root volumes and data volumes alike.

A volume is encrypted with the customer KMS key of ``--kms-key`` when one is given, else with the
account's default EBS key (AWS's choice when ``KmsKeyId`` is left out). The option is only checked
for being obviously malformed here; whether the key exists and EC2 may use it is AWS's to say, and
AWS says it late: it accepts the launch, then terminates the instance (``Client.InternalError``).
"""

from __future__ import annotations

from typing import Any

from foundation.errors import UsageError

DEFAULT_KEY = "the account's default EBS key"


def parse_kms_key(text: str) -> str:
    """``--kms-key``: a key id, key ARN, alias name or alias ARN; none of those is empty or has whitespace."""
    if not text or any(char.isspace() for char in text):
        raise UsageError(f"--kms-key: {text!r} is not a KMS key; give its key id, key ARN, alias/NAME or alias ARN")
    return text


def ebs_encryption(kms_key_id: str | None) -> dict[str, Any]:
    """The EBS parameters that encrypt a volume: ``Encrypted``, and ``KmsKeyId`` for a customer key."""
    return {"Encrypted": True, **({"KmsKeyId": kms_key_id} if kms_key_id else {})}


def key_label(kms_key_id: str | None) -> str:
    """The key that encrypts the volumes, in words: 'KMS key alias/gnn' or the account's default."""
    return f"KMS key {kms_key_id}" if kms_key_id else DEFAULT_KEY
