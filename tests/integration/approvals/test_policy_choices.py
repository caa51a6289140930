"""The target's stored policy is the recovery layer's PermissionPolicy, value for value."""

from __future__ import annotations

from recovery.providers.acp.permissions import PermissionPolicy
from sessions_app.models import PermissionPolicyChoice, ProviderTarget


def test_it_stores_exactly_the_policies_the_acp_driver_knows_and_asks_by_default():
    assert set(PermissionPolicyChoice.values) == {policy.value for policy in PermissionPolicy}
    assert ProviderTarget._meta.get_field("permission_policy").default == PermissionPolicy.ASK
