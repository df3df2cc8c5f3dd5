"""The SSH key: only a public key is read, imported once per cluster, never someone else's name."""

from __future__ import annotations

import pytest

from foundation.errors import UsageError
from provisioning import teardown
from provisioning.errors import ClusterConflictError
from provisioning.keypair import ensure_key_pair, read_public_key
from provisioning.ledger import Ledger


def test_reads_the_public_key(public_key):
    path, text = read_public_key(public_key)
    assert path == public_key and text.startswith("ssh-ed25519 ")


def test_a_private_key_is_refused_without_echoing_it(public_key):
    private = public_key.with_suffix("")
    with pytest.raises(UsageError, match="is a private key") as info:
        read_public_key(private)
    assert "BEGIN" not in str(info.value) and private.read_text().splitlines()[1] not in str(info.value)


def test_a_missing_or_foreign_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="ssh-keygen"):
        read_public_key(tmp_path / "nope.pub")
    (tmp_path / "odd.pub").write_text("ecdsa-sha2-nistp256 AAAA test\n")
    with pytest.raises(UsageError, match="ssh-ed25519 or ssh-rsa"):
        read_public_key(tmp_path / "odd.pub")


def test_default_keys_are_looked_up_in_home(tmp_path, monkeypatch, public_key):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    with pytest.raises(UsageError, match="id_ed25519.pub or"):
        read_public_key(None)
    rsa = tmp_path / "home" / ".ssh" / "id_rsa.pub"
    rsa.write_text("ssh-rsa AAAAB3Nza test\n")
    assert read_public_key(None) == (rsa, "ssh-rsa AAAAB3Nza test")


def test_imported_once_and_found_again_by_tag(aws, moto, public_key):
    text = public_key.read_text().strip()
    ledger = Ledger(aws, "c1", "plan")
    assert ensure_key_pair(ledger, text) == "memorybridge-c1"
    assert ensure_key_pair(Ledger(aws, "c1", "plan"), text) == "memorybridge-c1"
    assert [k["KeyName"] for k in moto.ec2.describe_key_pairs()["KeyPairs"]] == ["memorybridge-c1"]
    teardown.delete(aws, ledger.created)


def test_an_untagged_key_with_the_name_is_not_taken_over(aws, moto, public_key):
    text = public_key.read_text().strip()
    moto.ec2.import_key_pair(KeyName="memorybridge-c1", PublicKeyMaterial=text.encode())
    with pytest.raises(ClusterConflictError, match="not tagged"):
        ensure_key_pair(Ledger(aws, "c1", "plan"), text)
    moto.ec2.delete_key_pair(KeyName="memorybridge-c1")
