"""A run's client tokens and its rollback, which deletes only what this run created."""

from __future__ import annotations

from provisioning import teardown
from provisioning.keypair import ensure_key_pair
from provisioning.ledger import Ledger
from provisioning.network import default_subnets, ensure_security_group


def test_client_tokens_are_deterministic_within_a_run_only(aws):
    ledger = Ledger(aws, "c1", "plan")
    token = ledger.client_token("memory-0", "us-east-1a", "0")
    assert token == ledger.client_token("memory-0", "us-east-1a", "0") and len(token) == 64
    assert token != ledger.client_token("memory-1", "us-east-1a", "0")
    assert token != Ledger(aws, "c1", "plan").client_token("memory-0", "us-east-1a", "0")


def test_rollback_spares_what_an_earlier_run_created(aws, moto, public_key):
    earlier = Ledger(aws, "c1", "plan")
    group = ensure_security_group(earlier, default_subnets(aws)[0], [])
    this = Ledger(aws, "c1", "plan")
    ensure_security_group(this, default_subnets(aws)[0], [])  # found, not created
    ensure_key_pair(this, public_key.read_text().strip())
    deleted = this.rollback()
    assert deleted.labels() == ["key-pair memorybridge-c1"]
    assert moto.ec2.describe_security_groups(GroupIds=[group])["SecurityGroups"]
    assert moto.ec2.describe_key_pairs()["KeyPairs"] == []
    teardown.delete(aws, earlier.created)


def test_zonal_rollback_keeps_the_shared_resources(aws, moto, public_key):
    ledger = Ledger(aws, "c1", "plan")
    ensure_key_pair(ledger, public_key.read_text().strip())
    assert ledger.rollback(zonal_only=True).is_empty()
    assert ledger.created.key_pairs == ["memorybridge-c1"]
    ledger.rollback()
