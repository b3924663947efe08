"""The fleet: member clusters joined to the hub, and tenants' placement, overrides and quota."""
